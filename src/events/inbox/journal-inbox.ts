/**
 * The embedded inbox: InboxState kept in a journal file (journal-file.ts) in Node-RED's user
 * directory, one file per asset-event-in node.
 *
 * Records: `s` stored (id, key, entry, revision `v`, subscription id, received at; a compaction snapshot adds
 * the place in line `q`, the deliveries `n` and a parking `p`/`pa`), `d` deliveries so far, `a`
 * acknowledged or discarded, `p` parked, `u` delivered again (new place in line `q`); a compacted
 * file starts with the ids and places used and each key's newest revision `h`.
 * `store` waits for its records to be on disk; the rest are written in the same batches but only
 * acknowledgements, rejections and the sidebar's actions wait: a lost delivery count costs at
 * most one more delivery, never an entry.
 */
import { JournalFile, encodeRecord } from './journal-file';
import { InboxState, toDelivery, toParked, type StoredRecord } from './inbox-state';
import { InboxFullError, type Delivery, type Inbox, type InboxCounts, type InboxOptions, type NewEntry, type ParkedEntry, type Taken } from './types';

type Rec =
  | { s: number; k: string; e: unknown; v?: number; sub?: string; at: string; q?: number; n?: number; p?: string; pa?: string }
  | { d: number; n: number }
  | { a: number }
  | { p: number; r: string; pa: string }
  | { u: number; q: number }
  /**
   * First record of a compacted file: ids and places already used (never handed out again), newest
   * revision per key and when it was stored (ms; files before the horizon have pairs without it).
   */
  | { i: number; q: number; h?: Array<[string, number, number?]> };

/** Compact once the journal holds this many records more than a snapshot would (and twice as many). */
const COMPACT_SLACK = 1000;

export interface JournalInboxLoad {
  /** Entries loaded (not acknowledged before). */
  loaded: number;
  /** Bytes of a torn last record dropped. */
  tornBytes: number;
  /** Bad records with good ones after them, skipped. */
  corrupt: number;
  /** Entries parked at load: their deliveries were spent (each ended in a stop or crash). */
  parkedAtLoad: ParkedEntry[];
}

export class JournalInbox implements Inbox {
  private readonly state: InboxState;
  private readonly now: () => number;
  /** Entries being stored (not yet on disk), counted against the bound. */
  private reserved = 0;
  /** Records in the file (for the compaction rule). */
  private fileRecords = 0;
  private closed = false;

  private constructor(private readonly journal: JournalFile, private readonly options: InboxOptions) {
    this.state = new InboxState(options);
    this.now = options.now ?? Date.now;
  }

  static async open(file: string, options: InboxOptions): Promise<{ inbox: JournalInbox; load: JournalInboxLoad }> {
    const { journal, loaded } = await JournalFile.open<Rec>(file);
    const inbox = new JournalInbox(journal, options);
    const parkedAtLoad = inbox.replay(loaded.records);
    inbox.fileRecords = loaded.records.length;
    return { inbox, load: { loaded: inbox.state.size, tornBytes: loaded.tornBytes, corrupt: loaded.corrupt, parkedAtLoad } };
  }

  /** Rebuilds the state from the records; entries whose deliveries are spent are parked (and that is written). */
  private replay(records: Rec[]): ParkedEntry[] {
    const byId = new Map<number, StoredRecord>();
    const now = this.now();
    for (const r of records) {
      if ('s' in r) {
        // Acknowledged ones too: a re-sent older entry stays out (until REVISION_HORIZON_MS after it arrived).
        if (r.v !== undefined) this.state.noteRevision(r.k, r.v, Date.parse(r.at) || now);
        byId.set(r.s, {
          id: r.s, seq: r.q ?? r.s, key: r.k, entry: r.e, subscriptionId: r.sub, receivedAt: r.at,
          deliveries: r.n ?? 0, state: r.p !== undefined ? 'parked' : 'waiting', dueAt: 0, deadline: 0,
          parkReason: r.p, parkedAt: r.pa
        });
        if (r.sub === undefined) delete byId.get(r.s)!.subscriptionId;
        if (r.v !== undefined) byId.get(r.s)!.revision = r.v;
      } else if ('d' in r) {
        const rec = byId.get(r.d);
        if (rec) rec.deliveries = r.n;
      } else if ('a' in r) {
        byId.delete(r.a);
      } else if ('u' in r) {
        const rec = byId.get(r.u);
        if (rec) { rec.state = 'waiting'; rec.deliveries = 0; rec.seq = r.q; delete rec.parkReason; delete rec.parkedAt; }
      } else if ('p' in r) {
        const rec = byId.get(r.p);
        if (rec) { rec.state = 'parked'; rec.parkReason = r.r; rec.parkedAt = r.pa; }
      } else if ('i' in r) {
        this.state.nextId = Math.max(this.state.nextId, r.i);
        this.state.nextSeq = Math.max(this.state.nextSeq, r.q);
        for (const [key, revision, at] of r.h ?? []) this.state.noteRevision(key, revision, at ?? now);
      }
    }
    for (const rec of [...byId.values()].sort((a, b) => a.seq - b.seq)) this.state.add(rec);
    // Ids and places are never reused, also those of acknowledged entries.
    for (const r of records) {
      const id = 's' in r ? r.s : undefined;
      if (id !== undefined) this.state.nextId = Math.max(this.state.nextId, id + 1);
      const q = 'q' in r && typeof r.q === 'number' ? r.q : undefined;
      if (q !== undefined) this.state.nextSeq = Math.max(this.state.nextSeq, q + 1);
    }
    // One counter for ids and places (InboxState.newPlace).
    this.state.nextId = this.state.nextSeq = Math.max(this.state.nextSeq, this.state.nextId);
    this.state.forgetOldRevisions(now);
    const parked: ParkedEntry[] = [];
    for (const rec of this.state.all()) {
      if (rec.state === 'waiting' && rec.deliveries >= this.options.maxDeliveries) {
        this.state.park(rec, `not acknowledged after ${rec.deliveries} deliveries (each ended with a stop or crash)`, now);
        this.write({ p: rec.id, r: rec.parkReason!, pa: rec.parkedAt! });
        parked.push(toParked(rec));
      }
    }
    return parked;
  }

  /**
   * An entry older than a stored revision of its key is left out: the server sends a callback again
   * when a crash cut off the answer after its entries were written (the in-memory duplicate filter
   * forgot them with the crash); stored again they would go behind the newer entries stored since,
   * and the flow would get an older revision after a newer one.
   */
  async store(entries: NewEntry[]): Promise<number> {
    if (this.closed) throw new Error('inbox is closed');
    this.state.forgetOldRevisions(this.now());
    const fresh = entries.filter((e) => !this.state.isStale(e.key, e.revision));
    const stale = entries.length - fresh.length;
    if (fresh.length === 0) return stale;
    if (this.state.size + this.reserved + fresh.length > this.options.maxEntries) throw new InboxFullError(this.options.maxEntries);
    const records: StoredRecord[] = [];
    let text = '';
    for (const e of fresh) {
      const id = this.state.newPlace(); // its id is its place in line
      const record: StoredRecord = { id, seq: id, key: e.key, entry: e.entry, receivedAt: e.receivedAt, deliveries: 0, state: 'waiting', dueAt: 0, deadline: 0 };
      const line: Rec = { s: id, k: e.key, e: e.entry, at: e.receivedAt };
      if (e.revision !== undefined) { record.revision = e.revision; line.v = e.revision; }
      if (e.subscriptionId !== undefined) { record.subscriptionId = e.subscriptionId; line.sub = e.subscriptionId; }
      record.line = encodeRecord(line);
      records.push(record);
      text += record.line;
    }
    this.reserved += fresh.length;
    try {
      // In the state only once on disk: nothing is handed out that was not stored. The revisions
      // count only then too: a callback that failed to store must be stored when it comes again.
      await this.journal.append(text, () => {
        const at = this.now();
        for (const r of records) { this.state.add(r); this.state.noteRevision(r.key, r.revision, at); }
      });
    } finally {
      this.reserved -= fresh.length;
    }
    this.fileRecords += fresh.length;
    return stale;
  }

  async take(limit: number): Promise<Taken> {
    if (this.closed) return { deliveries: [], parked: [] };
    const now = this.now();
    const { taken, parked } = this.state.take(limit, now);
    // The delivery counts of one take in one append (not waited for: a lost count costs one delivery).
    if (taken.length) {
      let text = '';
      for (const r of taken) text += encodeRecord({ d: r.id, n: r.deliveries });
      this.writeText(text, taken.length);
    }
    // Parked once written: the next entry of the asset waits until then (rare: a last delivery timed out).
    const done: StoredRecord[] = [];
    for (const r of parked) {
      const reason = r.parkReason!;
      try {
        await this.write({ p: r.id, r: reason, pa: new Date(now).toISOString() }, () => {
          const p = this.state.finishPark(r.id, reason, now);
          if (p) done.push(p);
        });
      } catch {
        this.state.reopen(r.id, this.now()); // not written: it is due again, parked on its next timeout
      }
    }
    return { deliveries: taken.map(toDelivery), parked: done.map(toParked) };
  }

  /**
   * The next entry of the asset goes only once the acknowledgement is on disk: a crash in between
   * must not deliver this entry again after a newer one of the same asset was processed.
   */
  async acknowledge(id: string, delivery: number): Promise<boolean> {
    const n = Number(id);
    if (this.closed || !this.state.canAcknowledge(n, delivery)) return false;
    // Its in-flight slot is free at once (other assets go on); its line waits for the write.
    this.state.beginClose(n);
    try {
      await this.write({ a: n }, () => { this.state.finishAcknowledge(n); });
    } catch (err) {
      this.state.reopen(n, this.now());
      throw err;
    }
    return true;
  }

  /** A rejection that parks is on disk before the next entry of the asset goes (as acknowledge). */
  async reject(id: string, delivery: number, reason: string): Promise<'again' | ParkedEntry | undefined> {
    if (this.closed) return undefined;
    const n = Number(id);
    if (!this.state.rejectParks(n, delivery)) return this.state.reject(n, delivery, reason, this.now()) as 'again' | undefined;
    const now = this.now();
    this.state.beginClose(n);
    let parked: StoredRecord | undefined;
    try {
      await this.write({ p: n, r: reason, pa: new Date(now).toISOString() }, () => { parked = this.state.finishPark(n, reason, now); });
    } catch (err) {
      this.state.reopen(n, this.now());
      throw err;
    }
    return parked ? toParked(parked) : undefined;
  }

  nextDueAt(): number | undefined {
    return this.state.nextDueAt();
  }

  async parked(): Promise<ParkedEntry[]> {
    return this.state.all().filter((r) => r.state === 'parked').map(toParked);
  }

  async deliverAgain(id: string): Promise<boolean> {
    if (this.closed) return false;
    const record = this.state.unpark(Number(id));
    if (!record) return false;
    await this.write({ u: record.id, q: record.seq });
    return true;
  }

  async discard(id: string): Promise<boolean> {
    if (this.closed) return false;
    const n = Number(id);
    if (!this.state.discard(n)) return false;
    await this.write({ a: n });
    return true;
  }

  counts(): InboxCounts {
    return { stored: this.state.size, inFlight: this.state.inFlight, parked: this.state.parked, capacity: this.options.maxEntries };
  }

  remaining(): Delivery[] {
    return this.state.all().map(toDelivery);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.journal.close();
  }

  async destroy(): Promise<number> {
    const count = this.state.size;
    this.closed = true;
    await this.journal.remove();
    return count;
  }

  /** Appends one record; compacts when the file holds far more records than live entries. */
  private write(record: Rec, onDurable?: () => void): Promise<void> {
    return this.writeText(encodeRecord(record), 1, onDurable);
  }

  private writeText(text: string, records: number, onDurable?: () => void): Promise<void> {
    this.fileRecords += records;
    const done = this.journal.append(text, onDurable);
    done.catch(() => undefined); // callers that do not wait must not leave an unhandled rejection
    // What a snapshot writes: the live entries and one pair per newest revision. Compacting only once
    // as much again was appended keeps its cost per record constant (each compaction used to write
    // the whole newest-revision map, a few records apart: the bench's at-least-once row slowed as it grew).
    const weight = this.state.size + this.state.newest.size;
    if (this.fileRecords - weight > COMPACT_SLACK && this.fileRecords > 2 * weight) {
      this.fileRecords = weight;
      this.journal.compact(() => this.snapshot());
    }
    return done;
  }

  /** The live state as store records (place, deliveries and parking included). */
  private snapshot(): string {
    this.state.forgetOldRevisions(this.now());
    const h: Array<[string, number, number]> = [];
    for (const [key, { revision, at }] of this.state.newest) h.push([key, revision, at]);
    let text = encodeRecord({ i: this.state.nextId, q: this.state.nextSeq, h });
    for (const r of this.state.all()) {
      // The store record as written, and its deliveries: no need to encode the entry again.
      if (r.line && r.seq === r.id && r.state !== 'parked') {
        text += r.line;
        if (r.deliveries > 0) text += encodeRecord({ d: r.id, n: r.deliveries });
        continue;
      }
      const line: Rec = { s: r.id, k: r.key, e: r.entry, at: r.receivedAt, q: r.seq, n: r.deliveries };
      if (r.revision !== undefined) line.v = r.revision;
      if (r.subscriptionId !== undefined) line.sub = r.subscriptionId;
      if (r.state === 'parked') { line.p = r.parkReason ?? ''; line.pa = r.parkedAt ?? ''; }
      text += encodeRecord(line);
    }
    return text;
  }
}
