/**
 * The automatic login as data: {@link LoginOptions}, the ready-made {@link LOGIN_PRESETS}, and the
 * rules a login description must keep ({@link resolveLogin}). The session (session.ts) runs it.
 */
import { invalidInput } from './errors';
import { isPlainObject, isToken } from './values';

/** Ready-made login descriptions (see {@link LOGIN_PRESETS}). */
export type LoginPreset = 'utility' | 'form';

/** Automatic login: how to get a new session cookie when the server answers 401. */
export interface LoginOptions {
  /** User name; replaces `{{username}}` in the fields. */
  username: string;
  /** Password; replaces `{{password}}` in the fields. A secret: never in an error or log. */
  password: string;
  /** Defaults for every field below; a field given here wins over the preset's. */
  preset?: LoginPreset;
  /** Login URL: absolute, or relative to the base URL (`/command` -> `<baseUrl>/command`). */
  url?: string;
  /**
   * Optional page fetched (GET) just before the login; the cookies it sets go with the login
   * request. A servlet container's form login needs this: it only accepts a login for a session
   * that already exists. Absolute, or relative to the base URL; any answer will do.
   */
  sessionUrl?: string;
  /** GET or POST. */
  method?: 'GET' | 'POST';
  /** Fields, one `name=value` per line (or an object); `{{username}}` and `{{password}}` are replaced. */
  fields?: string | Record<string, string>;
  /** Where the fields go: the query string, or a URL-encoded form body (POST only). */
  fieldsIn?: 'query' | 'form';
  /** Where the session comes from: a Set-Cookie header of the answer, or a property of its JSON body. */
  sessionFrom?: 'set-cookie' | 'json';
  /** The Set-Cookie name, or the JSON property (a dotted path such as `data.cookie`). */
  sessionName?: string;
  /** Name of the cookie the session is then sent as. Default: the Set-Cookie name, or JSESSIONID. */
  cookieName?: string;
  /** Wait after a failed login before the next attempt (ms); doubles up to maxRetryDelayMs. Default 5000. */
  retryDelayMs?: number;
  /** Longest wait between failed logins (ms). Default 300000 (5 minutes). */
  maxRetryDelayMs?: number;
}

type LoginShape = Required<Pick<LoginOptions, 'url' | 'method' | 'fields' | 'fieldsIn' | 'sessionFrom' | 'sessionName' | 'cookieName'>>
  & Pick<LoginOptions, 'sessionUrl'>;

/**
 * The two documented cases. `utility`: the vendor's management-server call
 * (`GET /command?zm_username=U&zm_password=P&data={...cmd:getcredentials}`, JSON answer with
 * `zm_cookie`), whose value is sent as JSESSIONID; on a real installation the URL is usually
 * absolute (the management server, port 8443). `form`: a servlet form login: `GET /review/` for
 * a session, then `POST /review/j_security_check` answering `Set-Cookie: JSESSIONID=...`.
 */
export const LOGIN_PRESETS: Record<LoginPreset, LoginShape> = {
  utility: {
    url: '/command', method: 'GET', fieldsIn: 'query',
    fields: 'zm_username={{username}}\nzm_password={{password}}\ndata={clientVersion:"dam-assets-node-red",cmd:getcredentials}',
    sessionFrom: 'json', sessionName: 'zm_cookie', cookieName: 'JSESSIONID'
  },
  form: {
    sessionUrl: '/review/', url: '/review/j_security_check', method: 'POST', fieldsIn: 'form',
    fields: 'j_username={{username}}\nj_password={{password}}',
    sessionFrom: 'set-cookie', sessionName: 'JSESSIONID', cookieName: 'JSESSIONID'
  }
};

/** First wait after a failed login, and the longest (the wait doubles in between). */
export const DEFAULT_RETRY_MS = 5000;
export const DEFAULT_MAX_RETRY_MS = 300000;

export interface ResolvedLogin extends LoginShape {
  username: string;
  password: string;
  fieldList: Array<[string, string]>;
  retryDelayMs: number;
  maxRetryDelayMs: number;
}

/** Checks and completes login options; throws invalid-input naming the field (`login.<name>`). */
export function resolveLogin(options: LoginOptions): ResolvedLogin {
  if (!isPlainObject(options)) throw invalidInput('login', 'must be an object with username, password and a preset or url');
  const o = options as LoginOptions;
  if (o.preset !== undefined && !(o.preset in LOGIN_PRESETS)) throw invalidInput('login.preset', 'must be utility or form');
  const preset: Partial<LoginShape> = o.preset ? LOGIN_PRESETS[o.preset] : {};
  const pick = <K extends keyof LoginShape>(key: K): LoginShape[K] | undefined => {
    const given = o[key];
    return given === undefined || given === null || given === '' ? preset[key] : given as LoginShape[K];
  };
  const text = (field: string, value: unknown, rule: string): string => {
    if (typeof value !== 'string' || value.trim() === '') throw invalidInput(`login.${field}`, rule);
    return value.trim();
  };
  const username = text('username', o.username, 'is required for automatic login');
  const sessionUrl = typeof pick('sessionUrl') === 'string' && String(pick('sessionUrl')).trim() !== '' ? String(pick('sessionUrl')).trim() : undefined;
  if (typeof o.password !== 'string' || o.password === '') throw invalidInput('login.password', 'is required for automatic login');
  const url = text('url', pick('url'), 'is required: an absolute URL, or a path relative to the base URL (or choose a preset)');
  const method = String(pick('method') ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'POST') throw invalidInput('login.method', 'must be GET or POST');
  const fieldsIn = pick('fieldsIn') ?? (method === 'GET' ? 'query' : 'form');
  if (fieldsIn !== 'query' && fieldsIn !== 'form') throw invalidInput('login.fieldsIn', 'must be query or form');
  if (fieldsIn === 'form' && method === 'GET') throw invalidInput('login.fieldsIn', 'form fields need method POST');
  const sessionFrom = pick('sessionFrom');
  if (sessionFrom !== 'set-cookie' && sessionFrom !== 'json') throw invalidInput('login.sessionFrom', 'must be set-cookie or json');
  const sessionName = text('sessionName', pick('sessionName'), sessionFrom === 'json'
    ? 'is required: the JSON property holding the session (e.g. zm_cookie)' : 'is required: the name of the Set-Cookie (e.g. JSESSIONID)');
  const cookieName = o.cookieName ? text('cookieName', o.cookieName, 'must be a cookie name')
    : sessionFrom === 'set-cookie' ? sessionName : (preset.cookieName ?? 'JSESSIONID');
  if (!isToken(cookieName)) throw invalidInput('login.cookieName', 'must be a cookie name (letters, digits and !#$%&\'*+.^_`|~-)');
  const delay = (field: 'retryDelayMs' | 'maxRetryDelayMs', fallback: number): number => {
    const value = o[field];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 100) throw invalidInput(`login.${field}`, 'must be a number of milliseconds, 100 or more');
    return value;
  };
  const retryDelayMs = delay('retryDelayMs', DEFAULT_RETRY_MS);
  return {
    username, password: o.password, url, sessionUrl, method, fieldsIn, sessionFrom, sessionName, cookieName,
    fields: pick('fields') ?? '', fieldList: fieldListOf(pick('fields') ?? ''),
    retryDelayMs, maxRetryDelayMs: Math.max(retryDelayMs, delay('maxRetryDelayMs', DEFAULT_MAX_RETRY_MS))
  };
}

/**
 * A warning when the login sends the password in the query string of a plain http:// URL, where
 * access logs and proxies see it (the utility preset does, and its relative URL goes to the
 * preview server's address); undefined otherwise or when the options are invalid.
 */
export function plainLoginWarning(login: LoginOptions | undefined, baseUrl: string): string | undefined {
  if (!login) return undefined;
  let resolved: ResolvedLogin;
  let url: URL;
  try {
    resolved = resolveLogin(login);
    url = new URL(resolved.url, baseUrl.replace(/\/*$/, '/'));
  } catch {
    return undefined;
  }
  if (resolved.fieldsIn !== 'query' || url.protocol !== 'http:') return undefined;
  if (!resolved.fieldList.some(([, value]) => value.includes('{{password}}'))) return undefined;
  return `automatic login sends the password in the query string of ${url.origin}${url.pathname} over plain http, ` +
    'where access logs and proxies see it: give the login URL with https:// (the utility call is usually on the management server, https://host:8443/command)';
}

/** True when both describe the same login (presets filled in), user name and password included; false when either is invalid. */
export function sameLogin(a: LoginOptions | undefined, b: LoginOptions | undefined): boolean {
  if (!a || !b) return a === b;
  try {
    return JSON.stringify(resolveLogin(a)) === JSON.stringify(resolveLogin(b));
  } catch {
    return false;
  }
}

function fieldListOf(fields: string | Record<string, string>): Array<[string, string]> {
  if (typeof fields === 'string') {
    const list: Array<[string, string]> = [];
    for (const line of fields.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      const equals = line.indexOf('=');
      if (equals <= 0) throw invalidInput('login.fields', `each line must be name=value, got a line without a name or "=" (line ${list.length + 1})`);
      list.push([line.slice(0, equals).trim(), line.slice(equals + 1)]);
    }
    return list;
  }
  if (!isPlainObject(fields)) throw invalidInput('login.fields', 'must be name=value lines or an object');
  return Object.entries(fields).map(([name, value]) => [name, String(value)]);
}

/**
 * The login URL and the session page must be on the base URL's host (any port or scheme, as for a
 * cookie): the session they give is sent to the base URL, and a session of another host (an
 * internal service) must never be sent there.
 */
export function checkLoginHost(login: LoginOptions | undefined, base: string): void {
  if (!login) return;
  const resolved = resolveLogin(login);
  const baseHost = new URL(base).hostname.toLowerCase();
  const check = (field: string, text: string | undefined) => {
    if (!text || !/^https?:\/\//i.test(text)) return; // relative: on the base URL
    let host: string;
    try { host = new URL(text).hostname.toLowerCase(); } catch { throw invalidInput(`login.${field}`, 'must be a valid URL'); }
    if (host !== baseHost) {
      throw invalidInput(`login.${field}`, `must be on the base URL's host (${baseHost}): the session it gives is sent to the base URL, ` +
        `never to another host than the one it came from (here ${host})`);
    }
  };
  check('url', resolved.url);
  check('sessionUrl', resolved.sessionUrl);
}
