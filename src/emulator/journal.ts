/**
 * An append-only JSON-lines journal with group commit, for the emulator's durable state.
 *
 * `append` resolves only once the record is on disk (fdatasync), so an answer sent after it
 * survives `kill -9`. Concurrent appends share one write + sync. A torn last line (the process
 * died mid-write) is ignored on open. `compact` atomically replaces the file with a snapshot.
 */
import { promises as fsp } from 'fs';
import * as path from 'path';

export class Journal<T> {
  private handle: fsp.FileHandle;
  private queue: { line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;

  private constructor(private readonly file: string, handle: fsp.FileHandle) {
    this.handle = handle;
  }

  /** Opens (creating folders and file as needed) and returns the journal with the records read back. */
  static async open<T>(file: string): Promise<{ journal: Journal<T>; records: T[] }> {
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const records: T[] = [];
    let text = '';
    try { text = await fsp.readFile(file, 'utf8'); } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; }
    const lines = text.split('\n');
    let validLength = 0;
    for (const line of lines) {
      if (line === '') { validLength += 1; continue; }
      try { records.push(JSON.parse(line) as T); validLength += Buffer.byteLength(line) + 1; }
      catch { break; } // torn tail from a crash: drop it and everything after
    }
    if (validLength < Buffer.byteLength(text)) await fsp.truncate(file, Math.min(validLength, Buffer.byteLength(text)));
    const handle = await fsp.open(file, 'a');
    return { journal: new Journal<T>(file, handle), records };
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
      try {
        await this.handle.write(batch.map(b => b.line).join(''));
        await this.handle.datasync();
        for (const b of batch) b.resolve();
      } catch (e) {
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
