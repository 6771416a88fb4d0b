/**
 * Plumbing of one call: abort linkage, an inactivity timeout, byte counting and
 * progress reports. Knows nothing of the API itself.
 */
import { Transform, type Readable, type TransformCallback } from 'stream';

/** The longest delay Node's setTimeout takes (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One call's abort signal: fires when the caller's signal aborts or when nothing
 * moved for `timeoutMs` (an inactivity timeout: each chunk sent or received
 * restarts it, so a long transfer that keeps moving never times out).
 */
export class CallControl {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  timedOut = false;

  constructor(private readonly userSignal: AbortSignal | undefined, public timeoutMs: number) {
    if (userSignal) userSignal.addEventListener('abort', this.onUserAbort, { once: true });
    this.arm();
  }

  /** The signal given to the HTTP request. */
  get signal(): AbortSignal { return this.controller.signal; }

  get userAborted(): boolean { return this.userSignal?.aborted === true; }

  /** Something moved: restart the inactivity timer. */
  ping(): void { this.timer?.refresh(); }

  /** Changes the inactivity limit from now on (e.g. to wait for an ingest job). */
  setTimeout(ms: number): void {
    this.timeoutMs = ms;
    this.arm();
  }

  /** Aborts the request (e.g. its body is no longer wanted). */
  abort(): void { this.controller.abort(); }

  /** The call is over: stop the timer and let go of the caller's signal. */
  dispose(): void {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.userSignal?.removeEventListener('abort', this.onUserAbort);
  }

  private readonly onUserAbort = (): void => { this.controller.abort(); };

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.finished || !(this.timeoutMs > 0)) return;
    // Node fires a longer timer after 1 ms (with a warning): past its limit, wait as long as it can.
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, Math.min(this.timeoutMs, MAX_TIMER_MS));
  }
}

/** Progress of a transfer. `total` is undefined when the length is not known. */
export interface TransferProgress {
  /** Bytes of the file sent or received so far. */
  bytes: number;
  /** Length of the file when known. */
  total?: number;
}

/**
 * Minimum time between two progress reports to the caller (the last one is always reported).
 * The nodes' status shows them at most every STATUS_INTERVAL_MS (src/nodes/shared/texts.ts).
 */
export const PROGRESS_INTERVAL_MS = 100;

/**
 * Buffer size of the file streams and the counter on a transfer's path. Node's defaults
 * (16 KiB for streams, 64 KiB for file reads) make every 64 KiB socket chunk fill a buffer,
 * so the socket is paused and resumed and the file written chunk by chunk; at 1 MiB the
 * chunks flow and the file stream writes several at once (writev).
 */
export const TRANSFER_HIGH_WATER_MARK = 1024 * 1024;

/**
 * A pass-through stream that counts bytes, restarts the call's inactivity timer,
 * reports progress (throttled) and, at the end, checks the count against the
 * expected length.
 */
export class ByteCounter extends Transform {
  bytes = 0;
  private lastReport = 0;

  constructor(
    private readonly total: number | undefined,
    private readonly hooks: {
      onChunk?: () => void;
      onProgress?: (p: TransferProgress) => void;
      /** Called when the source ended; returns an error to fail the stream (e.g. a short body). */
      onEnd?: (bytes: number) => Error | undefined;
    }
  ) {
    super({ highWaterMark: TRANSFER_HIGH_WATER_MARK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.hooks.onChunk?.();
    const now = Date.now();
    if (now - this.lastReport >= PROGRESS_INTERVAL_MS) {
      this.lastReport = now;
      this.report();
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    const failure = this.hooks.onEnd?.(this.bytes);
    if (failure) return callback(failure);
    this.report();
    callback();
  }

  private report(): void {
    if (!this.hooks.onProgress) return;
    try {
      this.hooks.onProgress(this.total === undefined ? { bytes: this.bytes } : { bytes: this.bytes, total: this.total });
    } catch {
      // A failing progress callback must not break the transfer.
    }
  }
}

/**
 * Reads a stream until it ends or more than `limit` bytes arrived, then pauses it.
 * The chunks read are returned so they can be replayed; `ended` says whether that was all.
 */
export function peek(stream: Readable, limit: number, onChunk?: () => void): Promise<{ chunks: Buffer[]; ended: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      onChunk?.();
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit) {
        cleanup();
        stream.pause();
        resolve({ chunks, ended: false });
      }
    };
    const onEnd = (): void => { cleanup(); resolve({ chunks, ended: true }); };
    const onError = (err: unknown): void => { cleanup(); reject(err); };
    const onClose = (): void => {
      cleanup();
      const err = Object.assign(new Error('stream closed before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
      reject(err);
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('close', onClose);
  });
}

/** Yields a buffer in slices so that its upload reports progress. */
export function* slices(buffer: Buffer, size = 256 * 1024): Generator<Buffer> {
  for (let offset = 0; offset < buffer.length; offset += size) yield buffer.subarray(offset, offset + size);
}
