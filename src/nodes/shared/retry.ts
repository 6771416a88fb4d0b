/**
 * The one retry rule of every DAM node (asset-download, -export, -subscribe, -upload and
 * asset-hot-folder): which failures are worth another try, how long to wait, and the wait itself.
 *
 * - Transient, tried again: `network`, `timeout`, HTTP 449/503 "busy" (the vendor's preview
 *   server answers 449 to streaming calls under load), and an `auth` error of a failed automatic
 *   login (LOGIN_FAILED: the login server was busy, slow or away, or another login is pending;
 *   the session waits and logs in again).
 * - A gateway's answer (nginx, a load balancer in front of the server): 502 (it could not reach the
 *   server, e.g. while Tomcat restarts) for every call; 504 (the server did not answer in time: it
 *   may still be doing the work) only for a read (download, export, a subscription's details).
 * - Never tried again: `invalid-input`, `rejected`, `permission`, a plain 401, a login whose user
 *   name or password the server refused (trying it again only counts towards a lock-out),
 *   `too-large`, `aborted`, any other HTTP status. Repeating them gives the same answer.
 * - Wait: the server's Retry-After when a busy answer has one, else 5 s doubling (5, 10, 20 ...),
 *   at most 5 minutes. A close (the AbortSignal) ends the wait at once with kind `aborted`.
 * - An upload is sent again only when its body can be sent again (a path or a Buffer, not a
 *   stream) and the server did not take it: no answer at all, a busy answer, the 401 of a failed
 *   login, a gateway's 502 before the whole file went out, or a proxy's refusal to open the tunnel
 *   to it. Any other answer stands.
 *
 * "Retries" counts the tries after the first: 2 means at most 3 sends.
 */
import { AssetApiError, type AssetOperation } from '../../api/errors';
import { canSendAgain, type UploadOptions } from '../../api/upload';
import { isBlankSetting } from './fields';
import type { Node, NodeAPI } from './node-red';
import { errorStatusText, localText } from './texts';

/** First wait when the server names none (ms); doubles on each further try. */
export const RETRY_BASE_MS = 5000;
/** Longest wait, for the backoff and for a server's Retry-After alike (ms). */
export const MAX_RETRY_WAIT_MS = 5 * 60_000;
/** Highest "Retries" the editor accepts. */
export const MAX_RETRIES = 10;
/** "Retries" of a new node (the editor's default). A flow saved before the setting has none: 0. */
export const DEFAULT_RETRIES = 2;

const BUSY = new Set([449, 503]);
/** Calls that change nothing on the server: sent again after a gateway's 504 (the server may still be working on the first). */
const READS = new Set<AssetOperation | undefined>(['download', 'exportMetadata', 'getSubscription']);

/** The plain fields of an AssetApiError, as `err.toJSON()` gives them (msg.assetError). */
export type ErrorFields = Pick<AssetApiError, 'kind' | 'status' | 'code' | 'retryAfterMs' | 'operation' | 'answerBegun'> & { credentialsRefused?: boolean };

/** True for a failure that may well go away by itself (see the file comment). */
export function isTransient(err: unknown): err is AssetApiError {
  return err instanceof AssetApiError && (transientFields(err) || gatewayRepeatable(err));
}

/** A gateway's 502 (the call did not reach the server), or its 504 on a read (see the file comment). */
function gatewayRepeatable(e: ErrorFields): boolean {
  return e.kind === 'http' && (e.status === 502 || (e.status === 504 && READS.has(e.operation)));
}

function transientFields(e: ErrorFields): boolean {
  switch (e.kind) {
    case 'network': case 'timeout': return true;
    case 'http': return e.status !== undefined && BUSY.has(e.status);
    case 'auth': return e.code === 'LOGIN_FAILED' && e.credentialsRefused !== true;
    default: return false;
  }
}

/** A gateway's answer for the server behind it: 502 (it could not reach it: stopped) or 504 (no answer in time). */
function isGatewayStatus(e: ErrorFields): boolean {
  return e.kind === 'http' && (e.status === 502 || e.status === 504);
}

/**
 * True when an upload that failed with `err` may be sent again: the body can be read again (a
 * path or a Buffer) and the server did not take the file (uploadNotTaken).
 */
export function canRepeatUpload(file: UploadOptions['file'] | undefined, err: unknown): boolean {
  return canSendAgain(file) && uploadNotTaken(err);
}

/**
 * A transient failure after which the upload may be sent again: no answer (a timeout included: the
 * server may then have it), busy, a failed login's 401, a proxy that refused the tunnel to it, or a
 * gateway's 502 before the whole file went out (after it, nginx also answers 502 when the server
 * died having read the file).
 */
function uploadNotTaken(err: unknown): boolean {
  if (!isTransient(err)) return false;
  return err.status === undefined || BUSY.has(err.status) || (err.status === 502 && err.bodySent !== true) ||
    err.code === 'LOGIN_FAILED' || err.code === 'PROXY_TUNNEL_REFUSED';
}

/**
 * An answer that is not the server's but a gateway's or proxy's in front of it: 502 and 504 (nginx
 * before a stopped or slow Tomcat), a refused CONNECT tunnel, the proxy's 407. It says nothing of
 * the server itself.
 */
export function isGatewayAnswer(err: ErrorFields): boolean {
  return err.kind === 'proxy' || err.code === 'PROXY_TUNNEL_REFUSED' || isGatewayStatus(err);
}

/**
 * An upload that failed after its whole file had gone out (bodySent), when nothing says the server
 * did not get it: a reset, a timeout or a gateway's 504 may come after the server stored it. Not
 * a busy answer, a failed login, a refused tunnel, nor a gateway's 502 (nginx could not reach the
 * server: what it answers while the server is stopped). Before the whole file went out, never.
 */
export function mayHaveTaken(err: AssetApiError): boolean {
  if (err.bodySent !== true || err.code === 'LOGIN_FAILED' || err.code === 'PROXY_TUNNEL_REFUSED') return false;
  return err.status === undefined || err.status === 504;
}

/** The server's own answer, other than a transient failure, or a download it had begun to answer: it works (an outage ends on it: shared/outage.ts). */
export function isServerAnswer(err: ErrorFields): boolean {
  return err.answerBegun === true || (err.status !== undefined && !transientFields(err) && !isGatewayAnswer(err));
}

/**
 * asset-hot-folder: a failure that holds the folder rather than failing the file (its uploads are
 * at least once: a file may go twice): what an upload may be repeated after (uploadNotTaken),
 * and a gateway's 502 or 504 (the server behind it stopped, or starting).
 */
export function holdsHotFolder(err: AssetApiError): boolean {
  return uploadNotTaken(err) || isGatewayStatus(err);
}

/**
 * asset-event-ack (reject): a failure that says the DAM server is away, nothing of the entry: a
 * transient one (isTransient) or a gateway's 502/504; not a download that broke off after the
 * server had begun to answer (answerBegun). `fields`: msg.assetError as the nodes set it.
 */
export function serverAway(e: ErrorFields): boolean {
  return e.answerBegun !== true && (transientFields(e) || isGatewayStatus(e));
}

/** `value` (msg.assetError, set by any flow) as error fields, or undefined when it is not an object with a kind. */
export function errorFields(value: unknown): ErrorFields | undefined {
  const e = value as ErrorFields | null | undefined;
  return typeof e === 'object' && e !== null && typeof e.kind === 'string' ? e : undefined;
}

/** Wait before try `retry` (1 = the first retry): the server's Retry-After, else 5 s doubling; at most 5 min. */
export function retryDelayMs(err: unknown, retry: number, baseMs = RETRY_BASE_MS): number {
  const retryAfter = (err as ErrorFields | undefined)?.retryAfterMs; // an AssetApiError, or its fields (msg.assetError)
  const wait = typeof retryAfter === 'number' && Number.isFinite(retryAfter) ? retryAfter : baseMs * 2 ** Math.max(0, retry - 1);
  return Math.min(Math.max(0, wait), MAX_RETRY_WAIT_MS);
}

/** One wait before a retry, as shown to the user. */
export interface RetryWait {
  /** 1 for the first retry. */
  retry: number;
  retries: number;
  delayMs: number;
  error: AssetApiError;
}

export interface RetryOptions {
  /** Tries after the first (0 = none). */
  retries: number;
  /** Ends a wait at once (kind `aborted`); no try starts once it is aborted. */
  signal?: AbortSignal;
  /** First backoff (ms); tests make it short. Default {@link RETRY_BASE_MS}. */
  baseMs?: number;
  /** Which failures are tried again. Default {@link isTransient}. */
  canRepeat?: (err: unknown) => boolean;
  /** Called before each wait (e.g. to show `retry 1/2 in 5 s`). */
  onWait?: (wait: RetryWait) => void;
}

/** Resolves after `ms`, or rejects with kind `aborted` as soon as `signal` aborts. */
export function waitUnlessAborted(ms: number, signal: AbortSignal | undefined, operation?: AssetApiError['operation']): Promise<void> {
  const aborted = () => new AssetApiError('aborted', `${operation ? `${operation}: ` : ''}aborted while waiting to retry`, { operation });
  if (signal?.aborted) return Promise.reject(aborted());
  return new Promise((resolve, reject) => {
    const onAbort = () => { clearTimeout(timer); reject(aborted()); };
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs `work`; on a failure that `canRepeat`, waits and runs it again, at most `retries` more times. */
export async function withRetries<T>(work: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const canRepeat = options.canRepeat ?? isTransient;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work(attempt);
    } catch (err) {
      const retry = attempt;
      if (retry > options.retries || options.signal?.aborted || !canRepeat(err) || !(err instanceof AssetApiError)) throw err;
      const delayMs = retryDelayMs(err, retry, options.baseMs);
      options.onWait?.({ retry, retries: options.retries, delayMs, error: err });
      await waitUnlessAborted(delayMs, options.signal, err.operation);
    }
  }
}

/**
 * The editor's "Retries" (`config.retries`): a whole number from 0 to {@link MAX_RETRIES}. A
 * node saved before the setting existed has none and keeps its old behaviour: 0.
 * @throws AssetApiError invalid-input naming the setting
 */
export function retriesSetting(value: unknown): number {
  if (isBlankSetting(value)) return 0;
  // Digits only (spaces around allowed), as the editor's DamEditor.validateRetries checks.
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (Number.isInteger(n) && n >= 0 && n <= MAX_RETRIES) return n;
  throw new AssetApiError('invalid-input', `retries: Retries must be a whole number from 0 to ${MAX_RETRIES}, got ${JSON.stringify(String(value).slice(0, 20))}`,
    { field: 'retries' });
}

const RETRY_STATUS = 'retry __retry__/__retries__ in __seconds__ s (__reason__)';

/** `retry 1/2 in 5 s (network: connection refused)`, from the node's catalogue (`dam.retry.status`): why, at once. */
export function retryStatusText(RED: NodeAPI | undefined, wait: RetryWait): string {
  return localText(RED, 'dam.retry.status', RETRY_STATUS,
    { retry: wait.retry, retries: wait.retries, seconds: Math.ceil(wait.delayMs / 1000), reason: errorStatusText(RED, wait.error) });
}

/**
 * Retry options for one message of a node: its Retries setting, the request's AbortSignal (a close
 * ends the wait), and a yellow `retry 1/2 in 5 s` status during each wait.
 */
export function nodeRetry(RED: NodeAPI, node: Node, retries: unknown, signal: AbortSignal, extra: Partial<RetryOptions> = {}): RetryOptions {
  return {
    retries: retriesSetting(retries),
    signal,
    ...extra,
    onWait: (wait) => {
      node.status({ fill: 'yellow', shape: 'ring', text: retryStatusText(RED, wait) });
      extra.onWait?.(wait);
    }
  };
}

