/**
 * What asset-event-in asks its duplicate filter, once per callback: the in-memory filter
 * (one process) and the Redis filter (several Node-RED copies behind a load balancer) both
 * answer it.
 */
import type { DuplicateFilter } from './dedup';
import { YIELD_EVERY, yieldToEventLoop } from './entry-digest';

/**
 * Per entry key: `new` (emit it), `duplicate` (emitted already within the window: drop it), or
 * `busy` (another copy is emitting it right now: answer 503 so the server sends the callback again).
 */
export type Verdict = 'new' | 'duplicate' | 'busy';

export interface Claim {
  /** One per key, in order. */
  verdicts: Verdict[];
  /**
   * Awaited before the `new` entries are handed to the flow: they count as emitted for the window. A
   * copy killed after its flow saw them has confirmed them, so the server's retry is not emitted a
   * second time. Rejects with ClaimLapsedError when the claim had lapsed (the entries must not be
   * handed on: another copy may have them), with another error when its outcome is unknown (Redis
   * did not answer: it may have landed, so the entries are handed on anyway, or they could be lost).
   */
  confirm(): Promise<void>;
  /** The node closed before its flow got the entries: forget them, so that the retry is emitted. */
  undo(): Promise<void>;
}

export interface EntryFilter {
  /** Verdicts for the keys of one callback; rejects when the filter cannot answer (then nothing may be emitted). */
  claim(keys: string[]): Promise<Claim>;
  /**
   * The keys of one callback in groups (the chunks it is handed on in), claimed at once, one Claim
   * per group: each group is confirmed (or undone) on its own. An entry twice in the callback is a
   * duplicate the second time, in whatever group.
   */
  claimGroups(groups: string[][]): Promise<Claim[]>;
}

const confirmed = async (): Promise<void> => undefined;

/**
 * The in-memory filter behind the same interface: a key is claimed and confirmed at once. The keys
 * of one callback form one batch (the cap never evicts them while it runs), checked a few hundred
 * at a time so that a large callback does not hold the event loop.
 */
export function memoryEntryFilter(filter: DuplicateFilter): EntryFilter {
  const claimGroups = async (groups: string[][]): Promise<Claim[]> => {
    const batch = filter.begin();
    try {
      let checked = 0;
      const claims: Claim[] = [];
      for (const keys of groups) {
        const verdicts: Verdict[] = new Array(keys.length);
        for (let i = 0; i < keys.length; i++) {
          if (checked > 0 && checked % YIELD_EVERY === 0) await yieldToEventLoop();
          checked++;
          verdicts[i] = batch.isDuplicate(keys[i]) ? 'duplicate' : 'new';
        }
        // undo forgets the new keys (an at-least-once inbox that could not store them answers 503).
        const undo = async () => { keys.forEach((key, i) => { if (verdicts[i] === 'new') filter.forget(key); }); };
        claims.push({ verdicts, confirm: confirmed, undo });
      }
      return claims;
    } finally {
      batch.end();
    }
  };
  return { claimGroups, claim: async (keys) => (await claimGroups([keys]))[0] };
}
