/**
 * Typed client of the asset server's web API (spec sections 4.1 to 4.4, 5, 7).
 * No Node-RED dependency: usable from scripts and function nodes too.
 *
 * This file is the public face: options, agents, session, the transfer thread, the subscription
 * and export calls. How a call is sent: calls.ts; uploads: upload.ts; downloads: download.ts;
 * answers: json-answer.ts; errors: error-mapping.ts; the Cookie header: cookie.ts and
 * session.ts; big transfers on a worker thread: transfer-thread.ts.
 *
 * Signatures are a contract with the nodes (src/nodes); add, never change.
 */
import axios from 'axios';
import { EventEmitter } from 'events';
import * as fsp from 'fs/promises';
import * as http from 'http';
import * as https from 'https';
import * as tls from 'tls';
import type { Readable } from 'stream';
import { ApiCalls, byteLimitOf, timeoutOf, type CallOptions } from './calls';
import { downloadToBuffer, downloadToFile, openDownload, type BufferDownloadOptions, type DownloadInfo, type DownloadOptions } from './download';
import { AssetApiError, invalidInput, type AssetOperation } from './errors';
import type { IfExists } from './file-placement';
import { readExportAnswer } from './json-answer';
import { limitIdleSockets } from './stale-connection';
import { ProxyRouter, proxySecrets, resolveProxy, usesProxy, type ProxyEnvOptions, type ProxySetting } from './proxy';
import { SessionHolder } from './session';
import { sharedLoginWaitMs } from './shared-session';
import type { TransferProgress } from './transfer';
import { TransferThread, type ThreadJob } from './transfer-thread';
import { API_PATHS, type SubscriptionFields, type SubscriptionResult, type SubscriptionDetails } from './types';
import { upload, uploadOnce, type UploadOptions, type UploadOutcome } from './upload';
import { textField, validateFuid, validateRrn, validateSubscriptionFields, validateSubscriptionId } from './validate';

export type { BufferDownloadOptions, CallOptions, DownloadInfo, DownloadOptions, ProxyEnvOptions, ProxySetting, TransferProgress, UploadOptions, UploadOutcome };

import {
  DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_BUFFER_BYTES, DEFAULT_MAX_SOCKETS, DEFAULT_TIMEOUT_MS, integerOption, parseBaseUrl,
  type AssetClientOptions, type ExportOptions, type ExportOutcome
} from './client-options';

export { DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_BUFFER_BYTES, DEFAULT_TIMEOUT_MS, type AssetClientOptions, type ExportOptions, type ExportOutcome };

/** Smallest upload sent from the transfer thread: below it, the hand-over costs more than it saves. */
const THREAD_MIN_UPLOAD_BYTES = 4 * 1024 * 1024;
/**
 * Request bodies declare UTF-8: a servlet container (the real server is one) reads a body whose
 * Content-Type names no charset as ISO-8859-1, so São Paulo would arrive as SÃ£o Paulo.
 */
const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded; charset=UTF-8';

/**
 * Typed client of the asset server's web API. No Node-RED dependency.
 * Events (none carries a cookie): `session-renewed` after an automatic login that followed a 401
 * (or {@link AssetClient.login}), `cookie-set` after {@link AssetClient.setCookie}.
 */
export class AssetClient extends EventEmitter {
  /** How each call is sent (URL, Cookie header, timeout, login on a 401, errors). */
  private readonly calls: ApiCalls;
  /** The Cookie header sent, its renewal, and the secrets that must never appear in an error. */
  private readonly session: SessionHolder;
  private readonly maxBufferBytes: number;
  private readonly ownAgents: Array<http.Agent> = [];
  /** Direct or through the proxy, per connection; undefined with proxy `none` or a given agent. */
  private readonly router: ProxyRouter | undefined;
  /** The worker of `transferThread: 'worker'`, and the client options it is given (the cookie is added per call). */
  private readonly thread: TransferThread | undefined;
  private readonly threadOptions: Record<string, unknown> = {};

  constructor(options: AssetClientOptions) {
    super();
    if (options === null || typeof options !== 'object') throw invalidInput('options', 'must be an object with baseUrl and cookie');
    const { base, origin } = parseBaseUrl(options.baseUrl);
    const timeout = timeoutOf('timeout', options.timeout, DEFAULT_TIMEOUT_MS);
    this.maxBufferBytes = byteLimitOf('maxBufferBytes', options.maxBufferBytes, DEFAULT_MAX_BUFFER_BYTES);
    const maxAnswerBytes = byteLimitOf('maxAnswerBytes', options.maxAnswerBytes, DEFAULT_MAX_ANSWER_BYTES);
    const transferThread = options.transferThread ?? 'main';
    if (transferThread !== 'main' && transferThread !== 'worker') throw invalidInput('transferThread', "must be 'main' or 'worker'");
    if (transferThread === 'worker' && !options.agent) {
      this.thread = new TransferThread();
      for (const name of ['baseUrl', 'timeout', 'ca', 'cert', 'key', 'passphrase', 'rejectUnauthorized', 'maxSockets', 'maxBufferBytes', 'maxAnswerBytes', 'proxy', 'proxyOptions'] as const) {
        if (options[name] !== undefined) this.threadOptions[name] = options[name];
      }
    }

    const proxy = options.agent ? undefined : resolveProxy(options.proxy, options.proxyOptions);
    let httpAgent = options.agent as http.Agent | undefined;
    let httpsAgent = options.agent as https.Agent | undefined;
    if (!options.agent) {
      // Bounded: a burst of messages waits for a socket instead of opening one per message.
      const maxSockets = integerOption('maxSockets', options.maxSockets, DEFAULT_MAX_SOCKETS);
      const tlsOptions = {
        ca: options.ca === undefined ? undefined : [...tls.rootCertificates, ...([] as Array<string | Buffer>).concat(options.ca)],
        cert: options.cert,
        key: options.key,
        passphrase: options.passphrase,
        rejectUnauthorized: options.rejectUnauthorized !== false
      };
      httpAgent = limitIdleSockets(new http.Agent({ keepAlive: true, maxSockets }));
      httpsAgent = limitIdleSockets(new https.Agent({ keepAlive: true, maxSockets, ...tlsOptions }));
      this.ownAgents.push(httpAgent, httpsAgent);
      // Without any proxy in the setting (the usual case) requests go exactly as before.
      if (proxy && proxy.mode !== 'none' && usesProxy(proxy)) this.router = new ProxyRouter(proxy, { maxSockets, ...tlsOptions });
    }
    const api = axios.create({
      httpAgent,
      httpsAgent,
      // Redirects are never followed: follow-redirects buffers request bodies, and a
      // redirect could carry the cookie elsewhere. A 3xx becomes an `http` error.
      maxRedirects: 0,
      validateStatus: () => true,
      // Our own inactivity timeout (CallControl) replaces axios' timeout.
      timeout: 0,
      // JSON answers are read whole: bounded (downloads set their own).
      maxContentLength: maxAnswerBytes,
      transformResponse: [(data: unknown) => data],
      headers: { 'User-Agent': '@dam-assets/node-red' },
      // Our agents decide direct or proxy; axios' own proxy handling (environment variables,
      // no CONNECT tunnel for HTTPS on older versions) stays off.
      proxy: false
    });
    const router = this.router;
    if (router) {
      // Direct or through the proxy, decided for each request by its URL (the login's too).
      api.interceptors.request.use((config) => {
        let agent: http.Agent | undefined;
        try {
          agent = config.url ? router.agentFor(config.url) : undefined;
        } catch (err) {
          // A proxy URL that is not one (e.g. in http_proxy): this request fails with that error.
          config.adapter = () => Promise.reject(err);
          return config;
        }
        if (agent) {
          config.httpAgent = agent;
          config.httpsAgent = agent;
        }
        return config;
      }, undefined, { synchronous: true });
    }
    this.session = new SessionHolder({ http: api, base, timeoutMs: timeout }, options.cookie, options.login, options.sharedSession);
    if (proxy) for (const secret of proxySecrets(proxy)) this.session.keepSecret(secret);
    // A call waiting for a shared login may outwait a dead holder's lock (shared-session.ts).
    const renewalWaitMs = options.sharedSession ? sharedLoginWaitMs(timeout) : 0;
    this.calls = new ApiCalls({ http: api, base, origin, session: this.session, timeout, maxAnswerBytes, renewalWaitMs });
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
  async login(opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (!this.session.canLogin) throw invalidInput('login', 'automatic login is not set up (asset-server node: Automatic login; client option: login)');
    await this.session.loginNow('login', opts.signal);
  }

  /** True when a request has a session to send: a cookie, or an automatic login to get one. */
  get hasSession(): boolean {
    return this.session.cookieHeader !== undefined || this.session.canLogin;
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
    const body = await this.calls.jsonCall(operation, opts, {
      method: 'POST',
      url: this.calls.url(API_PATHS.subscribe + encodeURIComponent(id)),
      data: form.toString(),
      headers: { 'Content-Type': FORM_CONTENT_TYPE }
    });
    return { ...body, id: typeof body.id === 'string' ? body.id : id, success: true } as SubscriptionResult;
  }

  /** GET subscribe/:id. An unknown id is a `rejected` error (the server answers success false). */
  async getSubscription(id: string, opts?: CallOptions): Promise<SubscriptionDetails> {
    const operation: AssetOperation = 'getSubscription';
    validateSubscriptionId(id, operation);
    const body = await this.calls.jsonCall(operation, opts, { method: 'GET', url: this.calls.url(API_PATHS.subscribe + encodeURIComponent(id)) });
    return { ...body, id: typeof body.id === 'string' ? body.id : id, success: true } as SubscriptionDetails;
  }

  /** DELETE subscribe/:id. An unknown id is a `rejected` error (the server answers success false). */
  async deleteSubscription(id: string, opts?: CallOptions): Promise<SubscriptionResult> {
    const operation: AssetOperation = 'deleteSubscription';
    validateSubscriptionId(id, operation);
    const body = await this.calls.jsonCall(operation, opts, { method: 'DELETE', url: this.calls.url(API_PATHS.subscribe + encodeURIComponent(id)) });
    return { ...body, id: typeof body.id === 'string' ? body.id : id, success: true } as SubscriptionResult;
  }

  /**
   * Streaming multipart upload (4.2). The file goes from disk (or the given stream)
   * to the socket without being held in memory; Content-Length is sent when the
   * length is known. The file part is sent after the other fields.
   */
  upload(opts: UploadOptions): Promise<UploadOutcome> {
    return upload(this.calls, opts, (o) => this.uploadAttempt(o));
  }

  /** One upload attempt, on the transfer thread when there is one and the file is a path big enough. */
  private async uploadAttempt(opts: UploadOptions): Promise<UploadOutcome> {
    const job = this.threadJob('upload', opts);
    const file = opts?.file as { path?: unknown } | undefined;
    if (job && typeof file?.path === 'string') {
      const size = await fsp.stat(file.path).then((st) => (st.isFile() ? st.size : -1), () => -1);
      if (size >= THREAD_MIN_UPLOAD_BYTES) return this.runInThread<UploadOutcome>('upload', job, opts);
    }
    return uploadOnce(this.calls, opts);
  }

  /**
   * Download into memory, at most maxBytes (default the client's maxBufferBytes). With a
   * Content-Length the Buffer is allocated once and filled as the file arrives, so memory
   * peaks at about one file size; a larger Content-Length fails before the body is read.
   * Without one (chunked) the limit is checked as the file arrives.
   */
  async downloadToBuffer(opts: BufferDownloadOptions): Promise<DownloadInfo & { data: Buffer }> {
    if (opts === null || typeof opts !== 'object') throw invalidInput('options', 'must be an object with fuid', 'download');
    return downloadToBuffer(this.calls, opts, byteLimitOf('maxBytes', opts.maxBytes, this.maxBufferBytes, 'download'));
  }

  /**
   * Download as a stream; the caller must consume or destroy it. Errors before the
   * body are thrown; errors during the body are emitted on the stream as AssetApiError.
   * The inactivity timeout also runs while the caller does not read.
   */
  async downloadToStream(opts: DownloadOptions): Promise<DownloadInfo & { stream: Readable }> {
    const { info, body } = await openDownload(this.calls, 'download', opts);
    return { ...info, stream: body };
  }

  /**
   * Download to a file, atomically (temporary name in the same folder, renamed when complete). Creates folders.
   * When `path` ends with a separator or is an existing folder, the file is saved in it under the
   * server's (sanitized) file name, else `asset-<fuid>`. A failed download leaves no file behind.
   * `onTemporaryFile` is for the transfer thread (see download.ts); a call on the worker ignores it.
   */
  async downloadToFile(opts: DownloadOptions & { path: string; ifExists?: IfExists }, onTemporaryFile?: (file: string) => void): Promise<DownloadInfo & { path: string; bytes: number }> {
    const job = this.threadJob('downloadToFile', opts);
    if (!job) return downloadToFile(this.calls, opts, onTemporaryFile);
    type Result = DownloadInfo & { path: string; bytes: number };
    const usedHeader = this.session.cookieHeader;
    try {
      return await this.runInThread<Result>('download', job, opts);
    } catch (err) {
      // As a call on this thread does: one login for a 401, then once more.
      if (!(err instanceof AssetApiError) || err.kind !== 'auth' || err.status !== 401 || !this.session.canLogin) throw err;
      await this.session.renew(usedHeader, 'download', opts.signal ?? undefined);
      const is401 = (e: unknown) => e instanceof AssetApiError && e.kind === 'auth' && e.status === 401;
      for (let attempt = 0; ; attempt++) {
        const repeatHeader = this.session.cookieHeader;
        const again = this.threadJob('downloadToFile', opts);
        if (!again) return downloadToFile(this.calls, opts, onTemporaryFile);
        try {
          return await this.runInThread<Result>('download', again, opts);
        } catch (failed) {
          if (!is401(failed)) throw failed;
          // A cookie from the shared store the server had ended: once more after a login (session.ts).
          if (attempt > 0 || !await this.session.renewAdopted(repeatHeader, 'download', opts.signal ?? undefined)) throw this.session.refused('download');
        }
      }
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
    const control = this.calls.control(operation, opts.signal, this.calls.timeoutOf(opts.timeout, operation));
    try {
      const response = await this.calls.send(operation, control, {
        method: 'GET', url: this.calls.url(API_PATHS.exportMetadata), params, responseType: 'text'
      });
      return readExportAnswer(this.calls.context(operation), response);
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
    for (const agent of [...this.ownAgents, ...(this.router?.proxyAgents ?? [])]) {
      (agent as http.Agent & { keepAlive: boolean }).keepAlive = false;
      for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
  }

  /**
   * Runs a job on the transfer thread. An answer of the server other than 401 tells the session
   * that the cookie the job carried works (as a call on this thread does).
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
}
