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

export interface EntryFilter {
  /** Verdicts for the keys of one callback, in order; rejects when the filter cannot answer (then nothing was claimed for sure). */
  claim(keys: string[]): Promise<Verdict[]>;
  /** Called once the `new` entries were handed to the flow: they count as emitted for the window. */
  confirm(keys: string[]): Promise<void>;
}

/** The in-memory filter behind the same interface: a key is claimed and confirmed at once. */
export function memoryEntryFilter(filter: DuplicateFilter): EntryFilter {
  return {
    claim: async (keys) => keys.map((key) => (filter.isDuplicate(key) ? 'duplicate' : 'new')),
    confirm: async () => undefined
  };
}
