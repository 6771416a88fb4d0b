/**
 * The emulator's sessions: cookie values and what each may do, their expiry (idle time and
 * maximum age, as a real server's session settings), and the two login endpoints (the emulator's
 * choice, docs/emulator.md): the vendor's utility call `GET /command?zm_username=&zm_password=&data=`
 * answering JSON with `zm_cookie`, and a servlet form login `POST /review/j_security_check`
 * answering `Set-Cookie: JSESSIONID=...`. Passwords and cookie values never reach the log.
 */
import { randomBytes } from 'crypto';
import type { IncomingMessage, ServerResponse } from 'http';
import type { Permission } from '../api/types';

export const SESSION_COOKIE = 'JSESSIONID';
export const DEFAULT_USER = 'emulator-user';

export interface Session { permissions: Set<Permission>; user: string }

/** A user who may log in. */
export interface EmulatorUser {
  name: string;
  password: string;
  permissions: Permission[];
}

/** Session expiry, in ms; 0 or absent: never. */
export interface SessionLimits {
  idleMs?: number;
  maxAgeMs?: number;
  /** One active session per user (the vendor's licence): a login ends that user's other sessions. */
  onePerUser?: boolean;
}

interface Entry extends Session { createdAt: number; lastUsedAt: number }

/** Counters for tests and the demo (no secrets). */
export interface SessionStats {
  logins: number;
  failedLogins: number;
  expired: number;
  /** Sessions ended by a later login of the same user (one session per user). */
  endedByLogin: number;
}

/** Most cookie values whose request counts are remembered (oldest forgotten first). */
const COUNTED_VALUES = 10000;

/** Valid session cookie values, what each may do, and when each expires. */
export class SessionStore {
  private readonly sessions = new Map<string, Entry>();
  private readonly requests = new Map<string, number>();
  readonly stats: SessionStats = { logins: 0, failedLogins: 0, expired: 0, endedByLogin: 0 };

  constructor(private readonly limits: SessionLimits = {}) {}

  set(value: string, permissions: Permission[], user?: string): void {
    this.sweep();
    const now = Date.now();
    this.sessions.set(value, { permissions: new Set(permissions), user: user || DEFAULT_USER, createdAt: now, lastUsedAt: now });
  }

  delete(value: string): void { this.sessions.delete(value); }

  /** The session of a cookie value, when it exists and has not expired; counts the request. */
  get(value: string): Session | undefined {
    const entry = this.sessions.get(value);
    if (!entry) return undefined;
    const now = Date.now();
    if (this.isExpired(entry, now)) {
      this.sessions.delete(value);
      this.stats.expired++;
      return undefined;
    }
    entry.lastUsedAt = now;
    return entry;
  }

  /** Counts one authenticated request made with this cookie value. */
  countRequest(value: string): void {
    this.requests.set(value, (this.requests.get(value) ?? 0) + 1);
    if (this.requests.size > COUNTED_VALUES) this.requests.delete(this.requests.keys().next().value as string);
  }

  /** Authenticated requests made with this cookie value so far. */
  requestsWith(value: string): number { return this.requests.get(value) ?? 0; }

  /** A new session with a random value, `ses1-` and 32 hex digits (a shape tests can look for in logs). */
  create(permissions: Permission[], user: string): string {
    if (this.limits.onePerUser) this.endSessionsOf(user);
    const value = `ses1-${randomBytes(16).toString('hex')}`;
    this.set(value, permissions, user);
    return value;
  }

  /** Ends every live session of a user (a new login under one session per user). */
  private endSessionsOf(user: string): void {
    for (const [value, entry] of this.sessions) {
      if (entry.user !== user) continue;
      this.sessions.delete(value);
      if (!this.isExpired(entry, Date.now())) this.stats.endedByLogin++;
      else this.stats.expired++;
    }
  }

  private isExpired(entry: Entry, now: number): boolean {
    const { idleMs, maxAgeMs } = this.limits;
    return (!!idleMs && now - entry.lastUsedAt >= idleMs) || (!!maxAgeMs && now - entry.createdAt >= maxAgeMs);
  }

  private sweep(): void {
    if (!this.limits.idleMs && !this.limits.maxAgeMs) return;
    const now = Date.now();
    for (const [value, entry] of this.sessions) {
      if (this.isExpired(entry, now)) { this.sessions.delete(value); this.stats.expired++; }
    }
  }
}

/** `name=value` pairs of a Cookie header, in order (RFC 6265 5.4; quoted values unquoted). */
export function parseCookieHeader(header: string | undefined): [string, string][] {
  if (!header) return [];
  const pairs: [string, string][] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (name) pairs.push([name, value]);
  }
  return pairs;
}

/** The path of each login endpoint. */
export const LOGIN_PATHS = { utility: '/command', form: '/review/j_security_check' } as const;

const LOGIN_BODY_LIMIT = 64 * 1024;

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)), 'Cache-Control': 'no-store', ...headers
  });
  res.end(text);
}

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > LOGIN_BODY_LIMIT) { reject(new Error('login body too large')); req.destroy(); return; }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

/**
 * Answers a request to a login endpoint; false when the path is not one. The query string is
 * read for the utility call, a URL-encoded body for the form login.
 */
export async function handleLogin(
  req: IncomingMessage, res: ServerResponse, path: string, query: string,
  deps: { sessions: SessionStore; users: EmulatorUser[]; log: (line: string) => void }
): Promise<boolean> {
  const kind = path === LOGIN_PATHS.utility ? 'utility' : path === LOGIN_PATHS.form ? 'form' : undefined;
  if (!kind) return false;
  const method = kind === 'utility' ? 'GET' : 'POST';
  if (req.method !== method) {
    answer(res, 405, { success: false, error: `method ${req.method} not allowed here; use ${method}` }, { Allow: method });
    return true;
  }
  let fields: URLSearchParams;
  try {
    fields = kind === 'utility' ? new URLSearchParams(query) : await readForm(req);
  } catch (e) {
    answer(res, 413, { success: false, error: (e as Error).message }, { Connection: 'close' });
    return true;
  }
  const name = fields.get(kind === 'utility' ? 'zm_username' : 'j_username') ?? '';
  const password = fields.get(kind === 'utility' ? 'zm_password' : 'j_password') ?? '';
  if (kind === 'utility' && !/cmd\s*:\s*"?getcredentials\b/.test(fields.get('data') ?? '')) {
    answer(res, 400, { success: false, error: 'data must ask for cmd:getcredentials, e.g. data={clientVersion:"x",cmd:getcredentials}' });
    return true;
  }
  const user = deps.users.find((u) => u.name === name && u.password === password);
  const label = kind === 'utility' ? 'utility call' : 'form login';
  if (!user) {
    deps.sessions.stats.failedLogins++;
    deps.log(`login (${label}) refused for user ${JSON.stringify(name.slice(0, 64))}`);
    answer(res, 401, { success: false, error: 'invalid user name or password' });
    return true;
  }
  const value = deps.sessions.create(user.permissions, user.name);
  deps.sessions.stats.logins++;
  deps.log(`login (${label}): user ${JSON.stringify(user.name)} signed in`);
  if (kind === 'utility') {
    const origin = `http://${req.headers.host ?? '127.0.0.1'}`;
    answer(res, 200, {
      success: true, zm_cookie: value, rv_server: origin, wbm_server: origin, upload_to_preview_server: true,
      svr_realm: 'emulator', roles: user.permissions, projects: []
    });
  } else {
    answer(res, 303, { success: true }, { Location: '/review/', 'Set-Cookie': `${SESSION_COOKIE}=${value}; Path=/review; HttpOnly` });
  }
  return true;
}
