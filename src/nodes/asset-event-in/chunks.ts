/**
 * A callback's entries cut into the chunks they are handed to the flow in, and put to the
 * duplicate filter in one claim with one group per chunk (EntryFilter.claimGroups). The endpoint
 * then confirms each chunk's claim just before it hands that chunk on (issue 26, follow-up): a copy
 * killed between chunks has confirmed exactly what its flow was given, and the server's retry emits
 * the rest once. Chunks of YIELD_EVERY entries, so that the event loop runs between them (issue 22);
 * one chunk when the whole callback is one hand-over (one message per callback, or the inbox).
 */
import type { CallbackEntry } from '../../api/types';
import { YIELD_EVERY, entryKey, isEmptyEntry, yieldToEventLoop, type Claim, type EntryFilter } from '../../events';

/** The entries of one chunk that go out (new, or without a key), and its claim (undefined: no filter, or no keys). */
export interface Chunk { kept: CallbackEntry[]; claim?: Claim }

export interface ClaimedChunks {
  chunks: Chunk[];
  /** Entries kept over all chunks (the msg.parts count). */
  kept: number;
  /** Entries another copy is emitting now: the answer is 503. */
  busy: number;
  duplicates: number;
  /** Empty entries dropped (emitEmpty off). */
  empties: number;
}

export interface CutOptions {
  emitEmpty: boolean;
  /** The whole callback in one chunk. */
  oneChunk: boolean;
}

/**
 * Cuts and claims. Empty entries, and entries without a key (no rrn: see entryKey), are never
 * dropped as duplicates and never claimed.
 */
export async function cutAndClaim(entries: CallbackEntry[], subscriptionId: string | undefined, filter: EntryFilter | undefined,
  options: CutOptions): Promise<ClaimedChunks> {
  const cut: Array<{ candidates: CallbackEntry[]; keys: Array<string | undefined> }> = [];
  let empties = 0;
  let current: { candidates: CallbackEntry[]; keys: Array<string | undefined> } | undefined;
  for (let i = 0; i < entries.length; i++) {
    if (i > 0 && i % YIELD_EVERY === 0) await yieldToEventLoop(); // a loop over outside data
    const entry = entries[i];
    const empty = isEmptyEntry(entry);
    if (empty && !options.emitEmpty) { empties++; continue; }
    if (!current || (!options.oneChunk && current.candidates.length === YIELD_EVERY)) cut.push(current = { candidates: [], keys: [] });
    current.candidates.push(entry);
    current.keys.push(filter && !empty ? entryKey(subscriptionId, entry) : undefined);
  }
  const groups = cut.map(({ keys }) => keys.filter((key): key is string => key !== undefined));
  const claims = filter && groups.some((keys) => keys.length > 0) ? await filter.claimGroups(groups) : undefined;
  let kept = 0;
  let busy = 0;
  let duplicates = 0;
  const chunks = cut.map(({ candidates, keys }, c): Chunk => {
    const claim = claims?.[c];
    const out: CallbackEntry[] = [];
    let at = 0;
    candidates.forEach((entry, i) => {
      if (keys[i] === undefined || !claim) { out.push(entry); return; }
      const verdict = claim.verdicts[at++];
      if (verdict === 'duplicate') duplicates++;
      else if (verdict === 'busy') busy++;
      else out.push(entry);
    });
    kept += out.length;
    return { kept: out, claim };
  });
  return { chunks, kept, busy, duplicates, empties };
}
