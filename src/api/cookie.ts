/**
 * The Cookie header the client sends, from what a user pastes (public-facts.md: the session
 * cookie, usually JSESSIONID).
 */
import { invalidInput } from './errors';
import { TOKEN_CHAR } from './values';

/** `Name=value` with a token for a name and something after the `=`. */
const COOKIE_NAME_VALUE = new RegExp(`^${TOKEN_CHAR}+=(?!=*$)`);

/** Attributes of a Set-Cookie line (RFC 6265 and later drafts): never part of a Cookie header. */
const SET_COOKIE_ATTRIBUTE = /^(path|domain|expires|max-age|secure|httponly|samesite|partitioned|priority)(\s*=.*)?$/i;

/**
 * What a user pasted, reduced to what a Cookie header carries: a leading `Cookie:` dropped; a
 * `Set-Cookie:` line (or a `Name=value; Path=/; HttpOnly` copied from one) reduced to its
 * first `name=value`, its attributes dropped. A `Cookie:` line with several cookies is kept.
 */
function pastedCookie(text: string): string {
  const setCookie = /^set-cookie\s*:\s*/i.exec(text);
  const line = setCookie ? text.slice(setCookie[0].length) : text.replace(/^cookie\s*:\s*/i, '');
  const parts = line.split(';').map(p => p.trim());
  if (setCookie || parts.slice(1).some(p => SET_COOKIE_ATTRIBUTE.test(p))) return parts[0];
  return line.trim();
}

/** Longest cookie taken: a session id is a few dozen characters, and Tomcat refuses a request head of 8 KB or more (maxHttpHeaderSize). */
export const MAX_COOKIE_LENGTH = 7168;

/**
 * `Name=value` is sent as is; a bare value becomes `JSESSIONID=value`. A leading `Cookie:`
 * (pasted from a browser's request headers) is dropped; a pasted `Set-Cookie:` line gives its
 * first `name=value` (see {@link pastedCookie}); empty gives no header.
 * @throws AssetApiError `invalid-input` for a non-string or a value with control characters.
 */
export function cookieHeaderOf(cookie: unknown): string | undefined {
  if (cookie === undefined || cookie === null) return undefined;
  if (typeof cookie !== 'string') throw invalidInput('cookie', 'must be a string: Name=value or a bare session id');
  const trimmed = cookie.trim();
  if (trimmed.length > MAX_COOKIE_LENGTH) throw invalidInput('cookie', `must be at most ${MAX_COOKIE_LENGTH} characters (got ${trimmed.length}): a longer one breaks every call (servers refuse a request head of 8 KB or more)`);
  if (trimmed !== '' && !/^[\x20-\x7e]+$/.test(trimmed)) throw invalidInput('cookie', 'must be printable ASCII, without CR, LF or other control characters');
  const text = pastedCookie(trimmed);
  if (text === '') return undefined;
  return COOKIE_NAME_VALUE.test(text) ? text : `JSESSIONID=${text}`;
}
