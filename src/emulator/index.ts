/**
 * The local stand-in of the asset server: a real HTTP server that keeps the spec's rules.
 * See docs/emulator.md for the endpoints and the choices made where the spec says "not shown".
 */
import * as http from 'http';
import * as https from 'https';
import * as os from 'os';
import * as path from 'path';
import { promises as fsp } from 'fs';
import type { Permission } from '../api/types';
import { openSubscriptionHub } from './subscriptions';
import { Repository } from './repository';
import { Ingester } from './upload';
import { uploadLimits } from './limits';
import { SessionStore, createHandler } from './server';
import { FaultPlan, type BusyFault, type CutFault, type SlowFault } from './faults';
import { DEFAULT_FORM_CHARSET, FORM_CHARSETS, type FormCharset } from './charset';
import type { EmulatorUser, SessionStats } from './sessions';

export type { FormCharset } from './charset';
export type { BusyFault, SlowFault } from './faults';
export type { EmulatorUser, SessionStats } from './sessions';

export interface EmulatorSession {
  /** Cookie value: valid as `JSESSIONID=<value>`. */
  value: string;
  permissions: Permission[];
  /** User name recorded as owner of what this session adds. Default `emulator-user`. */
  user?: string;
}

export interface EmulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8873; 0 picks a free port. */
  port?: number;
  /** Folder holding all state. Default: a new temporary folder. */
  dataDir?: string;
  /** Delay between delivery retries in ms. Default 60000 (spec section 3). */
  retryDelayMs?: number;
  /** Valid sessions. Default one session `local-dev` with events and add. */
  sessions?: EmulatorSession[];
  /** Users who may log in (utility call and form login, docs/emulator.md). Default none. */
  users?: EmulatorUser[];
  /** A session not used for this many seconds expires (given ones and logged-in ones alike). Default never. */
  sessionIdle?: number;
  /** A session expires this many seconds after it was made, used or not. Default never. */
  sessionMaxAge?: number;
  /**
   * One active session per user, as the vendor's licence has it: a login ends that user's other
   * sessions (given ones too, when they name the user). Default false.
   */
  oneSessionPerUser?: boolean;
  /**
   * Every ingest takes at least this long (ms) before it commits: a slow server, to try out
   * waitInMinutes (which may be a fraction, e.g. 0.01 = 600 ms) and client timeouts. Default 0.
   */
  ingestDelayMs?: number;
  /** Largest uploaded file in bytes (default 10 GB); larger ones are refused. */
  maxUploadBytes?: number;
  /** A zip archive may expand to at most this multiple of its size (default 100)... */
  maxZipRatio?: number;
  /** ... and to at most this many bytes (default 10 GB); else it is refused. */
  maxZipBytes?: number;
  /** ... and hold at most this many entries, files and folders (default 10,000). */
  maxZipEntries?: number;
  /** Where log lines go. Default: nowhere. Never receives a cookie value. */
  log?: (line: string) => void;
  /**
   * Charset of a form or multipart request body whose Content-Type declares none. Default
   * `iso-8859-1`, what a servlet container (the real server) does; `utf-8` for clients that
   * send UTF-8 without saying so. A declared charset is always honoured.
   */
  formCharset?: FormCharset;
  /** Serve HTTPS with this certificate and key (PEM), e.g. to test a client's TLS settings. Default plain HTTP. */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

export interface RunningEmulator {
  /** e.g. http://127.0.0.1:8873 (no trailing slash). */
  url: string;
  port: number;
  dataDir: string;
  /** Add or replace a session at run time. */
  addSession(session: EmulatorSession): void;
  /** Invalidate a session (as an expired cookie on a real server). */
  revokeSession(value: string): void;
  /** Authenticated requests made so far with this cookie value. */
  requestsWith(value: string): number;
  /** Logins, refused logins and expired sessions so far. */
  sessionStats(): SessionStats;
  /** Answers the next `fault.count` API requests busy (449/503, optional Retry-After); see faults.ts. */
  injectBusy(fault: BusyFault): void;
  /** Busy answers sent so far. */
  busyAnswers(): number;
  /** Holds the next `fault.count` requests whose path contains `fault.pathContains` for `fault.delayMs` (a slow login or server); see faults.ts. */
  injectSlow(fault: SlowFault): void;
  /** Requests held by a slow fault so far. */
  slowAnswers(): number;
  /** Ends the next `fault.count` answers to requests whose path contains `fault.pathContains` after `fault.afterBytes` bytes of body (the connection closes); see faults.ts. */
  injectCut(fault: CutFault): void;
  /** Answers cut short so far. */
  cutAnswers(): number;
  /** Stops accepting, ends deliveries in flight, flushes state; removes the data folder if it made it (no `dataDir` given). */
  close(): Promise<void>;
}

export const DEFAULT_PORT = 8873;
export const DEFAULT_SESSION: EmulatorSession = { value: 'local-dev', permissions: ['events', 'add'] };

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => undefined);
  const retryDelayMs = options.retryDelayMs ?? 60_000;
  if (!Number.isFinite(retryDelayMs) || retryDelayMs < 0) throw new Error('retryDelayMs must be a non-negative number');
  const formCharset = options.formCharset ?? DEFAULT_FORM_CHARSET;
  if (!FORM_CHARSETS.includes(formCharset)) throw new Error(`formCharset must be one of ${FORM_CHARSETS.join(', ')}`);
  const ingestDelayMs = options.ingestDelayMs ?? 0;
  if (!Number.isFinite(ingestDelayMs) || ingestDelayMs < 0) throw new Error('ingestDelayMs must be a non-negative number');
  // Options first: a start that fails afterwards leaves nothing listening.
  const limits = uploadLimits({ maxUploadBytes: options.maxUploadBytes, maxZipRatio: options.maxZipRatio, maxZipBytes: options.maxZipBytes, maxZipEntries: options.maxZipEntries });
  const seconds = (name: string, value: number | undefined): number => {
    if (value === undefined) return 0;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number of seconds, 0 (never) or more`);
    return Math.round(value * 1000);
  };
  const sessions = new SessionStore({
    idleMs: seconds('sessionIdle', options.sessionIdle), maxAgeMs: seconds('sessionMaxAge', options.sessionMaxAge), onePerUser: options.oneSessionPerUser === true
  });
  for (const s of options.sessions ?? [DEFAULT_SESSION]) sessions.set(s.value, s.permissions, s.user);

  // The port first: an emulator started twice fails before it opens (and re-publishes from) any data.
  let handle: http.RequestListener = (_req, res) => {
    res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1' });
    res.end('{"success":false,"error":"the emulator is starting"}');
  };
  const listener: http.RequestListener = (req, res) => handle(req, res);
  const server = options.tls ? https.createServer({ cert: options.tls.cert, key: options.tls.key }, listener) : http.createServer(listener);
  server.requestTimeout = 0; // a multi-GiB upload may take longer than Node's default 5 minutes
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"success":false,"error":"malformed HTTP request"}');
    else socket.destroy();
  });
  const wanted = options.port ?? DEFAULT_PORT;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'EADDRINUSE'
      ? new Error(`port ${wanted} on ${host} is already in use (another dam-emulator?): stop it, or choose another port (--port)`) : e));
    server.listen(wanted, host, () => { server.removeAllListeners('error'); resolve(); });
  });
  const closeServer = () => new Promise<void>(resolve => server.close(() => resolve()));

  // A folder the caller did not name is this emulator's own: close() removes it (tests upload GiBs).
  const ownsDataDir = options.dataDir === undefined;
  let dataDir: string;
  let hub: Awaited<ReturnType<typeof openSubscriptionHub>>;
  let repo: Repository;
  try {
    dataDir = path.resolve(options.dataDir ?? await fsp.mkdtemp(path.join(os.tmpdir(), 'dam-emulator-')));
    await fsp.mkdir(dataDir, { recursive: true });

    hub = await openSubscriptionHub({ dataDir, retryDelayMs, log });
    try {
      repo = await Repository.open(dataDir, { publish: change => hub.publish(change), log });
      // Changes committed before a crash but not yet in the hub's journal are published now.
      const republished = await repo.republishFrom(hub.lastPublishedRrn());
      if (republished > 0) log(`re-published ${republished} change(s) after a restart`);
    } catch (e) {
      await hub.close();
      throw e;
    }
  } catch (e) {
    await closeServer();
    throw e;
  }
  const ingester = new Ingester(repo, log, ingestDelayMs, limits);
  ingester.resume();

  const faults = new FaultPlan();
  handle = createHandler({ repo, hub, ingester, sessions, users: options.users ?? [], log, formCharset, limits, faults });
  const port = (server.address() as { port: number }).port;
  const url = `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | null = null;
  return {
    url,
    port,
    dataDir,
    addSession: s => sessions.set(s.value, s.permissions, s.user),
    revokeSession: value => sessions.delete(value),
    requestsWith: value => sessions.requestsWith(value),
    sessionStats: () => ({ ...sessions.stats }),
    injectBusy: fault => faults.addBusy(fault),
    busyAnswers: () => faults.busyAnswers,
    injectSlow: fault => faults.addSlow(fault),
    slowAnswers: () => faults.slowAnswers,
    injectCut: fault => faults.addCut(fault),
    cutAnswers: () => faults.cutAnswers,
    close: () => closing ??= (async () => {
      const stopped = new Promise<void>(resolve => server.close(() => resolve()));
      server.closeAllConnections(); // uploads in flight are cut: their temporary files are removed
      await stopped;
      await ingester.stop();
      await repo.close(); // waits for the write in progress, which publishes to the hub
      await hub.close();
      if (ownsDataDir) await fsp.rm(dataDir, { recursive: true, force: true });
    })()
  };
}
