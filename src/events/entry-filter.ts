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
  /**
   * Called as the `new` entries are handed to the flow, in the same turn (before Node-RED delivers
   * them): they count as emitted for the window. A copy killed after its flow saw them has sent
   * this already, so the server's retry is not emitted a second time.
   */
  confirm(): Promise<void>;
  /** The node closed before its flow got the entries: forget them, so that the retry is emitted. */
  undo(): Promise<void>;
}

export interface EntryFilter {
  /** Verdicts for the keys of one callback; rejects when the filter cannot answer (then nothing may be emitted). */
  claim(keys: string[]): Promise<Claim>;
}

const confirmed = async (): Promise<void> => undefined;

/** The in-memory filter behind the same interface: a key is claimed and confirmed at once. */
export function memoryEntryFilter(filter: DuplicateFilter): EntryFilter {
  return {
    // undo forgets the new keys (an at-least-once inbox that could not store them answers 503).
    claim: async (keys) => {
      const verdicts: Verdict[] = keys.map((key) => (filter.isDuplicate(key) ? 'duplicate' : 'new'));
      const undo = async () => { keys.forEach((key, i) => { if (verdicts[i] === 'new') filter.forget(key); }); };
      return { verdicts, confirm: confirmed, undo };
    }
  };
}
