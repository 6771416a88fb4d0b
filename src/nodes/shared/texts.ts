/**
 * The texts shared by the DAM nodes: status texts from the catalogue (`dam.status.*`, English
 * when a key is missing), the status rate, sizes, and an error's short status text.
 */
import { AssetApiError } from '../../api/errors';
import type { NodeAPI } from './node-red';

// ---------------------------------------------------------------- messages

/** Catalogue keys (under `dam.status`) with their English fallback. */
export const STATUS_KEYS = {
  inFlight: '__count__ running',
  queued: '__count__ running, __queued__ queued',
  progress: '__percent__%',
  bytes: '__size__',
  aborted: 'aborted __count__ request(s) in flight on close',
  dropped: 'dropped __count__ queued message(s) on close',
  droppedError: 'dropped: the node closed before this message\'s turn (__queued__ were queued); send it again',
  // Work lost on close, named (msg.filename, msg.fuid, ...) so that a flow or a person can send it again.
  abortedNames: 'aborted __count__ request(s) in flight on close: __names__',
  droppedNames: 'dropped __count__ queued message(s) on close: __names__',
  abortedError: 'aborted: the node closed (redeploy, removal or stop) while this message was worked on; send it again',
  badLimit: 'Parallel requests must be a whole number from 1 to __max__; using __default__',
  // Short reasons for the status under a node (errorStatusText); the full text is in msg.error.
  reasonAuth: 'auth: cookie rejected',
  reasonLoginRefused: 'auth: session from login refused',
  reasonPermission: 'permission: denied',
  reasonNotFound: '404: check base URL',
  reasonRedirect: '__status__: redirect, check base URL',
  reasonBusy: '__status__: server busy, retry',
  reasonServerError: '__status__: server error',
  reasonRefusedStatus: '__status__: request refused',
  reasonTimeout: 'timeout: no answer',
  reasonRefused: 'network: connection refused',
  reasonNotFoundHost: 'network: host not found',
  reasonTls: 'network: TLS certificate',
  reasonNetwork: 'network: __code__',
  reasonProxyAuth: 'proxy: authentication failed',
  reasonAborted: 'aborted'
} as const;

/**
 * Looks up `key` in the node's catalogue, falling back to `english` (with the same __params__);
 * English when no RED is at hand.
 */
export function localText(RED: NodeAPI | undefined, key: string, english: string, params: Record<string, unknown> = {}): string {
  let text: string | undefined;
  try { text = RED?._(key, params as Record<string, string | number>); } catch { text = undefined; }
  // RED._ answers the key itself (or namespace:key) when the catalogue lacks it.
  if (!text || text.endsWith(key)) {
    text = english.replace(/__(\w+)__/g, (_m, p: string) => String(params[p] ?? ''));
  }
  return text;
}

/** Looks up `dam.status.<name>` in the node's catalogue, falling back to English. */
export function statusText(RED: NodeAPI | undefined, name: keyof typeof STATUS_KEYS, params: Record<string, unknown> = {}): string {
  return localText(RED, `dam.status.${name}`, STATUS_KEYS[name], params);
}

/** A node's status changes at most this often; a trailing update shows the final state. */
export const STATUS_INTERVAL_MS = 250;

/** 1536 -> "1.5 kB"; decimal units as the editor shows sizes. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
  return `${value.toFixed(1)} ${units[unit]}`;
}


// ---------------------------------------------------------------- errors as short status text

/** Longest status text under a node; the full message is in msg.error. */
const STATUS_MAX = 40;

/** A network error code's short reason, if it has one. */
function networkReason(code: string | undefined): keyof typeof STATUS_KEYS | undefined {
  if (code === 'ECONNREFUSED') return 'reasonRefused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'reasonNotFoundHost';
  if (code && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return 'reasonTls';
  return undefined;
}

/**
 * Short status text for an error, reason first, cut to fit under a node:
 * "auth: cookie rejected", "404: check base URL", "rejected: disk full", "fuid: is required".
 */
export function errorStatusText(RED: NodeAPI | undefined, err: unknown): string {
  let text: string;
  if (err instanceof AssetApiError) {
    const status = err.status;
    const code = err.code;
    switch (err.kind) {
      case 'auth':
        // A failed automatic login says so and when it tries again; a plain 401 is a rejected cookie.
        text = err.code === 'LOGIN_FAILED' ? `auth: ${withoutOperation(err)}`
          : err.code === 'LOGIN_REFUSED' ? statusText(RED, 'reasonLoginRefused') : statusText(RED, 'reasonAuth');
        break;
      case 'permission': text = statusText(RED, 'reasonPermission'); break;
      case 'timeout': text = statusText(RED, 'reasonTimeout'); break;
      case 'aborted': text = statusText(RED, 'reasonAborted'); break;
      case 'proxy': text = statusText(RED, 'reasonProxyAuth'); break;
      case 'http':
        if (status === 404) text = statusText(RED, 'reasonNotFound');
        else if (status !== undefined && status >= 300 && status < 400) text = statusText(RED, 'reasonRedirect', { status });
        else if (status === 449 || status === 503) text = statusText(RED, 'reasonBusy', { status });
        else if (status !== undefined && status >= 500) text = statusText(RED, 'reasonServerError', { status });
        else if (status !== undefined && status >= 400) text = statusText(RED, 'reasonRefusedStatus', { status });
        else text = `http: ${withoutOperation(err)}`; // e.g. a 200 whose answer is not JSON
        break;
      case 'network': {
        const reason = networkReason(code);
        text = reason ? statusText(RED, reason) : code ? statusText(RED, 'reasonNetwork', { code }) : `network: ${withoutOperation(err)}`;
        break;
      }
      case 'rejected':
        text = `rejected: ${err.serverMessage ?? withoutOperation(err)}`;
        break;
      default: // invalid-input: the message is already "<field>: <rule>"
        text = withoutOperation(err);
    }
  } else {
    text = err instanceof Error ? err.message : String(err);
  }
  return cutText(text, STATUS_MAX);
}

/** `text`, cut to at most `max` characters with an ellipsis when longer (so a cut is seen as one). */
export function cutText(text: string, max: number): string {
  return text.length > max ? text.slice(0, max - 1).trimEnd() + '…' : text;
}

/** The message without a leading "<operation>: ". */
function withoutOperation(err: AssetApiError): string {
  return err.operation && err.message.startsWith(`${err.operation}: `) ? err.message.slice(err.operation.length + 2) : err.message;
}

/** The local time of day as statuses show it, `HH:MM:SS` from 00:00:00 (toLocaleTimeString with hour12 false says 24:05:00 after midnight). */
export function clockTime(date: Date): string {
  return date.toTimeString().slice(0, 8);
}
