/**
 * The records of the embedded inbox's journal (journal-inbox.ts): what each says, how a file of
 * them is replayed into an InboxState, and the snapshot a compaction writes.
 *
 * - `c` one callback's entries, stored together: ids `c`, `c`+1, ... (an entry's id is its place
 *   in line), keys `k` (keys.ts; older files hold `asset:<n>` text, read as the number), revisions
 *   `v` (null: none), received at `at`, subscription `sub`, and the entries: the callback's own
 *   JSON text `b` as the server sent it, with `x` the places in its entry list of those stored (left
 *   out: the first ones, as many as `k`), read back with callback-text.ts; or the entries `e` (a
 *   body some parser in front had read already). One record, so a torn last record drops that
 *   whole callback (never answered 2xx, the server sends it again), never an entry of an earlier one.
 * - `d`/`n`/`a` arrays: delivery counts (`d` ids, `n` counts) and acknowledgements (`a` ids)
 *   gathered until the journal's next write, applied in that order.
 * - `s` one entry (a compaction writes those of entries whose callback record is not reused:
 *   with its place `q`, deliveries `n` and parking `p`/`pa`); `d` + `n` and `a` as numbers: one
 *   entry's delivery count, acknowledgement or discard. Journals written one record per entry
 *   (before 0.1.0 was released) hold only these and load as they are.
 * - `p` parked, `u` delivered again (new place `q`); a compacted file starts with `i`: the ids and
 *   places used and each key's newest revision (`hk`/`hv`, times `hb` + `ho`; files before: `ht`, or `h`).
 */
import { callbackEntries, inListOrder, oneLine } from './callback-text';
import { encodeRecord, RECORD_JSON_AT, recordLine } from './journal-file';
import { peekEntry, type StoreBatch } from './entry-copies';
import { newRecord, type InboxState, type StoredRecord } from './inbox-state';
import { readKey, type OrderKey } from './keys';
import type { CallbackText, NewEntry } from './types';

export type Rec =
  | { c: number; k: OrderKey[]; e?: unknown[]; b?: unknown; x?: number[]; v?: Array<number | null>; sub?: string; at: string }
  | { s: number; k: OrderKey; e: unknown; v?: number; sub?: string; at: string; q?: number; n?: number; p?: string; pa?: string }
  | { d: number[]; n: number[]; a: number[] }
  | { d: number; n: number }
  | { a: number }
  | { p: number; r: string; pa: string }
  | { u: number; q: number }
  /**
   * First record of a compacted file: newest revisions as keys `hk`, revisions `hv` and times, each
   * the oldest time `hb` plus its offset `ho` in ms (small whole numbers: a third of the text of a
   * time, and far cheaper to encode; files before: times `ht`, or pairs `h` without a time).
   */
  | { i: number; q: number; h?: Array<[string, number, number?]>; hk?: OrderKey[]; hv?: number[]; ht?: number[]; hb?: number; ho?: number[] };

/**
 * The records of entries stored together, and their `c` record (undefined when they differ in
 * time or subscription: then one `s` record each). `firstId` is the id of the first; the others follow.
 * With the callback's text (`from`) the record keeps that text instead of writing each entry out
 * again: JSON.stringify of the entries was the largest part of storing them.
 */
export function storeRecords(entries: NewEntry[], firstId: number, from?: Omit<CallbackText, 'total'>, keepParsed = false): { records: StoredRecord[]; text: string } {
  const records: StoredRecord[] = [];
  const { receivedAt, subscriptionId } = entries[0];
  let shared = true;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.receivedAt !== receivedAt || e.subscriptionId !== subscriptionId) shared = false;
    records.push(newRecord(firstId + i, e.key, e.entry, e.receivedAt, e.subscriptionId, e.revision));
  }
  if (!shared) {
    let text = '';
    for (const r of records) {
      const line = encodeRecord(entryRecord(r));
      r.bytes = Buffer.byteLength(line);
      text += line;
    }
    return { records, text };
  }
  const k: OrderKey[] = new Array(records.length);
  let v: Array<number | null> | undefined;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    k[i] = r.key;
    if (r.revision !== undefined) (v ??= new Array(records.length).fill(null))[i] = r.revision;
  }
  const rec: Rec = { c: firstId, k, at: receivedAt };
  if (v) rec.v = v;
  if (subscriptionId !== undefined) rec.sub = subscriptionId;
  let text: string;
  let bodyAt: number | undefined;
  if (from) {
    if (!inListOrder(from.indexes)) rec.x = from.indexes;
    const head = JSON.stringify(rec).slice(0, -1) + ',"b":';
    text = recordLine(head + oneLine(from.body) + '}');
    bodyAt = RECORD_JSON_AT + head.length;
  } else {
    rec.e = records.map((r) => r.entry);
    text = encodeRecord(rec);
  }
  // Kept for compaction, which writes it again while all of them wait untouched (see snapshot).
  const batch: StoreBatch = { line: text, count: records.length, first: firstId, text, entries: keepParsed ? records.map((r) => r.entry) : undefined, bodyAt, indexes: rec.x };
  for (const r of records) { r.batch = batch; r.entry = undefined; }
  shareBytes(records, Buffer.byteLength(text));
  return { records, text };
}

/** A record's bytes shared by the entries it stored (the rest on the first), so that they add up to it. */
function shareBytes(records: StoredRecord[], bytes: number): void {
  const each = Math.floor(bytes / records.length);
  for (const r of records) r.bytes = each;
  records[0].bytes += bytes - each * records.length;
}

/** One entry's `s` record with its place, deliveries and parking. */
function entryRecord(r: StoredRecord): Rec {
  const line: Rec = { s: r.id, k: r.key, e: peekEntry(r), at: r.receivedAt };
  if (r.revision !== undefined) line.v = r.revision;
  if (r.subscriptionId !== undefined) line.sub = r.subscriptionId;
  if (r.seq !== r.id) line.q = r.seq;
  if (r.deliveries > 0) line.n = r.deliveries;
  if (r.state === 'parked') { line.p = r.parkReason ?? ''; line.pa = r.parkedAt ?? ''; }
  return line;
}

/**
 * Records as they are read from the file, one at a time (the file is never read whole: it may be
 * larger than fs.readFile reads), with each record's bytes; `finish` gives the entries not
 * acknowledged, before they join the state (the state orders them by place). An acknowledged
 * entry is let go when its acknowledgement is read, so memory holds the live entries only.
 */
export class Replay {
  private readonly byId = new Map<number, StoredRecord>();
  private lastId = 0;
  private lastSeq = 0;

  constructor(private readonly state: InboxState, private readonly now: number) {}

  private loaded(id: number, text: OrderKey, entry: unknown, at: string, revision: number | null | undefined, sub: string | undefined): StoredRecord {
    const key = readKey(text); // files written before numbers were keys hold `asset:<n>`
    // Acknowledged ones too: a re-sent older entry stays out (until REVISION_HORIZON_MS after it arrived).
    if (typeof revision === 'number') this.state.noteRevision(key, revision, Date.parse(at) || this.now);
    const rec = newRecord(id, key, entry, at, sub, typeof revision === 'number' ? revision : undefined);
    this.byId.set(id, rec);
    return rec;
  }

  add(r: Rec, bytes: number): void {
    const { byId, state, now } = this;
    if ('c' in r) {
      const entries = r.e ?? callbackEntries(r.b, r.x, r.k.length);
      const stored: StoredRecord[] = [];
      for (let i = 0; i < r.k.length; i++) stored.push(this.loaded(r.c + i, r.k[i], entries[i], r.at, r.v?.[i], r.sub));
      if (stored.length) shareBytes(stored, bytes);
      this.lastId = Math.max(this.lastId, r.c + r.k.length - 1);
    } else if ('s' in r) {
      const rec = this.loaded(r.s, r.k, r.e, r.at, r.v, r.sub);
      rec.bytes = bytes;
      rec.seq = r.q ?? r.s;
      rec.deliveries = r.n ?? 0;
      if (r.p !== undefined) { rec.state = 'parked'; rec.parkReason = r.p; rec.parkedAt = r.pa; }
      this.lastId = Math.max(this.lastId, r.s);
      this.lastSeq = Math.max(this.lastSeq, rec.seq);
    } else if ('d' in r && Array.isArray(r.d)) {
      const g = r as { d: number[]; n: number[]; a: number[] };
      for (let i = 0; i < g.d.length; i++) { const rec = byId.get(g.d[i]); if (rec) rec.deliveries = g.n[i]; }
      for (const id of g.a) byId.delete(id);
    } else if ('d' in r) {
      const rec = byId.get(r.d as number);
      if (rec) rec.deliveries = r.n as number;
    } else if ('a' in r) {
      byId.delete(r.a as number);
    } else if ('u' in r) {
      const rec = byId.get(r.u);
      if (rec) { rec.state = 'waiting'; rec.deliveries = 0; rec.seq = r.q; rec.parkReason = rec.parkedAt = undefined; }
      this.lastSeq = Math.max(this.lastSeq, r.q);
    } else if ('p' in r) {
      const rec = byId.get(r.p);
      if (rec) { rec.state = 'parked'; rec.parkReason = r.r; rec.parkedAt = r.pa; }
    } else if ('i' in r) {
      this.lastId = Math.max(this.lastId, r.i - 1);
      this.lastSeq = Math.max(this.lastSeq, r.q - 1);
      for (const [key, revision, at] of r.h ?? []) state.noteRevision(readKey(key), revision, at ?? now);
      if (r.hk && r.hv && r.ho) for (let i = 0; i < r.hk.length; i++) state.noteRevision(readKey(r.hk[i]), r.hv[i], (r.hb ?? 0) + r.ho[i]);
      else if (r.hk && r.hv && r.ht) for (let i = 0; i < r.hk.length; i++) state.noteRevision(readKey(r.hk[i]), r.hv[i], r.ht[i]);
    }
  }

  finish(): StoredRecord[] {
    const state = this.state;
    // Ids and places are never reused, also those of acknowledged entries; one counter for both (InboxState.newPlace).
    state.nextId = state.nextSeq = Math.max(state.nextId, state.nextSeq, this.lastId + 1, this.lastSeq + 1);
    return [...this.byId.values()].sort((a, b) => a.seq - b.seq);
  }
}

/**
 * The live state as records: the first one with the ids, places and newest revisions; a callback's
 * `c` record as written while all its entries wait untouched (not acknowledged, parked or moved;
 * their delivery counts follow in one record), else one `s` record per entry.
 */
export function snapshotText(state: InboxState): string {
  const { keys, revisions, times } = state.newest.columns();
  const base = times.length ? times[0] : 0; // the oldest (the log is in time order); whole ms, so base + offset is the time exactly
  for (let i = 0; i < times.length; i++) times[i] -= base;
  let text = encodeRecord({ i: state.nextId, q: state.nextSeq, hk: keys, hv: revisions, hb: base, ho: times });
  const live = state.all();
  const untouched = new Map<StoreBatch, number>();
  for (const r of live) if (r.batch && r.seq === r.id && r.state !== 'parked') untouched.set(r.batch, (untouched.get(r.batch) ?? 0) + 1);
  for (const [batch, count] of untouched) if (count !== batch.count) batch.line = undefined; // never again: free it
  const written = new Set<StoreBatch>();
  const d: number[] = [];
  const n: number[] = [];
  for (const r of live) {
    const batch = r.batch;
    if (batch?.line !== undefined && r.seq === r.id && r.state !== 'parked') {
      if (!written.has(batch)) { written.add(batch); text += batch.line; }
      if (r.deliveries > 0) { d.push(r.id); n.push(r.deliveries); }
      continue;
    }
    if (r.batch) { r.entry = peekEntry(r); r.batch = undefined; } // its own record from now on
    const line = encodeRecord(entryRecord(r));
    text += line;
    // Its bytes from now on are its own line's, as a load of the new file counts them (Replay).
    const bytes = Buffer.byteLength(line);
    state.bytes += bytes - r.bytes;
    r.bytes = bytes;
  }
  if (d.length) text += encodeRecord({ d, n, a: [] });
  return text;
}
