/**
 * Download (spec 4.3): the request and its answer checks, then the body into a Buffer (bounded),
 * a stream, or a file written atomically. A body sent as a file is never taken for an error.
 */
import type { AxiosResponse } from 'axios';
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import * as path from 'path';
import type { Readable } from 'stream';
import { pipeline } from 'stream/promises';
import { type ApiCalls, type CallOptions, callbackOf } from './calls';
import { AssetApiError, invalidInput, type AssetOperation } from './errors';
import { errorForFailedAnswer, errorForLocalFile, formatSize, isFailedAnswer, isFileSystemError, tryParseJson } from './error-mapping';
import { ifExistsOf, placeFile, replaceableTarget, sweepTemporaries, temporaryDone, temporaryNameFor, type IfExists } from './file-placement';
import { checkPathLength, filenameFromContentDisposition } from './filename';
import { headerOf, isJsonType, plainHeaders, sentAsFile, statusError } from './json-answer';
import { ByteCounter, CallControl, TRANSFER_HIGH_WATER_MARK, peek, type TransferProgress } from './transfer';
import { API_PATHS } from './types';
import { integerField, localPathField, validateFuid, validateRrn } from './validate';

/** Options of the download calls (spec 4.3). */
export interface DownloadOptions extends CallOptions {
  /** Asset id. */
  fuid: number | string;
  /** Default -1 (latest). */
  rrn?: number | string;
  /** Sent as `collectionId` when given. */
  collectionId?: number | string;
  /** Called as the file arrives (at most every 100 ms, and once at the end). */
  onProgress?: (p: TransferProgress) => void;
}

/** Options of {@link AssetClient.downloadToBuffer}. */
export interface BufferDownloadOptions extends DownloadOptions {
  /** Overrides the client's maxBufferBytes for this call. */
  maxBytes?: number;
}

/** What the server said about a downloaded file. */
export interface DownloadInfo {
  /** File name from Content-Disposition, sanitized (no separators, no `..`); undefined if none. */
  filename?: string;
  /** Content-Type of the file. */
  contentType?: string;
  /** Content-Length when sent. */
  length?: number;
  /** Response headers (lower-case names), without Set-Cookie. */
  headers: Record<string, string>;
}

/** How much of a JSON download or an error body is read to look for `success:false`. */
const PEEK_LIMIT = 64 * 1024;

interface OpenDownload {
  info: DownloadInfo;
  body: ByteCounter;
  control: CallControl;
}

/**
 * Download into memory, at most maxBytes. With a Content-Length the Buffer is allocated once
 * and filled as the file arrives, so memory peaks at about one file size; a larger
 * Content-Length fails before the body is read. Without one (chunked) the limit is checked as
 * the file arrives.
 */
export async function downloadToBuffer(calls: ApiCalls, opts: BufferDownloadOptions, maxBytes: number): Promise<DownloadInfo & { data: Buffer }> {
  const operation: AssetOperation = 'download';
  const { info, body, control } = await openDownload(calls, operation, opts, maxBytes);
  try {
    let data: Buffer;
    if (info.length !== undefined) {
      data = Buffer.allocUnsafe(info.length);
      let filled = 0;
      for await (const chunk of body) {
        const piece = chunk as Buffer;
        // The HTTP parser stops at Content-Length; this guards the copy all the same.
        if (filled + piece.length > data.length) throw new AssetApiError('network', `${operation}: the server sent more than its Content-Length of ${info.length} bytes`, { operation, answerBegun: true });
        piece.copy(data, filled);
        filled += piece.length;
      }
      // A short body fails in the counter (ByteCounter onEnd), so `data` is never returned part-filled.
    } else {
      const chunks: Buffer[] = [];
      let total = 0;
      for await (const chunk of body) {
        total += (chunk as Buffer).length;
        if (total > maxBytes) throw tooLargeForBuffer(operation, maxBytes, total, false);
        chunks.push(chunk as Buffer);
      }
      data = Buffer.concat(chunks, total);
    }
    return { ...info, data };
  } catch (err) {
    body.destroy();
    throw calls.failure(operation, err, control);
  } finally {
    control.dispose();
  }
}

/**
 * Download to a file, atomically (temporary name in the same folder, renamed when complete). Creates folders.
 * When `path` ends with a separator or is an existing folder, the file is saved in it under the
 * server's (sanitized) file name, else `asset-<fuid>`. A failed download leaves no file behind.
 * `onTemporaryFile` is told the temporary file's path before it is created (a transfer thread
 * tells its caller, who removes it should the thread die before it could).
 */
export async function downloadToFile(calls: ApiCalls, opts: DownloadOptions & { path: string; ifExists?: IfExists },
  onTemporaryFile?: (file: string) => void): Promise<DownloadInfo & { path: string; bytes: number }> {
  const operation: AssetOperation = 'download';
  if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid and path', operation);
  const requested = localPathField('path', opts.path, operation);
  checkPathLength(path.resolve(requested), operation); // before the transfer, not at its end
  // In folder mode the name is the server's: an existing file of that name is kept unless the
  // caller says otherwise. A path that names the file is the caller's say: replaced.
  const ifExists = ifExistsOf(opts.ifExists, 'keep-both', operation);
  // A path naming the file: refused before the transfer, not after it; a link's target found once.
  const named = /[\\/]$/.test(requested) ? undefined : await replaceableTarget(path.resolve(requested), operation);
  const { info, body, control } = await openDownload(calls, operation, opts);
  // Until pipeline() below takes over, an abort or reset must not be an unhandled 'error' event
  // (it would crash Node-RED); pipeline() still sees the stream's error and rejects with it.
  body.on('error', () => undefined);
  let target = path.resolve(requested);
  let temporary: string | undefined;
  let made: string | undefined;
  let intoFolder = false;
  try {
    try {
      intoFolder = /[\\/]$/.test(requested) || (await fsp.stat(target).catch(() => undefined))?.isDirectory() === true;
      if (intoFolder) target = path.join(target, info.filename ?? `asset-${String(opts.fuid)}`);
      await fsp.mkdir(path.dirname(target), { recursive: true });
    } catch (err) {
      throw errorForLocalFile(err, 'path', `cannot create the folder of ${target}`, operation);
    }
    // The temporary file beside the file it replaces (a link's target may be on another file system).
    if (!intoFolder) target = named ?? target;
    else if (ifExists === 'replace') target = await replaceableTarget(target, operation, false); // the server's name: no link followed
    temporary = temporaryNameFor(target);
    made = temporary;
    onTemporaryFile?.(temporary);
    try {
      await pipeline(body, fs.createWriteStream(temporary, { flags: 'wx', highWaterMark: TRANSFER_HIGH_WATER_MARK }));
    } catch (err) {
      if (err instanceof AssetApiError) throw err;
      if (isFileSystemError(err)) throw errorForLocalFile(err, 'path', `cannot write ${temporary}`, operation);
      throw brokeOff(calls.failure(operation, err, control), body.bytes);
    }
    await sweepTemporaries(temporary);
    target = await placeFile(temporary, target, intoFolder ? ifExists : 'replace', operation, !intoFolder);
    temporary = undefined;
    return { ...info, path: target, bytes: body.bytes };
  } catch (err) {
    body.destroy();
    if (temporary !== undefined) await fsp.rm(temporary, { force: true }).catch(() => undefined);
    throw err;
  } finally {
    if (made !== undefined) temporaryDone(made);
    control.dispose();
  }
}

/**
 * Sends a download request and checks the answer; returns the body as a counting stream.
 * With `maxBytes`, a larger Content-Length fails before any of the body is read.
 */
export async function openDownload(calls: ApiCalls, operation: AssetOperation, opts: DownloadOptions, maxBytes?: number): Promise<OpenDownload> {
  if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid', operation);
  const params: Record<string, string> = { fuid: validateFuid(opts.fuid, operation), rrn: validateRrn(opts.rrn, operation) };
  if (opts.collectionId !== undefined && opts.collectionId !== null && opts.collectionId !== '') {
    params.collectionId = integerField('collectionId', opts.collectionId, 0, undefined, operation);
  }
  const onProgress = callbackOf('onProgress', opts.onProgress, operation);
  const control = calls.control(operation, opts.signal, calls.timeoutOf(opts.timeout, operation));
  let response: AxiosResponse | undefined;
  try {
    response = await calls.send(operation, control, {
      method: 'GET',
      url: calls.url(API_PATHS.download),
      params,
      responseType: 'stream',
      // Byte-exact files: no transparent decompression; -1 (no limit) keeps the raw response stream.
      decompress: false,
      maxContentLength: -1,
      headers: { 'Accept-Encoding': 'identity', Accept: '*/*' }
    });
    const raw = response.data as Readable;
    const counterRef: { counter?: ByteCounter } = {};
    // Attached at once so an error at any point (abort, reset) is handled, and never escapes raw.
    raw.on('error', (err) => {
      const counter = counterRef.counter;
      counter?.destroy(brokeOff(calls.failure(operation, err, control), counter.bytes));
    });

    const contentType = headerOf(response, 'content-type');
    if (response.status < 200 || response.status >= 300) {
      const { chunks } = await peek(raw, PEEK_LIMIT, () => control.ping()).catch(() => ({ chunks: [] as Buffer[] }));
      raw.destroy();
      throw statusError(calls.context(operation), response.status, Buffer.concat(chunks).toString('utf8'), response);
    }
    const lengthHeader = headerOf(response, 'content-length');
    const length = lengthHeader !== undefined && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
    if (maxBytes !== undefined && length !== undefined && length > maxBytes) {
      raw.destroy();
      throw tooLargeForBuffer(operation, maxBytes, length, true);
    }
    let replay: { chunks: Buffer[]; ended: boolean } = { chunks: [], ended: false };
    if (!sentAsFile(response) && isJsonType(contentType)) {
      // A JSON body not sent as a file may be the server's success:false answer.
      replay = await peek(raw, PEEK_LIMIT, () => control.ping()); // bytes arriving keep the inactivity timeout at bay, as below
      if (replay.ended) {
        const parsed = tryParseJson(Buffer.concat(replay.chunks).toString('utf8'));
        if (parsed && isFailedAnswer(parsed.value)) throw errorForFailedAnswer(calls.context(operation), response.status, parsed.value);
      }
    }

    const info: DownloadInfo = { headers: plainHeaders(response), length, contentType };
    const filename = filenameFromContentDisposition(headerOf(response, 'content-disposition'));
    if (filename !== undefined) info.filename = filename;
    if (length === undefined) delete info.length;
    if (contentType === undefined) delete info.contentType;

    // Without Content-Length and chunking the body ends when the connection does: complete only
    // on a clean end (FIN), not when the connection was reset (a chunked body that misses its
    // last chunk already fails in Node's HTTP parser). Not for a chunked body: its socket is kept
    // alive for the next call, and a listener per call would pile up on it.
    const chunked = /\bchunked\b/i.test(headerOf(response, 'transfer-encoding') ?? '');
    const reset = length === undefined && !chunked ? watchForReset(raw, response) : undefined;
    const counter = new ByteCounter(length, {
      onChunk: () => control.ping(),
      onProgress,
      onEnd: (bytes) => length !== undefined && bytes !== length
        ? new AssetApiError('network', `${operation}: the download ended after ${bytes} of ${length} bytes`, { operation, answerBegun: true })
        : reset?.seen
          ? new AssetApiError('network', `${operation}: the connection was reset after ${bytes} bytes, before the download ended cleanly`, { operation, answerBegun: true })
          : undefined
    });
    counterRef.counter = counter;
    counter.once('close', () => {
      reset?.stop();
      // Given up before the end (caller destroyed it, or it failed): stop the request too.
      if (!raw.readableEnded) control.abort();
      control.dispose();
    });
    for (const chunk of replay.chunks) counter.write(chunk);
    if (replay.ended) counter.end();
    else raw.pipe(counter);
    return { info, body: counter, control };
  } catch (err) {
    (response?.data as Readable | undefined)?.destroy?.();
    control.dispose();
    const failure = calls.failure(operation, err, control);
    // Broke off while a JSON body was peeked at (its bytes not counted: a stall is not marked).
    throw response !== undefined && response.status >= 200 && response.status < 300 ? brokeOff(failure, 0) : failure;
  }
}

/**
 * A failure after the server's 2xx answer had begun (its status and headers came): still transient
 * (the node's Retries send it again), but not a sign the server is away (asset-event-in's hold,
 * retry.ts serverAway). A stall before any byte of the body is: a server whose storage hangs
 * answers every download with headers and then nothing.
 */
function brokeOff(err: AssetApiError, bodyBytes: number): AssetApiError {
  const begun = err.kind === 'network' || (err.kind === 'timeout' && bodyBytes > 0);
  return begun ? new AssetApiError(err.kind, err.message, { ...err, answerBegun: true }) : err;
}

/** Notes a reset or error of the connection under an answer (read until the connection closes); `stop` removes the watch. */
function watchForReset(raw: Readable, response: AxiosResponse): { seen: boolean; stop: () => void } {
  const socket = (raw as Readable & { socket?: NodeJS.EventEmitter }).socket;
  const request = response.request as NodeJS.EventEmitter | undefined;
  const state = {
    seen: false,
    stop: () => {
      socket?.removeListener('error', note);
      request?.removeListener?.('error', note);
    }
  };
  const note = () => { state.seen = true; };
  socket?.on('error', note);
  request?.on?.('error', note);
  return state;
}

function tooLargeForBuffer(operation: AssetOperation, maxBytes: number, bytes: number, declared: boolean): AssetApiError {
  const size = declared
    ? `is ${formatSize(bytes)} (Content-Length), above the limit of ${formatSize(maxBytes)}`
    : `(sent without Content-Length) passed the limit of ${formatSize(maxBytes)}`;
  return new AssetApiError('too-large',
    `${operation}: the file ${size} for a download into memory (Buffer); ` +
    'download big assets in file mode (asset-download output "file", or downloadToFile), or raise the limit (maxBytes)',
    { operation });
}
