/**
 * The embedded inbox: InboxState kept in a journal file (journal-file.ts) in Node-RED's user
 * directory, one file per asset-event-in node; its records are in journal-records.ts.
 * `store` waits for its callback's record to be on disk; delivery counts and acknowledgements are
 * gathered into one record per write of the journal (group commit), and only acknowledgements,
 * rejections and the sidebar's actions wait for theirs: a lost delivery count costs at most one
 * more delivery, never an entry.
 */
import { JournalFile, encodeRecord } from './journal-file';
import { InboxState, REVISION_HORIZON_MS, toDelivery, toParked, type StoredRecord } from './inbox-state';
import { OLDER_THAN_UNDER_WAY } from './newest-revisions';
import { Replay, snapshotText, storeRecords, type Rec } from './journal-records';
import { InboxFullError, isFull, passesBytes, type CallbackText, type Delivery, type Inbox, type InboxCounts, type InboxOptions, type NewEntry, type ParkedEntry, type Taken } from './types';

/**
 * Most entries waiting with the objects asset-event-in read (handed out as they are, not parsed
 * again from the callback's text). Past it (an inbox set to hold more), a backlog keeps only its text.
 */
const PARSED_WAITING_MAX = 10_000;
/** Most characters of callback text kept per stored entry (an entry is a few hundred); past it the entries are written out alone. */
const TEXT_PER_ENTRY_MAX = 4096;

/** Compact once the journal holds this many entries' records more than a snapshot would (and twice as many). */
const COMPACT_SLACK = 1000;
/** Newest revisions forgotten before the horizon are said at most this often. */
const EARLY_WARN_MS = 60000;

/** Delivery counts and acknowledgements waiting for the journal's next write (one record). */
interface Gathered { d: number[]; n: number[]; a: number[]; acked: StoredRecord[]; written: Promise<void>; acknowledged: Promise<boolean> }

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
  private readonly now: () => number;
  /** Entries being stored (not yet on disk), and their bytes, counted against the bounds. */
  private reserved = 0;
  private reservedBytes = 0;
  /** Entries' records in the file, each entry's store, delivery count and acknowledgement one (for the compaction rule). */
  private fileRecords = 0;
  /** Open for more until its record is written; undefined once it is (or a record went after it). */
  private gathering: Gathered | undefined;
  /** The sidebar's last action on a parked entry (deliverAgain, discard): the next waits for it. */
  private parkedActions: Promise<boolean> = Promise.resolve(false);
  private closed = false;
  /** Newest revisions forgotten before the horizon (the map held its bound) since the last warning, and when that was. */
  private forgottenEarly = 0;
  private warnedEarlyAt = -Infinity;

  private constructor(private readonly journal: JournalFile, private readonly options: InboxOptions, private readonly state: InboxState) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Loads the journal record by record (Replay): an inbox above its byte bound (a file from before
   * it, or a bound lowered since) loads whole and refuses callbacks until acknowledgements bring it below.
   */
  static async open(file: string, options: InboxOptions): Promise<{ inbox: JournalInbox; load: JournalInboxLoad }> {
    const state = new InboxState(options);
    const replay = new Replay(state, (options.now ?? Date.now)());
    const { journal, loaded } = await JournalFile.open<Rec>(file, (record, bytes) => replay.add(record, bytes));
    const inbox = new JournalInbox(journal, options, state);
    const parkedAtLoad = inbox.replay(replay);
    inbox.fileRecords = loaded.records;
    return { inbox, load: { loaded: inbox.state.size, tornBytes: loaded.tornBytes, corrupt: loaded.corrupt, parkedAtLoad } };
  }

  /** Rebuilds the state from the records read; entries whose deliveries are spent are parked (and that is written). */
  private replay(replay: Replay): ParkedEntry[] {
    const now = this.now();
    for (const rec of replay.finish()) this.state.add(rec);
    this.forgetOldRevisions();
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
   * and the flow would get an older revision after a newer one. So is an entry older than an earlier
   * one of its key in the same callback (as in the Redis Stream inbox).
   */
  async store(entries: NewEntry[], from?: CallbackText): Promise<number> {
    if (this.closed) throw new Error('inbox is closed');
    this.forgetOldRevisions();
    let fresh: NewEntry[] = [];
    let indexes: number[] = [];
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (e.revision !== undefined && this.state.newest.isOlder(e.key, e.revision)) continue;
      fresh.push(e);
      if (from) indexes.push(from.indexes[i]);
    }
    if (fresh.length === 0) return entries.length;
    if (isFull(this.state.size + this.reserved, this.options.maxEntries)) throw new InboxFullError(this.options.maxEntries);
    // Each revision's place among the newest revisions, taken now while the map's entry is in the
    // cache (just looked up), filled once on disk (settle); until then it counts as under way (an
    // older re-send arriving during the write stays out), and no longer if the write fails (release).
    // Not before the bound is checked: a refused callback leaves the map as it was.
    const at = this.now();
    const newest = this.state.newest;
    let reserved = fresh.map((e) => (e.revision === undefined ? -1 : newest.reserve(e.key, at, e.revision)));
    if (reserved.includes(OLDER_THAN_UNDER_WAY)) {
      const kept = (_: unknown, i: number) => reserved[i] !== OLDER_THAN_UNDER_WAY;
      fresh = fresh.filter(kept);
      if (from) indexes = indexes.filter(kept);
      reserved = reserved.filter((place) => place !== OLDER_THAN_UNDER_WAY);
    }
    const stale = entries.length - fresh.length;
    // Ids are places in line, consecutive within one store (its record names the first).
    const firstId = this.state.newPlace();
    for (let i = 1; i < fresh.length; i++) this.state.newPlace();
    // The callback's text is kept when it is mostly what is stored: not a large retry of which one
    // entry was new, nor a body of a few entries beside megabytes of other fields (kept in memory and
    // on disk until its entries are acknowledged).
    const keepText = from && fresh.length * 2 >= from.total && from.body.length <= fresh.length * TEXT_PER_ENTRY_MAX;
    // As read on arrival while few wait (no second parse when handed out); a backlog keeps only the text.
    // Only objects this inbox's own parse of the text made (keepText): a parser in front may share them.
    const keepParsed = !!keepText && this.state.size + this.reserved + fresh.length <= PARSED_WAITING_MAX;
    const { records, text } = storeRecords(fresh, firstId, keepText ? { body: from.body, indexes } : undefined, keepParsed);
    // Known only now (the record's text, as the journal gets it); refused, the revisions taken above go back.
    let bytes = 0;
    for (const r of records) bytes += r.bytes;
    const maxBytes = this.options.maxBytes ?? Infinity;
    const releaseRevisions = () => { for (let i = 0; i < fresh.length; i++) if (reserved[i] >= 0) newest.release(fresh[i].key, fresh[i].revision!); };
    if (passesBytes(this.state.bytes + this.reservedBytes, bytes, maxBytes)) {
      releaseRevisions();
      throw new InboxFullError(maxBytes, 'bytes');
    }
    this.reserved += fresh.length;
    this.reservedBytes += bytes;
    try {
      // In the state only once on disk: nothing is handed out that was not stored. The revisions are
      // settled only then too: a callback that failed to store must be stored when it comes again.
      await this.writeText(text, fresh.length, () => {
        const now = this.now();
        for (let i = 0; i < records.length; i++) {
          const r = records[i];
          this.state.add(r);
          if (r.revision !== undefined) this.state.newest.settle(r.key, reserved[i], r.revision, now);
        }
      });
    } catch (err) {
      releaseRevisions();
      throw err;
    } finally {
      this.reserved -= fresh.length;
      this.reservedBytes -= bytes;
    }
    return stale;
  }

  async take(limit: number): Promise<Taken> {
    if (this.closed) return { deliveries: [], parked: [] };
    const now = this.now();
    const { taken, parked } = this.state.take(limit, now);
    // Delivery counts go with the next write, not waited for (a lost count costs one delivery).
    if (taken.length) {
      const g = this.gathered();
      for (const r of taken) { g.d.push(r.id); g.n.push(r.deliveries); }
      this.counted(taken.length);
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
  acknowledge(id: string, delivery: number): Promise<boolean> {
    // Its in-flight slot is free at once (other assets go on); its line waits for the write.
    const record = this.closed ? undefined : this.state.beginAcknowledge(Number(id), delivery);
    if (!record) return Promise.resolve(false);
    const g = this.gathered();
    g.a.push(record.id);
    g.acked.push(record);
    this.counted(1);
    return g.acknowledged; // one promise for all acknowledgements of the record (a write that fails reopens them all)
  }

  /** A rejection that parks is on disk before the next entry of the asset goes (as acknowledge). */
  async reject(id: string, delivery: number, reason: string, away = false): Promise<'again' | ParkedEntry | undefined> {
    if (this.closed) return undefined;
    const n = Number(id);
    if (away) {
      const record = this.state.giveBack(n, delivery);
      if (!record) return undefined;
      // The count given back goes with the next write, as counts do (lost: one delivery counted more).
      const g = this.gathered();
      g.d.push(n);
      g.n.push(record.deliveries);
      this.counted(1);
      return 'again';
    }
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

  /**
   * The sidebar's actions on a parked entry: done in memory once their record is on disk, before
   * a compaction can follow it (a write that fails changes nothing: the entry stays parked, here
   * and on disk), one at a time (the entry is still parked when its record is written).
   */
  deliverAgain(id: string): Promise<boolean> {
    return this.parkedAction(Number(id), async (n) => {
      const place = this.state.newPlace();
      let done = false;
      await this.write({ u: n, q: place }, () => { done = !!this.state.unpark(n, place); });
      return done;
    });
  }

  discard(id: string): Promise<boolean> {
    return this.parkedAction(Number(id), async (n) => {
      let done = false;
      await this.write({ a: n }, () => { done = this.state.discard(n); });
      return done;
    });
  }

  private parkedAction(n: number, action: (n: number) => Promise<boolean>): Promise<boolean> {
    const run = async () => (this.closed || !this.state.isParked(n) ? false : action(n));
    const result = this.parkedActions.then(run, run);
    this.parkedActions = result.catch(() => false);
    return result;
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

  /**
   * The record of delivery counts and acknowledgements that goes with the journal's next write:
   * its text is made when that write starts, so what is added until then shares one record, one
   * checksum and one waiter (one entry at a time, they cost more than the rest of the inbox).
   */
  private gathered(): Gathered {
    if (this.gathering) return this.gathering;
    const g = { d: [], n: [], a: [], acked: [] } as unknown as Gathered;
    this.gathering = g;
    // Appended after this turn: a journal with no write under way makes the text at once, and the caller adds first.
    g.written = new Promise<void>((resolve, reject) => {
      queueMicrotask(() => {
        this.journal.append(() => {
          if (this.gathering === g) this.gathering = undefined;
          return encodeRecord({ d: g.d, n: g.n, a: g.a });
        }, () => { for (const r of g.acked) this.state.finishAcknowledge(r); }).then(resolve, reject);
      });
    });
    g.written.catch(() => undefined); // delivery counts are not waited for
    g.acknowledged = g.written.then(() => true, (err: Error) => {
      const now = this.now();
      for (const r of g.acked) this.state.reopen(r.id, now);
      throw err;
    });
    return g;
  }

  /** Appends one record; compacts when the file holds far more records than live entries. */
  private write(record: Rec, onDurable?: () => void): Promise<void> {
    return this.writeText(encodeRecord(record), 1, onDurable);
  }

  private writeText(text: string, records: number, onDurable?: () => void): Promise<void> {
    this.gathering = undefined; // what is gathered from now on goes after this record
    const done = this.journal.append(text, onDurable);
    done.catch(() => undefined); // callers that do not wait must not leave an unhandled rejection
    this.counted(records);
    return done;
  }

  /**
   * Counts entries' records appended. What a snapshot writes: the live entries and one pair per
   * newest revision. Compacting only once as much again was appended keeps its cost per record
   * constant (each compaction used to write the whole newest-revision map, a few records apart:
   * the bench's at-least-once row slowed as it grew).
   */
  private counted(records: number): void {
    this.fileRecords += records;
    const weight = this.state.size + this.state.newest.size;
    if (this.fileRecords - weight > COMPACT_SLACK && this.fileRecords > 2 * weight) {
      this.fileRecords = weight;
      this.journal.compact(() => {
        this.forgetOldRevisions();
        return snapshotText(this.state);
      });
    }
  }

  /** InboxState.forgetOldRevisions, and a warning when the map's bound made it forget some early. */
  private forgetOldRevisions(): void {
    const now = this.now();
    this.forgottenEarly += this.state.forgetOldRevisions(now);
    if (this.forgottenEarly === 0 || now - this.warnedEarlyAt < EARLY_WARN_MS) return;
    this.options.warn?.(`inbox: ${this.forgottenEarly} assets' newest revisions forgotten before the ${REVISION_HORIZON_MS / 60000}-minute horizon `
      + `(more than ${this.state.revisionKeysMax} assets within it): a re-sent older change of one of them would be taken as new`);
    this.warnedEarlyAt = now;
    this.forgottenEarly = 0;
  }
}
