/**
 * What asset-event-in asks its duplicate filter, once per callback: the in-memory filter
 * (one process) and the Redis filter (several Node-RED copies behind a load balancer) both
 * answer it.
 */
import type { DuplicateFilter } from './dedup';

/**
 * Per entry key: `new` (emit it), `duplicate` (emitted already within the window: drop it), or
 * `busy` (another copy is emitting it right now: answer 503 so the server sends the callback again).
 */
export type Verdict = 'new' | 'duplicate' | 'busy';

export interface Claim {
  /** One per key, in order. */
  verdicts: Verdict[];
  /** Called once the `new` entries were handed to the flow: they count as emitted for the window. */
  confirm(): Promise<void>;
}

export interface EntryFilter {
  /** Verdicts for the keys of one callback; rejects when the filter cannot answer (then nothing may be emitted). */
  claim(keys: string[]): Promise<Claim>;
}

const confirmed = async (): Promise<void> => undefined;

/** The in-memory filter behind the same interface: a key is claimed and confirmed at once. */
export function memoryEntryFilter(filter: DuplicateFilter): EntryFilter {
  return {
    claim: async (keys) => ({ verdicts: keys.map((key) => (filter.isDuplicate(key) ? 'duplicate' : 'new')), confirm: confirmed })
  };
}
