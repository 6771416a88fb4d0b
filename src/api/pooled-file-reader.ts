/**
 * Reading a file to upload into reused buffers. fs.createReadStream allocates a fresh 1 MiB
 * buffer per chunk; a sent one is freed only at the next collection of the thread's heap, which
 * V8 starts about once per 64 MiB of such memory, so four big uploads on the transfer thread
 * kept up to that much dead memory (docs/performance.md section 5).
 *
 * A buffer goes back to the pool only once the request has handed all its bytes to the operating
 * system ({@link returnBuffersWhenSent}). Where that cannot be told (another consumer, a request
 * that failed), the buffer is left to the collector as before: never reused too early.
 */
import * as fs from 'fs';
import { Readable, type Writable } from 'stream';
import { TRANSFER_HIGH_WATER_MARK } from './transfer';

const CHUNK = TRANSFER_HIGH_WATER_MARK;
/** Buffers kept between uploads, per thread: enough for four uploads' chunks in flight. */
const POOL_MAX = 24;
const pool: Buffer[] = [];
/** Chunks read into a reused buffer and into a new one, on this thread (for tests and benches). */
export const poolCounts = { reused: 0, allocated: 0 };

function takeBuffer(): Buffer {
  const buffer = pool.pop();
  if (buffer) { poolCounts.reused++; return buffer; }
  poolCounts.allocated++;
  return Buffer.allocUnsafeSlow(CHUNK);
}

function giveBack(buffer: Buffer): void {
  if (pool.length < POOL_MAX) pool.push(buffer);
}

/** A file as a stream of chunks read into pooled buffers (each chunk a view of one buffer). */
export class PooledFileReader extends Readable {
  /** Buffers whose chunk was pushed and may still be on its way, with that chunk's length. */
  readonly lent = new Map<ArrayBufferLike, { buffer: Buffer; length: number }>();
  private fd: number | undefined;
  private position = 0;
  private reading = false;
  private closeWhenRead: (() => void) | undefined;

  constructor(readonly path: string) {
    super({ highWaterMark: CHUNK });
  }

  override _construct(callback: (err?: Error | null) => void): void {
    fs.open(this.path, 'r', (err, fd) => {
      if (!err) this.fd = fd;
      callback(err);
    });
  }

  override _read(): void {
    const buffer = takeBuffer();
    this.reading = true;
    fs.read(this.fd as number, buffer, 0, CHUNK, this.position, (err, bytes) => {
      this.reading = false;
      if (this.closeWhenRead) {
        giveBack(buffer);
        this.closeWhenRead();
        return;
      }
      if (err) {
        giveBack(buffer);
        this.destroy(err);
        return;
      }
      if (bytes === 0) {
        giveBack(buffer);
        this.push(null);
        return;
      }
      this.position += bytes;
      this.lent.set(buffer.buffer, { buffer, length: bytes });
      this.push(buffer.subarray(0, bytes));
    });
  }

  /** All bytes of this buffer's chunk have been sent: it may be read into again. */
  sent(memory: ArrayBufferLike): void {
    const entry = this.lent.get(memory);
    if (!entry) return;
    this.lent.delete(memory);
    giveBack(entry.buffer);
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    // Chunks still on their way stay lent: given back when sent, else left to the collector.
    const close = (): void => {
      const fd = this.fd;
      this.fd = undefined;
      if (fd === undefined) { callback(err); return; }
      fs.close(fd, () => callback(err));
    };
    // Closing the descriptor under a pending read could let the read hit a reused descriptor.
    if (this.reading) this.closeWhenRead = close;
    else close();
  }
}

/** What {@link returnBuffersWhenSent} reads of the stream `body` is piped into (an http.ClientRequest). */
interface SentBytes {
  readonly writableLength: number;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  readonly socket?: unknown;
}

/**
 * Gives the reader's buffers back as the request sends them. `body` is the request body the
 * reader's chunks pass through unchanged; call this before the body is piped into the request.
 * A chunk is sent when every byte the body gave the request up to its end is no longer in the
 * request's or its socket's queue (`writableLength` counts a write until the OS took it).
 */
export function returnBuffersWhenSent(body: Readable, reader: PooledFileReader): void {
  let request: SentBytes | undefined;
  let out = 0;
  const arrived = new Map<ArrayBufferLike, number>();
  const queue: Array<{ memory: ArrayBufferLike; end: number }> = [];

  const check = (): void => {
    if (!request || request.destroyed || !(request.writableFinished || request.socket)) return;
    const sent = out - (request.writableFinished ? 0 : request.writableLength);
    while (queue.length > 0 && queue[0].end <= sent) reader.sent((queue.shift() as { memory: ArrayBufferLike }).memory);
  };
  // Counted after pipe's own listener has written the chunk into the request.
  const onData = (chunk: Buffer): void => {
    out += chunk.length;
    const lent = reader.lent.get(chunk.buffer);
    if (lent) {
      const bytes = (arrived.get(chunk.buffer) ?? 0) + chunk.length;
      if (bytes >= lent.length) {
        arrived.delete(chunk.buffer);
        queue.push({ memory: chunk.buffer, end: out });
      } else {
        arrived.set(chunk.buffer, bytes);
      }
    }
    check();
  };
  onPipedInto(body, (destination) => {
    const writable = destination as unknown as Writable & SentBytes;
    if (typeof writable.writableLength === 'number' && request === undefined) {
      request = writable;
      writable.on('drain', check);
      writable.on('finish', check);
      body.on('data', onData);
    }
  });
}

/** Calls `piped` with each stream `body` is piped into (axios pipes a request body into its http.ClientRequest). */
export function onPipedInto(body: Readable, piped: (destination: NodeJS.WritableStream) => void): void {
  const pipe = body.pipe.bind(body);
  body.pipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
    const result = pipe(destination, options);
    piped(destination);
    return result;
  };
}
