/**
 * Entries read back from the callback text a journal record keeps (`b`: the body the server sent,
 * as body.ts read it: integers beyond 2^53 quoted, so JSON.parse keeps them exact), exactly as
 * asset-event-in read them when the callback arrived: the same normalisation (payload.ts).
 */
import { parseCallbackPayload } from '../payload';

/**
 * The entries at `indexes` of the callback's entry list (undefined: the first `count`), from its
 * text or, in a record loaded from the file, its parsed value.
 */
export function callbackEntries(body: unknown, indexes: number[] | undefined, count: number): unknown[] {
  // Parsed here (or loaded from the file) for this alone: normalised in place.
  const parsed = parseCallbackPayload(typeof body === 'string' ? JSON.parse(body) : body, Infinity, true);
  if (!parsed.ok) throw new Error(`inbox record: the callback text kept cannot be read again (${parsed.reason})`);
  const all = parsed.entries;
  if (!indexes) return all.length === count ? all : all.slice(0, count);
  return indexes.map((i) => all[i]);
}

/** True when `indexes` are 0, 1, 2, ...: the record leaves them out. */
export function inListOrder(indexes: number[]): boolean {
  for (let i = 0; i < indexes.length; i++) if (indexes[i] !== i) return false;
  return true;
}

/**
 * The text as one line of a journal: a line break in JSON text can only be whitespace between
 * tokens (inside a string it is escaped), so it becomes a space.
 */
export function oneLine(text: string): string {
  return text.includes('\n') ? text.replace(/\n/g, ' ') : text;
}
