/**
 * The session of an {@link AssetClient}: the Cookie header it sends, a cookie set at run time,
 * and the optional automatic login. On a 401, one login serves every request that met it
 * (single flight); a failed login waits out a growing delay before the next attempt.
 *
 * No Node-RED dependency. The login request is described by data ({@link LoginOptions}), never code.
 */
import type { AxiosInstance, AxiosResponse } from 'axios';
import { cookieHeaderOf } from './cookie';
import { AssetApiError, invalidInput, redactSecrets, type AssetOperation } from './errors';
import { serverMessageOf, tryParseJson } from './error-mapping';
import { throwIfFromProxy } from './json-answer';
import { LoginFailure, requestFailure } from './login-failure';
import { DEFAULT_MAX_RETRY_MS, DEFAULT_RETRY_MS, checkLoginHost, resolveLogin, type LoginOptions, type ResolvedLogin } from './login';
import { loginLeaseMs, renewShared, type SharedSessionOption } from './shared-session';
import { sendAgainIfStale } from './stale-connection';
import { isPlainObject } from './values';

// The login's description and rules live in login.ts; this re-export keeps `./session` their address too.
export * from './login';

/** How many past cookies are still redacted from text (a cookie may come back in a late error). */
const REMEMBERED_SECRETS = 64;
/** Longest a whole login may take when the client has no timeout (timeout 0). */
const DEFAULT_LOGIN_DEADLINE_MS = 60000;

/**
 * An `auth` error of a failed automatic login (code LOGIN_FAILED): the step that failed and why
 * (`reason`, our own words), free of secrets; `serverSaid`, the login server's message, redacted.
 */
export class LoginError extends AssetApiError {
  constructor(message: string, readonly step: string, readonly reason: string, readonly credentialsRefused: boolean, operation: AssetOperation,
    readonly serverSaid?: string) {
    super('auth', message, { operation, status: 401, code: 'LOGIN_FAILED' });
  }

  /** With credentialsRefused: msg.assetError must tell a refused password (final) from a busy login server (transient). */
  toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), credentialsRefused: this.credentialsRefused };
  }
}

/** What the client lends the session for its login request. */
export interface SessionDeps {
  http: AxiosInstance;
  /** Base URL without trailing slash. */
  base: string;
  timeoutMs: number;
}

/**
 * Holds the Cookie header and renews it. Emits `renewed` after a successful automatic login and
 * `cookie-set` when a cookie is set at run time; neither event carries the cookie.
 */
export class SessionHolder {
  private header: string | undefined;
  private readonly secretList: string[] = [];
  /** Secrets of the client's settings besides the login (the proxy password): always redacted. */
  private readonly settingSecrets: string[] = [];
  private readonly login: ResolvedLogin | undefined;
  private inFlight: Promise<void> | undefined;
  private failure: { error: LoginFailure; until: number } | undefined;
  private delayMs: number;
  /** The Cookie header the last login gave, until the server first answers it with anything but 401. */
  private unproven: string | undefined;
  /** The Cookie header last taken from the shared store, until the server first answers it with anything but 401. */
  private adoptedUnproven: string | undefined;
  private readonly listeners: Array<(event: 'renewed' | 'cookie-set') => void> = [];

  constructor(private readonly deps: SessionDeps, cookie: unknown, login?: LoginOptions, private readonly shared?: SharedSessionOption) {
    this.login = login === undefined || login === null ? undefined : resolveLogin(login);
    checkLoginHost(this.login, deps.base);
    this.header = cookieHeaderOf(cookie);
    this.remember(cookie, this.header);
    this.delayMs = this.login?.retryDelayMs ?? DEFAULT_RETRY_MS;
  }

  /** The Cookie header to send now (undefined: none). */
  get cookieHeader(): string | undefined { return this.header; }

  /** True when automatic login is configured. */
  get canLogin(): boolean { return this.login !== undefined; }

  /** Every secret known (cookies old and new, the password), longest first, for redaction. */
  secrets(): string[] {
    const all = [...this.settingSecrets, ...(this.login ? [this.login.password, ...this.secretList] : this.secretList)];
    return all.filter((secret) => secret.length >= 4).sort((a, b) => b.length - a.length);
  }

  /** Redacts `secret` from every error text from now on (a setting's secret, e.g. the proxy password). */
  keepSecret(secret: string): void {
    if (secret && !this.settingSecrets.includes(secret)) this.settingSecrets.push(secret);
  }

  /** Called with the event name on `renewed` and `cookie-set`. */
  onChange(listener: (event: 'renewed' | 'cookie-set') => void): void { this.listeners.push(listener); }

  /** Sets the cookie from now on (same rules as the configured cookie); a waiting login backoff ends. */
  set(cookie: unknown): void {
    const header = cookieHeaderOf(cookie);
    if (header === undefined) throw invalidInput('cookie', 'must not be empty: Name=value or a bare session id');
    this.header = header;
    this.remember(cookie, header);
    this.failure = undefined;
    this.delayMs = this.login?.retryDelayMs ?? DEFAULT_RETRY_MS;
    this.emit('cookie-set');
  }

  /**
   * A request sent with `usedHeader` met a 401: makes sure a newer session exists. Resolves at
   * once when the cookie changed meanwhile; else joins the login in flight or starts one (unless
   * a failed login's delay is still running). Rejects with an `auth` error naming the failed step.
   */
  async renew(usedHeader: string | undefined, operation: AssetOperation, signal?: AbortSignal): Promise<void> {
    if (this.header !== usedHeader) return;
    if (!this.login) throw new AssetApiError('auth', `${operation}: automatic login is not set up`, { operation, status: 401 });
    if (!this.inFlight) {
      // A 401 to the session the last login gave, before the server ever took it (e.g. the
      // repeat of a request was aborted, or another request met it first): logging in again
      // would only give another such session, in a tight loop. It counts as a failed login.
      if (usedHeader !== undefined && usedHeader === this.unproven) {
        this.unproven = undefined;
        throw this.refused(operation);
      }
      const waiting = this.failure ? this.failure.until - Date.now() : 0;
      if (this.failure && waiting > 0) throw this.loginError(operation, this.failure.error, waiting);
      const renewing = this.shared ? this.renewThroughStore(this.login, this.shared, usedHeader) : this.runLogin(this.login);
      this.inFlight = renewing.finally(() => { this.inFlight = undefined; });
    }
    try {
      await untilAborted(this.inFlight, signal, operation);
    } catch (err) {
      if (err instanceof LoginFailure) throw this.loginError(operation, err, this.failure ? this.failure.until - Date.now() : 0);
      throw err;
    }
  }

  /**
   * Logs in now (e.g. at start); during the wait after a failed login it rejects at once saying
   * when the next try is. Rejects with an `auth` error naming the failed step.
   */
  async loginNow(operation: AssetOperation, signal?: AbortSignal): Promise<void> {
    return this.renew(this.header, operation, signal);
  }

  /** The server answered a request sent with `usedHeader` with anything but 401: that session works. */
  accepted(usedHeader: string | undefined): void {
    if (usedHeader !== undefined && usedHeader === this.unproven) this.unproven = undefined;
    if (usedHeader !== undefined && usedHeader === this.adoptedUnproven) this.adoptedUnproven = undefined;
  }

  /**
   * The repeat after a renewal, sent with `repeatHeader`, met a 401 too. When that cookie was
   * taken from the shared store and never worked here (the server had ended it, e.g. a cookie left
   * in Redis overnight), the store is asked again, which now logs in through the lock: resolves
   * true, worth one more try. Else false: the caller reports {@link refused}.
   */
  async renewAdopted(repeatHeader: string | undefined, operation: AssetOperation, signal?: AbortSignal): Promise<boolean> {
    if (!this.shared || repeatHeader === undefined || repeatHeader !== this.adoptedUnproven) return false;
    this.adoptedUnproven = undefined;
    await this.renew(repeatHeader, operation, signal);
    return this.header !== repeatHeader;
  }

  /**
   * The request repeated after a login met a 401 again: the server does not take the session the
   * login gave. Counts as a failed login, so the next one waits.
   */
  refused(operation: AssetOperation): AssetApiError {
    const failure = new LoginFailure('repeated request', 'the server answered HTTP 401 to the session the login gave');
    this.unproven = undefined;
    this.fail(failure);
    return new AssetApiError('auth',
      `${operation}: authentication failed (HTTP 401) again right after an automatic login: the server does not accept the ` +
      'session the login gave. Check the login\'s session source and cookie name (asset-server: Automatic login).',
      { operation, status: 401, code: 'LOGIN_REFUSED' });
  }

  // ---- internals

  private emit(event: 'renewed' | 'cookie-set'): void {
    for (const listener of this.listeners) {
      try { listener(event); } catch { /* a listener's failure is its own */ }
    }
  }

  private addSecret(secret: string): void {
    if (secret.length < 4 || this.secretList.includes(secret)) return;
    this.secretList.push(secret);
    if (this.secretList.length > REMEMBERED_SECRETS) this.secretList.shift();
  }

  private remember(cookie: unknown, header: string | undefined): void {
    if (typeof cookie === 'string' && cookie.trim() !== '') this.addSecret(cookie.trim());
    if (!header) return;
    this.addSecret(header);
    for (const pair of header.split(';')) {
      const equals = pair.indexOf('=');
      this.addSecret((equals < 0 ? pair : pair.slice(equals + 1)).trim());
    }
  }

  private fail(failure: LoginFailure): void {
    this.failure = { error: failure, until: Date.now() + this.delayMs };
    this.delayMs = Math.min(this.delayMs * 2, this.login?.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_MS);
  }

  private loginError(operation: AssetOperation, failure: LoginFailure, waitMs: number): LoginError {
    const next = waitMs > 0 ? `next try in ${Math.ceil(waitMs / 1000)} s` : 'next try on the next request';
    const reason = this.redact(failure.reason);
    const said = failure.said === undefined ? undefined : this.redact(failure.said);
    return new LoginError(
      `${operation}: login failed, ${next}: ${failure.step}: ${reason}${said ? ` (server says: ${said})` : ''}. ` +
      'Automatic login: check the user name, password and login settings of the asset-server node, or set a new cookie.',
      failure.step, reason, failure.credentialsRefused, operation, said);
  }

  /** `text` without the password and any cookie this session sent (each becomes ***). */
  redact(text: string): string {
    return redactSecrets(text, this.secrets());
  }

  /** The login, or a newer cookie another copy published, through the shared store (shared-session.ts). */
  private renewThroughStore(login: ResolvedLogin, shared: SharedSessionOption, stale: string | undefined): Promise<void> {
    return renewShared(shared.store, stale, loginLeaseMs(this.deps.timeoutMs), {
      login: () => this.runLogin(login).then(() => this.header as string),
      adopt: (header) => {
        this.header = header;
        this.adoptedUnproven = header;
        this.remember(header, header);
        this.failure = undefined;
        this.delayMs = login.retryDelayMs;
        this.emit('renewed');
      },
      storeProblem: (err) => { try { shared.onProblem?.(err); } catch { /* the listener's own */ } }
    });
  }

  private async runLogin(login: ResolvedLogin): Promise<void> {
    let value: string;
    // One deadline for the whole login (session page and login request): the socket's idle timeout
    // alone never ends an answer that trickles in a byte at a time.
    const deadlineMs = this.deps.timeoutMs > 0 ? this.deps.timeoutMs : DEFAULT_LOGIN_DEADLINE_MS;
    const deadline = AbortSignal.timeout(deadlineMs);
    try {
      let response: AxiosResponse;
      try {
        response = await this.sendLogin(login, deadline, deadlineMs);
      } catch (err) {
        // The session the page gave was lost before the login (Tomcat answers 408: expired, or
        // another node of a cluster): not a wrong password, so once more at once, with a new one.
        if (!(err instanceof LoginFailure && err.preLoginSessionLost)) throw err;
        response = await this.sendLogin(login, deadline, deadlineMs);
      }
      value = this.sessionOf(login, response);
    } catch (err) {
      // The proxy refused its credentials (407), or a setting is not valid: not the login's fault, no login backoff.
      if (err instanceof AssetApiError && (err.kind === 'proxy' || err.kind === 'invalid-input')) throw err;
      const failure = err instanceof LoginFailure ? err : new LoginFailure('login request', err instanceof Error ? err.message : String(err));
      this.fail(failure);
      throw failure;
    }
    this.header = `${login.cookieName}=${value}`;
    this.unproven = this.header;
    this.remember(value, this.header);
    this.failure = undefined;
    this.delayMs = login.retryDelayMs;
    this.emit('renewed');
  }

  private async sendLogin(login: ResolvedLogin, deadline: AbortSignal, deadlineMs: number): Promise<AxiosResponse> {
    const fill = (text: string) => text.split('{{username}}').join(login.username).split('{{password}}').join(login.password);
    const fields = new URLSearchParams();
    for (const [name, value] of login.fieldList) fields.append(fill(name), fill(value));
    const url = this.resolve(login.url, 'login URL');
    const sessionCookies = login.sessionUrl ? await this.firstSession(this.resolve(login.sessionUrl, 'session page URL'), deadline, deadlineMs) : undefined;
    const form = login.fieldsIn === 'form';
    if (!form) for (const [name, value] of fields) url.searchParams.append(name, value);
    const where = `${url.origin}${url.pathname}`;
    let response: AxiosResponse;
    try {
      response = await sendAgainIfStale(() => this.deps.http.request({ // twice: a spare session (or a 2nd refusal)
        method: login.method,
        url: url.toString(),
        data: form ? fields.toString() : undefined,
        headers: {
          Accept: 'application/json, */*',
          ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded; charset=UTF-8' } : {}),
          ...(sessionCookies ? { Cookie: sessionCookies } : {})
        },
        responseType: 'text',
        timeout: this.deps.timeoutMs,
        signal: deadline,
        maxRedirects: 0
      }), true, deadline);
    } catch (err) {
      throw requestFailure('login request', where, err, deadline.aborted ? deadlineMs : undefined);
    }
    throwIfFromProxy('login', url.origin, response); // a proxy's refusal: not a refused password
    const okStatus = response.status >= 200 && response.status < (login.sessionFrom === 'set-cookie' ? 400 : 300);
    if (!okStatus) {
      const said = serverMessageOf(tryParseJson(String(response.data ?? ''))?.value);
      const refused = response.status === 401 || response.status === 403;
      const hint = refused ? ' (user name or password refused)' : '';
      const sessionLost = response.status === 408 && login.sessionUrl !== undefined;
      throw new LoginFailure('login request', `${where} answered HTTP ${response.status}${hint}`, refused, said ? this.redact(said).slice(0, 200) : undefined, sessionLost);
    }
    return response;
  }

  private resolve(text: string, what: string): URL {
    try {
      return /^https?:\/\//i.test(text) ? new URL(text) : new URL(this.deps.base + (text.startsWith('/') ? '' : '/') + text);
    } catch {
      throw new LoginFailure('login settings', `the ${what} is not a valid URL (${text.slice(0, 100)})`);
    }
  }

  /** GETs the session page; the `name=value` pairs of its Set-Cookie headers, for the login request. */
  private async firstSession(url: URL, deadline: AbortSignal, deadlineMs: number): Promise<string | undefined> {
    let response: AxiosResponse;
    try {
      response = await sendAgainIfStale(() => this.deps.http.request({
        method: 'GET', url: url.toString(), responseType: 'text', timeout: this.deps.timeoutMs, signal: deadline, maxRedirects: 0
      }), true, deadline);
      throwIfFromProxy('login', url.origin, response);
    } catch (err) {
      throw requestFailure('session page', `${url.origin}${url.pathname}`, err, deadline.aborted ? deadlineMs : undefined);
    }
    const pairs = setCookieLines(response).map((line) => line.split(';')[0].trim()).filter((pair) => pair.indexOf('=') > 0);
    for (const pair of pairs) this.addSecret(pair.slice(pair.indexOf('=') + 1));
    return pairs.length ? pairs.join('; ') : undefined;
  }

  private sessionOf(login: ResolvedLogin, response: AxiosResponse): string {
    if (login.sessionFrom === 'set-cookie') {
      const lines = setCookieLines(response);
      // The last one wins, as in a browser: a servlet container may set a first session, then
      // change its id on authentication (session fixation protection) in the same answer.
      let found: string | undefined;
      for (const line of lines) {
        const pair = line.split(';')[0];
        const equals = pair.indexOf('=');
        if (equals > 0 && pair.slice(0, equals).trim() === login.sessionName) {
          const value = pair.slice(equals + 1).trim().replace(/^"(.*)"$/, '$1');
          if (value !== '') found = value;
        }
      }
      if (found !== undefined) return checkedValue(found);
      throw new LoginFailure('login answer', `HTTP ${response.status} without a Set-Cookie named ${login.sessionName}`);
    }
    const parsed = tryParseJson(String(response.data ?? ''));
    if (!parsed) throw new LoginFailure('login answer', `HTTP ${response.status} is not JSON, so it has no property ${login.sessionName}`);
    let value: unknown = parsed.value;
    for (const key of login.sessionName.split('.')) value = isPlainObject(value) ? value[key] : undefined;
    if (typeof value !== 'string' && typeof value !== 'number') {
      const said = serverMessageOf(parsed.value);
      throw new LoginFailure('login answer', `the JSON answer has no property ${login.sessionName}`, false, said ? this.redact(said).slice(0, 200) : undefined);
    }
    return checkedValue(String(value));
  }
}

/**
 * Waits for the shared login, unless the caller's signal ends first: then this caller stops
 * waiting ('aborted'; a call maps it to its own timeout or abort), and the login goes on for the
 * others within its own deadline.
 */
function untilAborted(login: Promise<void>, signal: AbortSignal | undefined, operation: AssetOperation): Promise<void> {
  if (!signal) return login;
  const aborted = () => new AssetApiError('aborted', `${operation}: aborted while waiting for the automatic login`, { operation });
  if (signal.aborted) return Promise.reject(aborted());
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    login.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function setCookieLines(response: AxiosResponse): string[] {
  const raw = (response.headers as Record<string, unknown>)['set-cookie'];
  return Array.isArray(raw) ? raw.map(String) : raw === undefined ? [] : [String(raw)];
}

function checkedValue(value: string): string {
  if (!/^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/.test(value)) {
    throw new LoginFailure('login answer', 'the session value is not a valid cookie value');
  }
  return value;
}
