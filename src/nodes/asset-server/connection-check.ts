/**
 * The connection check of the DAM sidebar and of the asset-server dialog's "Test connection".
 *
 * One cheap read: GET of a subscription id that no one registers ({@link PROBE_ID}). What
 * each answer means (spec sections 5 and 7):
 * - HTTP 200, success false, no permission text: the server was reached, the cookie was
 *   accepted and the user has the events permission; the server looked for the id and did
 *   not find it (spec 7: a failed operation is HTTP 200 with success false). -> ok
 * - HTTP 200, success true: someone registered the probe id; reached and accepted too. -> ok
 * - HTTP 401: the cookie is missing, wrong or expired (spec 5.2). -> auth
 * - success false saying permission is denied: cookie fine, no events permission (spec 5.3). -> permission
 * - HTTP 404: something answers at the base URL but has no subscribe API there: the path
 *   part of the base URL is wrong (the spec answers an unknown id with HTTP 200). -> path
 * - connection refused, DNS, TLS, timeout: the base URL cannot be reached. -> network
 * - HTTP 407: the HTTP proxy on the way refused its credentials. -> proxy
 * - any other status or a non-JSON answer: not the API we expect at that URL. -> http
 * The "add files" permission is not checked: only an upload can tell, and the check never writes.
 * With automatic login ({@link checkWithLogin}) the check logs in first: a failed login, or a
 * session the server refuses right after it, is result `login`, naming the part to fix.
 */
import { AssetClient } from '../../api/client';
import { AssetApiError } from '../../api/errors';
import { LoginError } from '../../api/session';

/** Never registered by this package (asset-event-in derives `nr-<node id>`, ids with no second hyphen). */
export const PROBE_ID = 'dam-connection-check-probe';

export type CheckResult = 'ok' | 'auth' | 'login' | 'permission' | 'path' | 'network' | 'http' | 'config' | 'proxy';

export interface ConnectionReport {
  result: CheckResult;
  /**
   * What to fix: the base URL (host/port/scheme), its path, the cookie, the user's permissions,
   * the login's user name and password, the other login settings, a field.
   */
  part?: 'baseUrl' | 'path' | 'cookie' | 'permission' | 'credentials' | 'login' | string;
  /** A sentence for the user (never holds the cookie: AssetApiError messages are built without it). */
  message: string;
  /** HTTP status when the server answered. */
  status?: number;
  checkedAt: string;
}

function report(result: CheckResult, message: string, extra: Partial<ConnectionReport> = {}): ConnectionReport {
  return { result, message, ...extra, checkedAt: new Date().toISOString() };
}

/** The part to fix for a field: the login's fields (`login.<name>`) come under its credentials or its other settings. */
function partOf(field: string): string {
  if (field === 'login.username' || field === 'login.password') return 'credentials';
  return field.startsWith('login.') ? 'login' : field;
}

/** Turns a configuration failure (missing base URL, cookie, bad timeout) into a report naming the field. */
export function configReport(err: unknown): ConnectionReport {
  // The editor shows the part first ("cookie: ..."): the message does not repeat the field.
  if (err instanceof AssetApiError) {
    const named = err.field !== undefined && partOf(err.field) === err.field && err.message.startsWith(`${err.field}: `);
    const message = named ? err.message.slice(err.field!.length + 2) : err.message;
    return report('config', message, err.field ? { part: partOf(err.field) } : {});
  }
  return report('config', err instanceof Error ? err.message : String(err));
}

/** A failed automatic login, or a session the server refused right after one, as a report; undefined for other errors. */
function loginReport(err: unknown): ConnectionReport | undefined {
  if (err instanceof AssetApiError && err.kind === 'proxy') return proxyReport(err);
  if (err instanceof LoginError) {
    // err.reason: our own words; the login server's text (err.serverSaid) is not passed on.
    return report('login', `login failed: ${err.step}: ${err.reason}`, { part: err.credentialsRefused ? 'credentials' : 'login', status: err.status });
  }
  if (err instanceof AssetApiError && err.code === 'LOGIN_REFUSED') {
    return report('login', 'login failed: the login worked, but the server refused the session it gave (HTTP 401): ' +
      'check where the session comes from and the cookie name it is sent as', { part: 'login', status: err.status });
  }
  return undefined;
}

/** The HTTP proxy refused its credentials (407): the proxy setting is what to fix, not the cookie or login. */
function proxyReport(err: AssetApiError): ConnectionReport {
  return report('proxy', 'the HTTP proxy refused the user name or password (HTTP 407, proxy authentication failed)', { part: 'proxy', status: err.status });
}

/**
 * For a client with automatic login: logs in now (as the node does on a 401), then runs the
 * check with the session the login gave. The login's own timeout is the client's.
 */
export async function checkWithLogin(client: AssetClient, timeoutMs = 10000): Promise<ConnectionReport> {
  try {
    await client.login();
  } catch (err) {
    return loginReport(err) ?? configReport(err);
  }
  const verdict = await checkConnection(client, timeoutMs);
  return verdict.result === 'login' ? verdict : { ...verdict, message: `login worked; ${verdict.message}` };
}

/** Runs the check with `client` (at most `timeoutMs`, default 10 s). */
export async function checkConnection(client: AssetClient, timeoutMs = 10000): Promise<ConnectionReport> {
  try {
    await client.getSubscription(PROBE_ID, { timeout: timeoutMs });
    return report('ok', 'server reached, cookie accepted, events permission granted');
  } catch (err) {
    if (!(err instanceof AssetApiError)) return report('http', String((err as Error)?.message ?? err));
    const login = loginReport(err);
    if (login) return login;
    const status = err.status === undefined ? {} : { status: err.status };
    switch (err.kind) {
      case 'rejected':
        return report('ok', 'server reached, cookie accepted, events permission granted', status);
      case 'auth':
        return report('auth', 'the server refused the session cookie (HTTP 401): it is missing, wrong or expired', { part: 'cookie', ...status });
      case 'permission':
        return report('permission', 'the cookie is accepted, but the user has no permission for events', { part: 'permission', ...status });
      case 'network':
      case 'timeout':
        return report('network', `the base URL cannot be reached: ${err.message.replace(/^getSubscription: /, '')}`, { part: 'baseUrl' });
      case 'invalid-input':
        return configReport(err);
      default:
        if (err.status === 404) {
          return report('path', 'the server answered 404 Not Found: nothing serves the API under this base URL; check its path ' +
            '(the base URL is the part before /review/api, e.g. http://host:8873)', { part: 'path', ...status });
        }
        return report('http', unexpectedAnswer(err.status), status);
    }
  }
}

/**
 * Our own words for an answer that is not the API's. Never the answer's text: the base URL may
 * point at any service the Node-RED host reaches, and a user allowed to test connections must not
 * read what it says.
 */
function unexpectedAnswer(status: number | undefined): string {
  const at = 'check the base URL (http/https, host, port, path prefix)';
  if (status === undefined || (status >= 200 && status < 300)) return `the server's answer is not a JSON object as the API gives: ${at}`;
  if (status >= 300 && status < 400) return `the server answered with a redirect (HTTP ${status}), which is not followed: ${at}`;
  if (status === 449 || status === 503) return `the server is busy (HTTP ${status}): try again later`;
  return `unexpected HTTP status ${status}: nothing answers as the API under this base URL; ${at}`;
}
