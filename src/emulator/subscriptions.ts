/**
 * The emulator's subscription side: registrations (spec 2.1, 4.1, 8), the change feed
 * (section 6) and the callback delivery state machine (section 3), all durable in one journal
 * (`subscriptions.jsonl` in the data folder). The choices where the spec says "not shown" are
 * listed in docs/emulator-subscriptions.md.
 *
 * Delivery, per subscription: all entries not yet in a delivery go into one delivery; one call
 * with the subscription's method, headers and query params; status === successCode -> succeeded;
 * anything else (or a network error / timeout) -> failed, retried after the retry delay while
 * retries used < retryCount, else permanently failed. At most one delivery per subscription is
 * under way, so entries arrive in order; subscriptions never wait for each other.
 */
import * as path from 'path';
import { Journal } from './journal';
import type {
  AssetChange, DeliveryRecord, DeliveryState, FormFields, StoredSubscription, SubscriptionHub, SubscriptionHubOptions
} from './feed-types';
import { buildMatcher, changeMatches, Matcher, parseWatchMetadata, parseWatchPath } from './matching';
import { buildCallbackRequest, callbackUrl, CallbackEntry, CallbackSender } from './delivery';

export const DEFAULT_CALLBACK_TIMEOUT_MS = 30_000;
/** Upper bound of retryCount: the spec gives none; a Java int, as the real server is a Java application. */
export const MAX_RETRY_COUNT = 2147483647;
/** Finished deliveries kept per subscription (older ones are forgotten). */
export const DEFAULT_DELIVERY_HISTORY = 1000;
/** Callback calls in flight at most, over all subscriptions. */
const MAX_CALLS_IN_FLIGHT = 64;

const CALLBACK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the emulator writes itself: a subscription setting them would break the call. */
const RESERVED_HEADERS = ['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer'];

// ---------------------------------------------------------------- validation (spec 2.1, 4.1, 8)

/** The id rule of spec 2.1 / section 8; undefined when valid, else the error message. */
export function checkSubscriptionId(id: string): string | undefined {
  if (typeof id !== 'string' || id.length < 8 || id.length > 40) {
    return `id must be 8 to 40 characters long (got ${typeof id === 'string' ? id.length : 0})`;
  }
  if (!/^[A-Za-z0-9-]+$/.test(id)) return 'id may contain only the characters a-z, A-Z, 0-9 and hyphen';
  return undefined;
}

/** Values of a field, trimmed, empty ones dropped (an empty form input counts as not given). */
function values(fields: FormFields, name: string): string[] {
  const raw = Object.prototype.hasOwnProperty.call(fields, name) ? fields[name] : undefined;
  return (Array.isArray(raw) ? raw : []).map(v => String(v).trim()).filter(v => v !== '');
}

/** A single-valued field: repeating it with the same value is tolerated, with different values it is an error. */
function single(fields: FormFields, name: string): string | undefined {
  const distinct = [...new Set(values(fields, name))];
  if (distinct.length > 1) throw new FieldError(`${name} may be given only once (got ${distinct.length} different values)`);
  return distinct[0];
}

class FieldError extends Error {}

function integerField(fields: FormFields, name: string, fallback: number, min: number, max: number): number {
  const text = single(fields, name);
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new FieldError(`${name} must be a whole number from ${min} to ${max} (got "${text}")`);
  }
  return Number(text);
}

function checkCallback(text: string | undefined): string {
  if (text === undefined) throw new FieldError('callback is required');
  let url: URL;
  try { url = new URL(text); } catch { throw new FieldError(`callback must be an absolute http or https URL (got "${text}")`); }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || /\s/.test(text)) {
    throw new FieldError(`callback must be an absolute http or https URL (got "${text}")`);
  }
  return text;
}

function checkHeader(header: string): string {
  const colon = header.indexOf(':');
  const name = colon > 0 ? header.slice(0, colon).trim() : '';
  if (!HEADER_NAME.test(name)) throw new FieldError('header must be written "Name: value" with a valid header name');
  if (/[\r\n\0]/.test(header)) throw new FieldError(`header ${name} must not contain line breaks or NUL characters`);
  if (/[^\t\x20-\x7e\x80-\xff]/.test(header.slice(colon + 1))) throw new FieldError(`header ${name} must hold only printable ASCII or Latin-1 characters`);
  if (RESERVED_HEADERS.includes(name.toLowerCase())) throw new FieldError(`header ${name} is set by the server itself and cannot be given`);
  return `${name}: ${header.slice(colon + 1).trim()}`;
}

function checkQueryParam(param: string): string {
  if (param.startsWith('=')) throw new FieldError(`queryParam "${param}" must be written name=value or name (the name is empty)`);
  return param;
}

/** Validates the fields of a registration; returns the stored form with every default applied. */
export function parseSubscriptionFields(fields: FormFields): { ok: true; subscription: StoredSubscription } | { ok: false; error: string } {
  try {
    const callback = checkCallback(single(fields, 'callback'));
    const methodText = single(fields, 'method')?.toUpperCase() ?? 'GET';
    if (!CALLBACK_METHODS.includes(methodText)) throw new FieldError(`method must be one of ${CALLBACK_METHODS.join(', ')} (got "${methodText}")`);
    const successCode = integerField(fields, 'successCode', 200, 100, 599);
    const retryCount = integerField(fields, 'retryCount', 3, 0, MAX_RETRY_COUNT);
    const requestType = single(fields, 'requestType') ?? 'auto';
    if (!/^[A-Za-z0-9._+/-]+$/.test(requestType)) throw new FieldError(`requestType must be a single word such as auto (got "${requestType}")`);
    const operandText = single(fields, 'logicalOperand')?.toUpperCase() ?? 'OR';
    if (operandText !== 'AND' && operandText !== 'OR') throw new FieldError(`logicalOperand must be AND or OR (got "${operandText}")`);
    const header = values(fields, 'header').map(checkHeader);
    const queryParam = values(fields, 'queryParam').map(checkQueryParam);
    try { new URL(callbackUrl(callback, queryParam)); } catch { throw new FieldError('queryParam values do not form a valid URL with the callback'); }
    const watchPath = values(fields, 'watchPath');
    for (const p of watchPath) { const r = parseWatchPath(p); if (!r.ok) throw new FieldError(r.error); }
    const watchMetadata = values(fields, 'watchMetadata');
    for (const m of watchMetadata) { const r = parseWatchMetadata(m); if (!r.ok) throw new FieldError(r.error); }
    return {
      ok: true,
      subscription: {
        callback, header, method: methodText, successCode, retryCount, requestType, queryParam, watchMetadata,
        watchPath: watchPath.length > 0 ? watchPath : ['/'], logicalOperand: operandText
      }
    };
  } catch (e) {
    if (e instanceof FieldError) return { ok: false, error: e.message };
    throw e;
  }
}

/** The matcher of an already validated subscription. */
function matcherOf(sub: StoredSubscription): Matcher {
  const paths = sub.watchPath.map(p => parseWatchPath(p)).flatMap(r => (r.ok ? [r.value] : []));
  const conditions = sub.watchMetadata.map(m => parseWatchMetadata(m)).flatMap(r => (r.ok ? [r.value] : []));
  return buildMatcher(paths, conditions, sub.logicalOperand);
}

// ---------------------------------------------------------------- state and journal records

/** An entry as queued: `seq` orders entries and ties a delivery to the entries it took. */
interface QueuedEntry extends CallbackEntry { seq: number }

interface Delivery {
  id: number;
  state: DeliveryState;
  attempts: number;
  entries: QueuedEntry[];
  createdAt: string;
  lastAttemptAt?: string;
  lastResult?: number | string;
  /** When a failed delivery's next attempt is due (epoch ms). */
  dueAt?: number;
}

interface SubState {
  id: string;
  sub: StoredSubscription;
  matcher: Matcher;
  /** Matching entries not yet taken by a delivery. */
  pending: QueuedEntry[];
  /** The delivery under way (pending or failed), if any. */
  active?: Delivery;
  /** Finished deliveries, oldest first, bounded. */
  history: Delivery[];
  timer?: NodeJS.Timeout;
  call?: AbortController;
}

type DeliveryUpdate = Pick<Delivery, 'id' | 'state' | 'attempts' | 'lastAttemptAt' | 'lastResult' | 'dueAt'>;

type JournalRecord =
  | { t: 'meta'; lastRrn: number; lastKeys: string[]; nextSeq: number; nextDeliveryId: number }
  | { t: 'sub'; id: string; sub: StoredSubscription }
  | { t: 'unsub'; id: string }
  | { t: 'pub'; entry: QueuedEntry; subs: string[] }
  | { t: 'delivery'; sub: string; d: Delivery }
  | { t: 'update'; sub: string; d: DeliveryUpdate };

const isFinished = (state: DeliveryState): boolean => state === 'succeeded' || state === 'permanently-failed';
const changeKey = (c: { assetId: number; action: string; path: string }): string => `${c.assetId} ${c.action} ${c.path}`;
const plainEntry = ({ assetId, rrn, path: p, owner, action }: QueuedEntry): CallbackEntry => ({ assetId, rrn, path: p, owner, action });

export interface SubscriptionHubExtraOptions {
  /** Finished deliveries kept per subscription. Default 1000. */
  deliveryHistory?: number;
}

class Hub implements SubscriptionHub {
  private readonly subs = new Map<string, SubState>();
  private readonly sender: CallbackSender;
  private readonly historyLimit: number;
  private closed = false;
  private lastRrn = 0;
  /** Changes published at lastRrn, to skip a repository's re-publication after a restart. */
  private lastKeys: string[] = [];
  private durableRrn = 0;
  /** The last rrn on disk at open, and the changes published at it: a re-publication of those is skipped. */
  private durableRrnAtOpen = 0;
  private keysAtOpen = new Set<string>();
  private nextSeq = 1;
  private nextDeliveryId = 1;
  private writesSinceCompact = 0;
  private compacting: Promise<void> | null = null;
  private deferred: { rec: JournalRecord; resolve: () => void; reject: (e: Error) => void }[] = [];
  private readonly calls = new Set<Promise<void>>();

  constructor(private readonly journal: Journal<JournalRecord>, private readonly options: SubscriptionHubOptions & SubscriptionHubExtraOptions) {
    this.sender = new CallbackSender({ timeoutMs: options.callbackTimeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS, maxInFlight: MAX_CALLS_IN_FLIGHT });
    this.historyLimit = options.deliveryHistory ?? DEFAULT_DELIVERY_HISTORY;
  }

  // ------------------------------------------------------------ public API

  async register(id: string, fields: FormFields): Promise<{ ok: true } | { ok: false; error: string }> {
    if (this.closed) return { ok: false, error: 'the emulator is shutting down' };
    const idError = checkSubscriptionId(id);
    if (idError) return { ok: false, error: idError };
    const parsed = parseSubscriptionFields(fields);
    if (!parsed.ok) return parsed;
    this.applySub(id, parsed.subscription);
    await this.write({ t: 'sub', id, sub: parsed.subscription });
    this.options.log(`subscription ${id} registered`);
    return { ok: true };
  }

  get(id: string): StoredSubscription | undefined {
    const s = this.subs.get(id);
    return s ? structuredClone(s.sub) : undefined;
  }

  async remove(id: string): Promise<boolean> {
    const s = this.subs.get(id);
    if (!s || this.closed) return false;
    this.stop(s);
    this.subs.delete(id);
    await this.write({ t: 'unsub', id });
    this.options.log(`subscription ${id} deleted`);
    return true;
  }

  async publish(change: AssetChange): Promise<void> {
    if (this.closed) throw new Error('subscription hub is closed');
    const key = changeKey({ assetId: change.fuid, action: change.action, path: change.path });
    if (change.rrn < this.durableRrnAtOpen || (change.rrn === this.durableRrnAtOpen && this.keysAtOpen.has(key))) return;
    const entry: QueuedEntry = { seq: this.nextSeq, assetId: change.fuid, rrn: change.rrn, path: change.path, owner: change.owner, action: change.action };
    const matched = [...this.subs.values()].filter(s => changeMatches(s.matcher, change));
    this.applyPub(entry, matched.map(s => s.id));
    await this.write({ t: 'pub', entry, subs: matched.map(s => s.id) });
    if (change.rrn > this.durableRrn) this.durableRrn = change.rrn;
    for (const s of matched) this.kick(s);
  }

  lastPublishedRrn(): number {
    return this.durableRrn;
  }

  deliveries(subscriptionId?: string): DeliveryRecord[] {
    const subs = subscriptionId === undefined ? [...this.subs.values()] : [this.subs.get(subscriptionId)].filter((s): s is SubState => !!s);
    const records: DeliveryRecord[] = [];
    for (const s of subs) {
      for (const d of s.active ? [...s.history, s.active] : s.history) records.push(this.recordOf(s.id, d));
    }
    return records.sort((a, b) => a.id - b.id);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.subs.values()) this.stop(s);
    await Promise.allSettled([...this.calls]);
    while (this.compacting) await this.compacting;
    this.sender.close();
    await this.journal.close();
  }

  // ------------------------------------------------------------ replay (also used live, so both agree)

  replay(records: JournalRecord[]): void {
    for (const rec of records) {
      switch (rec.t) {
        case 'meta':
          this.lastRrn = rec.lastRrn; this.lastKeys = rec.lastKeys;
          this.nextSeq = Math.max(this.nextSeq, rec.nextSeq); this.nextDeliveryId = Math.max(this.nextDeliveryId, rec.nextDeliveryId);
          break;
        case 'sub': this.applySub(rec.id, rec.sub); break;
        case 'unsub': this.subs.delete(rec.id); break;
        case 'pub': this.applyPub(rec.entry, rec.subs); break;
        case 'delivery': {
          const s = this.subs.get(rec.sub);
          if (s) this.applyDelivery(s, rec.d);
          break;
        }
        case 'update': {
          const s = this.subs.get(rec.sub);
          if (s) this.applyUpdate(s, rec.d);
          break;
        }
      }
    }
    this.durableRrn = this.durableRrnAtOpen = this.lastRrn;
    this.keysAtOpen = new Set(this.lastKeys);
  }

  /** After replay: resume deliveries under way (a call cut off by a stop is made again) and start the owed ones. */
  resume(): void {
    for (const s of this.subs.values()) {
      if (s.active) this.schedule(s, s.active);
      else this.kick(s);
    }
  }

  private applySub(id: string, sub: StoredSubscription): void {
    const existing = this.subs.get(id);
    // Same id replaces the registration; entries waiting for it and a delivery under way are kept.
    if (existing) { existing.sub = sub; existing.matcher = matcherOf(sub); return; }
    this.subs.set(id, { id, sub, matcher: matcherOf(sub), pending: [], history: [] });
  }

  private applyPub(entry: QueuedEntry, subIds: string[]): void {
    this.nextSeq = Math.max(this.nextSeq, entry.seq + 1);
    const key = changeKey(entry);
    if (entry.rrn > this.lastRrn) { this.lastRrn = entry.rrn; this.lastKeys = [key]; }
    else if (entry.rrn === this.lastRrn) this.lastKeys.push(key);
    for (const id of subIds) this.subs.get(id)?.pending.push(entry);
  }

  private applyDelivery(s: SubState, d: Delivery): void {
    this.nextDeliveryId = Math.max(this.nextDeliveryId, d.id + 1);
    const taken = new Set(d.entries.map(e => e.seq));
    s.pending = s.pending.filter(e => !taken.has(e.seq));
    if (isFinished(d.state)) this.addHistory(s, d);
    else s.active = d;
  }

  private applyUpdate(s: SubState, u: DeliveryUpdate): void {
    const d = s.active;
    if (!d || d.id !== u.id) return;
    Object.assign(d, u);
    if (isFinished(d.state)) {
      delete d.dueAt;
      s.active = undefined;
      this.addHistory(s, d);
    }
  }

  private addHistory(s: SubState, d: Delivery): void {
    s.history.push(d);
    if (s.history.length > this.historyLimit) s.history.splice(0, s.history.length - this.historyLimit);
  }

  // ------------------------------------------------------------ delivery state machine (spec section 3)

  /** Starts a delivery of everything pending when none is under way. */
  private kick(s: SubState): void {
    if (this.closed || s.active || s.pending.length === 0 || this.subs.get(s.id) !== s) return;
    const d: Delivery = { id: this.nextDeliveryId, state: 'pending', attempts: 0, entries: s.pending, createdAt: new Date().toISOString() };
    this.applyDelivery(s, d);
    const written = this.write({ t: 'delivery', sub: s.id, d: structuredClone(d) });
    this.track(written.then(() => this.attempt(s, d), e => this.journalFailed(e)));
  }

  /** Sends the next attempt now, or when a failed delivery's retry is due. */
  private schedule(s: SubState, d: Delivery): void {
    if (d.state === 'failed' && d.dueAt !== undefined) {
      s.timer = setTimeout(() => { s.timer = undefined; this.track(this.attempt(s, d)); }, Math.max(0, d.dueAt - Date.now()));
    } else {
      this.track(this.attempt(s, d));
    }
  }

  private stillCurrent(s: SubState, d: Delivery): boolean {
    return !this.closed && this.subs.get(s.id) === s && s.active === d;
  }

  private async attempt(s: SubState, d: Delivery): Promise<void> {
    if (!this.stillCurrent(s, d)) return;
    d.state = 'pending';
    const call = new AbortController();
    s.call = call;
    let outcome: number | string;
    try {
      outcome = await this.sender.send(buildCallbackRequest(s.id, s.sub, d.entries.map(plainEntry)), call.signal);
    } catch {
      return; // aborted by close() or remove(): the delivery stays pending and resumes on the next open
    } finally {
      if (s.call === call) s.call = undefined;
    }
    if (!this.stillCurrent(s, d)) return;
    const attempts = d.attempts + 1;
    const retriesUsed = attempts - 1;
    const state: DeliveryState = outcome === s.sub.successCode ? 'succeeded' : retriesUsed < s.sub.retryCount ? 'failed' : 'permanently-failed';
    const update: DeliveryUpdate = { id: d.id, state, attempts, lastAttemptAt: new Date().toISOString(), lastResult: outcome };
    if (state === 'failed') update.dueAt = Date.now() + this.options.retryDelayMs;
    this.options.log(`delivery ${d.id} of subscription ${s.id}: attempt ${attempts} -> ${outcome}, ${state}`);
    this.applyUpdate(s, update);
    try {
      await this.write({ t: 'update', sub: s.id, d: update });
    } catch (e) {
      this.journalFailed(e);
      return;
    }
    if (this.closed || this.subs.get(s.id) !== s) return;
    if (state === 'failed') this.schedule(s, d);
    else this.kick(s);
  }

  /** Stops a subscription's timer and call in flight. */
  private stop(s: SubState): void {
    if (s.timer) clearTimeout(s.timer);
    s.timer = undefined;
    s.call?.abort(new Error('delivery stopped'));
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch(e => this.journalFailed(e)).finally(() => this.calls.delete(tracked));
    this.calls.add(tracked);
  }

  private journalFailed(e: unknown): void {
    this.options.log(`subscription journal write failed: ${(e as Error).message}`);
  }

  private recordOf(subscription: string, d: Delivery): DeliveryRecord {
    const r: DeliveryRecord = { id: d.id, subscription, state: d.state, attempts: d.attempts, entries: d.entries.map(plainEntry), createdAt: d.createdAt };
    if (d.lastAttemptAt !== undefined) r.lastAttemptAt = d.lastAttemptAt;
    if (d.lastResult !== undefined) r.lastResult = d.lastResult;
    if (d.dueAt !== undefined && d.state === 'failed') r.nextAttemptAt = new Date(d.dueAt).toISOString();
    return r;
  }

  // ------------------------------------------------------------ journal with compaction

  /**
   * Appends a record. Callers change memory and call this in the same synchronous step, so a
   * compaction snapshot never holds a change whose record is still to come.
   */
  private write(rec: JournalRecord): Promise<void> {
    if (this.compacting) return new Promise((resolve, reject) => this.deferred.push({ rec, resolve, reject }));
    const done = this.journal.append(rec);
    if (++this.writesSinceCompact >= 1000 && this.writesSinceCompact > 2 * this.liveRecordCount()) this.compacting = this.compact();
    return done;
  }

  private liveRecordCount(): number {
    let n = 1;
    for (const s of this.subs.values()) n += 1 + s.pending.length + s.history.length + (s.active ? 1 : 0);
    return n;
  }

  private snapshot(): JournalRecord[] {
    const records: JournalRecord[] = [{ t: 'meta', lastRrn: this.lastRrn, lastKeys: [...this.lastKeys], nextSeq: this.nextSeq, nextDeliveryId: this.nextDeliveryId }];
    const pubs = new Map<number, { entry: QueuedEntry; subs: string[] }>();
    for (const s of this.subs.values()) {
      records.push({ t: 'sub', id: s.id, sub: s.sub });
      for (const e of s.pending) {
        const p = pubs.get(e.seq) ?? { entry: e, subs: [] };
        p.subs.push(s.id);
        pubs.set(e.seq, p);
      }
    }
    for (const [, p] of [...pubs].sort((a, b) => a[0] - b[0])) records.push({ t: 'pub', entry: p.entry, subs: p.subs });
    for (const s of this.subs.values()) {
      for (const d of s.active ? [...s.history, s.active] : s.history) records.push({ t: 'delivery', sub: s.id, d });
    }
    return records.map(r => structuredClone(r));
  }

  private async compact(): Promise<void> {
    try {
      await this.journal.compact(this.snapshot());
      this.writesSinceCompact = 0;
    } catch (e) {
      this.journalFailed(e);
    } finally {
      this.compacting = null;
      const waiting = this.deferred;
      this.deferred = [];
      for (const w of waiting) this.write(w.rec).then(w.resolve, w.reject);
    }
  }
}

/** Opens the hub on `dataDir`, replays its journal and resumes the deliveries that were under way. */
export async function openSubscriptionHub(options: SubscriptionHubOptions & SubscriptionHubExtraOptions): Promise<SubscriptionHub> {
  const { journal, records } = await Journal.open<JournalRecord>(path.join(options.dataDir, 'subscriptions.jsonl'));
  const hub = new Hub(journal, options);
  if (journal.skipped) options.log(`subscription journal: ${journal.skipped} torn line(s) skipped, every record after them read`);
  hub.replay(records);
  hub.resume();
  return hub;
}
