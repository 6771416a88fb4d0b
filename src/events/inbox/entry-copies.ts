/**
 * Which entry objects the embedded inbox keeps and which it hands out. An entry handed to a flow
 * (or listed) is the flow's: a change node or a function may change msg.payload in place, so the
 * inbox never hands out an object it keeps, and what it delivers again, lists or compacts is the
 * entry as stored.
 */
import { callbackEntries } from './callback-text';
import type { StoredRecord } from './inbox-state';
import { RECORD_JSON_AT } from './journal-file';

/**
 * The store record of entries stored together, shared by them; `line` goes once one of them was
 * touched. `entries`: those not handed out yet, as asset-event-in read them (kept while few wait:
 * journal-inbox.ts) or read back from the record's text `text`: from the callback's own text in it
 * (from `bodyAt` to the record's closing brace; `indexes`, the places of the entries in its list),
 * or else its entries `e`. A slot is emptied when its entry is handed out. The callback's text is
 * kept once, inside the record.
 */
export interface StoreBatch { line: string | undefined; count: number; first: number; text: string; entries?: unknown[]; bodyAt?: number; indexes?: number[] }

/** A record's entry to hand out: an object the inbox keeps no reference to. */
export function takeEntry(record: StoredRecord): unknown {
  const batch = record.batch;
  if (!batch) return structuredClone(record.entry); // its own record: the inbox keeps the original (after a restart, a compaction, or entries stored one record each)
  const i = record.id - batch.first;
  const entries = unhanded(batch, i);
  const entry = entries[i];
  entries[i] = undefined;
  return entry;
}

/** A record's entry to read, not to hand out (compaction writes it). */
export function peekEntry(record: StoredRecord): unknown {
  const batch = record.batch;
  if (!batch) return record.entry;
  const i = record.id - batch.first;
  return unhanded(batch, i)[i];
}

/** The batch's entries, with the one at `index` not handed out: read from the text again when it was. */
function unhanded(batch: StoreBatch, index: number): unknown[] {
  if (batch.entries && batch.entries[index] !== undefined) return batch.entries;
  batch.entries = batch.bodyAt !== undefined
    ? callbackEntries(batch.text.slice(batch.bodyAt, -2), batch.indexes, batch.count)
    : (JSON.parse(batch.text.slice(RECORD_JSON_AT)) as { e: unknown[] }).e;
  return batch.entries;
}
