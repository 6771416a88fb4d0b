/**
 * The hot folder itself, without Node-RED: finds files, waits until each is untouched, hands it
 * to `upload`, and moves it only after the server answered success.
 *
 * Rules (README "Hot folders"):
 * - Finding: file-system events (fs.watch) start a scan soon; a full rescan runs every
 *   `rescanMs` anyway (events are unreliable on network shares); `polling` uses only the rescan.
 *   Files already there at start are found by the first scan.
 * - Untouched: a file is taken once its size and modification time, as this watcher saw them,
 *   have not changed for `untouchedMs`. What a file's mtime says is not trusted alone: a copy
 *   that keeps the original's mtime is still being written. An empty file waits until it has
 *   content (an empty placeholder is often filled later); it is never uploaded.
 * - Uploads: at most `maxParallel` at once, oldest modification time first.
 * - After the upload: success -> moved to `doneFolder` (or deleted when `doneFolder` is null)
 *   under the same relative path, never overwriting (a suffix is added). A file that changed
 *   during its upload is not done: it waits until untouched and goes again. A transient failure
 *   (shared/retry.ts) leaves the file in place and tries again after the backoff, at most
 *   `retries` times; then, or on any other failure, it is moved to `failedFolder` with
 *   `<name>.error.json` beside it. A file that vanished (removed by someone else) is forgotten.
 * - A file leaves the watched folder only after the server's success or a final failure, so a
 *   crash at any moment leaves it either in the watched folder (uploaded again: at-least-once)
 *   or in done/failed.
 * - The folder missing, unreadable or gone: state `error` with the reason; scans go on and the
 *   state is `ok` again once the folder is back.
 */
import { EventEmitter } from 'events';
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import * as path from 'path';
import { AssetApiError } from '../../api/errors';
import { canRepeatUpload, retryDelayMs, RETRY_BASE_MS } from '../shared/retry';
import { FileFilter } from './patterns';
import { moveWithoutOverwrite, writeFileAtomically } from './files';

export interface HotFolderOptions<R> {
  /** Absolute path of the watched folder. */
  folder: string;
  /** Also watch subfolders. */
  recursive: boolean;
  /** No file-system events: only the periodic rescan (network shares). */
  polling: boolean;
  /** Full rescan interval (ms). */
  rescanMs: number;
  /** How long size and mtime must stay the same before a file is taken (ms). */
  untouchedMs: number;
  include: string[];
  exclude: string[];
  /** Uploads at once. */
  maxParallel: number;
  /** Where ingested files go (absolute); null: deleted (the user chose so explicitly). */
  doneFolder: string | null;
  /** Where failed files go (absolute), with `<name>.error.json`. */
  failedFolder: string;
  /** Tries after a transient failure before the file counts as failed. */
  retries: number;
  /** First backoff (ms); tests make it short. Default 5 s. */
  retryBaseMs?: number;
  /** Sends one file; rejects with an AssetApiError on failure. */
  upload: (file: FileJob, signal: AbortSignal) => Promise<R>;
}

/** One file handed to `upload`. */
export interface FileJob {
  /** Absolute path. */
  path: string;
  /** Path below the watched folder, `/`-separated. */
  relativePath: string;
  size: number;
  /** 1 for the first try. */
  attempt: number;
}

export interface IngestedFile<R> {
  relativePath: string;
  /** Where the file is now; undefined when it was deleted. */
  movedTo?: string;
  size: number;
  durationMs: number;
  attempts: number;
  result: R;
}

export interface FailedFile {
  relativePath: string;
  movedTo: string;
  errorFile: string;
  error: AssetApiError;
  attempts: number;
}

export interface HotFolderCounts {
  waiting: number;
  uploading: number;
  done: number;
  failed: number;
}

interface Tracked {
  relativePath: string;
  size: number;
  mtimeMs: number;
  /** When this watcher last saw size or mtime change (or first saw the file). */
  since: number;
  /** When this watcher last read size and mtime. */
  checkedAt: number;
  state: 'settling' | 'queued' | 'uploading' | 'retry-wait';
  attempts: number;
  /** retry-wait: when the next try may start. */
  notBefore: number;
  /** Seen by the scan in progress. */
  seen: boolean;
  /** An empty file was reported once. */
  emptyReported?: boolean;
}

/** Files named by file-system events are looked at this soon (several events, one look). */
const EVENT_DELAY_MS = 50;
/** Files due within this long of each other are re-read and queued as one batch. */
const DUE_GROUP_MS = 50;

/** Plain fields of an error for `<name>.error.json` and messages: never a cookie (AssetApiError has none). */
export function errorRecord(error: AssetApiError, relativePath: string, attempts: number): Record<string, unknown> {
  return {
    file: relativePath, kind: error.kind, message: error.message, serverMessage: error.serverMessage,
    status: error.status, code: error.code, field: error.field, operation: error.operation,
    time: new Date().toISOString(), attempts
  };
}

function asAssetError(err: unknown): AssetApiError {
  if (err instanceof AssetApiError) return err;
  const e = err as NodeJS.ErrnoException | undefined;
  return new AssetApiError('invalid-input', `file: ${e?.message ?? String(err)}`, {
    field: 'file', operation: 'upload', ...(typeof e?.code === 'string' ? { code: e.code } : {})
  });
}

export class HotFolder<R> extends EventEmitter {
  readonly options: HotFolderOptions<R>;
  private readonly filter: FileFilter;
  private readonly files = new Map<string, Tracked>();
  private readonly running = new Map<string, AbortController>();
  /** Each upload's whole handling (send, then move), so that a close can wait for them. */
  private readonly handling = new Set<Promise<void>>();
  /** Files ready to upload, oldest modification time first (a file no longer queued is skipped when met). */
  private queue: Tracked[] = [];
  private done = 0;
  private failed = 0;
  private paused = false;
  private closed = false;
  private folderError: string | undefined;
  private watchers: fs.FSWatcher[] = [];
  private rescanTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  private eventTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  /** Paths named by file-system events since the last look; a full scan when an event names none. */
  private readonly touched = new Set<string>();
  private fullScanWanted = false;

  constructor(options: HotFolderOptions<R>) {
    super();
    this.options = options;
    this.filter = new FileFilter(options.include, options.exclude);
  }

  /** Starts watching: a first scan at once (files already there are taken too). */
  start(): void {
    this.requestScan();
    this.scheduleRescan();
  }

  pause(): void { this.paused = true; this.emitCounts(); }
  resume(): void { this.paused = false; this.startUploads(); this.emitCounts(); }
  get isPaused(): boolean { return this.paused; }
  /** undefined while the folder can be read; else why not. */
  get error(): string | undefined { return this.folderError; }

  /** Scans now (the node's `rescan` command). */
  rescan(): Promise<void> { return this.requestScan(); }

  counts(): HotFolderCounts {
    let waiting = 0;
    let uploading = 0;
    for (const f of this.files.values()) {
      if (f.state === 'uploading') uploading++;
      else if (f.size > 0) waiting++;
    }
    return { waiting, uploading, done: this.done, failed: this.failed };
  }

  /**
   * Stops everything; uploads in flight are aborted and their files stay where they are (one the
   * server already answered with success is still moved). Waits for them at most `waitMs`.
   */
  async close(waitMs = 4000): Promise<void> {
    this.closed = true;
    for (const t of [this.rescanTimer, this.dueTimer, this.eventTimer]) if (t) clearTimeout(t);
    this.stopWatching();
    for (const controller of this.running.values()) controller.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.handling, this.scanning ?? Promise.resolve()]),
      new Promise<void>(resolve => { timer = setTimeout(resolve, waitMs); })
    ]);
    if (timer) clearTimeout(timer);
  }

  // ---------------------------------------------------------------- finding files

  private scheduleRescan(): void {
    if (this.closed) return;
    this.rescanTimer = setTimeout(() => {
      this.requestScan().finally(() => this.scheduleRescan());
    }, this.options.rescanMs);
  }

  /** One scan at a time; a request during a scan makes one more scan after it. */
  private requestScan(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.scanning) { this.scanAgain = true; return this.scanning; }
    this.scanning = (async () => {
      do {
        this.scanAgain = false;
        await this.scan();
      } while (this.scanAgain && !this.closed);
    })().finally(() => { this.scanning = undefined; });
    return this.scanning;
  }

  /** An event looks at the file it names (a stat), not at the whole folder: cheap with thousands of files. */
  private onFsEvent(filename?: string | Buffer | null): void {
    if (this.closed) return;
    const name = filename ? filename.toString() : '';
    if (name) this.touched.add(name.split(path.sep).join('/'));
    else this.fullScanWanted = true;
    if (this.eventTimer) return;
    this.eventTimer = setTimeout(() => { this.eventTimer = undefined; void this.lookAtTouched(); }, EVENT_DELAY_MS);
  }

  private async lookAtTouched(): Promise<void> {
    if (this.fullScanWanted) {
      this.fullScanWanted = false;
      this.touched.clear();
      await this.requestScan();
      return;
    }
    const names = [...this.touched];
    this.touched.clear();
    for (const relativePath of names) {
      if (this.closed) return;
      const segments = relativePath.split('/');
      const full = path.join(this.options.folder, ...segments);
      if (this.isInOwnFolder(full)) continue;
      let stat: fs.Stats;
      try {
        stat = await fsp.stat(full);
      } catch {
        const known = this.files.get(relativePath);
        if (known && known.state !== 'uploading') this.files.delete(relativePath); // moved or removed
        continue;
      }
      if (stat.isDirectory()) {
        if (this.options.recursive) { await this.requestScan(); return; } // a folder dropped in: what is in it
        continue;
      }
      if (!stat.isFile() || (segments.length > 1 && !this.options.recursive) || !this.filter.takes(relativePath)) continue;
      this.observeStat(relativePath, stat);
    }
    this.checkDue();
  }

  private async scan(): Promise<void> {
    const root = this.options.folder;
    try {
      const stat = await fsp.stat(root);
      if (!stat.isDirectory()) throw Object.assign(new Error(`${root} is not a folder`), { code: 'ENOTDIR' });
      await fsp.access(root, fs.constants.R_OK | fs.constants.X_OK);
    } catch (err) {
      this.setFolderError(err);
      return;
    }
    for (const f of this.files.values()) f.seen = false;
    try {
      await this.walk(root, '');
    } catch (err) {
      // The folder went away during the scan: keep what is known, report, try again later.
      this.setFolderError(err);
      for (const f of this.files.values()) f.seen = true;
      return;
    }
    if (this.closed) return;
    for (const [key, f] of this.files) {
      if (!f.seen && f.state !== 'uploading') this.files.delete(key); // gone: moved or removed by someone else
    }
    if (this.folderError !== undefined) {
      this.folderError = undefined;
      this.emit('folder-ok');
    }
    this.ensureWatching();
    this.checkDue();
  }

  private async walk(dir: string, relativeDir: string): Promise<void> {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      if (this.closed) return;
      const full = path.join(dir, entry.name);
      const relativePath = relativeDir ? `${relativeDir}/${entry.name}` : entry.name;
      if (this.isOwnFolder(full) || this.filter.ignoresName(entry.name)) continue;
      if (entry.isDirectory()) {
        if (this.options.recursive) {
          try {
            await this.walk(full, relativePath);
          } catch (err) {
            const code = (err as NodeJS.ErrnoException).code;
            if (code === 'ENOENT') continue; // a subfolder removed meanwhile
            this.emit('warning', `${full}: ${(err as Error).message}`);
          }
        }
        continue;
      }
      if (!entry.isFile() || !this.filter.takes(relativePath)) continue;
      const known = this.files.get(relativePath);
      // Only new files and those still settling are read: a queued or retrying file is compared
      // with what was read when its upload ends, so a rescan of thousands of files stays cheap.
      if (known && known.state !== 'settling') { known.seen = true; continue; }
      await this.observe(full, relativePath);
    }
  }

  /** The done and failed folders are never scanned, wherever they are. */
  private isOwnFolder(full: string): boolean {
    return full === this.options.doneFolder || full === this.options.failedFolder;
  }

  private isInOwnFolder(full: string): boolean {
    const inside = (folder: string | null) => folder !== null && (full === folder || full.startsWith(folder + path.sep));
    return inside(this.options.doneFolder) || inside(this.options.failedFolder);
  }

  private async observe(full: string, relativePath: string): Promise<void> {
    let stat: fs.Stats;
    try {
      stat = await fsp.stat(full);
    } catch {
      return; // gone between readdir and stat
    }
    this.observeStat(relativePath, stat);
  }

  /** Records what a stat saw: a new file, or a change that restarts its untouched interval. */
  private observeStat(relativePath: string, stat: fs.Stats): void {
    const now = Date.now();
    const known = this.files.get(relativePath);
    if (!known) {
      this.files.set(relativePath, {
        relativePath, size: stat.size, mtimeMs: stat.mtimeMs, since: now, checkedAt: now, state: 'settling', attempts: 0, notBefore: 0, seen: true
      });
      this.emitCounts();
      return;
    }
    known.seen = true;
    if (known.state === 'uploading') return;
    known.checkedAt = now;
    if (known.size !== stat.size || known.mtimeMs !== stat.mtimeMs) {
      known.size = stat.size;
      known.mtimeMs = stat.mtimeMs;
      known.since = now;
      if (known.state === 'queued') known.state = 'settling';
    }
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
      } else if (f.state === 'retry-wait') {
        if (f.notBefore <= now) { f.state = 'queued'; ready.push(f); }
        else next = Math.min(next, f.notBefore);
      }
    }
    if (ready.length > 0) {
      this.queue = this.queue.filter(f => f.state === 'queued').concat(ready)
        .sort((a, b) => a.mtimeMs - b.mtimeMs || (a.relativePath < b.relativePath ? -1 : 1));
    }
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
    if (this.paused || this.closed || this.folderError !== undefined) return;
    const free = this.options.maxParallel - this.running.size;
    if (free <= 0) return;
    const queued: Tracked[] = [];
    while (queued.length < free && this.queue.length > 0) {
      const f = this.queue.shift()!;
      if (f.state === 'queued' && this.files.get(f.relativePath) === f && !queued.includes(f)) queued.push(f);
    }
    for (const f of queued) {
      const handled = this.uploadOne(f);
      this.handling.add(handled);
      void handled.finally(() => this.handling.delete(handled));
    }
  }

  // ---------------------------------------------------------------- one upload

  private async uploadOne(f: Tracked): Promise<void> {
    const full = path.join(this.options.folder, ...f.relativePath.split('/'));
    const controller = new AbortController();
    f.state = 'uploading';
    f.attempts++;
    this.running.set(f.relativePath, controller);
    this.emitCounts();
    const started = Date.now();
    const sent = { size: f.size, mtimeMs: f.mtimeMs };
    try {
      let result: R;
      try {
        result = await this.options.upload({ path: full, relativePath: f.relativePath, size: f.size, attempt: f.attempts }, controller.signal);
      } catch (err) {
        await this.afterFailure(f, full, sent, asAssetError(err));
        return;
      }
      // The server has it: moved even while closing, so that it is not uploaded again.
      if (await this.changedSince(full, sent, f)) return;
      let movedTo: string | undefined;
      try {
        if (this.options.doneFolder === null) await fsp.unlink(full);
        else movedTo = await moveWithoutOverwrite(full, path.join(this.options.doneFolder, path.dirname(f.relativePath)));
      } catch (err) {
        // Uploaded, but it cannot leave the folder: say so and forget it until it changes.
        this.forget(f);
        this.emit('warning', `${full}: uploaded, but could not be moved to the done folder: ${(err as Error).message}`);
        return;
      }
      this.forget(f);
      this.done++;
      this.emit('ingested', { relativePath: f.relativePath, movedTo, size: sent.size, durationMs: Date.now() - started, attempts: f.attempts, result } satisfies IngestedFile<R>);
    } finally {
      this.running.delete(f.relativePath);
      this.emitCounts();
      this.startUploads();
    }
  }

  /** After a failure: changed or vanished files go back to waiting; transient ones wait to retry; the rest fail. */
  private async afterFailure(f: Tracked, full: string, sent: { size: number; mtimeMs: number }, error: AssetApiError): Promise<void> {
    if (this.closed || error.kind === 'aborted') { f.state = 'settling'; f.since = Date.now(); return; }
    if (await this.changedSince(full, sent, f)) return;
    if (f.attempts <= this.options.retries && canRepeatUpload({ path: full }, error)) {
      const delayMs = retryDelayMs(error, f.attempts, this.options.retryBaseMs ?? RETRY_BASE_MS);
      f.state = 'retry-wait';
      f.notBefore = Date.now() + delayMs;
      this.emit('retry', { relativePath: f.relativePath, retry: f.attempts, retries: this.options.retries, delayMs, error });
      this.checkDue();
      return;
    }
    await this.moveToFailed(f, full, error);
  }

  /**
   * True (and the file back to waiting, or forgotten when gone) when the file is not what was
   * sent: it changed during the upload, or it vanished.
   */
  private async changedSince(full: string, sent: { size: number; mtimeMs: number }, f: Tracked): Promise<boolean> {
    let stat: fs.Stats;
    try {
      stat = await fsp.stat(full);
    } catch {
      this.forget(f);
      this.emit('vanished', f.relativePath);
      return true;
    }
    if (stat.size === sent.size && stat.mtimeMs === sent.mtimeMs) return false;
    f.state = 'settling';
    f.size = stat.size;
    f.mtimeMs = stat.mtimeMs;
    f.since = Date.now();
    f.attempts = 0;
    this.emit('changed', f.relativePath);
    this.checkDue();
    return true;
  }

  private async moveToFailed(f: Tracked, full: string, error: AssetApiError): Promise<void> {
    const folder = path.join(this.options.failedFolder, path.dirname(f.relativePath));
    let movedTo: string;
    try {
      movedTo = await moveWithoutOverwrite(full, folder);
    } catch (err) {
      this.forget(f);
      this.emit('warning', `${full}: failed (${error.message}), and could not be moved to the failed folder: ${(err as Error).message}`);
      return;
    }
    const errorFile = `${movedTo}.error.json`;
    try {
      await writeFileAtomically(errorFile, JSON.stringify(errorRecord(error, f.relativePath, f.attempts), null, 2) + '\n');
    } catch (err) {
      this.emit('warning', `${errorFile}: ${(err as Error).message}`);
    }
    this.forget(f);
    this.failed++;
    this.emit('failed', { relativePath: f.relativePath, movedTo, errorFile, error, attempts: f.attempts } satisfies FailedFile);
  }

  private forget(f: Tracked): void {
    if (this.files.get(f.relativePath) === f) this.files.delete(f.relativePath);
  }

  // ---------------------------------------------------------------- folder state and events

  private setFolderError(err: unknown): void {
    const code = (err as NodeJS.ErrnoException)?.code;
    const reason = code === 'ENOENT' ? 'does not exist'
      : code === 'EACCES' || code === 'EPERM' ? 'cannot be read (permission denied)'
        : code === 'ENOTDIR' ? 'is not a folder' : (err as Error)?.message ?? String(err);
    const text = `${this.options.folder} ${reason}`;
    this.stopWatching();
    if (this.folderError === text) return;
    this.folderError = text;
    this.emit('folder-error', text);
    this.emitCounts();
  }

  private ensureWatching(): void {
    if (this.options.polling || this.watchers.length > 0 || this.closed) return;
    try {
      const watcher = fs.watch(this.options.folder, { recursive: this.options.recursive, persistent: false }, (_event, name) => this.onFsEvent(name));
      watcher.on('error', () => { this.stopWatching(); this.onFsEvent(); });
      this.watchers.push(watcher);
    } catch {
      // No events here (e.g. too many watches): the rescan still finds every file.
    }
  }

  private stopWatching(): void {
    for (const w of this.watchers.splice(0)) { try { w.close(); } catch { /* already closed */ } }
  }

  private lastCounts = '';
  private emitCounts(): void {
    const counts = this.counts();
    const key = JSON.stringify(counts) + this.paused + (this.folderError ?? '');
    if (key === this.lastCounts) return;
    this.lastCounts = key;
    this.emit('counts', counts);
  }
}
