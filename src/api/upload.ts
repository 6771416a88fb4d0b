/**
 * Upload (spec 4.2): a streaming multipart POST. The file goes from disk (or the given stream
 * or Buffer) to the socket without being held in memory; Content-Length is sent when the
 * length is known; the file part comes after the other fields.
 */
import type { AxiosResponse } from 'axios';
import FormData from 'form-data';
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import type * as http from 'http';
import * as mimeTypes from 'mime-types';
import * as path from 'path';
import { PassThrough, Readable } from 'stream';
import { type ApiCalls, type CallOptions, callbackOf } from './calls';
import { AssetApiError, invalidInput, type AssetOperation } from './errors';
import { errorForLocalFile } from './error-mapping';
import { sanitizeFilename } from './filename';
import { closeIdleSockets, isStaleConnection } from './stale-connection';
import { readJsonAnswer } from './json-answer';
import { onPipedInto, PooledFileReader, returnBuffersWhenSent } from './pooled-file-reader';
import { ByteCounter, TRANSFER_HIGH_WATER_MARK, slices, type TransferProgress } from './transfer';
import { API_PATHS, type UploadResult } from './types';
import { integerField, localPathField, textField, validateUploadFields } from './validate';
import { isPlainObject } from './values';

/** Options of {@link AssetClient.upload} (spec 4.2). */
export interface UploadOptions extends CallOptions {
  /** The file: a path on disk, a Readable stream, or a Buffer. */
  file: { path: string } | { stream: Readable; length?: number } | { buffer: Buffer };
  /** Name of the stored file; default the file's base name (required for stream/buffer without name: `upload.bin`). */
  name?: string;
  /** Destination folder path on the server. destination or destinationFuid is required. */
  destination?: string;
  /** Asset id of the destination folder (used when destination is not given); 0 is the spec's default. */
  destinationFuid?: number;
  /** Collection the added files are assigned to. */
  collectionId?: number;
  /** Wait for the ingest job to finish before answering. Server default false. */
  wait?: boolean;
  /** Minutes the server waits for the ingest when wait is true (a number, fractions allowed). Server default 60. */
  waitInMinutes?: number;
  /** Expand a zip file before ingest. Server default true. */
  expandZip?: boolean;
  /** MIME type sent for the file part; default from the name, else application/octet-stream. */
  contentType?: string;
  /** Called as the file is sent (at most every 100 ms, and once at the end). */
  onProgress?: (p: TransferProgress) => void;
}

/** Upload result plus the fields read tolerantly from it. */
export interface UploadOutcome {
  /** The server's JSON body as received (spec 2.4). */
  result: UploadResult;
  /** Asset ids of the added assets (empty when the server did not list them, e.g. wait false). */
  fuids: number[];
  /** Revision, kept as a string when it exceeds 2^53. */
  rrn?: number | string;
  /** Ingest job id when wait is false, read from `jobId`, `jobid`, `job_id`, `job.id` or `data.jobId`. */
  jobId?: string;
}

/** Server default of waitInMinutes (spec 4.2), used to stretch the timeout of `wait` uploads. */
const DEFAULT_WAIT_MINUTES = 60;

interface UploadSource {
  stream: Readable;
  length?: number;
  filename: string;
}

/**
 * Uploads; on a 401 with automatic login set up, logs in and sends the file once more (a file
 * path or a Buffer can be sent again, a stream cannot: that is an `auth` error saying so).
 * `attempt` sends once (default {@link uploadOnce}; the client may send from its transfer thread).
 */
export async function upload(calls: ApiCalls, opts: UploadOptions,
  attempt: (opts: UploadOptions) => Promise<UploadOutcome> = (o) => uploadOnce(calls, o)): Promise<UploadOutcome> {
  const session = calls.session;
  const usedHeader = session.cookieHeader;
  try {
    return await attempt(opts);
  } catch (err) {
    if (!(err instanceof AssetApiError) || err.kind !== 'auth' || err.status !== 401 || !session.canLogin) throw err;
    await session.renew(usedHeader, 'upload', opts.signal ?? undefined);
    if (!canSendAgain(opts.file)) {
      throw new AssetApiError('auth',
        'upload: the session had expired (HTTP 401) and a new one was obtained, but the file was given as a stream, ' +
        'which cannot be sent twice: send the upload again (a file path or a Buffer is repeated automatically).',
        { operation: 'upload', status: 401 });
    }
    const is401 = (err: unknown) => err instanceof AssetApiError && err.kind === 'auth' && err.status === 401;
    const repeatHeader = session.cookieHeader;
    try {
      return await attempt(opts);
    } catch (again) {
      if (!is401(again)) throw again;
    }
    // A cookie from the shared store the server had ended: once more after a login (session.ts).
    if (await session.renewAdopted(repeatHeader, 'upload', opts.signal ?? undefined)) {
      try {
        return await attempt(opts);
      } catch (third) {
        if (!is401(third)) throw third;
      }
    }
    throw session.refused('upload');
  }
}

/** A file path or a Buffer can be read and sent twice; a stream cannot. */
export function canSendAgain(file: UploadOptions['file'] | undefined): boolean {
  return typeof file === 'object' && file !== null && ('path' in file || 'buffer' in file);
}

/** Thrown by an attempt sent on a keep-alive connection the server had already closed. */
class StaleConnection extends Error {}

/**
 * One upload on this thread; sent once more on a new connection when the pooled one it went out
 * on turns out to be closed by the server (see stale-connection.ts).
 */
export async function uploadOnce(calls: ApiCalls, opts: UploadOptions): Promise<UploadOutcome> {
  try {
    return await uploadAttempt(calls, opts, canSendAgain(opts?.file));
  } catch (err) {
    if (!(err instanceof StaleConnection)) throw err;
    return uploadAttempt(calls, opts, false);
  }
}

async function uploadAttempt(calls: ApiCalls, opts: UploadOptions, mayRepeat: boolean): Promise<UploadOutcome> {
  const operation: AssetOperation = 'upload';
  if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with file and destination', operation);
  const fields = validateUploadFields(opts, operation);
  const contentType = opts.contentType === undefined || opts.contentType === '' ? undefined : textField('contentType', opts.contentType, operation);
  const onProgress = callbackOf('onProgress', opts.onProgress, operation);
  const timeout = calls.timeoutOf(opts.timeout, operation);
  const waitMs = fields.some(([name, value]) => name === 'wait' && value === 'true')
    ? (opts.waitInMinutes === undefined ? DEFAULT_WAIT_MINUTES : Number(opts.waitInMinutes)) * 60000
    : 0;
  const control = calls.control(operation, opts.signal, timeout);
  let source: UploadSource | undefined;
  let counter: ByteCounter | undefined;
  let body: PassThrough | undefined;
  let sourceError: unknown;
  let failed = true;
  let request: { writableFinished?: boolean } | undefined;
  try {
    source = await openUploadSource(opts.file, opts.name, operation);
    const expected = source.length;
    counter = new ByteCounter(expected, {
      onChunk: () => control.ping(),
      onProgress,
      onEnd: (bytes) => {
        if (expected !== undefined && bytes !== expected) {
          return invalidInput('file', `the stream gave ${bytes} bytes but its length was given as ${expected}`, operation);
        }
        // The whole file is out: now the server may ingest for up to waitInMinutes.
        if (waitMs > 0 && timeout > 0) control.setTimeout(timeout + waitMs);
        return undefined;
      }
    });
    const { stream } = source;
    stream.on('error', (err) => { sourceError ??= err; counter?.destroy(err); });
    counter.on('error', (err) => { sourceError ??= err; });
    stream.pipe(counter);

    const filename = opts.name === undefined || opts.name === '' ? source.filename : String(opts.name);
    const partType = contentType ?? (mimeTypes.lookup(filename) || 'application/octet-stream');
    const multipart = multipartBody(fields, counter, filename, partType, expected);
    body = multipart.body;
    if (stream instanceof PooledFileReader) returnBuffersWhenSent(body, stream);
    onPipedInto(body, (destination) => { request ??= destination as { writableFinished?: boolean }; });

    let response: AxiosResponse;
    const usedHeader = calls.session.cookieHeader;
    try {
      response = await calls.http.request({
        method: 'POST',
        url: calls.url(API_PATHS.upload),
        data: body,
        headers: calls.headers(multipart.headers),
        signal: control.signal,
        responseType: 'text',
        maxRedirects: 0,
        // -1 (unbounded) rather than Infinity: axios then pipes the body straight into the
        // request (no counting stage between), which returnBuffersWhenSent relies on.
        maxBodyLength: -1,
        maxContentLength: calls.maxAnswerBytes
      });
    } catch (err) {
      if (sourceError !== undefined && !control.timedOut && !control.userAborted) throw sourceFailure(sourceError, operation);
      if (mayRepeat && isStaleConnection(err, false) && !control.signal.aborted) { closeIdleSockets(err); throw new StaleConnection(); }
      throw calls.failure(operation, err, control);
    }
    if (response.status !== 401) calls.session.accepted(usedHeader);
    const answered = response.request as http.ClientRequest | undefined;
    if (answered && !answered.writableFinished) {
      // Answered before the whole file was sent (a redirect, 401, permission denied):
      // stop sending the rest.
      answered.destroy();
    }
    const result = readJsonAnswer(calls.context(operation), response) as UploadResult;
    failed = false;
    return uploadOutcome({ ...result, success: true });
  } catch (err) {
    // The request had handed the whole body to its connection: whatever the failure, the server
    // may have the file (asset-hot-folder: mayHaveTaken).
    throw request?.writableFinished === true && err instanceof AssetApiError ? new AssetApiError(err.kind, err.message, { ...err, bodySent: true }) : err;
  } finally {
    control.dispose();
    if (failed) body?.destroy(new Error('upload ended'));
    // On success both have ended; on failure this closes the file.
    source?.stream.destroy();
    counter?.destroy();
  }
}

/**
 * The multipart body: the fields, then the file part, as a plain stream with the form's
 * headers (and Content-Length when the file's length is known).
 */
function multipartBody(fields: Array<[string, string]>, file: Readable, filename: string, partType: string, length: number | undefined):
  { body: PassThrough; headers: Record<string, string> } {
  const form = new FormData();
  for (const [name, value] of fields) form.append(name, value);
  // The part's header is written here: form-data would send a quote in the name as %22.
  form.append('file', file, {
    header: `--${form.getBoundary()}\r\nContent-Disposition: form-data; name="file"; filename=${quotedParameter(filename)}\r\n`
      + `Content-Type: ${partType}\r\n\r\n`,
    // 0 would make form-data measure the stream; an empty file goes chunked instead.
    knownLength: length || undefined
  });

  // axios gets a plain stream with the form's headers and length set here. Given the form
  // itself it would first await form.getLength(), and an abort during that wait leaves the
  // request it creates afterwards open. Destroying this stream with an error (on failure)
  // makes axios destroy the request whenever it was created.
  const headers: Record<string, string> = {
    'Content-Type': `multipart/form-data; charset=UTF-8; boundary=${form.getBoundary()}`, Accept: 'application/json'
  };
  if (form.hasKnownLength()) headers['Content-Length'] = String(form.getLengthSync());
  const body = new PassThrough({ highWaterMark: TRANSFER_HIGH_WATER_MARK });
  body.on('error', () => undefined); // its errors are the upload's own; axios reports the request's
  form.on('error', (err: Error) => body.destroy(err));
  form.pipe(body);
  return { body, headers };
}

/**
 * A header parameter as an RFC 9110 quoted-string (`\\` and `\"` escaped), sent as UTF-8. Servlet
 * containers unescape it; form-data's default, `%22` for a quote, would reach them as `%22`.
 * CR and LF never get here (validated or sanitized names).
 */
function quotedParameter(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Reading the file failed while it was being sent: `invalid-input` for field `file`. */
function sourceFailure(err: unknown, operation: AssetOperation): AssetApiError {
  if (err instanceof AssetApiError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return new AssetApiError('invalid-input', `file: reading the file failed: ${message.slice(0, 200)}`, {
    field: 'file', operation, ...(typeof code === 'string' ? { code } : {})
  });
}

/** The file to send as a stream, with its length when known and its name. */
async function openUploadSource(file: UploadOptions['file'], name: unknown, operation: AssetOperation): Promise<UploadSource> {
  const rule = 'must be { path }, { stream, length? } or { buffer }';
  if (file === null || typeof file !== 'object') throw invalidInput('file', rule, operation);
  const fallbackName = typeof name === 'string' && name !== '' ? name : 'upload.bin';
  if ('path' in file) {
    const filePath = localPathField('file.path', file.path, operation);
    let stat: fs.Stats;
    try {
      stat = await fsp.stat(filePath);
    } catch (err) {
      throw errorForLocalFile(err, 'file', `cannot read ${filePath}`, operation);
    }
    if (!stat.isFile()) throw invalidInput('file', `${filePath} is not a regular file`, operation);
    return {
      stream: new PooledFileReader(filePath),
      length: stat.size,
      filename: sanitizeFilename(path.basename(filePath)) ?? 'upload.bin'
    };
  }
  if ('buffer' in file) {
    if (!Buffer.isBuffer(file.buffer)) throw invalidInput('file', 'buffer must be a Buffer', operation);
    return { stream: Readable.from(slices(file.buffer)), length: file.buffer.length, filename: fallbackName };
  }
  if ('stream' in file) {
    const stream = file.stream as Readable | undefined;
    if (!stream || typeof stream.pipe !== 'function' || typeof stream.on !== 'function') {
      throw invalidInput('file', 'stream must be a Readable stream', operation);
    }
    const length = file.length === undefined || file.length === null
      ? undefined : Number(integerField('file.length', file.length, 0, Number.MAX_SAFE_INTEGER, operation));
    const streamPath = (stream as Readable & { path?: unknown }).path;
    const ownName = typeof streamPath === 'string' ? sanitizeFilename(path.basename(streamPath)) : undefined;
    return { stream, length, filename: typeof name === 'string' && name !== '' ? name : ownName ?? fallbackName };
  }
  throw invalidInput('file', rule, operation);
}

/** Reads the fields of an upload answer tolerantly (spec 2.4; the job id's name is "not shown"). */
function uploadOutcome(result: UploadResult): UploadOutcome {
  const data = isPlainObject(result.data) ? result.data as Record<string, unknown> : undefined;
  const job = isPlainObject(result.job) ? result.job : undefined;
  const fuids = Array.isArray(data?.fuids) ? (data.fuids as number[]) : [];
  const outcome: UploadOutcome = { result, fuids };
  const rrn = data?.rrn;
  if (typeof rrn === 'number' || typeof rrn === 'string') outcome.rrn = rrn;
  const record = result as Record<string, unknown>;
  const jobId = [record.jobId, record.jobid, record.job_id, job?.id, data?.jobId, data?.jobid, data?.job_id]
    .find((value) => value !== undefined && value !== null && value !== '');
  if (typeof jobId === 'string' || typeof jobId === 'number') outcome.jobId = String(jobId);
  return outcome;
}
