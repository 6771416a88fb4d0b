/**
 * Duplicate filter: remembers keys for a time window, holding at most `maxKeys`.
 *
 * A key counts from when it was FIRST seen: a delivery the server keeps
 * retrying is dropped until the window has passed since the first copy. Only
 * each key's SHA-1 is kept (the same digest as the Redis filter): a key holds
 * a whole entry, and a caller chooses its length. The Set is for lookups
 * only; the order of arrival (which is also expiry order) is kept in two
 * parallel arrays read from a moving head, so expired keys and (past the cap)
 * the oldest keys are dropped in O(1) each. Not the Set's own order: V8
 * leaves a deleted entry as a hole until the table is rebuilt, so iterating
 * from the start walks thousands of holes once the cap is reached.
 *
 * The cap never evicts the keys of a batch still being checked (one
 * callback's entries, see {@link DuplicateFilter.begin}): a callback with
 * more entries than the cap would otherwise push out its own first keys, and
 * the same callback sent again would be emitted again.
 */
import { entryDigest } from './entry-digest';

export interface DuplicateFilterOptions {
  /** How long a key is remembered, in ms. */
  windowMs: number;
  /** Most keys held at once (apart from an open batch's own); the oldest go first. */
  maxKeys: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

/** The keys of one callback, checked in one or more steps; `end()` once they all are. */
export interface FilterBatch {
  /** True when `key` was seen within the window (a duplicate); otherwise remembers it and returns false. */
  isDuplicate(key: string): boolean;
  end(): void;
}

export class DuplicateFilter {
  private readonly seen = new Set<string>();
  /** Key digests in order of arrival; entries before `head` are already forgotten. */
  private keys: string[] = [];
  /** When each key in `keys` was first seen. */
  private times: number[] = [];
  private head = 0;
  /** Arrival number of `keys[0]` (arrival numbers survive compaction). */
  private base = 0;
  /** Arrival numbers at which the open batches began: keys from the lowest on are not evicted by the cap. */
  private readonly openBatches: number[] = [];
  private readonly windowMs: number;
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(options: DuplicateFilterOptions) {
    this.windowMs = Math.max(0, options.windowMs);
    this.maxKeys = Math.max(1, Math.floor(options.maxKeys));
    this.now = options.now ?? Date.now;
  }

  /** One key on its own (a batch of one). */
  isDuplicate(key: string): boolean {
    const batch = this.begin();
    try {
      return batch.isDuplicate(key);
    } finally {
      batch.end();
    }
  }

  /** Opens a batch: until it ends, the cap does not evict the keys it adds (nor any added after it began). */
  begin(): FilterBatch {
    const start = this.base + this.keys.length;
    this.openBatches.push(start);
    let open = true;
    return {
      isDuplicate: (key) => this.check(key),
      end: () => {
        if (!open) return;
        open = false;
        this.openBatches.splice(this.openBatches.indexOf(start), 1);
      }
    };
  }

  /**
   * Forgets `key` (its entry could not be kept: the server's retry must not be dropped). Its slot in
   * the arrival order stays; should the key come back, that old slot may forget it a little early,
   * which lets a duplicate through (allowed) and never drops a new entry.
   */
  forget(key: string): void {
    this.seen.delete(entryDigest(key).toString('latin1')); // the Set holds digests (see check)
  }

  /** Number of keys held now. */
  get size(): number {
    this.evictExpired(this.now());
    this.compact();
    return this.seen.size;
  }

  clear(): void {
    this.seen.clear();
    // Arrival numbers go on after the last key (an open batch's start stays below new keys).
    this.base += this.keys.length;
    this.keys = [];
    this.times = [];
    this.head = 0;
  }

  private check(key: string): boolean {
    const now = this.now();
    this.evictExpired(now);
    const digest = entryDigest(key).toString('latin1');
    if (this.seen.has(digest)) return true;
    this.seen.add(digest);
    this.keys.push(digest);
    this.times.push(now);
    const protectedFrom = this.openBatches.length ? Math.min(...this.openBatches) : Infinity;
    while (this.seen.size > this.maxKeys && this.base + this.head < protectedFrom) this.dropOldest();
    this.compact();
    return false;
  }

  private evictExpired(now: number): void {
    while (this.head < this.keys.length && now - this.times[this.head] >= this.windowMs) this.dropOldest();
  }

  private dropOldest(): void {
    this.seen.delete(this.keys[this.head]);
    this.keys[this.head] = ''; // let the string be collected before the next compaction
    this.head++;
  }

  /** Drops the forgotten front of the arrays once it is more than half of them. */
  private compact(): void {
    if (this.head === 0 || this.head * 2 < this.keys.length) return;
    this.keys = this.keys.slice(this.head);
    this.times = this.times.slice(this.head);
    this.base += this.head;
    this.head = 0;
  }
}
