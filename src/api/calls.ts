/**
 * How one call goes to the server, for every operation: the URL, the Cookie header, abort and
 * inactivity timeout, one automatic login on a 401, and any failure as an AssetApiError.
 * The operations (client.ts, upload.ts, download.ts) build on it.
 */
import type { AxiosInstance, AxiosRequestConfig, AxiosResponse } from 'axios';
import type { Readable } from 'stream';
import { AssetApiError, invalidInput, type AssetOperation } from './errors';
import { type ErrorContext, errorForFailure, errorForLargeAnswer } from './error-mapping';
import { isAnswerTooLarge, readJsonAnswer } from './json-answer';
import type { SessionHolder } from './session';
import { sendAgainIfStale } from './stale-connection';
import { CallControl } from './transfer';

/** Options common to every call. */
export interface CallOptions {
  /** Aborts the call; it then fails with kind `aborted`. */
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call (ms). */
  timeout?: number;
}

/** What every call shares: set up once by the client. */
export interface CallSetup {
  http: AxiosInstance;
  /** Base URL without trailing slash. */
  base: string;
  /** Scheme, host and port, for messages. */
  origin: string;
  /** The Cookie header sent, its renewal, and the secrets that must never appear in an error. */
  session: SessionHolder;
  /** The client's inactivity timeout (ms, 0 = none). */
  timeout: number;
  /** Largest JSON answer read (bytes). */
  maxAnswerBytes: number;
  /** Longest a renewal may keep a call waiting with nothing received (ms; 0: the call's own timeout). */
  renewalWaitMs?: number;
}

export class ApiCalls {
  readonly http: AxiosInstance;
  readonly session: SessionHolder;
  readonly maxAnswerBytes: number;
  private readonly base: string;
  private readonly origin: string;
  private readonly timeout: number;
  private readonly renewalWaitMs: number;

  constructor(setup: CallSetup) {
    this.http = setup.http;
    this.session = setup.session;
    this.maxAnswerBytes = setup.maxAnswerBytes;
    this.base = setup.base;
    this.origin = setup.origin;
    this.timeout = setup.timeout;
    this.renewalWaitMs = setup.renewalWaitMs ?? 0;
  }

  url(apiPath: string): string {
    return this.base + apiPath;
  }

  /** `extra` plus the session's Cookie header, when there is one. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = this.session.cookieHeader;
    return cookie === undefined ? extra : { ...extra, Cookie: cookie };
  }

  context(operation: AssetOperation): ErrorContext {
    return { operation, origin: this.origin, redact: (text) => this.session.redact(text) };
  }

  /** The call's timeout: the given one (checked), else the client's. */
  timeoutOf(value: unknown, operation: AssetOperation): number {
    return timeoutOf('timeout', value, this.timeout, operation);
  }

  /** A new call: refuses an already aborted signal before anything is sent. */
  control(operation: AssetOperation, given: AbortSignal | undefined | null, timeout: number): CallControl {
    const signal = given ?? undefined;
    if (signal !== undefined && typeof signal.addEventListener !== 'function') {
      throw invalidInput('signal', 'must be an AbortSignal', operation);
    }
    if (signal?.aborted) throw new AssetApiError('aborted', `${operation}: aborted`, { operation });
    return new CallControl(signal, timeout);
  }

  /** Any failure of a call as an AssetApiError built from scratch (never wrapping the original). */
  failure(operation: AssetOperation, err: unknown, control: CallControl): AssetApiError {
    if (isAnswerTooLarge(err)) return errorForLargeAnswer(operation, this.maxAnswerBytes);
    return errorForFailure(this.context(operation), err, {
      timedOut: control.timedOut, timeoutMs: control.timeoutMs, userAborted: control.userAborted
    });
  }

  /**
   * Sends a repeatable request (its body, if any, is a string). On a 401 with automatic login set
   * up: one login for every request waiting on it, then the request once more; a second 401 is
   * an `auth` error saying so.
   */
  async send(operation: AssetOperation, control: CallControl, config: AxiosRequestConfig): Promise<AxiosResponse> {
    const usedHeader = this.session.cookieHeader;
    const first = await this.sendOnce(operation, control, config);
    if (first.status !== 401 || !this.session.canLogin) return first;
    (first.data as Readable | undefined)?.destroy?.();
    try {
      // The call's own timeout and the caller's abort end the wait for the login too.
      await this.waitingForLogin(control, () => this.session.renew(usedHeader, operation, control.signal));
    } catch (err) {
      if (control.signal.aborted) throw this.failure(operation, new Error('ended while waiting for the automatic login'), control);
      throw err;
    }
    const repeatHeader = this.session.cookieHeader;
    const again = await this.sendOnce(operation, control, config);
    if (again.status !== 401) return again;
    (again.data as Readable | undefined)?.destroy?.();
    if (await this.waitingForLogin(control, () => this.session.renewAdopted(repeatHeader, operation, control.signal))) {
      const third = await this.sendOnce(operation, control, config);
      if (third.status !== 401) return third;
      (third.data as Readable | undefined)?.destroy?.();
    }
    throw this.session.refused(operation);
  }

  /** Runs a renewal with the call's inactivity limit widened as the session needs (a shared login may wait for a lease). */
  private async waitingForLogin<T>(control: CallControl, renewal: () => Promise<T>): Promise<T> {
    const own = control.timeoutMs;
    const wait = own > 0 ? Math.max(own, this.renewalWaitMs) : own;
    if (wait !== own) control.setTimeout(wait);
    try {
      return await renewal();
    } finally {
      if (wait !== own && !control.signal.aborted) control.setTimeout(own);
    }
  }

  /** A call whose answer is JSON with success true; resolves that answer. */
  async jsonCall(operation: AssetOperation, opts: CallOptions | undefined, config: AxiosRequestConfig): Promise<Record<string, unknown>> {
    const control = this.control(operation, opts?.signal, this.timeoutOf(opts?.timeout, operation));
    try {
      const response = await this.send(operation, control, { ...config, responseType: 'text' });
      return readJsonAnswer(this.context(operation), response);
    } finally {
      control.dispose();
    }
  }

  /** Sends once; an answer other than 401 tells the session that the cookie it carried works. */
  private async sendOnce(operation: AssetOperation, control: CallControl, config: AxiosRequestConfig): Promise<AxiosResponse> {
    const usedHeader = this.session.cookieHeader;
    let response: AxiosResponse;
    const request = () => this.http.request({
      ...config,
      headers: this.headers({ Accept: 'application/json', ...(config.headers as Record<string, string> | undefined) }),
      signal: control.signal
    });
    try {
      // Reads and registrations under a given id have the same outcome if sent twice; a second
      // DELETE would answer "unknown id".
      response = await sendAgainIfStale(request, String(config.method).toUpperCase() !== 'DELETE', control.signal);
    } catch (err) {
      throw this.failure(operation, err, control);
    }
    if (response.status !== 401) this.session.accepted(usedHeader);
    return response;
  }
}

// ---- option checks shared by the operations

/** A timeout in ms (0 = none), or `fallback` when not given. */
export function timeoutOf(field: string, value: unknown, fallback: number, operation?: AssetOperation): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidInput(field, 'must be a number of milliseconds >= 0 (0 = no timeout)', operation);
  }
  return value;
}

/** A size limit in bytes above 0, or `fallback` when not given. */
export function byteLimitOf(field: string, value: unknown, fallback: number, operation?: AssetOperation): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidInput(field, 'must be a number of bytes greater than 0', operation);
  }
  return Math.floor(value);
}

/** A callback option: a function, or undefined when not given. */
export function callbackOf<T extends (...args: never[]) => unknown>(field: string, value: T | undefined, operation: AssetOperation): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'function') throw invalidInput(field, 'must be a function', operation);
  return value;
}
