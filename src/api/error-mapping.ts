/**
 * Turning the server's answers and transport failures into AssetApiError.
 *
 * Every error is built here from plain facts (status, server text, error code);
 * no axios error, request, config or header is ever kept, so the cookie cannot
 * leak through an error. Server-provided text is passed through `redact` too.
 */
import { AssetApiError, type AssetOperation } from './errors';
import { parseJsonKeepingBigInts } from './json';
import { proxyOriginOf, tunnelAnsweredFor } from './proxy';
import { isPlainObject, readFlag } from './values';

/** What the client knows when it builds an error. */
export interface ErrorContext {
  operation: AssetOperation;
  /** Server origin for messages (scheme, host, port; never credentials). */
  origin: string;
  /** Removes secrets (the cookie) from text that came from outside. */
  redact: (text: string) => string;
}

/** State of a call at the moment it failed. */
export interface FailureState {
  timedOut: boolean;
  timeoutMs: number;
  userAborted: boolean;
}

const MAX_SERVER_TEXT = 500;

/** The permission each operation needs (spec section 5), for messages. */
const NEEDED_PERMISSION: Partial<Record<AssetOperation, string>> = {
  registerSubscription: 'events', getSubscription: 'events', deleteSubscription: 'events', upload: 'add (adding files)'
};

const PERMISSION_TEXT = /permission.{0,40}denied|denied.{0,40}permission|permission_denied|no permission|lacks? (the )?permission|not permitted|access denied|forbidden/i;

/** JSON.parse with 64-bit integers kept; undefined when the text is not JSON. */
export function tryParseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: parseJsonKeepingBigInts(text) };
  } catch {
    return undefined;
  }
}

function asText(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The server's message: `error`, else `errorInfo`, with `errorCode` added when present. */
export function serverMessageOf(body: unknown): string | undefined {
  if (!isPlainObject(body)) return undefined;
  const message = asText(body.error) ?? asText(body.errorInfo);
  const code = asText(body.errorCode);
  const text = message !== undefined ? (code !== undefined && code !== message ? `${message} (${code})` : message) : code;
  if (text === undefined) return undefined;
  return text.length > MAX_SERVER_TEXT ? text.slice(0, MAX_SERVER_TEXT) + '…' : text;
}

/**
 * True when a JSON answer reports a failure: `success` false / "false", or no
 * success flag but an error field.
 */
export function isFailedAnswer(body: unknown): boolean {
  if (!isPlainObject(body)) return false;
  const flag = readFlag(body.success);
  if (flag !== undefined) return !flag;
  return serverMessageOf(body) !== undefined;
}

/** Error for an answer with success false: `permission` when it says permission is denied, else `rejected`. */
export function errorForFailedAnswer(ctx: ErrorContext, status: number, body: unknown): AssetApiError {
  const raw = serverMessageOf(body);
  const serverMessage = raw === undefined ? undefined : ctx.redact(raw);
  const op = ctx.operation;
  if (serverMessage !== undefined && PERMISSION_TEXT.test(serverMessage)) {
    const needed = NEEDED_PERMISSION[op];
    return new AssetApiError('permission',
      `${op}: permission denied by the server (${serverMessage}).` +
      (needed ? ` The session's user needs the ${needed} permission.` : ' The session\'s user lacks the permission for this operation.'),
      { operation: op, status, serverMessage });
  }
  return new AssetApiError('rejected', `${op}: the server refused: ${serverMessage ?? 'success is false and no reason was given'}`,
    { operation: op, status, serverMessage });
}

/**
 * A Retry-After header (RFC 9110 10.2.3: delay-seconds or an HTTP date) in ms from `now`;
 * undefined when absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) || !/[a-z]/i.test(text) ? undefined : Math.max(0, date - now);
}

/** Error for an HTTP status other than 2xx (body: the parsed JSON body, if any; retryAfter: the header). */
export function errorForStatus(ctx: ErrorContext, status: number, body?: unknown, location?: string, retryAfter?: string): AssetApiError {
  const op = ctx.operation;
  const raw = serverMessageOf(body);
  const serverMessage = raw === undefined ? undefined : ctx.redact(raw);
  const details = { operation: op, status, serverMessage };
  const suffix = serverMessage ? ` Server says: ${serverMessage}` : '';
  if (status === 401) {
    return new AssetApiError('auth',
      `${op}: authentication failed (HTTP 401): the session cookie is missing, wrong or expired. ` +
      'Get a new session cookie and update it (in Node-RED: the Cookie of the asset-server config node, or at run time ' +
      'with an asset-session node), or set up automatic login (asset-server: Automatic login; README: Sessions).', details);
  }
  if (status === 403) {
    return new AssetApiError('permission', `${op}: permission denied (HTTP 403).${suffix}`, details);
  }
  if (status === 449 || status === 503) {
    const retryAfterMs = parseRetryAfter(retryAfter);
    return new AssetApiError('http', `${op}: server busy (HTTP ${status}), retry later.${suffix}`,
      retryAfterMs === undefined ? details : { ...details, retryAfterMs });
  }
  if (status >= 300 && status < 400) {
    let where = '';
    if (location) {
      try {
        const url = new URL(location, ctx.origin);
        where = ` to ${url.origin}${url.pathname}`;
      } catch { /* unreadable Location: leave it out */ }
    }
    return new AssetApiError('http',
      `${op}: the server answered with a redirect (HTTP ${status}${where}); redirects are not followed` +
      `${op === 'upload' ? ' for uploads' : ''}: check the base URL (http/https, host, path prefix).`, details);
  }
  // A 404 without the API's own answer: the base URL leads to something else (the status says "check base URL" too).
  const notTheApi = status === 404 && !serverMessage ? ': nothing serves the API there: check the base URL (host, port, and any path prefix a proxy in front adds)' : '';
  return new AssetApiError('http', `${op}: unexpected HTTP status ${status} from ${ctx.origin}${notTheApi}.${suffix}`, details);
}

/** HTTP 407: the proxy wants (other) credentials. Its own kind, never `auth`: the session is not at fault. */
export function proxyAuthError(operation: AssetOperation): AssetApiError {
  return new AssetApiError('proxy',
    `${operation}: proxy authentication failed (HTTP 407): the HTTP proxy refused the user name or password. ` +
    'Set them in the http proxy config node chosen in the asset-server (or in the proxy URL of http_proxy / https_proxy).',
    { operation, status: 407, code: 'PROXY_AUTH_FAILED' });
}

/**
 * The HTTP proxy refused to open a tunnel to the server (its answer to CONNECT, other than 407):
 * kind `network`, as the server was not reached. Proxies often allow CONNECT to port 443 only.
 */
export function tunnelRefusedError(ctx: ErrorContext, status: number, proxy: string): AssetApiError {
  return new AssetApiError('network',
    `${ctx.operation}: the HTTP proxy ${proxy} refused to open a tunnel (CONNECT) to ${ctx.origin} (HTTP ${status}): ` +
    'it cannot reach the server, or does not allow it (many proxies allow CONNECT to port 443 only); ask its administrator, or set the Proxy setting',
    { operation: ctx.operation, status, code: 'PROXY_TUNNEL_REFUSED' });
}

/** Error for a 2xx answer whose body is not the JSON object expected. */
export function errorForMalformedAnswer(ctx: ErrorContext, status: number, contentType: string | undefined): AssetApiError {
  return new AssetApiError('http',
    `${ctx.operation}: the server's answer is not a JSON object (HTTP ${status}, content-type ${contentType || 'none'})`,
    { operation: ctx.operation, status });
}

const CONNECTION_LOST = new Set(['ECONNRESET', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ECONNABORTED_BY_PEER', 'ERR_BAD_RESPONSE']);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ECONNABORTED', 'ESOCKETTIMEDOUT']);

function codeOf(err: unknown): string | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const direct = (err as { code?: unknown }).code;
  if (typeof direct === 'string') return direct;
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return cause && typeof cause.code === 'string' ? cause.code : undefined;
}

function describeNetwork(code: string | undefined, message: string): string {
  switch (code) {
    case 'ECONNREFUSED': return 'connection refused: is the server running, and are host and port right?';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'host name not found';
    case 'EHOSTUNREACH': case 'ENETUNREACH': return 'host unreachable';
    default:
      if (code && CONNECTION_LOST.has(code)) return 'the connection was closed before the transfer completed';
      if (code && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
        return `TLS failed (${message}); give the server's CA certificate, or turn off certificate checks for a test server`;
      }
      return message || 'request failed';
  }
}

/**
 * Error for a call that ended without a usable answer: the caller aborted, the
 * timeout fired, or the network failed. Reads only the code and message of `err`.
 */
export function errorForFailure(ctx: ErrorContext, err: unknown, state: FailureState): AssetApiError {
  if (err instanceof AssetApiError) return err;
  // Raised by the proxy agent (a bad proxy URL in the environment), wrapped by axios.
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  if (cause instanceof AssetApiError) return cause;
  const op = ctx.operation;
  if (state.timedOut) {
    return new AssetApiError('timeout', `${op}: timed out: nothing received from ${ctx.origin} for ${state.timeoutMs} ms`,
      { operation: op, code: 'ETIMEDOUT' });
  }
  if (state.userAborted) return new AssetApiError('aborted', `${op}: aborted`, { operation: op });
  const code = codeOf(err);
  if (code === 'ERR_CANCELED') return new AssetApiError('aborted', `${op}: aborted`, { operation: op });
  if (code && TIMEOUT_CODES.has(code)) {
    return new AssetApiError('timeout', `${op}: timed out talking to ${ctx.origin}`, { operation: op, code });
  }
  const rawMessage = err instanceof Error ? err.message : String(err);
  const message = ctx.redact(rawMessage).slice(0, MAX_SERVER_TEXT);
  // Sent to a proxy: a refused connection or unknown host is the proxy's (the proxy answers with
  // a status when it cannot reach the server).
  const request = (err as { request?: unknown } | null)?.request;
  const proxy = proxyOriginOf(request);
  if (proxy !== undefined && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH')) {
    return new AssetApiError('network', `${op}: network error with the HTTP proxy ${proxy} (on the way to ${ctx.origin}): ` +
      `${describeNetwork(code, message).replace(/is the server running/, 'is the proxy running')} (${code}); check the Proxy setting of the asset-server`,
      { operation: op, code });
  }
  // TLS to a proxy that speaks plain HTTP: most often a proxy variable without a scheme (read as
  // https://, as core does). Not once the proxy answered a CONNECT: then TLS failed with the server.
  const plainProxyHint = proxy?.startsWith('https:') && (code === 'EPROTO' || code?.startsWith('ERR_SSL')) && !tunnelAnsweredFor(request)
    ? `; if the proxy speaks plain HTTP, write its URL as http://${proxy.slice('https://'.length)} (a proxy URL without a scheme is read as https://)` : '';
  // TLS to a port that answers plain HTTP (OpenSSL: "wrong version number"): the base URL's scheme.
  const plainServer = !plainProxyHint && ctx.origin.startsWith('https:') && (code === 'EPROTO' || code?.startsWith('ERR_SSL')) && /wrong version number/i.test(rawMessage);
  const described = plainServer
    ? `the server does not answer TLS (https) on this port; if it speaks plain HTTP, write the base URL as http://${ctx.origin.slice('https://'.length)}`
    : describeNetwork(code, message);
  return new AssetApiError('network', `${op}: network error with ${ctx.origin}${proxy ? ` through the HTTP proxy ${proxy}` : ''}: ${described}${code ? ` (${code})` : ''}${plainProxyHint}`,
    { operation: op, code });
}

/** `123.4 MB` (10^6 bytes), as the editor's MB settings count. */
export function formatSize(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${bytes} bytes`;
}

/** Error for a JSON answer larger than the client reads (maxAnswerBytes). */
export function errorForLargeAnswer(operation: AssetOperation, maxAnswerBytes: number): AssetApiError {
  return new AssetApiError('too-large',
    `${operation}: the server's answer is larger than ${formatSize(maxAnswerBytes)} (maxAnswerBytes); it was not read further`,
    { operation });
}

/** True for an error of the local file system (it names a system call). */
export function isFileSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

/** Error for a local file that cannot be read or written: `invalid-input` naming the field, with the system's code. */
export function errorForLocalFile(err: unknown, field: string, what: string, operation: AssetOperation): AssetApiError {
  if (err instanceof AssetApiError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new AssetApiError('invalid-input', `${field}: ${what}${code ? ` (${code})` : ''}`, {
    field, operation, ...(typeof code === 'string' ? { code } : {})
  });
}
