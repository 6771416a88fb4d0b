/**
 * The hot folder itself, without Node-RED: finds files, waits until each is untouched, hands it
 * to `upload`, and moves it only after the server answered success.
 *
 * Rules (README "Hot folders"):
 * - Finding (scanner.ts): a full scan at start and every `rescanMs`; file-system events in
 *   between name the files to look at; `polling` uses only the rescans (network shares).
 * - Untouched: a file is taken once its size and mtime, as this watcher saw them, have not
 *   changed for `untouchedMs` (a copy that keeps the original's mtime is still being written).
 *   An empty file waits until it has content; it is never uploaded.
 * - Uploads: at most `maxParallel` at once, oldest modification time first.
 * - After the upload: success -> moved to `doneFolder` (or deleted when `doneFolder` is null)
 *   under the same relative path, never overwriting (a suffix is added). A file that changed
 *   during its upload, or while it was queued (read again just before), waits until untouched
 *   and goes again. A failure that holds (below) leaves it in place; any other moves it to
 *   `failedFolder` with `<name>.error.json`. A vanished file (removed by someone else) is forgotten.
 *   One that cannot be moved stays, warned about once, untouched until its size or mtime change.
 * - Outages (shared/outage.ts): a failure that holds (retry.ts holdsHotFolder: transient, or a gateway's
 *   502/504) starts an outage when none is on and none came and went since the upload was sent;
 *   that failure counts towards the file's `retries`, and past them the file fails. During an
 *   outage uploads are held: one probe at a time, files that never failed first, then the others
 *   in the order they failed. A probe's failure counts for no file, unless the server may have
 *   the file (mayHaveTaken: it failed after the whole file went out), so that none is sent for
 *   ever. The server's own answer to a probe (isServerAnswer) ends the outage and the queue is
 *   back in age order; answers to uploads sent before it began do not. With no file waiting it
 *   stays on: the next file is the probe.
 * - A file leaves the watched folder only after the server's success or a final failure: a crash
 *   leaves it in the watched folder (uploaded again: at-least-once) or in done/failed.
 * - The folder missing, unreadable or gone: state `error` with the reason; scans go on and the
 *   state is `ok` again once the folder is back.
 */
import { EventEmitter } from 'events';
import type * as fs from 'fs';
import * as fsp from 'fs/promises';
import * as path from 'path';
import type { AssetApiError } from '../../api/errors';
import { holdsHotFolder, isServerAnswer, mayHaveTaken } from '../shared/retry';
import { moveWithErrorFile, moveWithoutOverwrite } from './files';
import { Outage } from '../shared/outage';
import { countByState, queueOrder, sameVersion, type Tracked, type Version } from './tracked';
import { FolderScanner, type ScanSink } from './scanner';
import { asAssetError, errorRecord, type FailedFile, type HotFolderCounts, type HotFolderOptions, type IngestedFile } from './types';

export { errorRecord } from './types';
export type { FailedFile, FileJob, HotFolderCounts, HotFolderOptions, IngestedFile } from './types';

/** When an upload was sent: the outage era then, and the outage it is the probe of. */
interface SentIn { era: number; probe: Outage | undefined }

/** Files due within this long of each other are re-read and queued as one batch. */
const DUE_GROUP_MS = 50;

export class HotFolder<R> extends EventEmitter {
  readonly options: HotFolderOptions<R>;
  private readonly scanner: FolderScanner;
  private readonly files = new Map<string, Tracked>();
  private readonly running = new Map<string, AbortController>();
  /** Each upload's whole handling (send, then move), so that a close can wait for them. */
  private readonly handling = new Set<Promise<void>>();
  /** Files ready to upload, oldest modification time first (a file no longer queued is skipped when met). */
  private queue: Tracked[] = [];
  private done = 0;
  private failed = 0;
  private outage: Outage<AssetApiError> | undefined;
  /** Outages begun and ended: an upload sent before the last change says nothing new of the server. */
  private outageEra = 0;
  private paused = false;
  private closed = false;
  private dueTimer: NodeJS.Timeout | undefined;

  constructor(options: HotFolderOptions<R>) {
    super();
    this.options = options;
    this.scanner = new FolderScanner(options, this.sink());
    this.scanner.on('folder-error', (text: string) => { this.emit('folder-error', text); this.emitCounts(); });
    this.scanner.on('folder-ok', () => { this.emit('folder-ok'); this.startUploads(); });
    this.scanner.on('warning', (text: string) => this.emit('warning', text));
  }

  /** Starts watching: a first scan at once (files already there are taken too). */
  start(): void {
    this.scanner.start();
  }

  pause(): void { this.paused = true; this.emitCounts(); }
  resume(): void { this.paused = false; this.startUploads(); this.emitCounts(); }
  get isPaused(): boolean { return this.paused; }
  /** undefined while the folder can be read; else why not. */
  get error(): string | undefined { return this.scanner.error; }
  /** The failure that says the server is unavailable, until it answers a probe. */
  get unavailable(): AssetApiError | undefined { return this.outage?.error; }

  /** Scans now (the node's `rescan` command). */
  rescan(): Promise<void> { return this.scanner.rescan(); }

  counts(): HotFolderCounts {
    return { ...countByState(this.files.values()), done: this.done, failed: this.failed };
  }

  /**
   * Stops everything; uploads in flight are aborted and their files stay where they are (one the
   * server already answered with success is still moved). Waits for them at most `waitMs`.
   */
  async close(waitMs = 4000): Promise<void> {
    this.closed = true;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.outage?.cancelTimer();
    for (const controller of this.running.values()) controller.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.handling, this.scanner.close()]),
      new Promise<void>(resolve => { timer = setTimeout(resolve, waitMs); })
    ]);
    if (timer) clearTimeout(timer);
  }

  // ---------------------------------------------------------------- what the scanner finds

  private sink(): ScanSink {
    return {
      // A full scan reads only new, settling and stuck files (a stuck one may be a new version): a
      // queued file is read when its upload starts and ends, so a rescan of thousands stays cheap.
      wantsRead: (relativePath) => {
        const state = this.files.get(relativePath)?.state;
        return state === undefined || state === 'settling' || state === 'stuck';
      },
      observed: (relativePath, stat) => this.observeStat(relativePath, stat),
      gone: (relativePath) => {
        const known = this.files.get(relativePath);
        if (known && known.state !== 'uploading') this.files.delete(relativePath);
      },
      scanned: (present) => {
        for (const [key, f] of this.files) {
          if (!present.has(key) && f.state !== 'uploading') this.files.delete(key); // moved or removed by someone else
        }
        this.checkDue();
      },
      looked: () => this.checkDue()
    };
  }

  /** Records what a stat saw: a new file, or a change that restarts its untouched interval. */
  private observeStat(relativePath: string, stat: fs.Stats): void {
    const now = Date.now();
    const known = this.files.get(relativePath);
    if (!known) {
      this.files.set(relativePath, {
        relativePath, size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, ctimeMs: stat.ctimeMs, since: now, checkedAt: now, state: 'settling', attempts: 0, counted: 0
      });
      this.emitCounts();
      return;
    }
    if (known.state === 'uploading') return;
    known.checkedAt = now;
    if (!sameVersion(stat, known)) this.newVersion(known, stat);
  }

  /**
   * The file changed: a new version, which waits until untouched whatever state it was in (a retry
   * due now would send it half-written) and starts its attempts again.
   */
  private newVersion(f: Tracked, stat: fs.Stats): void {
    f.state = 'settling';
    f.size = stat.size;
    f.mtimeMs = stat.mtimeMs;
    f.ino = stat.ino;
    f.ctimeMs = stat.ctimeMs;
    f.since = Date.now();
    f.attempts = 0;
    f.counted = 0;
    f.failedAt = undefined;
  }

  /** Reads size and mtime again of the files whose untouched interval has passed, then queues those unchanged. */
  private async recheckDue(): Promise<void> {
    const now = Date.now();
    const due = [...this.files.values()].filter(f => f.state === 'settling' && f.since + this.options.untouchedMs <= now);
    // All read first, then recorded at once: files due together are queued together, oldest first.
    const stats = await Promise.all(due.map(f =>
      fsp.stat(path.join(this.options.folder, ...f.relativePath.split('/'))).catch(() => undefined)));
    if (this.closed) return;
    due.forEach((f, i) => {
      const stat = stats[i];
      if (stat) this.observeStat(f.relativePath, stat);
      else if (this.files.get(f.relativePath) === f && f.state !== 'uploading') this.files.delete(f.relativePath);
    });
    this.checkDue();
  }

  // ---------------------------------------------------------------- the untouched interval and the queue

  /**
   * Queues the files seen unchanged by a read made at least the untouched interval after their
   * last change; times the next read for the others.
   */
  private checkDue(): void {
    if (this.closed) return;
    const now = Date.now();
    let next = Infinity;
    const ready: Tracked[] = [];
    for (const f of this.files.values()) {
      if (f.state === 'settling') {
        const due = f.since + this.options.untouchedMs;
        if (f.checkedAt >= due) {
          if (f.size === 0) {
            if (!f.emptyReported) { f.emptyReported = true; this.emit('empty', f.relativePath); }
            continue;
          }
          f.state = 'queued';
          ready.push(f);
        } else next = Math.min(next, due);
      }
    }
    if (ready.length > 0) this.queue = this.queue.filter(f => f.state === 'queued').concat(ready).sort(queueOrder);
    this.startUploads();
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = undefined;
    if (next !== Infinity) {
      // A little after the first due time, so that files found together are queued together (oldest first).
      this.dueTimer = setTimeout(() => { this.dueTimer = undefined; void this.recheckDue(); }, Math.max(10, next - now + DUE_GROUP_MS));
    }
    this.emitCounts();
  }

  private startUploads(): void {
    if (this.paused || this.closed || this.scanner.error !== undefined) return;
    let free = this.options.maxParallel - this.running.size;
    if (this.outage) {
      // One probe at a time, once its wait is over.
      if (this.outage.probing) return;
      if (Date.now() < this.outage.nextProbeAt) { this.outage.whenDue(() => this.startUploads()); return; }
      free = 1;
    }
    if (free <= 0) return;
    const queued: Tracked[] = [];
    while (queued.length < free && this.queue.length > 0) {
      const f = this.queue.shift()!;
      if (f.state === 'queued' && this.files.get(f.relativePath) === f && !queued.includes(f)) queued.push(f);
    }
    for (const f of queued) {
      const handled = this.uploadOne(f, { era: this.outageEra, probe: this.outage });
      this.handling.add(handled);
      void handled.finally(() => this.handling.delete(handled));
    }
  }

  // ---------------------------------------------------------------- one upload

  private async uploadOne(f: Tracked, sentIn: SentIn): Promise<void> {
    const { probe } = sentIn;
    if (probe) probe.probing = true;
    const full = path.join(this.options.folder, ...f.relativePath.split('/'));
    const controller = new AbortController();
    f.state = 'uploading';
    this.running.set(f.relativePath, controller);
    this.emitCounts();
    const sent: Version = { size: f.size, mtimeMs: f.mtimeMs, ino: f.ino, ctimeMs: f.ctimeMs };
    try {
      // Scans do not read a queued file: one rewritten while it waited goes back to settling.
      if (await this.changedSince(full, sent, f)) return;
      if (this.closed) { f.state = 'settling'; return; }
      f.attempts++;
      const started = Date.now();
      let result: R;
      try {
        result = await this.options.upload({ path: full, relativePath: f.relativePath, size: f.size, attempt: f.attempts }, controller.signal);
      } catch (err) {
        await this.afterFailure(f, full, sent, asAssetError(err), sentIn);
        return;
      }
      if (probe && probe === this.outage) this.endOutage();
      // The server has it: moved even while closing, so that it is not uploaded again.
      if (await this.changedSince(full, sent, f)) return;
      let movedTo: string | undefined;
      try {
        if (this.options.doneFolder === null) await fsp.unlink(full);
        else movedTo = await moveWithoutOverwrite(full, path.join(this.options.doneFolder, path.dirname(f.relativePath)));
      } catch (err) {
        // Uploaded, but it cannot leave the folder: say so once and leave it until it changes.
        this.stick(f, sent);
        this.emit('warning', `${full}: uploaded, but could not be moved to the done folder: ${(err as Error).message}`);
        return;
      }
      this.forget(f);
      this.done++;
      this.emit('ingested', { relativePath: f.relativePath, movedTo, size: sent.size, durationMs: Date.now() - started, attempts: f.attempts, result } satisfies IngestedFile<R>);
    } finally {
      if (probe) probe.probing = false;
      this.running.delete(f.relativePath);
      this.emitCounts();
      this.startUploads();
    }
  }

  /**
   * After a failure: first what it says of the server (the outage), then the file: changed or
   * vanished, it waits again; a failure that holds queues it again unless it has counted more
   * than Retries; any other fails it.
   */
  private async afterFailure(f: Tracked, full: string, sent: Version, error: AssetApiError, sentIn: SentIn): Promise<void> {
    if (this.closed || error.kind === 'aborted') { f.state = 'settling'; f.since = Date.now(); return; }
    const holds = holdsHotFolder(error);
    const probed = sentIn.probe !== undefined && sentIn.probe === this.outage;
    let counts = false;
    if (holds && probed) {
      this.outage!.probeFailed(error);
      counts = mayHaveTaken(error);
    } else if (holds && !this.outage && sentIn.era === this.outageEra) {
      this.startOutage(error);
      counts = true;
    } else if (!holds && probed && isServerAnswer(error)) this.endOutage();
    if (await this.changedSince(full, sent, f)) return;
    if (counts) f.counted++;
    if (!holds || f.counted > this.options.retries) { await this.moveToFailed(f, full, error); return; }
    // The outage may have ended during the read: then the file is back in age order, at once.
    const outage = this.outage;
    f.state = 'queued';
    f.failedAt = outage ? Date.now() : undefined;
    this.queue.push(f);
    if (counts) this.emit('retry', { relativePath: f.relativePath, retry: f.counted, retries: this.options.retries, delayMs: outage ? outage.nextProbeAt - Date.now() : 0, error });
    this.checkDue();
  }

  private startOutage(error: AssetApiError): void {
    this.outage = new Outage(error, this.options.retryBaseMs);
    this.outageEra++;
    this.emit('unavailable', error);
  }

  /** A probe got through: files queue by age again. */
  private endOutage(): void {
    if (!this.outage) return;
    this.outage.cancelTimer();
    this.outage = undefined;
    this.outageEra++;
    for (const f of this.files.values()) f.failedAt = undefined;
    this.queue.sort(queueOrder);
    if (!this.closed) this.emit('available');
    this.emitCounts();
  }

  /**
   * True (and the file back to waiting, or forgotten when gone) when the file is not what was
   * sent: it changed during the upload, or it vanished.
   */
  private async changedSince(full: string, sent: Version, f: Tracked): Promise<boolean> {
    let stat: fs.Stats;
    try {
      stat = await fsp.stat(full);
    } catch {
      this.forget(f);
      this.emit('vanished', f.relativePath);
      return true;
    }
    if (sameVersion(stat, sent)) return false;
    this.newVersion(f, stat);
    this.emit('changed', f.relativePath);
    this.checkDue();
    return true;
  }

  private async moveToFailed(f: Tracked, full: string, error: AssetApiError): Promise<void> {
    let moved: Awaited<ReturnType<typeof moveWithErrorFile>>;
    try {
      moved = await moveWithErrorFile(full, path.join(this.options.failedFolder, path.dirname(f.relativePath)), errorRecord(error, f.relativePath, f.attempts));
    } catch (err) {
      this.stick(f, { size: f.size, mtimeMs: f.mtimeMs, ino: f.ino, ctimeMs: f.ctimeMs });
      this.emit('warning', `${full}: failed (${error.message}), and could not be moved to the failed folder: ${(err as Error).message}`);
      return;
    }
    if (moved.problem) this.emit('warning', moved.problem);
    this.forget(f);
    this.failed++;
    this.emit('failed', { relativePath: f.relativePath, movedTo: moved.movedTo, errorFile: moved.errorFile, error, attempts: f.attempts } satisfies FailedFile);
  }

  /**
   * A file that could not be moved stays tracked as it was sent, so that scans do not take it for a
   * new file (uploaded again at every rescan); a change of size or mtime makes it a new version.
   */
  private stick(f: Tracked, sent: Version): void {
    if (this.files.get(f.relativePath) !== f) return;
    f.state = 'stuck';
    Object.assign(f, { size: sent.size, mtimeMs: sent.mtimeMs, ino: sent.ino, ctimeMs: sent.ctimeMs });
  }

  private forget(f: Tracked): void {
    if (this.files.get(f.relativePath) === f) this.files.delete(f.relativePath);
  }

  private lastCounts = '';
  private emitCounts(): void {
    const counts = this.counts();
    const key = JSON.stringify(counts) + this.paused + (this.scanner.error ?? '') + (this.outage?.error.message ?? '');
    if (key === this.lastCounts) return;
    this.lastCounts = key;
    this.emit('counts', counts);
  }
}
