/**
 * Big transfers on a worker thread. In a process with a large heap (Node-RED holds ~30 MB of
 * live objects) every MiB moved on the main thread drives V8's garbage collection of that whole
 * heap (the socket and file buffers count as external memory: a full mark-compact every ~100 ms
 * during a transfer, measured with --trace-gc). In a worker the same buffers live in a small heap
 * of their own; the caller's thread only sees a few progress messages.
 *
 * The worker runs the same AssetClient code (src/api/transfer-worker.ts) with the cookie the
 * caller's session holds at the start of the call; the caller keeps the session (renewal after
 * a 401 happens on its side). Knows nothing of the API itself.
 */
import { Worker } from 'worker_threads';
import * as fsp from 'fs/promises';
import * as path from 'path';
import { AssetApiError, type AssetErrorKind, type AssetOperation } from './errors';
import type { TransferProgress } from './transfer';

/** What a worker is asked to do: a client method, with options that survive structured cloning. */
export interface ThreadJob {
  method: 'upload' | 'downloadToFile';
  /** Client options (no agent, no login: the worker never logs in). */
  client: Record<string, unknown>;
  /** The method's options without signal and onProgress. */
  opts: Record<string, unknown>;
}

/** A worker's answer about one call. */
export type ThreadMessage =
  | { id: number; progress: TransferProgress }
  /** A download's temporary file, before the worker creates it. */
  | { id: number; temporary: string }
  | { id: number; result: unknown }
  | { id: number; error: Record<string, unknown> };

interface Call {
  operation: AssetOperation;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  onProgress?: (p: TransferProgress) => void;
  detach: () => void;
  /** The download's temporary file, once the worker has named it: removed here if the worker dies. */
  temporary?: string;
}

const WORKER_FILE = path.join(__dirname, 'transfer-worker.js');

/** One lazily started worker shared by the calls of one client. */
export class TransferThread {
  private worker: Worker | undefined;
  private readonly calls = new Map<number, Call>();
  private nextId = 1;
  private closed = false;

  /** False once closed: calls then run on the caller's thread. */
  get open(): boolean { return !this.closed; }

  /**
   * Runs `job` in the worker. Progress goes to `onProgress`; `signal` aborts the call there.
   * Errors come back as AssetApiError with the worker's kind, message and details.
   */
  run<T>(operation: AssetOperation, job: ThreadJob, signal?: AbortSignal, onProgress?: Call['onProgress']): Promise<T> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => worker.postMessage({ id, abort: true });
      signal?.addEventListener('abort', onAbort, { once: true });
      const detach = (): void => signal?.removeEventListener('abort', onAbort);
      this.calls.set(id, { operation, resolve: resolve as (value: unknown) => void, reject, onProgress, detach });
      worker.ref();
      try {
        worker.postMessage({ id, job });
      } catch (err) {
        this.settle(id);
        reject(err);
      }
    });
  }

  /** No new calls; the worker stops once the calls in flight have ended. */
  close(): void {
    this.closed = true;
    if (this.calls.size === 0) this.stop();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    // (The worker gets a copy of the caller's environment as it is now: a client made there reads
    // its http_proxy / no_proxy then, as the caller's client did when it was made.)
    const worker = new Worker(WORKER_FILE);
    worker.on('message', (m: ThreadMessage) => this.onMessage(m));
    // An uncaught error stops the worker: its calls fail once it has exited (nothing of theirs
    // runs any more, so a temporary file removed then stays removed).
    let error: string | undefined;
    worker.on('error', (err) => { error = err.message; });
    worker.on('exit', (code) => void this.fail(worker, error ?? `exited with code ${code}`));
    this.worker = worker;
    return worker;
  }

  private stop(): void {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) void worker.terminate();
  }

  private onMessage(m: ThreadMessage): void {
    const call = this.calls.get(m.id);
    if (!call) return;
    if ('progress' in m) {
      try { call.onProgress?.(m.progress); } catch { /* a failing progress callback must not break the transfer */ }
      return;
    }
    if ('temporary' in m) { call.temporary = m.temporary; return; }
    this.settle(m.id);
    if ('result' in m) call.resolve(m.result);
    else call.reject(errorFromThread(call.operation, m.error));
  }

  private settle(id: number): void {
    this.calls.get(id)?.detach();
    this.calls.delete(id);
    if (this.calls.size > 0) return;
    if (this.closed) this.stop();
    else this.worker?.unref(); // an idle worker never keeps the process alive
  }

  /**
   * The worker died: every call in it fails as a network error, once the temporary file of a
   * download it was writing is removed (the worker's own clean-up never ran).
   */
  private async fail(worker: Worker, reason: string): Promise<void> {
    if (this.worker !== worker) return; // stopped on purpose
    this.worker = undefined;
    await Promise.all([...this.calls].map(async ([id, call]) => {
      this.settle(id);
      if (call.temporary !== undefined) await fsp.rm(call.temporary, { force: true }).catch(() => undefined);
      call.reject(new AssetApiError('network', `${call.operation}: the transfer thread stopped (${reason})`, { operation: call.operation }));
    }));
  }
}

const KINDS: AssetErrorKind[] = ['auth', 'permission', 'rejected', 'http', 'network', 'timeout', 'invalid-input', 'aborted', 'too-large', 'proxy'];

/** An AssetApiError rebuilt from its JSON form (the worker's errors carry no cookie: its client redacts them). */
export function errorFromThread(operation: AssetOperation, e: Record<string, unknown>): AssetApiError {
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const kind = KINDS.includes(e.kind as AssetErrorKind) ? e.kind as AssetErrorKind : 'network';
  return new AssetApiError(kind, text(e.message) ?? `${operation}: failed`, {
    operation: (text(e.operation) as AssetOperation | undefined) ?? operation,
    status: typeof e.status === 'number' ? e.status : undefined,
    serverMessage: text(e.serverMessage),
    field: text(e.field),
    code: text(e.code),
    retryAfterMs: typeof e.retryAfterMs === 'number' ? e.retryAfterMs : undefined,
    bodySent: e.bodySent === true ? true : undefined,
    answerBegun: e.answerBegun === true ? true : undefined
  });
}
