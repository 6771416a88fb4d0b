/**
 * Callback payload (spec 2.3) -> entries, read tolerantly:
 * `success` may be a boolean or "true"/"false"; an entry may be an empty
 * object; numbers may arrive as strings; an rrn beyond 2^53 stays a string.
 */
import type { CallbackEntry } from '../api/types';
import { exactInteger, isIntegerText, isPlainObject, readFlag } from '../api/values';
import { tooManyEntries } from './entry-count';

export type ParsedCallback =
  | { ok: true; id?: string; success?: boolean; entries: CallbackEntry[] }
  | { ok: false; reason: string; status?: 413 };

/** Reads a boolean that may come as a string. undefined when absent, null when unreadable. */
export function readBooleanFlag(v: unknown): boolean | undefined | null {
  if (v === undefined || v === null) return undefined;
  return readFlag(v) ?? null;
}

/**
 * An integer id that may come as a number or a numeric string. Safe integers
 * become numbers; larger ones stay strings (never rounded); anything else is
 * returned unchanged, so nothing the server sent is lost.
 */
export function readInteger(v: unknown): unknown {
  return isIntegerText(v) ? exactInteger(v) : v;
}

/** Normalises one entry (a copy, or `raw` itself when `inPlace`); keeps fields the spec does not list. */
export function normaliseEntry(raw: Record<string, unknown>, inPlace = false): CallbackEntry {
  const entry: Record<string, unknown> = inPlace ? raw : { ...raw };
  if ('assetId' in entry) entry.assetId = readInteger(entry.assetId);
  if ('rrn' in entry) entry.rrn = readInteger(entry.rrn);
  return entry as CallbackEntry;
}

export function isEmptyEntry(entry: CallbackEntry): boolean {
  return Object.keys(entry).length === 0;
}

/**
 * Checks the 2.3 shape of an already parsed JSON body and returns its entries (413 past `maxEntries`).
 * `own`: the body was parsed for this call alone, so its entries are normalised in place, not copied.
 */
export function parseCallbackPayload(body: unknown, maxEntries = Infinity, own = false): ParsedCallback {
  if (!isPlainObject(body)) return { ok: false, reason: 'body: must be a JSON object (spec 2.3)' };

  const success = readBooleanFlag(body.success);
  if (success === null) return { ok: false, reason: 'success: must be true or false' };

  let id: string | undefined;
  if (typeof body.id === 'string') id = body.id;
  else if (typeof body.id === 'number') id = String(body.id);
  else if (body.id !== undefined && body.id !== null) return { ok: false, reason: 'id: must be a string' };

  if (!isPlainObject(body.data)) return { ok: false, reason: 'data: must be an object holding entry (spec 2.3)' };
  const rawEntries = body.data.entry;
  let list: unknown[];
  if (rawEntries === undefined || rawEntries === null) list = [];
  else if (Array.isArray(rawEntries)) list = rawEntries;
  else if (isPlainObject(rawEntries)) list = [rawEntries]; // a lone entry not wrapped in an array
  else return { ok: false, reason: 'data.entry: must be an array of objects' };
  if (list.length > maxEntries) return { ok: false, status: 413, reason: tooManyEntries(maxEntries) };

  const entries: CallbackEntry[] = [];
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (!isPlainObject(item)) return { ok: false, reason: `data.entry[${i}]: must be an object` };
    entries.push(normaliseEntry(item, own));
  }
  const result: ParsedCallback = { ok: true, entries };
  if (id !== undefined) result.id = id;
  if (success !== undefined) result.success = success;
  return result;
}

function hasRevision(entry: CallbackEntry): boolean {
  return entry.rrn !== undefined && entry.rrn !== null && entry.rrn !== '';
}

/** One value of a key, self-delimiting (a string is length-prefixed), so no two entries share a key. */
function keyPart(value: unknown): string {
  if (typeof value === 'string') return value.length + ':' + value;
  if (typeof value === 'number') return '#' + value + ';';
  if (value === undefined) return '-';
  return JSON.stringify(value) + ';'; // null, booleans, objects from odd JSON
}

/**
 * Identity of an entry for the duplicate filter: the subscription id and every field the
 * entry reports, so entries that differ in any field are different changes. undefined for an
 * entry without rrn: nothing then tells a resent entry from a new change of the same asset
 * (a file modified twice), so such entries are never dropped as duplicates.
 *
 * Built by concatenation, the listed fields of spec 2.3 first: as cheap as the key of
 * assetId, rrn and action alone (a JSON.stringify per entry cost about three times more).
 */
export function entryKey(subscriptionId: string | undefined, entry: CallbackEntry): string | undefined {
  if (!hasRevision(entry)) return undefined;
  const record = entry as Record<string, unknown>;
  let key = keyPart(subscriptionId) + keyPart(record.assetId) + keyPart(record.rrn) + keyPart(record.path)
    + keyPart(record.owner) + keyPart(record.action);
  for (const name in record) {
    switch (name) {
      case 'assetId': case 'rrn': case 'path': case 'owner': case 'action': continue;
      default: key += keyPart(name) + keyPart(record[name]);
    }
  }
  return key;
}
