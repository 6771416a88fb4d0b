/**
 * Fault injection for tests and demos: the next N API requests (optionally only those whose
 * path contains a given text) are answered "busy" (HTTP 449 or 503, with Retry-After when asked)
 * before anything else is looked at, as the vendor's preview server does under load. A fault that
 * names a path outside the API (the login endpoints `/command`, `/review/j_security_check`) is
 * armed for that path: a login that fails for a while, as when the login server restarts. Also
 * slow answers (held a while), and answers cut short (the connection closed part-way through the body).
 */
import type { IncomingMessage, ServerResponse } from 'http';

/** Most of a refused request's body read before the busy answer (Tomcat's maxSwallowSize default). */
const SWALLOW_BYTES = 2 * 1024 * 1024;

export interface BusyFault {
  /** How many requests get the busy answer. */
  count: number;
  /** 449 ("retry with", what the vendor's server sends) or 503. Default 503. */
  status?: 449 | 503;
  /** Retry-After header value in seconds; none when not given. */
  retryAfterSeconds?: number;
  /** Only requests whose path contains this text (e.g. `/asset/upload`, or `/command` for the login). Default: every API request. */
  pathContains?: string;
}

/** The next `count` requests whose path contains `pathContains` are held `delayMs`, then handled as usual (a slow server or login). */
export interface SlowFault {
  count: number;
  delayMs: number;
  pathContains: string;
}

/** The next `count` answers to requests whose path contains `pathContains` end after `afterBytes` bytes of their body: the connection closes (a stored file shorter than its recorded size, a server that died part-way). */
export interface CutFault {
  count: number;
  afterBytes: number;
  pathContains: string;
}

/** A fault's `count` checked: answers it applies to, 1 or more. */
function checkCount(kind: string, count: number): void {
  if (!Number.isInteger(count) || count < 1) throw new Error(`${kind} fault: count must be a whole number above 0`);
}

/** The first armed fault `applies` to, its count taken one down (gone at 0); undefined when none. */
function takeArmed<F extends { count: number }>(armed: F[], applies: (fault: F) => boolean): F | undefined {
  const fault = armed.find(applies);
  if (fault && --fault.count === 0) armed.splice(armed.indexOf(fault), 1);
  return fault;
}

export class FaultPlan {
  private readonly slow: SlowFault[] = [];
  /** Requests held by a slow fault so far. */
  slowAnswers = 0;

  /** Arms a slow fault (added after those already armed). */
  addSlow(fault: SlowFault): void {
    checkCount('slow', fault.count);
    if (!(fault.delayMs >= 0)) throw new Error('slow fault: delayMs must be 0 or more');
    if (!fault.pathContains) throw new Error('slow fault: pathContains is required');
    this.slow.push({ ...fault });
  }

  /**
   * Waits when a slow fault is armed for `path` (before anything else is looked at). True when the
   * client gave up meanwhile: the request is then dropped (a login that timed out on the client's
   * side creates no session that would end the user's next one).
   */
  async hold(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> {
    const fault = takeArmed(this.slow, f => path.includes(f.pathContains));
    if (!fault) return false;
    this.slowAnswers++;
    await new Promise(resolve => setTimeout(resolve, fault.delayMs));
    return res.destroyed || req.socket.destroyed;
  }

  private readonly cuts: CutFault[] = [];
  /** Answers cut short so far. */
  cutAnswers = 0;

  /** Arms a cut fault (added after those already armed). */
  addCut(fault: CutFault): void {
    checkCount('cut', fault.count);
    // Node sends the headers with the first bytes of the body: 0 would close before any answer.
    if (!Number.isInteger(fault.afterBytes) || fault.afterBytes < 1) throw new Error('cut fault: afterBytes must be a whole number above 0');
    if (!fault.pathContains) throw new Error('cut fault: pathContains is required');
    this.cuts.push({ ...fault });
  }

  /** When a cut fault is armed for `path`: the answer's body stops after its bytes, and the connection closes (headers as usual). */
  cut(res: ServerResponse, path: string): void {
    const fault = takeArmed(this.cuts, f => path.includes(f.pathContains));
    if (!fault) return;
    let left = fault.afterBytes;
    const write = res.write.bind(res) as (chunk: Buffer, done?: (err?: Error | null) => void) => boolean;
    const end = res.end.bind(res) as (done?: () => void) => ServerResponse;
    type Done = ((err?: Error | null) => void) | undefined;
    // Passes `chunk` on while bytes are left; past them, what fits goes out, then the connection
    // closes (FIN after it) and the answer is dropped.
    const cutShort = (chunk: unknown, encoding: unknown, done: Done): void => {
      if (chunk === undefined || chunk === null || left < 0) return;
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8');
      if (bytes.length <= left) { left -= bytes.length; write(bytes, done); return; }
      if (left > 0) write(bytes.subarray(0, left));
      left = -1;
      this.cutAnswers++;
      res.socket?.end(() => res.destroy());
    };
    const args = (encoding: unknown, done: unknown): [unknown, Done] => (typeof encoding === 'function' ? [undefined, encoding as Done] : [encoding, done as Done]);
    res.write = ((chunk: unknown, encoding?: unknown, done?: unknown) => {
      const [enc, cb] = args(encoding, done);
      cutShort(chunk, enc, cb);
      return left >= 0;
    }) as ServerResponse['write'];
    res.end = ((chunk?: unknown, encoding?: unknown, done?: unknown) => {
      if (typeof chunk === 'function') return end(chunk as () => void);
      const [enc, cb] = args(encoding, done);
      cutShort(chunk, enc, undefined);
      if (left >= 0) end(cb as (() => void) | undefined);
      return res;
    }) as ServerResponse['end'];
  }

  private readonly busy: Array<Required<Omit<BusyFault, 'retryAfterSeconds'>> & { retryAfterSeconds?: number }> = [];
  /** Busy answers sent so far. */
  busyAnswers = 0;

  /** Arms `fault.count` busy answers (added after those already armed). */
  addBusy(fault: BusyFault): void {
    checkCount('busy', fault.count);
    const status = fault.status ?? 503;
    if (status !== 449 && status !== 503) throw new Error('busy fault: status must be 449 or 503');
    this.busy.push({ count: fault.count, status, retryAfterSeconds: fault.retryAfterSeconds, pathContains: fault.pathContains ?? '' });
  }

  /** Answers `req` busy when a fault is armed for its path; true when it did (the answer may follow its body). */
  answer(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    const api = path.startsWith('/review/api/');
    const fault = takeArmed(this.busy, f => (f.pathContains === '' ? api : path.includes(f.pathContains)));
    if (!fault) return false;
    this.busyAnswers++;
    const body = JSON.stringify({ success: false, error: fault.status === 449 ? 'retry, resources unavailable' : 'server busy' });
    const headers: Record<string, string> = {
      'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close'
    };
    if (fault.retryAfterSeconds !== undefined) headers['Retry-After'] = String(fault.retryAfterSeconds);
    // An upload's body is read and dropped (nothing is stored) before the answer, up to 2 MiB as
    // Tomcat swallows it (maxSwallowSize): closing while the client still writes made it see EPIPE
    // or a reset instead of the busy answer, now and then.
    let swallowed = 0;
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      res.writeHead(fault.status, headers);
      res.end(body);
    };
    req.on('data', (chunk: Buffer) => { swallowed += chunk.length; if (swallowed > SWALLOW_BYTES) answer(); });
    req.on('end', answer);
    req.on('error', answer);
    if (req.readableEnded) answer();
    return true;
  }
}
