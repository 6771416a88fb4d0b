/**
 * One callback call (spec section 3, 4.1 rule 12, 6.3): builds the request from a stored
 * subscription and sends it over keep-alive agents, with a global cap on calls in flight so one
 * change matching many subscriptions fans out concurrently without opening unbounded sockets.
 *
 * The outcome is the response status, or a short error code for a network failure or timeout.
 * Nothing here logs: header values may hold webhook secrets.
 */
import * as http from 'http';
import * as https from 'https';
import type { DeliveryRecord, StoredSubscription } from './feed-types';

export type CallbackEntry = DeliveryRecord['entries'][number];

export interface CallbackRequest {
  url: string;
  method: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
}

/** Methods whose callback carries the 2.3 payload; GET and DELETE are a bare call to the URL. */
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** Appends `name=value` (or bare `name`) query parameters, URL-encoded, after any query the callback already has. */
export function callbackUrl(callback: string, queryParams: string[]): string {
  const hash = callback.indexOf('#');
  const base = hash >= 0 ? callback.slice(0, hash) : callback; // a fragment is never sent over HTTP
  if (queryParams.length === 0) return base;
  const pairs = queryParams.map(p => {
    const eq = p.indexOf('=');
    return eq < 0 ? encodeURIComponent(p) : `${encodeURIComponent(p.slice(0, eq))}=${encodeURIComponent(p.slice(eq + 1))}`;
  });
  const joiner = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return base + joiner + pairs.join('&');
}

/** Splits a stored `Name: value` header. */
export function splitHeader(header: string): [string, string] {
  const colon = header.indexOf(':');
  return [header.slice(0, colon).trim(), header.slice(colon + 1).trim()];
}

/** The HTTP request of one delivery attempt. */
export function buildCallbackRequest(id: string, sub: StoredSubscription, entries: CallbackEntry[]): CallbackRequest {
  const headers: Record<string, string | string[]> = {};
  const names = new Map<string, string>(); // lower-case name -> name as first written
  for (const h of sub.header) {
    const [name, value] = splitHeader(h);
    const key = names.get(name.toLowerCase()) ?? name;
    names.set(name.toLowerCase(), key);
    const prev = headers[key];
    headers[key] = prev === undefined ? value : ([] as string[]).concat(prev, value);
  }
  if (!names.has('user-agent')) headers['User-Agent'] = 'dam-emulator';
  const request: CallbackRequest = { url: callbackUrl(sub.callback, sub.queryParam), method: sub.method, headers };
  if (METHODS_WITH_BODY.has(sub.method)) {
    // requestType auto: the data is JSON (spec 2.3), so the type is application/json unless a header overrides it.
    if (!names.has('content-type')) headers['Content-Type'] = 'application/json';
    request.body = Buffer.from(JSON.stringify({ success: true, data: { entry: entries }, id }));
  }
  return request;
}

/** A counting semaphore: at most `limit` holders; waiters are served in arrival order. */
class Limiter {
  private active = 0;
  private waiters: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async acquire(signal: AbortSignal): Promise<void> {
    if (this.active < this.limit) { this.active++; return; }
    await new Promise<void>((resolve, reject) => {
      const grant = (): void => { signal.removeEventListener('abort', onAbort); this.active++; resolve(); };
      const onAbort = (): void => { this.waiters = this.waiters.filter(w => w !== grant); reject(signal.reason); };
      this.waiters.push(grant);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): void {
    this.active--;
    const next = this.waiters.shift();
    if (next) next();
  }
}

export interface CallbackSenderOptions {
  /** Timeout of one call, from the request until the response status (ms). */
  timeoutMs: number;
  /** Calls in flight at most, over all subscriptions. */
  maxInFlight: number;
}

export class CallbackSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly limiter: Limiter;

  constructor(private readonly options: CallbackSenderOptions) {
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: options.maxInFlight });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: options.maxInFlight });
    this.limiter = new Limiter(options.maxInFlight);
  }

  /**
   * Sends the request; resolves with the response status, or with an error code
   * (`ETIMEDOUT`, `ECONNREFUSED`, ...) for a failure. Rejects only when `signal` aborts it.
   */
  async send(request: CallbackRequest, signal: AbortSignal): Promise<number | string> {
    await this.limiter.acquire(signal);
    try {
      return await this.call(request, signal);
    } finally {
      this.limiter.release();
    }
  }

  private call(request: CallbackRequest, signal: AbortSignal): Promise<number | string> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) { reject(signal.reason); return; }
      const headers = { ...request.headers };
      if (request.body) headers['Content-Length'] = String(request.body.length);
      let req: http.ClientRequest;
      try {
        const url = new URL(request.url);
        const secure = url.protocol === 'https:';
        req = (secure ? https : http).request(url, { method: request.method, headers, agent: secure ? this.httpsAgent : this.httpAgent });
      } catch (e) {
        resolve((e as NodeJS.ErrnoException).code ?? 'ERR_INVALID_REQUEST'); // a failed attempt, never a stuck delivery
        return;
      }
      let settled = false;
      const finish = (outcome: number | string | Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (outcome instanceof Error) reject(outcome); else resolve(outcome);
      };
      const onAbort = (): void => { finish(signal.reason instanceof Error ? signal.reason : new Error('aborted')); req.destroy(); };
      const timer = setTimeout(() => { finish('ETIMEDOUT'); req.destroy(); }, this.options.timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('response', res => {
        res.resume(); // drain so the keep-alive socket is reused
        res.on('error', () => { /* the status is all we need */ });
        finish(res.statusCode ?? 0);
      });
      req.on('error', (e: NodeJS.ErrnoException) => finish(e.code ?? e.message));
      req.end(request.body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
