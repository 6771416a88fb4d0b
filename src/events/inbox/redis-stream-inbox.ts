/**
 * The at-least-once inbox shared by several Node-RED copies: a Redis Stream per asset-event-in
 * node with one consumer group; every copy reads with a consumer name of its own.
 *
 * - store: one script (redis-stream-scripts.ts) checks each entry against the duplicate window and
 *   the newest stored revision of its asset and XADDs the new ones, all in one round trip, so an
 *   entry is never claimed without being stored. Over the bound: nothing is written (InboxFullError).
 * - take, one script: XAUTOCLAIM (entries held by any copy past the visibility timeout: a copy
 *   killed or stuck), XREADGROUP (new entries), and the starts: only the first entry of its
 *   asset's line, and only by the copy whose pending list holds it (the per-asset lock; its lease
 *   is the visibility timeout: the idle time after which another copy claims the entry). Entries
 *   read but not yet allowed wait with this copy (their idle time restarted while it polls, so
 *   that no other copy claims them while this one lives).
 * - acknowledge: XACK and XDEL (the stream holds only what is not acknowledged; never MAXLEN),
 *   the line moves on. Parked entries live in a hash every copy reads.
 *
 * Entries stored by another copy are seen at the next poll (`pollMs`): nextDueAt asks for one.
 */
import * as os from 'os';
import { randomBytes, createHash } from 'crypto';
import { entryKey } from '../payload';
import { entryDigest } from '../entry-digest';
import type { CallbackEntry } from '../../api/types';
import { callWithin, type ConnectionState } from '../redis-within';
import { STREAM_SCRIPTS } from './redis-stream-scripts';
import { DRAIN_SCRIPTS } from './redis-stream-drain-scripts';
import { keyText } from './keys';
import { REVISION_HORIZON_MS } from './inbox-state';
import { InboxFullError, type Delivery, type Inbox, type InboxCounts, type InboxOptions, type NewEntry, type ParkedEntry, type Taken } from './types';

/** The part of an ioredis client used here. */
export interface StreamRedis extends ConnectionState {
  call(command: string, ...args: Array<string | number>): Promise<unknown>;
}

export interface StreamInboxOptions extends InboxOptions {
  /** Prefix of every key of this inbox; include the node id as a hash tag: `dam:{node}:in:`. */
  prefix: string;
  /** Duplicate window, ms (0: no duplicate filter): an entry stored within it is not stored again. */
  windowMs: number;
  /** How long a key's newest revision is kept after its last store, ms. Default REVISION_HORIZON_MS. */
  revisionHorizonMs?: number;
  /** Most time one Redis round trip may take, ms. */
  timeoutMs: number;
  /** How often entries stored by other copies, and entries timed out anywhere, are looked for. Default 200 ms. */
  pollMs?: number;
  /** This copy's consumer name. Default host, pid and a random part. */
  consumer?: string;
}

/** Thrown when Redis did not answer within the timeout. */
export class StreamUnavailableError extends Error {}

/** An entry this copy read and has not started: `touchedAt` when its idle time in Redis last restarted. */
interface Held { id: string; key: string; data: string; dueAt: number; touchedAt: number }
interface Flight extends Held { delivery: number; deadline: number }

/** Stream ids `ms-seq` in order. */
function byStreamId(a: { id: string }, b: { id: string }): number {
  const [am, as] = a.id.split('-').map(Number);
  const [bm, bs] = b.id.split('-').map(Number);
  return am - bm || as - bs;
}

/** What the stream keeps of an entry besides its key: the entry, subscription, arrival. */
interface Data { e: unknown; s?: string; at: string }

function toEntry(id: string, key: string, data: string): NewEntry & { id: string } {
  const d = JSON.parse(data) as Data;
  const out: NewEntry & { id: string } = { id, key, entry: d.e, receivedAt: d.at };
  if (d.s !== undefined) out.subscriptionId = d.s;
  return out;
}

function toParked(id: string, json: string): ParkedEntry {
  const r = JSON.parse(json) as { k: string; d: string; n: number; r: string; pa: string };
  return { ...toEntry(id, r.k, r.d), deliveries: Number(r.n), reason: r.r, parkedAt: r.pa };
}

const WARN_INTERVAL_MS = 30000;
/** How often, and after how long idle, consumers of copies gone are removed from the group. */
const SWEEP_MS = 60000;

export class RedisStreamInbox implements Inbox {
  readonly consumer: string;
  private readonly held = new Map<string, Held>();
  private readonly flights = new Map<string, Flight>();
  private readonly pollMs: number;
  private readonly now: () => number;
  private readonly shas = new Map<string, string>();
  private nextPollAt = 0;
  /** A store or a full read since the last XREADGROUP: worth reading again before the next poll. */
  private maybeNew = true;
  private claimCursor = '0-0';
  private readonly acks: Array<{ id: string; delivery: number; key: string; resolve: (ok: boolean) => void; reject: (err: unknown) => void }> = [];
  private nextSweepAt = 0;
  private cached: InboxCounts;
  private lastWarnAt = 0;
  private closed = false;
  /** Why the last read failed ('' once one works). */
  problem = '';

  constructor(private readonly redis: StreamRedis, private readonly options: StreamInboxOptions) {
    this.consumer = options.consumer ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.pollMs = options.pollMs ?? 200;
    this.now = options.now ?? Date.now;
    this.cached = { stored: 0, inFlight: 0, parked: 0, capacity: options.maxEntries };
  }

  /** Most entries read from the stream and not yet delivered, per copy. */
  private get holdCap(): number { return Math.max(100, 2 * this.options.maxInFlight); }

  async store(entries: NewEntry[]): Promise<number> {
    if (this.closed) throw new Error('inbox is closed');
    if (entries.length === 0) return 0;
    const maxBytes = this.options.maxBytes ?? 0;
    const args: Array<string | number> = [this.options.maxEntries, Math.max(0, Math.round(this.options.windowMs)),
      this.options.revisionHorizonMs ?? REVISION_HORIZON_MS, Number.isFinite(maxBytes) ? maxBytes : 0];
    for (const e of entries) {
      const key = this.options.windowMs > 0 && e.entry && typeof e.entry === 'object' ? entryKey(e.subscriptionId, e.entry as CallbackEntry) : undefined;
      const data: Data = { e: e.entry, at: e.receivedAt };
      if (e.subscriptionId !== undefined) data.s = e.subscriptionId;
      args.push(key === undefined ? '' : entryDigest(key).toString('hex'), keyText(e.key), e.revision === undefined ? '' : String(e.revision), JSON.stringify(data));
    }
    const left = Number(await this.script('store', args));
    if (left < 0) throw left === -2 ? new InboxFullError(maxBytes, 'bytes') : new InboxFullError(this.options.maxEntries);
    this.cached.stored += entries.length - left; // until the next take reads the stream's count (all copies')
    this.maybeNew = true;
    return left;
  }

  async take(limit: number): Promise<Taken> {
    const taken: Taken = { deliveries: [], parked: [] };
    // One turn later: the acknowledgements of this turn free their slots first (and go to Redis
    // first), so that one take starts as many as they freed instead of one per acknowledgement.
    await new Promise((resolve) => setImmediate(resolve));
    if (this.closed) return taken;
    const now = this.now();
    const vis = this.options.visibilityTimeoutMs;
    try {
      // A delivery past its visibility timeout: its slot is free; any copy (this one too) claims it again.
      for (const [id, f] of this.flights) if (f.deadline <= now) this.flights.delete(id);
      const polling = now >= this.nextPollAt;
      if (polling) {
        this.nextPollAt = now + this.pollMs;
        if (now >= this.nextSweepAt) { this.nextSweepAt = now + SWEEP_MS; await this.script('sweep', [this.consumer, SWEEP_MS, vis]); }
      }
      const room = Math.max(0, Math.min(limit, this.options.maxInFlight - this.flights.size));
      // New entries: only as many as may start now (entries read beyond it wait with this copy, out
      // of other copies' reach, and cost a second start later); more once some are held waiting in line.
      const read = (polling || this.maybeNew) ? Math.min(this.holdCap - this.held.size, room) : 0;
      const claim = polling ? this.holdCap : 0;
      // Held entries worth asking about, in the order read (each asset's line keeps its order in
      // Redis): those touched a third of the timeout ago or more (`c`: checked, idle time restarted),
      // and of the others (`t`: no other copy can have claimed them, their idle time is shorter)
      // only as many as could start.
      const due: Held[] = [];
      const modes: string[] = [];
      let trusted = 0;
      for (const h of this.held.values()) {
        if (h.dueAt > now) continue;
        const mode = now - h.touchedAt < vis / 3 ? 't' : 'c';
        if (mode === 't' && trusted++ >= 2 * room) continue;
        due.push(h);
        modes.push(mode);
      }
      if (read > 0 || claim > 0 || due.length > 0) {
        if (read > 0) this.maybeNew = false;
        const args: Array<string | number> = [this.consumer, vis, this.options.maxDeliveries, new Date(now).toISOString(), room, read, claim, this.claimCursor];
        due.forEach((h, i) => args.push(h.id, h.key, modes[i]));
        const reply = await this.script('take', args) as unknown[];
        this.claimCursor = String(reply[0] || '0-0');
        this.cached.stored = Number(reply[1]) + Number(reply[2]);
        this.cached.parked = Number(reply[2]);
        due.forEach((h, i) => this.started(h, String(reply[3 + i]), modes[i] === 'c', now, taken));
        let fetched = 0;
        for (let j = 3 + due.length; j + 3 < reply.length; j += 4) {
          fetched++;
          const h: Held = { id: String(reply[j]), key: String(reply[j + 2]), data: String(reply[j + 3]), dueAt: 0, touchedAt: now };
          this.started(h, String(reply[j + 1]), true, now, taken);
        }
        if (read > 0 && fetched >= read) this.maybeNew = true; // maybe more to read
      }
      if (this.problem) this.problem = '';
    } catch (err) {
      if (/NOGROUP/.test(String((err as Error)?.message))) await this.ensureGroup().catch(() => undefined); // a Redis that lost its data
      this.report(err);
    }
    this.cached.inFlight = this.flights.size;
    return taken;
  }

  /** What the take script said of one entry (see TAKE in redis-stream-scripts.ts). */
  private started(h: Held, code: string, touched: boolean, now: number, taken: Taken): void {
    if (code === '-') return;
    if (code === 'w' || code === 's') {
      if (touched) h.touchedAt = now;
      if (!this.flights.has(h.id)) this.held.set(h.id, h);
      return;
    }
    this.held.delete(h.id);
    if (code[0] === 'g') {
      const delivery = Number(code.slice(1));
      this.flights.set(h.id, { ...h, delivery, deadline: now + this.options.visibilityTimeoutMs });
      taken.deliveries.push({ ...toEntry(h.id, h.key, h.data), delivery });
    } else if (code[0] === 'p') {
      taken.parked.push(toParked(h.id, code.slice(1)));
    }
  }

  /**
   * The in-flight slot is free at once (the next take may use it); acknowledgements of one turn of
   * the event loop go to Redis in one script. Commands on the connection keep their order, so a
   * take sent after it sees the asset's line moved on.
   */
  acknowledge(id: string, delivery: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    const flight = this.flights.get(id);
    if (flight?.delivery === delivery) this.flights.delete(id);
    this.cached.inFlight = this.flights.size;
    return new Promise((resolve, reject) => {
      this.acks.push({ id, delivery, key: flight?.key ?? '', resolve, reject });
      if (this.acks.length === 1) setImmediate(() => this.flushAcks());
    });
  }

  private flushAcks(): void {
    const batch = this.acks.splice(0);
    if (batch.length === 0) return;
    this.script('ack', batch.flatMap((a) => [a.id, a.delivery, a.key])).then((codes) => {
      batch.forEach((a, i) => {
        const ok = Number((codes as unknown[])[i]) === 1;
        if (ok) this.cached.stored = Math.max(0, this.cached.stored - 1);
        a.resolve(ok);
      });
    }, (err) => { for (const a of batch) a.reject(err); });
  }

  async reject(id: string, delivery: number, reason: string, away = false): Promise<'again' | ParkedEntry | undefined> {
    if (this.closed) return undefined;
    const { maxDeliveries, backoffMs, visibilityTimeoutMs } = this.options;
    const now = this.now();
    const code = String(await this.script('reject', [id, delivery, maxDeliveries, reason, new Date(now).toISOString(), this.consumer, away ? '1' : '0']));
    const flight = this.flights.get(id);
    if (flight?.delivery === delivery) this.flights.delete(id);
    this.cached.inFlight = this.flights.size;
    if (code === 'a') {
      // Stays with this copy; delivered again after the backoff (or by another copy, should this one die).
      const dueAt = away ? 0 : now + Math.min(backoffMs * 2 ** (delivery - 1), visibilityTimeoutMs);
      if (flight) this.held.set(id, { id, key: flight.key, data: flight.data, dueAt, touchedAt: now });
      return 'again';
    }
    if (code[0] === 'p') { this.nextPollAt = 0; return toParked(id, code.slice(1)); }
    return undefined;
  }

  nextDueAt(): number | undefined {
    return this.closed ? undefined : Math.max(this.nextPollAt, this.now());
  }

  async parked(): Promise<ParkedEntry[]> {
    const flat = await this.call('HGETALL', this.key('p')) as string[];
    const out: ParkedEntry[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push(toParked(flat[i], flat[i + 1]));
    return out.sort(byStreamId);
  }

  async deliverAgain(id: string): Promise<boolean> {
    if (this.closed) return false;
    const again = await this.script('deliverAgain', [id]);
    this.maybeNew = true;
    this.nextPollAt = 0;
    return typeof again === 'string';
  }

  async discard(id: string): Promise<boolean> {
    if (this.closed) return false;
    this.nextPollAt = 0;
    return Number(await this.script('discard', [id])) === 1;
  }

  counts(): InboxCounts {
    return { ...this.cached };
  }

  /** Not listed here: a shared stream is taken out in batches by `drain` (stream-leftovers.ts). */
  remaining(): Delivery[] {
    return [];
  }

  /**
   * A node switched back to at most once: gives a batch of stored entries out to this copy (DRAIN
   * in redis-stream-drain-scripts.ts), in the order stored per asset; once sent, `drained` takes them
   * out. `start`: '-' (a pass begins: the parked entries first), then the `next` of the batch
   * before. `left`: entries still stored, those given out included.
   */
  async drain(start: string, count: number): Promise<{ next: string; left: number; entries: Delivery[] }> {
    const reply = await this.evalInOrder('drain', [this.options.visibilityTimeoutMs, count, start, this.consumer]) as unknown[];
    const entries: Delivery[] = [];
    for (let j = 2; j + 3 < reply.length; j += 4) {
      entries.push({ ...toEntry(String(reply[j]), String(reply[j + 1]), String(reply[j + 2])), delivery: Number(reply[j + 3]) });
    }
    return { next: String(reply[0]), left: Number(reply[1]), entries: entries.sort(byStreamId) };
  }

  /** The entries of `drain`, sent: they go. Resolves how many entries are still stored. */
  async drained(entries: Delivery[]): Promise<number> {
    return Number(await this.evalInOrder('drained', [this.consumer, ...entries.flatMap((d) => [d.id, d.key])]));
  }

  /** The draining node closes: what `drain` gave out and it did not send goes back (LET_GO). */
  async letGoDrained(): Promise<void> {
    await this.evalInOrder('letGo', [this.consumer, this.options.visibilityTimeoutMs]);
  }

  /**
   * EVAL with the script's text, not EVALSHA: runs in the order sent. An EVALSHA answered NOSCRIPT
   * would run one round trip later, after a LET_GO sent at the close meanwhile; and a connection
   * closing with the deploy leaves no round trip for it. Once per batch of 1000.
   */
  private evalInOrder(name: 'drain' | 'drained' | 'letGo', args: Array<string | number>): Promise<unknown> {
    return this.call('EVAL', DRAIN_SCRIPTS[name], 1, this.options.prefix, ...args);
  }

  /** The node is removed from this copy: what stays stored for the copies that still run it. */
  async keptForOthers(): Promise<{ count: number; keys: string }> {
    // EVAL, not EVALSHA (no script that may need loading first): the connection may be closing too.
    const count = await this.call('EVAL', STREAM_SCRIPTS.countStored, 1, this.options.prefix);
    return { count: Number(count), keys: `${this.options.prefix}*` };
  }

  /** Lets go of what this copy holds, so that another copy takes it at once; the stream stays. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const ids = [...this.held.keys(), ...this.flights.keys()];
    this.held.clear();
    this.flights.clear();
    // EVAL, not EVALSHA: the connection may be closing with the deploy, leaving no round trip for a NOSCRIPT retry.
    if (ids.length > 0) await this.call('EVAL', STREAM_SCRIPTS.release, 1, this.options.prefix, this.consumer, this.options.visibilityTimeoutMs, ...ids).catch(() => undefined);
  }

  /**
   * The node was removed here; other copies may still run it, so the shared stream stays (what it
   * holds: keptForOthers, said in a warning). Resolves 0: nothing went.
   */
  async destroy(): Promise<number> {
    await this.close();
    return 0;
  }

  /** Creates the stream and its group when missing. */
  async ensureGroup(): Promise<void> {
    try {
      await this.call('XGROUP', 'CREATE', this.key('s'), 'g', '0', 'MKSTREAM');
    } catch (err) {
      if (!/BUSYGROUP/.test(String((err as Error)?.message))) throw err;
    }
  }

  private key(name: string): string {
    return this.options.prefix + name;
  }

  private report(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.problem = message;
    const now = Date.now();
    if (this.options.warn && now - this.lastWarnAt >= WARN_INTERVAL_MS) {
      this.lastWarnAt = now;
      this.options.warn(`inbox (Redis): ${message}`);
    }
  }

  /** EVALSHA, or EVAL once when Redis does not know the script yet (after a restart). */
  private async script(name: keyof typeof STREAM_SCRIPTS, args: Array<string | number>): Promise<unknown> {
    const source = STREAM_SCRIPTS[name];
    let sha = this.shas.get(name);
    if (!sha) { sha = createHash('sha1').update(source).digest('hex'); this.shas.set(name, sha); }
    try {
      return await this.call('EVALSHA', sha, 1, this.options.prefix, ...args);
    } catch (err) {
      if (!/NOSCRIPT/.test(String((err as Error)?.message))) throw err;
      return this.call('EVAL', source, 1, this.options.prefix, ...args);
    }
  }

  /** One command within the timeout. */
  private call(command: string, ...args: Array<string | number>): Promise<unknown> {
    return callWithin(this.redis, this.options.timeoutMs, () => this.redis.call(command, ...args), StreamUnavailableError);
  }
}
