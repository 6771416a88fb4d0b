/**
 * The embedded inbox's file: an append-only journal of records, one per line,
 * `<crc32 of the JSON, 8 hex digits> <JSON>\n`.
 *
 * - Group commit: records appended while a write + fdatasync runs go out together in the next one,
 *   so a burst of callbacks costs a few fsyncs, not one each. `append` resolves once its records
 *   are on disk; its `onDurable` runs synchronously at that point, before any compaction can read
 *   the in-memory state (so a snapshot never misses a record that is durable).
 * - Loading: a line whose checksum or JSON does not hold, with only such lines after it, is a torn
 *   tail (a write cut off by a crash): it is dropped and the file cut back to the last whole
 *   record; records before it are never dropped. A bad line with good ones after it is skipped and
 *   counted (corruption, not a crash: said in the log by the caller). The file is read in chunks,
 *   one record at a time: a journal larger than fs.readFile reads (2 GiB; from before the byte bound) loads.
 * - Compaction: the live state is written to a temporary file, synced, renamed over the journal,
 *   and the directory synced; appends continue on the new file.
 * No native dependency: node's fs and zlib.crc32 only.
 */
import * as fs from 'fs';
import { constants as bufferConstants } from 'buffer';
import * as fsp from 'fs/promises';
import * as path from 'path';
import { crc32 } from 'zlib';

export function encodeRecord(record: object): string {
  return recordLine(JSON.stringify(record));
}

/** Where a record line's JSON starts: after its checksum (8 hex digits) and a space. */
export const RECORD_JSON_AT = 9;

/** One record's line from its JSON text (one line: no raw line break). */
export function recordLine(json: string): string {
  return checksum(json) + ' ' + json + '\n';
}

/** A record's checksum as its line starts with it: crc32 of the JSON text, 8 hex digits. */
function checksum(json: string): string {
  return crc32(json).toString(16).padStart(RECORD_JSON_AT - 1, '0');
}

export interface ParsedJournal<T> {
  records: T[];
  /** Bytes up to the end of the last whole record. */
  validBytes: number;
  /** Bytes after that (a torn tail), dropped. */
  tornBytes: number;
  /** Bad lines with good records after them, skipped. */
  corrupt: number;
}

const NEWLINE = 0x0a;
/** Bytes read at a time when a journal is loaded. */
const READ_CHUNK = 1 << 20;
/** A line longer than a string may be is no record (it could not be read): skipped as a bad line, not kept whole in memory. */
const LONGEST_LINE = bufferConstants.MAX_STRING_LENGTH;

/** What a load read: as ParsedJournal, with the number of records handed on. */
export interface JournalScan { records: number; validBytes: number; tornBytes: number; corrupt: number }

/** Cuts bytes fed in pieces into lines and decodes each (see the rules above); `onRecord` gets each record and its line's bytes. */
class LineScanner<T> {
  /** Pieces of the line not ended yet (references to the chunks read: each read has a buffer of its own). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overlong = false;
  /** Bytes of the lines ended so far. */
  private position = 0;
  private badSinceValid = 0;
  readonly scan: JournalScan = { records: 0, validBytes: 0, tornBytes: 0, corrupt: 0 };

  constructor(private readonly onRecord: (record: T, bytes: number) => void) {}

  feed(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end < 0) { this.keep(chunk.subarray(start)); return; }
      this.endLine(chunk.subarray(start, end));
      start = end + 1;
    }
  }

  /** All bytes fed: what follows the last good record is a torn tail. */
  finish(total: number): JournalScan {
    this.scan.tornBytes = total - this.scan.validBytes;
    return this.scan;
  }

  private keep(piece: Buffer): void {
    this.pendingBytes += piece.length;
    if (this.overlong) return;
    if (this.pendingBytes > LONGEST_LINE) { this.overlong = true; this.pending = []; return; }
    this.pending.push(piece);
  }

  private endLine(last: Buffer): void {
    const bytes = this.pendingBytes + last.length + 1;
    let record: T | undefined;
    if (!this.overlong && bytes - 1 <= LONGEST_LINE) {
      const line = this.pending.length ? Buffer.concat([...this.pending, last]) : last;
      record = decodeLine<T>(line.toString('utf8'));
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.overlong = false;
    this.position += bytes;
    if (record === undefined) { this.badSinceValid++; return; }
    this.onRecord(record, bytes);
    this.scan.records++;
    this.scan.validBytes = this.position;
    this.scan.corrupt += this.badSinceValid; // bad lines with a good record after them
    this.badSinceValid = 0;
  }
}

/** Reads a journal's bytes: every whole record, in order (see the rules above). */
export function parseJournal<T = Record<string, unknown>>(buf: Buffer): ParsedJournal<T> {
  const records: T[] = [];
  const scanner = new LineScanner<T>((record) => { records.push(record); });
  scanner.feed(buf);
  const { validBytes, tornBytes, corrupt } = scanner.finish(buf.length);
  return { records, validBytes, tornBytes, corrupt };
}

/**
 * Reads a journal file in chunks, handing on each whole record with its line's bytes (see the
 * rules above); never holds more than one record's line. Missing: nothing (existed false).
 */
export async function readJournal<T>(file: string, onRecord: (record: T, bytes: number) => void): Promise<JournalScan & { existed: boolean }> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return { records: 0, validBytes: 0, tornBytes: 0, corrupt: 0, existed: false };
  }
  const scanner = new LineScanner<T>(onRecord);
  let total = 0;
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(READ_CHUNK);
      const { bytesRead } = await handle.read(chunk, 0, READ_CHUNK, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      scanner.feed(chunk.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return { ...scanner.finish(total), existed: true };
}

function decodeLine<T>(line: string): T | undefined {
  if (line.length < RECORD_JSON_AT + 1 || line[RECORD_JSON_AT - 1] !== ' ') return undefined;
  const json = line.slice(RECORD_JSON_AT);
  if (checksum(json) !== line.slice(0, RECORD_JSON_AT - 1)) return undefined;
  try {
    const value = JSON.parse(json);
    return value !== null && typeof value === 'object' ? value as T : undefined;
  } catch {
    return undefined;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try { await handle.sync(); } finally { await handle.close(); }
}

interface Waiter { resolve: () => void; reject: (err: Error) => void; onDurable?: () => void }

/** Records' text, or a function that gives it when the batch is written (records gathered until then). */
export type Pending = string | (() => string);

export class JournalFile {
  private batch: Pending[] = [];
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private snapshot: (() => string) | undefined;
  private broken: Error | undefined;
  private closed = false;

  /**
   * Undefined after a compaction renamed its file over this one and the new file could not be
   * opened (or its directory synced): an append then must not go to the old handle, whose file
   * is gone; the next batch opens it again, or fails (and its callbacks are answered 503).
   */
  private handle: fsp.FileHandle | undefined;
  private directoryUnsynced = false;

  private constructor(readonly file: string, handle: fsp.FileHandle, private size: number) {
    this.handle = handle;
  }

  /** Opens (creating it and its directory if needed) and reads the journal (readJournal); a torn tail is cut off. */
  static async open<T>(file: string, onRecord: (record: T, bytes: number) => void): Promise<{ journal: JournalFile; loaded: JournalScan }> {
    const dir = path.dirname(file);
    await fsp.mkdir(dir, { recursive: true });
    const { existed, ...loaded } = await readJournal<T>(file, onRecord);
    const handle = await fsp.open(file, 'a');
    try {
      if (loaded.tornBytes > 0) {
        await handle.truncate(loaded.validBytes);
        await handle.datasync();
      }
      if (!existed) await syncDirectory(dir);
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
    return { journal: new JournalFile(file, handle, loaded.validBytes), loaded };
  }

  /**
   * Appends records' text; resolves once it is on disk (then `onDurable` has run). A function is
   * called when its batch is written (at once when no write runs): records added to what it
   * returns until then go in that batch.
   */
  append(text: Pending, onDurable?: () => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error('inbox journal is closed'));
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      this.batch.push(text);
      this.waiters.push({ resolve, reject, onDurable });
      if (!this.running) this.running = this.run().finally(() => { this.running = undefined; });
    });
  }

  /** Replaces the file with `produce()`'s text before the next batch (compaction). */
  compact(produce: () => string): void {
    if (this.closed || this.broken) return;
    this.snapshot = produce;
    if (!this.running) this.running = this.run().finally(() => { this.running = undefined; });
  }

  get bytes(): number {
    return this.size;
  }

  private async run(): Promise<void> {
    while ((this.batch.length || this.snapshot) && !this.broken) {
      if (this.snapshot) {
        const produce = this.snapshot;
        this.snapshot = undefined;
        // A failed compaction leaves the journal as it was: appends go on.
        await this.rewrite(produce()).catch(() => undefined);
        continue;
      }
      let text = '';
      for (const pending of this.batch) text += typeof pending === 'string' ? pending : pending();
      const waiters = this.waiters;
      this.batch = [];
      this.waiters = [];
      try {
        const handle = await this.openHandle();
        await handle.appendFile(text);
        await handle.datasync();
        this.size += Buffer.byteLength(text);
      } catch (err) {
        await this.undoPartialWrite(err as Error);
        for (const w of waiters) w.reject(err as Error);
        continue;
      }
      for (const w of waiters) {
        try { w.onDurable?.(); } catch { /* the caller's bookkeeping must not stop the others */ }
        w.resolve();
      }
    }
    if (this.broken) {
      const waiters = this.waiters;
      this.batch = [];
      this.waiters = [];
      for (const w of waiters) w.reject(this.broken);
    }
  }

  /** A write that failed may have left part of its records: cut the file back; if that fails too, stop writing. */
  private async undoPartialWrite(cause: Error): Promise<void> {
    try {
      if (this.handle) {
        await this.handle.truncate(this.size);
        await this.handle.datasync();
      } // else nothing was written: the file could not be opened
    } catch {
      this.broken = new Error(`inbox journal cannot be written: ${cause.message}`);
    }
  }

  private async rewrite(text: string): Promise<void> {
    const temporary = this.file + '.compact';
    const handle = await fsp.open(temporary, 'w');
    try {
      await handle.writeFile(text);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temporary, this.file);
    // From here on the old handle's file is gone: appends go to the new one, opened by openHandle.
    const old = this.handle;
    this.handle = undefined;
    this.directoryUnsynced = true;
    this.size = Buffer.byteLength(text);
    await old?.close().catch(() => undefined);
    await this.openHandle();
  }

  /** The handle appends go to: opened again (and the rename made durable) after a compaction that could not. */
  private async openHandle(): Promise<fsp.FileHandle> {
    // Until the rename is on disk a crash could bring the old file back without what is appended now.
    if (this.directoryUnsynced) {
      await syncDirectory(path.dirname(this.file));
      this.directoryUnsynced = false;
    }
    this.handle ??= await fsp.open(this.file, 'a');
    return this.handle;
  }

  /** Waits for the writes under way, then closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.snapshot = undefined;
    while (this.running) await this.running;
    await this.handle?.close().catch(() => undefined);
  }

  /** Closes and removes the file. */
  async remove(): Promise<void> {
    await this.close();
    await fsp.rm(this.file, { force: true });
    await fsp.rm(this.file + '.compact', { force: true });
  }
}

/** For tests and tools: the records of a journal file, read synchronously. */
export function readJournalSync<T>(file: string): ParsedJournal<T> {
  return parseJournal<T>(fs.readFileSync(file));
}
