import type { OrderKey } from './keys';

/**
 * How long an asset's newest stored revision is kept once nothing of the asset is in the inbox.
 * It keeps out a re-sent older entry: the server sends a callback again when a crash cut off its
 * answer, retryCount times (default 3), 1 minute apart (spec section 3), so about 3 minutes after
 * its first attempt, which came before any newer revision of the asset was stored. 10 minutes
 * leaves room for slow attempts and a few more retries; past it no re-send can come, and a map
 * kept for ever would grow by one number per asset ever seen (and be written into every compacted file).
 */
export const REVISION_HORIZON_MS = 10 * 60 * 1000;

/**
 * Most assets whose newest revision is kept within the horizon (about 117 MB of memory): a flood
 * of new assets (over 1,700 a second for 10 minutes) must not grow the map until Node-RED runs out
 * of memory. Past it the oldest acknowledged assets are forgotten early, said in a warning.
 */
export const REVISION_KEYS_MAX = 1_000_000;

/** reserve's answer for a revision older than one of its key being stored: not reserved. */
export const OLDER_THAN_UNDER_WAY = -2;

/**
 * Each key's newest stored revision and when it was stored, oldest first (InboxState.newest).
 *
 * A map from key to a place in a log kept as three plain arrays (keys, revisions, times): no
 * object per key and no heap number for its time. A bulk of new assets (the bench's 100 per
 * callback) keeps every one of them for the horizon; an object each was a steady stream of
 * promoted objects for the garbage collector. A key noted again gets a new place at the end (its
 * old one's time becomes NaN: skipped when read, with no look-up in the map), so the log stays in
 * the order of the times; it is rewritten without the skipped places once they outnumber the live ones.
 */
export class NewestRevisions {
  /** Key -> its place in the log (counted from the first place ever: `base` is the place of index 0). */
  private readonly places = new Map<OrderKey, number>();
  private keys: OrderKey[] = [];
  private revisions: number[] = [];
  private times: number[] = [];
  private base = 0;
  /** Index of the first place not yet forgotten. */
  private head = 0;
  /** Revisions of stores under way (reserved, not yet settled or released), per key: one, or a list when stores of the key overlap. */
  private readonly underWay = new Map<OrderKey, number | number[]>();

  get size(): number {
    return this.places.size;
  }

  /** The newest revision of `key`, if one is kept. */
  revision(key: OrderKey): number | undefined {
    const place = this.places.get(key);
    if (place === undefined) return undefined;
    const revision = this.revisions[place - this.base];
    return Number.isNaN(revision) ? undefined : revision; // NaN: reserved by a store, none kept before
  }

  /**
   * True when `revision` is older than the one kept for `key`, or than one of it being stored: an
   * entry of it is a re-send (the server sends a callback again when a crash cut off the answer
   * after its entries were written).
   */
  isOlder(key: OrderKey, revision: number): boolean {
    const kept = this.revision(key);
    if (kept !== undefined && revision < kept) return true;
    // A newer one being written: the re-send would go behind it (stores settle in no set order).
    const under = this.underWay.size === 0 ? undefined : this.underWay.get(key);
    return olderThan(under, revision);
  }

  /**
   * A store under way: `key` moves from its place (if it has one) to a new place at the end
   * with what its old place held (or no revision), and the new place is returned for `settle`;
   * `revision` counts as under way until settled or released (isOlder). The map is then touched
   * once per entry while its line is still in the cache: a note after the store's fsync missed the
   * cache (the bench's map of up to a million assets: 0.7 us per entry). The kept revision is what
   * it was until settled: after a store that fails, the key has moved (a new key holds a place with
   * no revision until forgotten), its revision is unchanged. A revision older than one of the key
   * under way (an earlier entry of the same callback: the caller asked isOlder before) is not
   * reserved, and nothing changes: OLDER_THAN_UNDER_WAY.
   */
  reserve(key: OrderKey, at: number, revision: number): number {
    const under = this.underWay.get(key);
    if (olderThan(under, revision)) return OLDER_THAN_UNDER_WAY;
    const place = this.places.get(key);
    let kept = NaN;
    if (place !== undefined) {
      const i = place - this.base;
      kept = this.revisions[i];
      if (this.times[i] > at) at = this.times[i];
      this.times[i] = NaN; // skipped from now on
    }
    this.append(key, kept, at);
    this.underWay.set(key, under === undefined ? revision : Array.isArray(under) ? [...under, revision] : [under, revision]);
    return this.base + this.keys.length - 1;
  }

  /** The store of `revision` failed: it no longer counts as under way (the server's retry is stored). */
  release(key: OrderKey, revision: number): void {
    const under = this.underWay.get(key);
    if (under === undefined) return;
    if (!Array.isArray(under)) {
      if (under === revision) this.underWay.delete(key);
      return;
    }
    const i = under.indexOf(revision);
    if (i < 0) return;
    const left = under.filter((_, j) => j !== i);
    this.underWay.set(key, left.length === 1 ? left[0] : left);
  }

  /**
   * The store's entry is on disk: its revision counts. At its reserved place when the key is still
   * there; else (noted since by another store, forgotten, or the log rewritten) as a note.
   */
  settle(key: OrderKey, reserved: number, revision: number, at: number): void {
    this.release(key, revision);
    const i = reserved - this.base;
    if (i >= 0 && i < this.keys.length && this.keys[i] === key && !Number.isNaN(this.times[i])) {
      if (!(revision < this.revisions[i])) this.revisions[i] = revision; // NaN: none kept before
      return;
    }
    this.note(key, revision, at);
  }

  /** A revision of `key` stored at `at`; one older than the kept one changes nothing. */
  note(key: OrderKey, revision: number, at: number): void {
    const place = this.places.get(key);
    if (place !== undefined) {
      const i = place - this.base;
      if (revision < this.revisions[i]) return;
      if (this.times[i] > at) at = this.times[i];
      this.times[i] = NaN; // skipped from now on
    }
    this.append(key, revision, at);
  }

  /**
   * Forgets keys last stored `horizon` or longer before `now`, oldest first, stopping at the first
   * younger one once at most `bound` keys are kept; a key `keep` says to keep gets the time `now`
   * (looked at again a horizon later). Resolves how many younger keys went to hold the bound.
   */
  forget(now: number, horizon: number, keep: (key: OrderKey) => boolean, bound = Infinity): number {
    let kept: Array<[OrderKey, number]> | undefined;
    let early = 0;
    let i = this.head;
    for (; i < this.keys.length; i++) {
      const at = this.times[i];
      if (Number.isNaN(at)) continue; // noted again since: a later place
      const young = at + horizon > now;
      if (young && this.places.size <= bound) break;
      const key = this.keys[i];
      this.times[i] = NaN;
      if (keep(key)) (kept ??= []).push([key, this.revisions[i]]);
      else { this.places.delete(key); if (young) early++; }
    }
    this.head = i;
    if (kept) for (const [key, revision] of kept) this.append(key, revision, now);
    this.tidy();
    return early;
  }

  /**
   * Every kept key with its revision and time, oldest first, as three arrays (no array per key: a
   * compaction writes them all); with `reserved`, also the keys reserved with no revision kept yet.
   */
  columns(reserved = false): { keys: OrderKey[]; revisions: number[]; times: number[] } {
    // Every place live (the usual case: each key has one place, and none reserved without a revision):
    // slices of the log, several times faster than copying place by place (a compaction writes them all).
    if (this.keys.length - this.head === this.places.size && (reserved || !this.anyReservedWithout())) {
      return { keys: this.keys.slice(this.head), revisions: this.revisions.slice(this.head), times: this.times.slice(this.head) };
    }
    const keys: OrderKey[] = [];
    const revisions: number[] = [];
    const times: number[] = [];
    for (let i = this.head; i < this.keys.length; i++) {
      const at = this.times[i];
      if (Number.isNaN(at) || (!reserved && Number.isNaN(this.revisions[i]))) continue;
      keys.push(this.keys[i]);
      revisions.push(this.revisions[i]);
      times.push(at);
    }
    return { keys, revisions, times };
  }

  /** A place reserved by a store of a key with no revision kept before (NaN), not yet settled. */
  private anyReservedWithout(): boolean {
    const revisions = this.revisions;
    for (let i = this.head; i < revisions.length; i++) if (Number.isNaN(revisions[i])) return true;
    return false;
  }

  private append(key: OrderKey, revision: number, at: number): void {
    this.places.set(key, this.base + this.keys.length);
    this.keys.push(key);
    this.revisions.push(revision);
    this.times.push(at);
    if (this.keys.length > 2048 && this.keys.length > 4 * this.places.size) this.rewrite();
  }

  /** Drops forgotten places from the front once they are half the log. */
  private tidy(): void {
    if (this.head < 1024 || this.head * 2 < this.keys.length) return;
    this.keys = this.keys.slice(this.head);
    this.revisions = this.revisions.slice(this.head);
    this.times = this.times.slice(this.head);
    this.base += this.head;
    this.head = 0;
  }

  /** The log without skipped places (keys noted again), when they outnumber the live ones. */
  private rewrite(): void {
    const { keys, revisions, times } = this.columns(true);
    const base = this.base + this.keys.length; // new places: after every old one, never reused
    for (let i = 0; i < keys.length; i++) this.places.set(keys[i], base + i);
    this.keys = keys;
    this.revisions = revisions;
    this.times = times;
    this.base = base;
    this.head = 0;
  }
}

/** True when `revision` is older than a revision under way (one, or a list when stores of the key overlap). */
function olderThan(under: number | number[] | undefined, revision: number): boolean {
  if (under === undefined) return false;
  return Array.isArray(under) ? under.some((r) => revision < r) : revision < under;
}
