/**
 * The inbox's rules in memory, with no I/O: per-key lines (one entry of a key in flight, in
 * order), the in-flight bound, the visibility timeout, backoff after a rejection, parking after
 * the last delivery. The journal inbox keeps its file in step with it; time comes from a clock
 * given by the caller, so tests move time instead of sleeping.
 */
import { takeEntry, type StoreBatch } from './entry-copies';
import { NewestRevisions, REVISION_HORIZON_MS, REVISION_KEYS_MAX } from './newest-revisions';
import type { OrderKey } from './keys';
import type { Delivery, NewEntry, ParkedEntry } from './types';

export { REVISION_HORIZON_MS, REVISION_KEYS_MAX };

export interface StoredRecord extends NewEntry {
  id: number;
  /** Place in its key's line (a re-delivered parked entry gets a new one: it goes to the back). */
  seq: number;
  deliveries: number;
  /** `closing`: acknowledged (or parked) but not yet on disk: out of flight, still first in its line. */
  state: 'waiting' | 'flight' | 'closing' | 'parked';
  /** Waiting: not before this time (a rejection's backoff). */
  dueAt: number;
  /** In flight: due again at this time unless acknowledged. */
  deadline: number;
  parkReason?: string;
  parkedAt?: string;
  /** In the ready queue now (a record is queued at most once). */
  queued?: boolean;
  /** Its share of the journal bytes of the record that stored it (counted against the byte bound). */
  bytes: number;
  /** Its callback's store record as written (reused by compaction: journal-records.ts). */
  batch?: StoreBatch;
  /** The record behind it in its key's line; on the first of a line, the last one (a list, not an array per key: most keys hold one entry). */
  next?: StoredRecord;
  last?: StoredRecord;
}

/**
 * A new waiting record with every field set (undefined where not known): one shape for all
 * records, no property added or deleted later (V8 then keeps them fast and allocates no
 * separate property store).
 */
export function newRecord(id: number, key: OrderKey, entry: unknown, receivedAt: string, subscriptionId: string | undefined, revision: number | undefined): StoredRecord {
  return {
    id, seq: id, key, entry, receivedAt, subscriptionId, revision, deliveries: 0, state: 'waiting', dueAt: 0, deadline: 0,
    parkReason: undefined, parkedAt: undefined, queued: false, bytes: 0, batch: undefined, next: undefined, last: undefined
  };
}

export interface StateOptions {
  maxInFlight: number;
  visibilityTimeoutMs: number;
  maxDeliveries: number;
  backoffMs: number;
  /** Default REVISION_KEYS_MAX. */
  revisionKeysMax?: number;
}

export class InboxState {
  readonly records = new Map<number, StoredRecord>();
  /** The first not-parked record of each key; the others follow it through `next`, in order. Only the first may be in flight. */
  private readonly lines = new Map<OrderKey, StoredRecord>();
  /**
   * First records of lines, due now, in the order they became due; read from `readyAt`. An array,
   * not a Set: V8 leaves deleted Set entries as holes that every walk from the start steps over.
   * Records that stopped waiting meanwhile are skipped when read.
   */
  private ready: StoredRecord[] = [];
  private readyAt = 0;
  /** Heads waiting out a backoff or a visibility timeout: queued once due. */
  private readonly delayed = new Set<StoredRecord>();
  private readonly flights = new Set<StoredRecord>();
  private parkedCount = 0;
  /** The records' bytes (StoredRecord.bytes), parked ones included; snapshotText corrects it for records it writes alone. */
  bytes = 0;
  /** No record in flight times out before this (a lower bound): `take` and `nextDueAt` skip the scan until then. */
  private flightDeadline = Infinity;
  nextId = 1;
  nextSeq = 1;
  /**
   * The newest revision stored of each key, kept after its entries are acknowledged (and through
   * compaction) for REVISION_HORIZON_MS: a re-sent older entry must not go behind a newer one.
   * In the order of their times (an update moves the key to the end), so forgetting walks from the front.
   */
  readonly newest = new NewestRevisions();
  /** Parked records per key (the not-parked ones are in `lines`): a key with either is in the inbox. */
  private readonly parkedKeys = new Map<OrderKey, number>();

  /** Most newest revisions kept besides those of keys in the inbox (options.revisionKeysMax, or REVISION_KEYS_MAX). */
  readonly revisionKeysMax: number;

  constructor(private readonly options: StateOptions) {
    this.revisionKeysMax = options.revisionKeysMax ?? REVISION_KEYS_MAX;
  }

  get inFlight(): number { return this.flights.size; }
  get parked(): number { return this.parkedCount; }
  get size(): number { return this.records.size; }

  /** A revision of `key` stored at time `at`. */
  noteRevision(key: OrderKey, revision: number | undefined, at: number): void {
    if (revision !== undefined) this.newest.note(key, revision, at);
  }

  /**
   * Forgets the newest revision of keys stored last REVISION_HORIZON_MS or longer before `now`
   * and with nothing in the inbox; one still in the inbox is kept and looked at a horizon later.
   * Over `revisionKeysMax` keys besides those in the inbox, the oldest go before the horizon:
   * resolves how many did.
   */
  forgetOldRevisions(now: number): number {
    const inInbox = this.lines.size + this.parkedKeys.size; // at least as many as kept below
    const bound = this.revisionKeysMax + inInbox;
    return this.newest.forget(now, REVISION_HORIZON_MS, (key) => this.lines.has(key) || this.parkedKeys.has(key), bound);
  }

  /** A new record (stored or loaded), put in its key's line unless parked. */
  add(record: StoredRecord): void {
    this.records.set(record.id, record);
    this.bytes += record.bytes;
    this.nextId = Math.max(this.nextId, record.id + 1);
    this.nextSeq = Math.max(this.nextSeq, record.seq + 1);
    if (record.state === 'parked') { this.countParked(record.key, 1); return; }
    record.state = 'waiting';
    this.joinLine(record);
  }

  /**
   * Due records up to `limit` (and the in-flight bound), first in flight; and those whose last
   * delivery timed out, now `closing` with their park reason: the caller parks them (finishPark)
   * once that is written.
   */
  take(limit: number, now: number): { taken: StoredRecord[]; parked: StoredRecord[] } {
    const parked = this.expire(now);
    // Due ones are queued even with no room: left delayed, nextDueAt would keep saying a past time (a 0 ms timer loop).
    if (this.delayed.size) {
      for (const record of this.delayed) if (record.dueAt <= now) { this.delayed.delete(record); this.enqueue(record); }
    }
    const room = Math.min(limit, this.options.maxInFlight - this.flights.size);
    const taken: StoredRecord[] = [];
    if (room <= 0) return { taken, parked };
    while (taken.length < room && this.readyAt < this.ready.length) {
      const record = this.ready[this.readyAt++];
      record.queued = false;
      if (record.state !== 'waiting' || record.dueAt > now) continue;
      record.state = 'flight';
      record.deliveries++;
      record.deadline = now + this.options.visibilityTimeoutMs;
      if (record.deadline < this.flightDeadline) this.flightDeadline = record.deadline;
      this.flights.add(record);
      taken.push(record);
    }
    if (this.readyAt > 1024 && this.readyAt * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyAt);
      this.readyAt = 0;
    }
    return { taken, parked };
  }

  /**
   * An acknowledgement being written (as beginClose), with one look-up: the record, or undefined when
   * it cannot be acknowledged (unknown, parked, closing, or in flight with another delivery).
   */
  beginAcknowledge(id: number, delivery: number): StoredRecord | undefined {
    const record = this.records.get(id);
    if (!record || record.state === 'parked' || record.state === 'closing') return undefined;
    if (record.state === 'flight' && record.deliveries !== delivery) return undefined;
    // A late acknowledgement of an earlier delivery (timed out, waiting to go again) still counts.
    if (delivery < 1 || delivery > record.deliveries) return undefined;
    this.flights.delete(record);
    if (record.state !== 'flight') this.delayed.delete(record);
    record.state = 'closing';
    return record;
  }

  /** The acknowledgement is on disk: the record goes and the next of its line is due. */
  finishAcknowledge(record: StoredRecord): void {
    if (record.state !== 'closing' || this.records.get(record.id) !== record) return;
    this.records.delete(record.id);
    this.bytes -= record.bytes;
    this.leaveLine(record);
  }

  /** True when `reject` with this delivery would end in parking. */
  rejectParks(id: number, delivery: number): boolean {
    const record = this.records.get(id);
    return !!record && record.state === 'flight' && record.deliveries === delivery && delivery >= this.options.maxDeliveries;
  }

  /**
   * An acknowledgement (or a parking rejection) being written: the in-flight slot is free at once,
   * but the record stays first in its line, so the next entry of its key waits for the write.
   */
  beginClose(id: number): void {
    const record = this.records.get(id);
    if (!record) return;
    this.flights.delete(record);
    this.delayed.delete(record);
    record.state = 'closing';
  }

  /** The parking is on disk. */
  finishPark(id: number, reason: string, now: number): StoredRecord | undefined {
    const record = this.records.get(id);
    if (!record || record.state !== 'closing') return undefined;
    this.park(record, reason, now);
    return record;
  }

  /** The write failed: the record is due again (nothing was decided). */
  reopen(id: number, now: number): void {
    const record = this.records.get(id);
    if (record && record.state === 'closing') this.wait(record, now);
  }

  /** Ends a delivery that failed: due again after a backoff, or parked after the last delivery. */
  reject(id: number, delivery: number, reason: string, now: number): 'again' | StoredRecord | undefined {
    const record = this.records.get(id);
    if (!record || record.state !== 'flight' || record.deliveries !== delivery) return undefined;
    this.flights.delete(record);
    if (record.deliveries >= this.options.maxDeliveries) {
      this.park(record, reason, now);
      return record;
    }
    const backoff = Math.min(this.options.backoffMs * 2 ** (record.deliveries - 1), this.options.visibilityTimeoutMs);
    this.wait(record, now + backoff);
    return 'again';
  }

  /**
   * Not done because the server was away: the delivery is not counted and the record is due at
   * once (the caller holds deliveries until the server is back). The record, or undefined as reject.
   */
  giveBack(id: number, delivery: number): StoredRecord | undefined {
    const record = this.records.get(id);
    if (!record || record.state !== 'flight' || record.deliveries !== delivery) return undefined;
    this.flights.delete(record);
    record.deliveries--;
    this.wait(record, 0);
    return record;
  }

  /** Parks a record that is not in flight (waiting, e.g. loaded with its deliveries spent). */
  park(record: StoredRecord, reason: string, now: number): void {
    if (record.state === 'parked') return;
    this.flights.delete(record);
    this.leaveLine(record);
    record.state = 'parked';
    record.parkReason = reason;
    record.parkedAt = new Date(now).toISOString();
    this.records.set(record.id, record); // leaveLine does not remove it from the records
    this.countParked(record.key, 1);
  }

  isParked(id: number): boolean {
    return this.records.get(id)?.state === 'parked';
  }

  /** A parked record back in line at `place` (newPlace: the back of its key's line), deliveries from 0. */
  unpark(id: number, place: number): StoredRecord | undefined {
    const record = this.records.get(id);
    if (!record || record.state !== 'parked') return undefined;
    this.countParked(record.key, -1);
    record.state = 'waiting';
    record.deliveries = 0;
    record.dueAt = 0;
    record.seq = place;
    record.parkReason = record.parkedAt = undefined;
    this.joinLine(record);
    return record;
  }

  /**
   * A place at the back of every line. Ids are places too (a stored entry's place is its id), so
   * both come from one counter: a place of its own let a later entry's id fall below a re-delivered
   * entry's place, and a restart (which orders by place) put the later entry first.
   */
  newPlace(): number {
    const place = Math.max(this.nextId, this.nextSeq);
    this.nextId = this.nextSeq = place + 1;
    return place;
  }

  discard(id: number): boolean {
    const record = this.records.get(id);
    if (!record || record.state !== 'parked') return false;
    this.records.delete(id);
    this.bytes -= record.bytes;
    this.countParked(record.key, -1);
    return true;
  }

  private countParked(key: OrderKey, change: 1 | -1): void {
    this.parkedCount += change;
    const count = (this.parkedKeys.get(key) ?? 0) + change;
    if (count > 0) this.parkedKeys.set(key, count); else this.parkedKeys.delete(key);
  }

  /** The next time something becomes due (a backoff ends, a visibility timeout passes). */
  nextDueAt(): number | undefined {
    // flightDeadline may be early (its record was acknowledged since): a timer then wakes early and finds nothing.
    let next: number | undefined = this.flights.size > 0 ? this.flightDeadline : undefined;
    for (const r of this.delayed) if (next === undefined || r.dueAt < next) next = r.dueAt;
    return next;
  }

  /** Records in flight past their visibility timeout: due again, or parked after the last delivery. */
  private expire(now: number): StoredRecord[] {
    const parked: StoredRecord[] = [];
    if (now < this.flightDeadline) return parked;
    let next = Infinity;
    for (const record of this.flights) {
      if (record.deadline > now) { if (record.deadline < next) next = record.deadline; continue; }
      this.flights.delete(record);
      if (record.deliveries >= this.options.maxDeliveries) {
        // To be parked once that is on disk (finishPark): until then its line waits, as for an acknowledgement.
        record.state = 'closing';
        record.parkReason = `not acknowledged within the visibility timeout (${record.deliveries} deliveries)`;
        parked.push(record);
      } else {
        this.wait(record, now);
      }
    }
    this.flightDeadline = next;
    return parked;
  }

  private wait(record: StoredRecord, dueAt: number): void {
    record.state = 'waiting';
    record.dueAt = dueAt;
    if (dueAt > 0) { this.delayed.add(record); return; }
    this.delayed.delete(record);
    this.enqueue(record);
  }

  private enqueue(record: StoredRecord): void {
    if (record.queued) return;
    record.queued = true;
    this.ready.push(record);
  }

  private joinLine(record: StoredRecord): void {
    record.next = undefined;
    const first = this.lines.get(record.key);
    if (!first) {
      this.lines.set(record.key, record);
      record.last = record;
      this.wait(record, record.dueAt);
      return;
    }
    // Loaded records arrive in id order; a re-delivered one has the highest seq: both go at the back.
    first.last!.next = record;
    first.last = record;
  }

  /** Removes a record from its line (acknowledged or parked: the first, but for parking at load); the next one becomes due when it was the first. */
  private leaveLine(record: StoredRecord): void {
    this.flights.delete(record);
    this.delayed.delete(record);
    const first = this.lines.get(record.key);
    if (!first) return;
    if (first === record) {
      const { next, last } = record;
      record.next = record.last = undefined;
      if (!next) { this.lines.delete(record.key); return; }
      next.last = last;
      this.lines.set(record.key, next);
      this.wait(next, next.dueAt);
      return;
    }
    let before = first;
    while (before.next && before.next !== record) before = before.next;
    if (before.next !== record) return;
    before.next = record.next;
    if (first.last === record) first.last = before;
    record.next = undefined;
  }

  /** Every record not acknowledged, in the order stored (parked ones at their place). */
  all(): StoredRecord[] {
    return [...this.records.values()].sort((a, b) => a.seq - b.seq);
  }
}

export function toDelivery(record: StoredRecord): Delivery {
  const delivery: Delivery = { id: String(record.id), key: record.key, entry: takeEntry(record), receivedAt: record.receivedAt, delivery: record.deliveries };
  if (record.subscriptionId !== undefined) delivery.subscriptionId = record.subscriptionId;
  return delivery;
}

export function toParked(record: StoredRecord): ParkedEntry {
  const parked: ParkedEntry = {
    id: String(record.id), key: record.key, entry: takeEntry(record), receivedAt: record.receivedAt,
    deliveries: record.deliveries, reason: record.parkReason ?? '', parkedAt: record.parkedAt ?? ''
  };
  if (record.subscriptionId !== undefined) parked.subscriptionId = record.subscriptionId;
  return parked;
}
