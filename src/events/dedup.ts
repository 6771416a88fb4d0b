/**
 * Duplicate filter: remembers keys for a time window, holding at most `maxKeys`.
 *
 * A key counts from when it was FIRST seen: a delivery the server keeps
 * retrying is dropped until the window has passed since the first copy. Keys
 * are kept in a Map, whose insertion order is then also expiry order, so
 * expired keys and (past the cap) the oldest keys are dropped from the front
 * in O(1) each. No library needed for this.
 */
export interface DuplicateFilterOptions {
  /** How long a key is remembered, in ms. */
  windowMs: number;
  /** Most keys held at once; the oldest go first. */
  maxKeys: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

export class DuplicateFilter {
  private readonly seenAt = new Map<string, number>();
  private readonly windowMs: number;
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(options: DuplicateFilterOptions) {
    this.windowMs = Math.max(0, options.windowMs);
    this.maxKeys = Math.max(1, Math.floor(options.maxKeys));
    this.now = options.now ?? Date.now;
  }

  /** True when `key` was seen within the window (a duplicate); otherwise remembers it and returns false. */
  isDuplicate(key: string): boolean {
    const now = this.now();
    this.evictExpired(now);
    const first = this.seenAt.get(key);
    if (first !== undefined) return true;
    this.seenAt.set(key, now);
    while (this.seenAt.size > this.maxKeys) {
      this.seenAt.delete(this.seenAt.keys().next().value as string);
    }
    return false;
  }

  /** Number of keys held now. */
  get size(): number {
    this.evictExpired(this.now());
    return this.seenAt.size;
  }

  clear(): void {
    this.seenAt.clear();
  }

  private evictExpired(now: number): void {
    for (const [key, at] of this.seenAt) {
      if (now - at < this.windowMs) break;
      this.seenAt.delete(key);
    }
  }
}
