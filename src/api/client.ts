/**
 * Typed client of the asset server's web API (spec sections 4.1 to 4.4, 5, 7).
 * No Node-RED dependency: usable from scripts and function nodes too.
 *
 * Signatures are a contract with the nodes (src/nodes); add, never change.
 */
import axios, { type AxiosInstance, type AxiosRequestConfig, type AxiosResponse } from 'axios';
import { EventEmitter } from 'events';
import FormData from 'form-data';
import * as mimeTypes from 'mime-types';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import * as http from 'http';
import * as https from 'https';
import * as path from 'path';
import * as tls from 'tls';
import { PassThrough, Readable } from 'stream';
import { pipeline } from 'stream/promises';
import type { Agent as HttpAgent } from 'http';
import type { Agent as HttpsAgent } from 'https';
import {
  API_PATHS,
  type SubscriptionFields, type SubscriptionResult, type SubscriptionDetails, type UploadResult, type ExportType
} from './types';
import { AssetApiError, invalidInput, type AssetOperation } from './errors';
import {
  type ErrorContext, errorForFailedAnswer, errorForFailure, errorForMalformedAnswer, errorForStatus,
  isFailedAnswer, tryParseJson
} from './error-mapping';
import { filenameFromContentDisposition, sanitizeFilename } from './filename';
import { SessionHolder, type LoginOptions } from './session';
import { TOKEN_CHAR, isPlainObject } from './values';
import { ByteCounter, CallControl, TRANSFER_HIGH_WATER_MARK, peek, slices, type TransferProgress } from './transfer';
import { TransferThread, type ThreadJob } from './transfer-thread';

export type { TransferProgress };
import {
  integerField, textField, validateFuid, validateRrn, validateSubscriptionFields, validateSubscriptionId,
  validateUploadFields
} from './validate';

/** Options of an {@link AssetClient}. */
export interface AssetClientOptions {
  /**
   * Server base URL, e.g. `http://127.0.0.1:8873`; may carry a path prefix; trailing slash optional.
   * A base URL ending in the API's context path `/review` is used as is: the calls go to
   * `<base>/api/...`, never `/review/review/...`.
   */
  baseUrl: string;
  /**
   * Session cookie: `Name=value` (sent as is), or a bare value sent as `JSESSIONID=value`.
   * A leading `Cookie:` (pasted from a browser's request headers) is dropped.
   * Empty: no Cookie header is sent (the server then answers 401, an `auth` error).
   */
  cookie: string;
  /**
   * Inactivity timeout in ms (0 = none). Default 30000. A call fails with kind `timeout`
   * when nothing is sent or received for this long; a transfer that keeps moving never
   * times out. For uploads with `wait`, waitInMinutes is added once the file is sent.
   */
  timeout?: number;
  /** Extra CA certificate(s), PEM, trusted on top of Node's built-in CAs. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Client certificate and key (PEM), for servers that ask for one. */
  cert?: string | Buffer;
  key?: string | Buffer;
  passphrase?: string;
  /** Reject servers whose certificate does not verify. Default true. */
  rejectUnauthorized?: boolean;
  /** Optional agent, e.g. a keep-alive agent. When given, the TLS options above and maxSockets are not used. */
  agent?: HttpAgent | HttpsAgent;
  /** Most sockets open to the server at once (per protocol); more calls wait for a free one. Default 32. */
  maxSockets?: number;
  /**
   * Automatic login (README "Sessions"): on a 401 the client logs in once for all waiting
   * requests, then repeats each request once. Without it a 401 is an `auth` error.
   */
  login?: LoginOptions;
  /**
   * Largest file {@link AssetClient.downloadToBuffer} takes into memory, in bytes (default
   * 100 MB = 10^8). Checked against Content-Length before the body is read, and while reading.
   * Big assets go to a file (downloadToFile) or a stream, which have no limit.
   */
  maxBufferBytes?: number;
  /** Largest JSON answer (subscribe, upload, export) read, in bytes. Default 8 MiB. */
  maxAnswerBytes?: number;
  /**
   * Where downloadToFile and uploads from a path of 4 MiB or more move their bytes: `main` (the
   * caller's thread, default) or `worker` (one worker thread per client, started at the first such
   * call). A worker keeps a process with a large heap, such as Node-RED, from paying for the
   * garbage collection of the transfer's buffers (docs/performance.md). Progress, abort, timeouts,
   * errors and automatic login behave the same. Not used with `agent`.
   */
  transferThread?: 'main' | 'worker';
}

/** Options common to every call. */
export interface CallOptions {
  /** Aborts the call; it then fails with kind `aborted`. */
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call (ms). */
  timeout?: number;
}

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

/** Options of {@link AssetClient.exportMetadata} (spec 4.4). */
export interface ExportOptions extends CallOptions {
  /** Asset id. */
  fuid: number | string;
  /** Default -1 (latest). */
  rrn?: number | string;
  /** Export type, e.g. `json` or `xml`. Sent only when given (the server's default applies otherwise). */
  type?: ExportType;
}

/** Result of a metadata export. */
export interface ExportOutcome {
  /** Parsed JSON when the server sent JSON (64-bit integers kept as strings), else the text. */
  data: unknown;
  /** Content-Type of the answer. */
  contentType?: string;
}

/** Default timeout (ms) of a client. */
export const DEFAULT_TIMEOUT_MS = 30000;
/** Server default of waitInMinutes (spec 4.2), used to stretch the timeout of `wait` uploads. */
const DEFAULT_WAIT_MINUTES = 60;
/** Default of {@link AssetClientOptions.maxBufferBytes}: 100 MB. */
export const DEFAULT_MAX_BUFFER_BYTES = 100 * 1000 * 1000;
/** Default of {@link AssetClientOptions.maxAnswerBytes}: 8 MiB, far above any JSON answer of the API. */
export const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;
/** How much of a JSON download or an error body is read to look for `success:false`. */
const PEEK_LIMIT = 64 * 1024;
/**
 * Sockets per agent when the caller sets none: as many as one node's highest "Parallel requests",
 * so that a node never waits for a socket (a call waiting for one counts towards its timeout).
 */
const DEFAULT_MAX_SOCKETS = 32;
/** Smallest upload sent from the transfer thread: below it, the hand-over costs more than it saves. */
const THREAD_MIN_UPLOAD_BYTES = 4 * 1024 * 1024;
/**
 * Request bodies declare UTF-8: a servlet container (the real server is one) reads a body whose
 * Content-Type names no charset as ISO-8859-1, so São Paulo would arrive as SÃ£o Paulo.
 */
const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded; charset=UTF-8';
const COOKIE_NAME_VALUE = new RegExp(`^${TOKEN_CHAR}+=(?!=*$)`);

interface OpenDownload {
  info: DownloadInfo;
  body: ByteCounter;
  control: CallControl;
}

interface UploadSource {
  stream: Readable;
  length?: number;
  filename: string;
}

/**
 * Typed client of the asset server's web API. No Node-RED dependency.
 * Events (none carries a cookie): `session-renewed` after an automatic login that followed a 401
 * (or {@link AssetClient.login}), `cookie-set` after {@link AssetClient.setCookie}.
 */
export class AssetClient extends EventEmitter {
  private readonly http: AxiosInstance;
  /** Base URL without trailing slash. */
  private readonly base: string;
  /** Scheme, host and port, for messages. */
  private readonly origin: string;
  /** The Cookie header sent, its renewal, and the secrets that must never appear in an error. */
  private readonly session: SessionHolder;
  private readonly timeout: number;
  private readonly maxBufferBytes: number;
  private readonly maxAnswerBytes: number;
  private readonly ownAgents: Array<http.Agent> = [];
  /** The worker of `transferThread: 'worker'`, and the client options it is given (the cookie is added per call). */
  private readonly thread: TransferThread | undefined;
  private readonly threadOptions: Record<string, unknown> = {};

  constructor(options: AssetClientOptions) {
    super();
    if (options === null || typeof options !== 'object') throw invalidInput('options', 'must be an object with baseUrl and cookie');
    const base = parseBaseUrl(options.baseUrl);
    this.base = base.base;
    this.origin = base.origin;
    this.timeout = timeoutOf('timeout', options.timeout, DEFAULT_TIMEOUT_MS);
    this.maxBufferBytes = byteLimitOf('maxBufferBytes', options.maxBufferBytes, DEFAULT_MAX_BUFFER_BYTES);
    this.maxAnswerBytes = byteLimitOf('maxAnswerBytes', options.maxAnswerBytes, DEFAULT_MAX_ANSWER_BYTES);
    const transferThread = options.transferThread ?? 'main';
    if (transferThread !== 'main' && transferThread !== 'worker') throw invalidInput('transferThread', "must be 'main' or 'worker'");
    if (transferThread === 'worker' && !options.agent) {
      this.thread = new TransferThread();
      for (const name of ['baseUrl', 'timeout', 'ca', 'cert', 'key', 'passphrase', 'rejectUnauthorized', 'maxSockets', 'maxBufferBytes', 'maxAnswerBytes'] as const) {
        if (options[name] !== undefined) this.threadOptions[name] = options[name];
      }
    }

    let httpAgent = options.agent as http.Agent | undefined;
    let httpsAgent = options.agent as https.Agent | undefined;
    if (!options.agent) {
      // Bounded: a burst of messages waits for a socket instead of opening one per message.
      const maxSockets = integerOption('maxSockets', options.maxSockets, DEFAULT_MAX_SOCKETS);
      httpAgent = new http.Agent({ keepAlive: true, maxSockets });
      httpsAgent = new https.Agent({
        keepAlive: true,
        maxSockets,
        ca: options.ca === undefined ? undefined : [...tls.rootCertificates, ...([] as Array<string | Buffer>).concat(options.ca)],
        cert: options.cert,
        key: options.key,
        passphrase: options.passphrase,
        rejectUnauthorized: options.rejectUnauthorized !== false
      });
      this.ownAgents.push(httpAgent, httpsAgent);
    }
    this.http = axios.create({
      httpAgent,
      httpsAgent,
      // Redirects are never followed: follow-redirects buffers request bodies, and a
      // redirect could carry the cookie elsewhere. A 3xx becomes an `http` error.
      maxRedirects: 0,
      validateStatus: () => true,
      // Our own inactivity timeout (CallControl) replaces axios' timeout.
      timeout: 0,
      // JSON answers are read whole: bounded (downloads set their own).
      maxContentLength: this.maxAnswerBytes,
      transformResponse: [(data: unknown) => data],
      headers: { 'User-Agent': '@dam-assets/node-red' }
    });
    this.session = new SessionHolder({ http: this.http, base: this.base, timeoutMs: this.timeout, cookieHeaderOf }, options.cookie, options.login);
    this.session.onChange((event) => this.emit(event === 'renewed' ? 'session-renewed' : 'cookie-set'));
    // One listener per node that shares this client (e.g. every asset-event-in): no fixed limit.
    this.setMaxListeners(0);
  }

  /**
   * Sends this cookie from the next request on (same rules as the `cookie` option). Kept in
   * memory only. Throws `invalid-input` for an empty or malformed cookie.
   */
  setCookie(cookie: string): void {
    this.session.set(cookie);
  }

  /** Logs in now with the automatic login settings; rejects with an `auth` error naming the failed step. */
  async login(): Promise<void> {
    if (!this.session.canLogin) throw invalidInput('login', 'automatic login is not set up (asset-server node: Automatic login; client option: login)');
    await this.session.loginNow('login');
  }

  /** The Cookie header sent now (a secret: for keeping it across a restart of the caller, never for display). */
  get sessionCookie(): string | undefined {
    return this.session.cookieHeader;
  }

  /** POST subscribe/:id. Validates id and fields first; throws AssetApiError kind `invalid-input`. */
  async registerSubscription(id: string, fields: SubscriptionFields, opts?: CallOptions): Promise<SubscriptionResult> {
    const operation: AssetOperation = 'registerSubscription';
    validateSubscriptionId(id, operation);
    const form = new URLSearchParams();
    for (const [name, value] of validateSubscriptionFields(fields, operation)) form.append(name, value);
    const body = await this.jsonCall(operation, opts, {
      method: 'POST',
      url: this.url(API_PATHS.subscribe + encodeURIComponent(id)),
      data: form.toString(),
      headers: { 'Content-Type': FORM_CONTENT_TYPE }
    });
    return { ...body, id: typeof body.id === 'string' ? body.id : id, success: true } as SubscriptionResult;
  }

  /** GET subscribe/:id. An unknown id is a `rejected` error (the server answers success false). */
  async getSubscription(id: string, opts?: CallOptions): Promise<SubscriptionDetails> {
    const operation: AssetOperation = 'getSubscription';
    validateSubscriptionId(id, operation);
    const body = await this.jsonCall(operation, opts, { method: 'GET', url: this.url(API_PATHS.subscribe + encodeURIComponent(id)) });
    return { ...body, id: typeof body.id === 'string' ? body.id : id, success: true } as SubscriptionDetails;
  }

  /** DELETE subscribe/:id. An unknown id is a `rejected` error (the server answers success false). */
  async deleteSubscription(id: string, opts?: CallOptions): Promise<SubscriptionResult> {
    const operation: AssetOperation = 'deleteSubscription';
    validateSubscriptionId(id, operation);
    const body = await this.jsonCall(operation, opts, { method: 'DELETE', url: this.url(API_PATHS.subscribe + encodeURIComponent(id)) });
    return { ...body, id: typeof body.id === 'string' ? body.id : id, success: true } as SubscriptionResult;
  }

  /**
   * Streaming multipart upload (4.2). The file goes from disk (or the given stream)
   * to the socket without being held in memory; Content-Length is sent when the
   * length is known. The file part is sent after the other fields.
   */
  async upload(opts: UploadOptions): Promise<UploadOutcome> {
    const usedHeader = this.session.cookieHeader;
    try {
      return await this.uploadOnceOnAThread(opts);
    } catch (err) {
      if (!(err instanceof AssetApiError) || err.kind !== 'auth' || err.status !== 401 || !this.session.canLogin) throw err;
      await this.session.renew(usedHeader, 'upload');
      if (opts.file && 'stream' in opts.file && !('path' in opts.file) && !('buffer' in opts.file)) {
        throw new AssetApiError('auth',
          'upload: the session had expired (HTTP 401) and a new one was obtained, but the file was given as a stream, ' +
          'which cannot be sent twice: send the upload again (a file path or a Buffer is repeated automatically).',
          { operation: 'upload', status: 401 });
      }
      try {
        return await this.uploadOnceOnAThread(opts);
      } catch (again) {
        if (again instanceof AssetApiError && again.kind === 'auth' && again.status === 401) throw this.session.refused('upload');
        throw again;
      }
    }
  }

  /** One upload attempt, on the transfer thread when there is one and the file is a path big enough. */
  private async uploadOnceOnAThread(opts: UploadOptions): Promise<UploadOutcome> {
    const job = this.threadJob('upload', opts);
    const file = opts?.file as { path?: unknown } | undefined;
    if (job && typeof file?.path === 'string') {
      const size = await fsp.stat(file.path).then((st) => (st.isFile() ? st.size : -1), () => -1);
      if (size >= THREAD_MIN_UPLOAD_BYTES) return this.runInThread<UploadOutcome>('upload', job, opts);
    }
    return this.uploadOnce(opts);
  }

  private async uploadOnce(opts: UploadOptions): Promise<UploadOutcome> {
    const operation: AssetOperation = 'upload';
    if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with file and destination', operation);
    const fields = validateUploadFields(opts, operation);
    const contentType = opts.contentType === undefined || opts.contentType === '' ? undefined : textField('contentType', opts.contentType, operation);
    const onProgress = callbackOf('onProgress', opts.onProgress, operation);
    const timeout = timeoutOf('timeout', opts.timeout, this.timeout, operation);
    const waitMs = fields.some(([name, value]) => name === 'wait' && value === 'true')
      ? (opts.waitInMinutes === undefined ? DEFAULT_WAIT_MINUTES : Number(opts.waitInMinutes)) * 60000
      : 0;
    const control = this.control(operation, opts.signal, timeout);
    let source: UploadSource | undefined;
    let counter: ByteCounter | undefined;
    let body: PassThrough | undefined;
    let sourceError: unknown;
    let failed = true;
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

      const form = new FormData();
      for (const [name, value] of fields) form.append(name, value);
      const filename = opts.name === undefined || opts.name === '' ? source.filename : String(opts.name);
      // The part's header is written here: form-data would send a quote in the name as %22.
      const partType = contentType ?? (mimeTypes.lookup(filename) || 'application/octet-stream');
      form.append('file', counter, {
        header: `--${form.getBoundary()}\r\nContent-Disposition: form-data; name="file"; filename=${quotedParameter(filename)}\r\n`
          + `Content-Type: ${partType}\r\n\r\n`,
        // 0 would make form-data measure the stream; an empty file goes chunked instead.
        knownLength: expected || undefined
      });

      // axios gets a plain stream with the form's headers and length set here. Given the form
      // itself it would first await form.getLength(), and an abort during that wait leaves the
      // request it creates afterwards open. Destroying this stream with an error (below, on
      // failure) makes axios destroy the request whenever it was created.
      const formHeaders: Record<string, string> = {
        'Content-Type': `multipart/form-data; charset=UTF-8; boundary=${form.getBoundary()}`, Accept: 'application/json'
      };
      if (form.hasKnownLength()) formHeaders['Content-Length'] = String(form.getLengthSync());
      body = new PassThrough({ highWaterMark: TRANSFER_HIGH_WATER_MARK });
      body.on('error', () => undefined); // its errors are ours (below); axios reports the request's own
      form.on('error', (err: Error) => body?.destroy(err));
      form.pipe(body);

      let response: AxiosResponse;
      const usedHeader = this.session.cookieHeader;
      try {
        response = await this.http.request({
          method: 'POST',
          url: this.url(API_PATHS.upload),
          data: body,
          headers: this.headers(formHeaders),
          signal: control.signal,
          responseType: 'text',
          maxRedirects: 0,
          maxBodyLength: Infinity,
          maxContentLength: this.maxAnswerBytes
        });
      } catch (err) {
        if (sourceError !== undefined && !control.timedOut && !control.userAborted) throw sourceFailure(sourceError, operation);
        throw this.failure(operation, err, control);
      }
      if (response.status !== 401) this.session.accepted(usedHeader);
      const request = response.request as http.ClientRequest | undefined;
      if (request && !request.writableFinished) {
        // Answered before the whole file was sent (a redirect, 401, permission denied):
        // stop sending the rest.
        request.destroy();
      }
      const result = this.readJsonAnswer(operation, response) as UploadResult;
      failed = false;
      return uploadOutcome({ ...result, success: true });
    } finally {
      control.dispose();
      if (failed) body?.destroy(new Error('upload ended'));
      // On success both have ended; on failure this closes the file.
      source?.stream.destroy();
      counter?.destroy();
    }
  }

  /**
   * Download into memory, at most maxBytes (default the client's maxBufferBytes). With a
   * Content-Length the Buffer is allocated once and filled as the file arrives, so memory
   * peaks at about one file size; a larger Content-Length fails before the body is read.
   * Without one (chunked) the limit is checked as the file arrives.
   */
  async downloadToBuffer(opts: BufferDownloadOptions): Promise<DownloadInfo & { data: Buffer }> {
    const operation: AssetOperation = 'download';
    if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid', operation);
    const maxBytes = byteLimitOf('maxBytes', opts.maxBytes, this.maxBufferBytes, operation);
    const { info, body, control } = await this.openDownload(operation, opts, maxBytes);
    try {
      let data: Buffer;
      if (info.length !== undefined) {
        data = Buffer.allocUnsafe(info.length);
        let filled = 0;
        for await (const chunk of body) {
          const piece = chunk as Buffer;
          // The HTTP parser stops at Content-Length; this guards the copy all the same.
          if (filled + piece.length > data.length) throw new AssetApiError('network', `${operation}: the server sent more than its Content-Length of ${info.length} bytes`, { operation });
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
      throw this.failure(operation, err, control);
    } finally {
      control.dispose();
    }
  }

  /**
   * Download as a stream; the caller must consume or destroy it. Errors before the
   * body are thrown; errors during the body are emitted on the stream as AssetApiError.
   * The inactivity timeout also runs while the caller does not read.
   */
  async downloadToStream(opts: DownloadOptions): Promise<DownloadInfo & { stream: Readable }> {
    const { info, body } = await this.openDownload('download', opts);
    return { ...info, stream: body };
  }

  /**
   * Download to a file, atomically (temporary name in the same folder, renamed when complete). Creates folders.
   * When `path` ends with a separator or is an existing folder, the file is saved in it under the
   * server's (sanitized) file name, else `asset-<fuid>`. A failed download leaves no file behind.
   */
  async downloadToFile(opts: DownloadOptions & { path: string }): Promise<DownloadInfo & { path: string; bytes: number }> {
    const job = this.threadJob('downloadToFile', opts);
    if (!job) return this.downloadToFileHere(opts);
    type Result = DownloadInfo & { path: string; bytes: number };
    const usedHeader = this.session.cookieHeader;
    try {
      return await this.runInThread<Result>('download', job, opts);
    } catch (err) {
      // As send() does on this thread: one login for a 401, then once more.
      if (!(err instanceof AssetApiError) || err.kind !== 'auth' || err.status !== 401 || !this.session.canLogin) throw err;
      await this.session.renew(usedHeader, 'download');
      const again = this.threadJob('downloadToFile', opts);
      if (!again) return this.downloadToFileHere(opts);
      try {
        return await this.runInThread<Result>('download', again, opts);
      } catch (failed) {
        if (failed instanceof AssetApiError && failed.kind === 'auth' && failed.status === 401) throw this.session.refused('download');
        throw failed;
      }
    }
  }

  private async downloadToFileHere(opts: DownloadOptions & { path: string }): Promise<DownloadInfo & { path: string; bytes: number }> {
    const operation: AssetOperation = 'download';
    if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid and path', operation);
    const requested = textField('path', opts.path, operation);
    const { info, body, control } = await this.openDownload(operation, opts);
    // Until pipeline() below takes over, an abort or reset must not be an unhandled 'error' event
    // (it would crash Node-RED); pipeline() still sees the stream's error and rejects with it.
    body.on('error', () => undefined);
    let target = path.resolve(requested);
    let temporary: string | undefined;
    try {
      try {
        const intoFolder = /[\\/]$/.test(requested) || (await fsp.stat(target).catch(() => undefined))?.isDirectory();
        if (intoFolder) target = path.join(target, info.filename ?? `asset-${String(opts.fuid)}`);
        await fsp.mkdir(path.dirname(target), { recursive: true });
      } catch (err) {
        throw localFileFailure(err, 'path', `cannot create the folder of ${target}`, operation);
      }
      temporary = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString('hex')}.part`);
      try {
        await pipeline(body, fs.createWriteStream(temporary, { flags: 'wx', highWaterMark: TRANSFER_HIGH_WATER_MARK }));
      } catch (err) {
        if (err instanceof AssetApiError) throw err;
        if (isFileSystemError(err)) throw localFileFailure(err, 'path', `cannot write ${temporary}`, operation);
        throw this.failure(operation, err, control);
      }
      await fsp.rename(temporary, target).catch((err: unknown) => {
        throw localFileFailure(err, 'path', `cannot rename the downloaded file to ${target}`, operation);
      });
      temporary = undefined;
      return { ...info, path: target, bytes: body.bytes };
    } catch (err) {
      body.destroy();
      if (temporary !== undefined) await fsp.rm(temporary, { force: true }).catch(() => undefined);
      throw err;
    } finally {
      control.dispose();
    }
  }

  /**
   * Metadata export (4.4). The spec says its parameters are "sent as form data" on a GET;
   * a GET has no body, so fuid, rrn and type are sent as query parameters.
   */
  async exportMetadata(opts: ExportOptions): Promise<ExportOutcome> {
    const operation: AssetOperation = 'exportMetadata';
    if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid', operation);
    const params: Record<string, string> = {
      fuid: validateFuid(opts.fuid, operation),
      rrn: validateRrn(opts.rrn, operation)
    };
    // The spec lists type with its requirement unknown: sent only when the caller gives one.
    if (opts.type !== undefined && opts.type !== null && opts.type !== '') params.type = textField('type', opts.type, operation).trim();
    const control = this.control(operation, opts.signal, timeoutOf('timeout', opts.timeout, this.timeout, operation));
    try {
      const response = await this.send(operation, control, {
        method: 'GET', url: this.url(API_PATHS.exportMetadata), params, responseType: 'text'
      });
      const contentType = headerOf(response, 'content-type');
      const text = String(response.data ?? '');
      if (response.status < 200 || response.status >= 300) throw this.statusError(operation, response.status, text, response);
      const parsed = isJsonType(contentType) || /^\s*\{/.test(text) ? tryParseJson(text) : undefined;
      if (isJsonType(contentType) && parsed === undefined) throw errorForMalformedAnswer(this.context(operation), response.status, contentType);
      if (parsed && !sentAsFile(response) && isFailedAnswer(parsed.value)) throw errorForFailedAnswer(this.context(operation), response.status, parsed.value);
      return { data: isJsonType(contentType) && parsed ? parsed.value : text, contentType };
    } finally {
      control.dispose();
    }
  }

  /**
   * Closes the connections of the client's own agents (not one passed in): idle ones at once,
   * busy ones as soon as their request ends. Requests in flight are left to finish (a node
   * removed in the same deploy may still be deleting its subscription); abort them with
   * their AbortSignal to stop them.
   */
  close(): void {
    this.thread?.close();
    for (const agent of this.ownAgents) {
      (agent as http.Agent & { keepAlive: boolean }).keepAlive = false;
      for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
  }

  // ---- internals ----

  /**
   * Runs a job on the transfer thread. An answer of the server other than 401 tells the session
   * that the cookie the job carried works (as sendOnce does for requests on this thread).
   */
  private async runInThread<T>(operation: AssetOperation, job: ThreadJob, opts: CallOptions & { onProgress?: (p: TransferProgress) => void }): Promise<T> {
    const usedHeader = job.client.cookie as string | undefined;
    try {
      const result = await this.thread!.run<T>(operation, job, opts.signal ?? undefined, opts.onProgress);
      this.session.accepted(usedHeader);
      return result;
    } catch (err) {
      if (err instanceof AssetApiError && err.status !== undefined && err.status !== 401) this.session.accepted(usedHeader);
      throw err;
    }
  }

  /**
   * The job for the transfer thread, or undefined when the call stays on this thread: no thread
   * (or closed), or options this thread must judge (a bad signal or callback, an aborted signal)
   * or that cannot be cloned to a worker. The cookie is the session's at this moment.
   */
  private threadJob(method: ThreadJob['method'], opts: unknown): ThreadJob | undefined {
    if (!this.thread?.open || opts === null || typeof opts !== 'object') return undefined;
    const { signal, onProgress, ...rest } = opts as CallOptions & { onProgress?: unknown };
    if (signal !== undefined && signal !== null && (!(signal instanceof AbortSignal) || signal.aborted)) return undefined;
    if (onProgress !== undefined && onProgress !== null && typeof onProgress !== 'function') return undefined;
    const job: ThreadJob = { method, client: { ...this.threadOptions, cookie: this.session.cookieHeader }, opts: rest };
    try {
      structuredClone(job);
    } catch {
      return undefined;
    }
    return job;
  }

  private url(apiPath: string): string {
    return this.base + apiPath;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = this.session.cookieHeader;
    return cookie === undefined ? extra : { ...extra, Cookie: cookie };
  }

  private context(operation: AssetOperation): ErrorContext {
    return { operation, origin: this.origin, redact: (text) => this.session.redact(text) };
  }

  /** A new call: refuses an already aborted signal before anything is sent. */
  private control(operation: AssetOperation, given: AbortSignal | undefined | null, timeout: number): CallControl {
    const signal = given ?? undefined;
    if (signal !== undefined && typeof signal.addEventListener !== 'function') {
      throw invalidInput('signal', 'must be an AbortSignal', operation);
    }
    if (signal?.aborted) throw new AssetApiError('aborted', `${operation}: aborted`, { operation });
    return new CallControl(signal, timeout);
  }

  /** Any failure of a call as an AssetApiError built from scratch (never wrapping the original). */
  private failure(operation: AssetOperation, err: unknown, control: CallControl): AssetApiError {
    if (isAnswerTooLarge(err)) {
      return new AssetApiError('too-large',
        `${operation}: the server's answer is larger than ${formatSize(this.maxAnswerBytes)} (maxAnswerBytes); it was not read further`,
        { operation });
    }
    return errorForFailure(this.context(operation), err, {
      timedOut: control.timedOut, timeoutMs: control.timeoutMs, userAborted: control.userAborted
    });
  }

  /**
   * Sends a repeatable request (its body, if any, is a string). On a 401 with automatic login set
   * up: one login for every request waiting on it, then the request once more; a second 401 is
   * an `auth` error saying so.
   */
  private async send(operation: AssetOperation, control: CallControl, config: AxiosRequestConfig): Promise<AxiosResponse> {
    const usedHeader = this.session.cookieHeader;
    const first = await this.sendOnce(operation, control, config);
    if (first.status !== 401 || !this.session.canLogin) return first;
    (first.data as Readable | undefined)?.destroy?.();
    await this.session.renew(usedHeader, operation);
    const again = await this.sendOnce(operation, control, config);
    if (again.status !== 401) return again;
    (again.data as Readable | undefined)?.destroy?.();
    throw this.session.refused(operation);
  }

  private async sendOnce(operation: AssetOperation, control: CallControl, config: AxiosRequestConfig): Promise<AxiosResponse> {
    const usedHeader = this.session.cookieHeader;
    let response: AxiosResponse;
    try {
      response = await this.http.request({
        ...config,
        headers: this.headers({ Accept: 'application/json', ...(config.headers as Record<string, string> | undefined) }),
        signal: control.signal
      });
    } catch (err) {
      throw this.failure(operation, err, control);
    }
    if (response.status !== 401) this.session.accepted(usedHeader);
    return response;
  }

  private async jsonCall(operation: AssetOperation, opts: CallOptions | undefined, config: AxiosRequestConfig): Promise<Record<string, unknown>> {
    const control = this.control(operation, opts?.signal, timeoutOf('timeout', opts?.timeout, this.timeout, operation));
    try {
      const response = await this.send(operation, control, { ...config, responseType: 'text' });
      return this.readJsonAnswer(operation, response);
    } finally {
      control.dispose();
    }
  }

  /** A JSON answer with success true, or the error it stands for. */
  private readJsonAnswer(operation: AssetOperation, response: AxiosResponse): Record<string, unknown> {
    const text = String(response.data ?? '');
    if (response.status < 200 || response.status >= 300) throw this.statusError(operation, response.status, text, response);
    const parsed = tryParseJson(text);
    if (!parsed || !isPlainObject(parsed.value)) {
      throw errorForMalformedAnswer(this.context(operation), response.status, headerOf(response, 'content-type'));
    }
    if (isFailedAnswer(parsed.value)) throw errorForFailedAnswer(this.context(operation), response.status, parsed.value);
    return parsed.value;
  }

  private statusError(operation: AssetOperation, status: number, text: string, response: AxiosResponse): AssetApiError {
    return errorForStatus(this.context(operation), status, tryParseJson(text)?.value, headerOf(response, 'location'));
  }

  /**
   * Sends a download request and checks the answer; returns the body as a counting stream.
   * With `maxBytes`, a larger Content-Length fails before any of the body is read.
   */
  private async openDownload(operation: AssetOperation, opts: DownloadOptions, maxBytes?: number): Promise<OpenDownload> {
    if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid', operation);
    const params: Record<string, string> = { fuid: validateFuid(opts.fuid, operation), rrn: validateRrn(opts.rrn, operation) };
    if (opts.collectionId !== undefined && opts.collectionId !== null && opts.collectionId !== '') {
      params.collectionId = integerField('collectionId', opts.collectionId, 0, undefined, operation);
    }
    const onProgress = callbackOf('onProgress', opts.onProgress, operation);
    const control = this.control(operation, opts.signal, timeoutOf('timeout', opts.timeout, this.timeout, operation));
    let response: AxiosResponse | undefined;
    try {
      response = await this.send(operation, control, {
        method: 'GET',
        url: this.url(API_PATHS.download),
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
      raw.on('error', (err) => counterRef.counter?.destroy(this.failure(operation, err, control)));

      const contentType = headerOf(response, 'content-type');
      if (response.status < 200 || response.status >= 300) {
        const { chunks } = await peek(raw, PEEK_LIMIT).catch(() => ({ chunks: [] as Buffer[] }));
        raw.destroy();
        throw this.statusError(operation, response.status, Buffer.concat(chunks).toString('utf8'), response);
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
        replay = await peek(raw, PEEK_LIMIT);
        if (replay.ended) {
          const parsed = tryParseJson(Buffer.concat(replay.chunks).toString('utf8'));
          if (parsed && isFailedAnswer(parsed.value)) throw errorForFailedAnswer(this.context(operation), response.status, parsed.value);
        }
      }

      const info: DownloadInfo = { headers: plainHeaders(response), length, contentType };
      const filename = filenameFromContentDisposition(headerOf(response, 'content-disposition'));
      if (filename !== undefined) info.filename = filename;
      if (length === undefined) delete info.length;
      if (contentType === undefined) delete info.contentType;

      const counter = new ByteCounter(length, {
        onChunk: () => control.ping(),
        onProgress,
        onEnd: (bytes) => length !== undefined && bytes !== length
          ? new AssetApiError('network', `${operation}: the download ended after ${bytes} of ${length} bytes`, { operation })
          : undefined
      });
      counterRef.counter = counter;
      counter.once('close', () => {
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
      throw this.failure(operation, err, control);
    }
  }
}

// ---- helpers ----

function parseBaseUrl(value: unknown): { base: string; origin: string } {
  const rule = 'must be an absolute http:// or https:// URL such as http://127.0.0.1:8873';
  if (typeof value !== 'string' || value.trim() === '') throw invalidInput('baseUrl', rule);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw invalidInput('baseUrl', rule);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') throw invalidInput('baseUrl', rule);
  if (url.search !== '' || url.hash !== '') throw invalidInput('baseUrl', 'must not have a query (?) or fragment (#)');
  // The API paths start with the context path /review: a base URL pasted with it is used as is.
  const base = value.trim().replace(/\/+$/, '').replace(/\/review$/, '');
  return { base, origin: url.origin };
}

/** Positive integer option, or `fallback` when not given. */
function integerOption(field: string, value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw invalidInput(field, 'must be a whole number >= 1');
  return value;
}

/** `Name=value` is sent as is; a bare value becomes `JSESSIONID=value` (public-facts.md). */
function cookieHeaderOf(cookie: unknown): string | undefined {
  if (cookie === undefined || cookie === null) return undefined;
  if (typeof cookie !== 'string') throw invalidInput('cookie', 'must be a string: Name=value or a bare session id');
  // Pasted from a browser's request headers: "Cookie: JSESSIONID=...".
  const text = cookie.trim().replace(/^cookie\s*:\s*/i, '');
  if (text === '') return undefined;
  if (!/^[\x20-\x7e]+$/.test(text)) throw invalidInput('cookie', 'must be printable ASCII, without CR, LF or other control characters');
  return COOKIE_NAME_VALUE.test(text) ? text : `JSESSIONID=${text}`;
}

function timeoutOf(field: string, value: unknown, fallback: number, operation?: AssetOperation): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidInput(field, 'must be a number of milliseconds >= 0 (0 = no timeout)', operation);
  }
  return value;
}

function byteLimitOf(field: string, value: unknown, fallback: number, operation?: AssetOperation): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidInput(field, 'must be a number of bytes greater than 0', operation);
  }
  return Math.floor(value);
}

/** `123.4 MB` (10^6 bytes), as the editor's MB settings count. */
function formatSize(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${bytes} bytes`;
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

/** axios' error for an answer beyond maxContentLength. */
function isAnswerTooLarge(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'ERR_BAD_RESPONSE' && /^maxContentLength size of \d+ exceeded/.test(err.message);
}

function callbackOf<T extends (...args: never[]) => unknown>(field: string, value: T | undefined, operation: AssetOperation): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'function') throw invalidInput(field, 'must be a function', operation);
  return value;
}

function headerOf(response: AxiosResponse, name: string): string | undefined {
  const value: unknown = (response.headers as Record<string, unknown>)[name];
  if (value === undefined || value === null) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/** Response headers as plain strings, without Set-Cookie (a new session cookie is a secret too). */
function plainHeaders(response: AxiosResponse): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers as Record<string, unknown>)) {
    if (name.toLowerCase() === 'set-cookie' || value === undefined || value === null) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

/**
 * A header parameter as an RFC 9110 quoted-string (`\\` and `\"` escaped), sent as UTF-8. Servlet
 * containers unescape it; form-data's default, `%22` for a quote, would reach them as `%22`.
 * CR and LF never get here (validated or sanitized names).
 */
function quotedParameter(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * A body sent as a file (with Content-Disposition) is content, never the server's error answer,
 * whatever it holds: a JSON asset may well read {"success":false,...}. Only the error shape
 * without Content-Disposition is an error.
 */
function sentAsFile(response: AxiosResponse): boolean {
  return headerOf(response, 'content-disposition') !== undefined;
}

function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/([\w.+-]+\+)?json\b/i.test(contentType.trim());
}

function isFileSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

function localFileFailure(err: unknown, field: string, what: string, operation: AssetOperation): AssetApiError {
  if (err instanceof AssetApiError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new AssetApiError('invalid-input', `${field}: ${what}${code ? ` (${code})` : ''}`, {
    field, operation, ...(typeof code === 'string' ? { code } : {})
  });
}

function sourceFailure(err: unknown, operation: AssetOperation): AssetApiError {
  if (err instanceof AssetApiError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return new AssetApiError('invalid-input', `file: reading the file failed: ${message.slice(0, 200)}`, {
    field: 'file', operation, ...(typeof code === 'string' ? { code } : {})
  });
}

async function openUploadSource(file: UploadOptions['file'], name: unknown, operation: AssetOperation): Promise<UploadSource> {
  const rule = 'must be { path }, { stream, length? } or { buffer }';
  if (file === null || typeof file !== 'object') throw invalidInput('file', rule, operation);
  const fallbackName = typeof name === 'string' && name !== '' ? name : 'upload.bin';
  if ('path' in file) {
    const filePath = textField('file.path', file.path, operation);
    let stat: fs.Stats;
    try {
      stat = await fsp.stat(filePath);
    } catch (err) {
      throw localFileFailure(err, 'file', `cannot read ${filePath}`, operation);
    }
    if (!stat.isFile()) throw invalidInput('file', `${filePath} is not a regular file`, operation);
    return {
      stream: fs.createReadStream(filePath, { highWaterMark: TRANSFER_HIGH_WATER_MARK }),
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
