/**
 * Secrets masked in a subscription's stored details (asset-subscribe's `get`, the DAM sidebar).
 */
import { isToken } from '../../api/values';
import { secretValueRule } from '../../events/secret';
import { isBlankSetting, unsetEnvVar, unsetEnvVarRule } from './fields';

/**
 * Header names whose value is shown: standard headers that describe the content. Any other
 * header can carry a secret under any name (asset-event-in's shared-secret header is named by
 * the user), so its value is masked.
 */
const PUBLIC_HEADER = /^(content-type|content-language|content-encoding|accept|accept-language|accept-encoding|accept-charset|cache-control|user-agent)$/i;

/** The header a shared secret travels in when the setting is blank (what asset-event-in checks). */
export const DEFAULT_SECRET_HEADER = 'X-DAM-Secret';

/** Why a Secret (a credential) cannot work as given, to follow "secret: "; undefined when it can. */
export function secretProblem(secret: string): string | undefined {
  const unset = unsetEnvVar(secret);
  return unset ? unsetEnvVarRule(unset) : secretValueRule(secret);
}

/**
 * A Secret header setting (asset-event-in's, asset-subscribe's): blank is X-DAM-Secret, spaces
 * around are the editor's; a valid header name, not one whose value is shown. The name, and the
 * rule it breaks if it does.
 */
export function secretHeaderSetting(value: unknown): { name: string; broken?: string } {
  const name = isBlankSetting(value) ? DEFAULT_SECRET_HEADER : String(value).trim();
  if (!isToken(name)) return { name, broken: 'must be a valid HTTP header name' };
  if (PUBLIC_HEADER.test(name)) return { name, broken: `must not be ${name}: a standard header whose value is shown (in get and the DAM tab); use a name of its own such as X-DAM-Secret` };
  return { name };
}

/**
 * Masks secrets in a `get` answer: the values of callback headers other than the standard
 * content headers (`X-Hook-Check: x` -> `X-Hook-Check: ***`; `Content-Type` stays readable) and every query
 * parameter value (`name=value` -> `name=***`: tokens travel under any name there).
 * asset-event-in sends its shared secret as a header, and secrets never go into a msg. Any
 * `header`/`headers`/`queryParam` property is masked, as a string, a list of strings or an
 * object, since the answer's shape is "not shown" in the spec; so are the query values of a
 * `callback` or `callbackUrl` URL, or of each in a list ({@link maskUrlSecrets}); an object nested deeper than 8 is `***`.
 */
export function maskHeaderValues(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > 8) return '***'; // deeper than any answer's shape: not looked through, so not shown
  if (Array.isArray(value)) return value.map(v => maskHeaderValues(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    out[key] = /^headers?$/i.test(key) ? maskValues(v, ':', false, name => !PUBLIC_HEADER.test(name.trim()))
      : /^queryParams?$/i.test(key) ? maskValues(v, '=', true, () => true)
        : /^callback(url)?$/i.test(key) ? maskUrls(v, depth + 1)
          : maskHeaderValues(v, depth + 1);
  }
  return out;
}

/** A callback URL, or a list of them (its other items masked as everywhere). */
function maskUrls(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return maskUrlSecrets(v);
  return Array.isArray(v) ? v.map((item) => typeof item === 'string' ? maskUrlSecrets(item) : maskHeaderValues(item, depth + 1)) : maskHeaderValues(v, depth);
}

/**
 * A callback URL as shown: every query value masked as queryParam's are (`?token=abc` ->
 * `?token=***`; a bare flag stays), a fragment and the password of `user:password@` (a bare
 * `token@` whole) too. The
 * text is masked as given, without parsing it into a URL, so nothing else of it changes.
 */
export function maskUrlSecrets(url: string): string {
  const hashAt = url.indexOf('#');
  const beforeHash = hashAt < 0 ? url : url.slice(0, hashAt);
  const queryAt = beforeHash.indexOf('?');
  let head = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  head = maskUserinfo(head);
  const query = queryAt < 0 ? '' : '?' + beforeHash.slice(queryAt + 1).split('&').map((pair) => {
    const at = pair.indexOf('=');
    return at < 0 ? pair : `${pair.slice(0, at)}=***`;
  }).join('&');
  return head + query + (hashAt < 0 ? '' : '#***');
}

/**
 * `scheme://user:***@host...` or, for a bare `token@`, `scheme://***@host...`. The userinfo ends at
 * the authority's LAST @ (as URL parsers read it), so a password holding @ or : is masked whole.
 */
function maskUserinfo(head: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(head);
  if (!scheme) return head;
  const rest = head.slice(scheme[0].length);
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const at = authority.lastIndexOf('@');
  if (at < 0) return head;
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(':');
  const shown = colon < 0 ? '***' : `${userinfo.slice(0, colon)}:***`;
  return scheme[0] + shown + rest.slice(at);
}

/**
 * `Name<separator>value` -> `Name<separator>***` when `secret(Name)`. A line without the
 * separator is kept when `keepBare` (a query flag is only a name) and masked whole otherwise
 * (a malformed header).
 */
function maskValues(value: unknown, separator: string, keepBare: boolean, secret: (name: string) => boolean): unknown {
  const mask = (line: unknown) => {
    if (typeof line !== 'string') return '***';
    const at = line.indexOf(separator);
    if (at < 0) return keepBare ? line : '***';
    const name = line.slice(0, at).trim();
    if (!secret(name)) return line;
    return `${line.slice(0, at)}${separator}${separator === ':' ? ' ' : ''}***`;
  };
  if (typeof value === 'string') return mask(value);
  if (Array.isArray(value)) return value.map(mask);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, v]) => [name, secret(name) ? '***' : v]));
  }
  return value;
}
