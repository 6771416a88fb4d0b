/**
 * An append-only JSON-lines journal with group commit, for the emulator's durable state.
 *
 * `append` resolves only once the record is on disk (fdatasync), so an answer sent after it
 * survives `kill -9`. Concurrent appends share one write + sync. A torn record never costs a
 * later one: a write that fails (disk full) is cut off again before the next, an incomplete last
 * line (the process died mid-write) is cut off on open, and a broken line anywhere else (a disk
 * that lost part of a write) is skipped on open while every record after it is read.
 * `compact` atomically replaces the file with a snapshot.
 */
import { promises as fsp } from 'fs';
import * as path from 'path';

export class Journal<T> {
  private handle: fsp.FileHandle;
  private queue: { line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;

  /** Lines skipped on open because they were not JSON (a torn write), for the caller's log. */
  skipped = 0;

  private constructor(private readonly file: string, handle: fsp.FileHandle, private size: number) {
    this.handle = handle;
  }

  /** Opens (creating folders and file as needed) and returns the journal with the records read back. */
  static async open<T>(file: string): Promise<{ journal: Journal<T>; records: T[] }> {
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const records: T[] = [];
    let text = '';
    try { text = await fsp.readFile(file, 'utf8'); } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; }
    // Every complete line (ending in a newline) is a record, or a torn one to skip; what follows
    // the last newline was being written when the process died: cut off, never acknowledged.
    const end = text.lastIndexOf('\n') + 1;
    let skipped = 0;
    for (const line of text.slice(0, end).split('\n')) {
      if (line === '') continue;
      try { records.push(JSON.parse(line) as T); } catch { skipped++; }
    }
    const complete = Buffer.byteLength(text.slice(0, end));
    if (complete < Buffer.byteLength(text)) await fsp.truncate(file, complete);
    const handle = await fsp.open(file, 'a');
    const journal = new Journal<T>(file, handle, complete);
    journal.skipped = skipped;
    return { journal, records };
  }

  /** Appends one record; resolves when it is durable. */
  append(record: T): Promise<void> {
    if (this.closed) return Promise.reject(new Error('journal closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ line: JSON.stringify(record) + '\n', resolve, reject });
      if (!this.flushing) this.flushing = this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.queue.length);
      const text = batch.map(b => b.line).join('');
      try {
        await this.handle.write(text);
        await this.handle.datasync();
        this.size += Buffer.byteLength(text);
        for (const b of batch) b.resolve();
      } catch (e) {
        // Nothing of this batch was acknowledged: cut off whatever of it reached the file, so that
        // the next record starts on a line of its own instead of after a torn one.
        await this.handle.truncate(this.size).catch(() => undefined);
        for (const b of batch) b.reject(e as Error);
      }
    }
    this.flushing = null;
  }

  /** Replaces the journal's content with `records` atomically (write temp, sync, rename). */
  async compact(records: T[]): Promise<void> {
    while (this.flushing) await this.flushing;
    const tmp = `${this.file}.compact-${process.pid}`;
    const out = await fsp.open(tmp, 'w');
    try {
      await out.write(records.map(r => JSON.stringify(r) + '\n').join(''));
      await out.datasync();
    } finally { await out.close(); }
    await fsp.rename(tmp, this.file);
    await syncDir(path.dirname(this.file));
    await this.handle.close();
    this.handle = await fsp.open(this.file, 'a');
    this.size = (await this.handle.stat()).size;
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.flushing) await this.flushing;
    await this.handle.close();
  }
}

/** fsync a directory so a rename or a new file in it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, 'r');
  try { await h.sync(); } catch { /* some filesystems refuse; best effort */ } finally { await h.close(); }
}
