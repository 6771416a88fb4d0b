/**
 * The at-least-once inbox of an asset-event-in: what a callback's entries are stored in before
 * the callback is answered 2xx, and what hands them to the flow until the flow acknowledges them.
 *
 * Kept small so that another store can sit beside the embedded journal (journal-inbox.ts): the
 * operations map onto a Redis Stream with a consumer group (store = XADD, take = XREADGROUP +
 * XAUTOCLAIM, acknowledge = XACK, the delivery count = XPENDING's, park = a second stream).
 *
 * Rules every implementation keeps:
 * - `store` resolves only once the entries are durable; it refuses (InboxFullError) rather than drop.
 * - Two entries with the same `key` (the asset) are never in flight at once, and leave in the order stored.
 * - An entry whose `revision` is older than one of its key stored before (also before a crash, and
 *   acknowledged since) is not stored: it is the server sending again a callback whose answer a
 *   crash cut off, and stored behind its own newer revision it would reach the flow after it.
 * - At most `maxInFlight` entries are in flight (taken, not yet acknowledged, rejected or timed out).
 * - An entry not acknowledged within the visibility timeout is due again; one delivered
 *   `maxDeliveries` times without an acknowledgement is parked (kept, no longer delivered).
 */

import type { OrderKey } from './keys';

/** One entry as asset-event-in hands it to the inbox. */
export interface NewEntry {
  /** Ordering key: entries with the same key leave one at a time, in order (the asset: keys.ts). */
  key: OrderKey;
  /** The callback entry (spec 2.3): any JSON value. */
  entry: unknown;
  /** The entry's revision (rrn), when it has one: an entry older than a stored one of its key is not stored (see store). */
  revision?: number;
  subscriptionId?: string;
  /** ISO time the callback arrived. */
  receivedAt: string;
}

/**
 * A callback's JSON text, where each entry stored from it is in its entry list (`data.entry`), in
 * the order of the entries, and how many entries the list holds: an inbox may keep the text the
 * server sent instead of writing the entries out again (journal-records.ts).
 */
export interface CallbackText { body: string; indexes: number[]; total: number }

/** An entry handed to the flow. `delivery` is 1 on the first delivery. */
export interface Delivery extends NewEntry {
  id: string;
  delivery: number;
}

/** An entry that will not be delivered again unless a user asks (deliverAgain). */
export interface ParkedEntry extends NewEntry {
  id: string;
  /** How many times it was delivered. */
  deliveries: number;
  /** Why: the last rejection's reason, or the visibility timeout. */
  reason: string;
  /** ISO time it was parked. */
  parkedAt: string;
}

export interface InboxCounts {
  /** Entries stored and not acknowledged (in flight, waiting and parked). */
  stored: number;
  inFlight: number;
  parked: number;
  /** The bound on `stored`. */
  capacity: number;
}

/** Entries waiting to go (a reject's backoff included): stored, neither in flight nor parked. */
export function waitingEntries(c: InboxCounts): number {
  return c.stored - c.inFlight - c.parked;
}

/** What one `take` hands out, and what it parked on the way (timed out for the last time). */
export interface Taken {
  deliveries: Delivery[];
  parked: ParkedEntry[];
}

export interface Inbox {
  /**
   * Stores the entries durably, all or none. Rejects with InboxFullError when the inbox is full (isFull, passesBytes).
   * Resolves with how many were not stored because their revision is older than a stored one of their key.
   * `from`: the callback they came from, as text (all entries of one callback).
   */
  store(entries: NewEntry[], from?: CallbackText): Promise<number>;
  /** Up to `limit` entries due now (also capped by the in-flight bound), keeping each key's order. */
  take(limit: number): Promise<Taken>;
  /** Done: the entry goes. False when the entry is unknown, parked, or in flight with another delivery. */
  acknowledge(id: string, delivery: number): Promise<boolean>;
  /**
   * Not done: due again after a backoff, or parked when it has had its deliveries. Undefined when
   * the entry is unknown or in flight with another delivery; else what happened. `away`: the DAM
   * server was away (nothing wrong with the entry): the delivery is not counted and the entry is
   * due at once ('again'); the caller holds deliveries meanwhile.
   */
  reject(id: string, delivery: number, reason: string, away?: boolean): Promise<'again' | ParkedEntry | undefined>;
  /** When the next entry becomes due (a rejection's backoff, a visibility timeout), for a timer; undefined if none waits. */
  nextDueAt(): number | undefined;
  parked(): Promise<ParkedEntry[]>;
  /** A parked entry goes back in line (behind the entries of its key stored meanwhile), deliveries counted from 0. */
  deliverAgain(id: string): Promise<boolean>;
  /** A parked entry goes for good. */
  discard(id: string): Promise<boolean>;
  counts(): InboxCounts;
  /** Every entry not acknowledged, in the order stored (parked ones included): for switching to at-most-once. */
  remaining(): Delivery[];
  /** Stops writing; what is stored stays for the next open. */
  close(): Promise<void>;
  /** Removes the stored entries for good (the node was removed); resolves with how many were not acknowledged. */
  destroy(): Promise<number>;
  /** A shared inbox (several copies), whose entries stay when one copy removes the node: how many, and its keys' pattern. */
  keptForOthers?(): Promise<{ count: number; keys: string }>;
}

export interface InboxOptions {
  /** Bound on stored entries (isFull: a callback arriving below it is taken whole). */
  maxEntries: number;
  /** Bound on the stored entries' bytes (passesBytes): their journal records, or their data in the Redis Stream. Default: none. */
  maxBytes?: number;
  maxInFlight: number;
  visibilityTimeoutMs: number;
  /** Deliveries before an entry is parked. */
  maxDeliveries: number;
  /** First backoff after a rejection; doubles with each delivery, up to the visibility timeout. */
  backoffMs: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
  /** The embedded inbox: most assets whose newest revision is kept within the horizon. Default REVISION_KEYS_MAX (newest-revisions.ts). */
  revisionKeysMax?: number;
  /** Said in the log: the embedded inbox's newest revisions forgotten early; the Redis inbox's failed reads (each at most once a minute or 30 s). */
  warn?: (text: string) => void;
}

/**
 * The bound's rule, one for both inboxes: a callback is refused only when the inbox already holds
 * its bound; below it, the callback is taken whole, so the inbox holds at most its bound plus one
 * callback. A rule on the callback's size ("only if all of it fits") would refuse a callback of
 * more entries than the bound for ever (a bulk ingest), and the server would give the change up.
 */
export function isFull(held: number, bound: number): boolean {
  return held >= bound;
}

/**
 * The byte bound's rule, one for both inboxes: a callback that would take the stored bytes past the
 * bound is refused, unless the inbox holds none (then it is taken whole, whatever its size: a callback
 * larger than the bound is not refused for ever). Counted before the callback is stored, so the
 * stored bytes pass the bound only by a callback taken into an empty inbox: the journal's live records
 * (about what it keeps of them in memory: their text, or the objects parsed from it), or the stream's data in Redis (the Redis Stream
 * inbox counts the callback's entries' data, repeats included: its script checks the bound first).
 */
export function passesBytes(held: number, adding: number, bound: number): boolean {
  return held > 0 && held + adding > bound;
}

/** The inbox holds its bound (`unit`: of entries, or of bytes): the callback is answered 503 and sent again later. */
export class InboxFullError extends Error {
  constructor(readonly capacity: number, readonly unit: 'entries' | 'bytes' = 'entries') {
    super(unit === 'entries'
      ? `inbox full (${capacity} entries): acknowledge entries or raise the bound`
      : `inbox full (${capacity / 1e6} MB): acknowledge entries or raise the bound`);
    this.name = 'InboxFullError';
  }
}
