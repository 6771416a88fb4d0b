/**
 * Finding a hot folder's files (no Node-RED): a full scan at start, every `rescanMs` and on
 * request; between scans, file-system events (fs.watch) name the files to look at, one stat each,
 * so that thousands of waiting files cost nothing per event. `polling` uses only the rescans
 * (network shares, where events are unreliable). The done and failed folders are never scanned,
 * whatever path spelling (symbolic links) leads to them: real paths are compared.
 * Symbolic links in the folder are never taken nor followed (the walk's Dirent, the events' lstat).
 *
 * What it sees goes to a {@link ScanSink}; the folder's state (missing, unreadable, gone, back)
 * is emitted as `folder-error` (text) and `folder-ok`; a subfolder it cannot read as `warning`.
 */
import { EventEmitter } from 'events';
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import * as path from 'path';
import { isInside, realPath } from './paths';
import { FileFilter } from './patterns';

export interface ScannerOptions {
  /** Absolute path of the watched folder. */
  folder: string;
  recursive: boolean;
  /** Make the folder when it is missing at start (HotFolderOptions.createFolder). */
  createFolder?: boolean;
  polling: boolean;
  /** Full rescan interval (ms). */
  rescanMs: number;
  include: string[];
  exclude: string[];
  /** Never scanned (absolute; null: none). */
  doneFolder: string | null;
  failedFolder: string;
}

/** Where a scanner's findings go. */
export interface ScanSink {
  /** True when a full scan should read this file's size and mtime (a new file, or one still settling). */
  wantsRead(relativePath: string): boolean;
  /** A file's size and mtime as read now. */
  observed(relativePath: string, stat: fs.Stats): void;
  /** An event named this file and nothing is there any more. */
  gone(relativePath: string): void;
  /** A full scan ended; `present` holds every file found. */
  scanned(present: Set<string>): void;
  /** The files named by events were looked at. */
  looked(): void;
}

/** A failed mkdir of the watched folder: reported as such, unless something is there (the stat then says what). */
function notCreated(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EEXIST') throw Object.assign(err, { creating: true });
}

/** Files named by file-system events are looked at this soon (several events, one look). */
const EVENT_DELAY_MS = 50;
/** Files of one folder read at once during a scan (bounds the reads queued in libuv's pool). */
const STAT_BATCH = 256;

export class FolderScanner extends EventEmitter {
  private readonly filter: FileFilter;
  private closed = false;
  private folderError: string | undefined;
  private watchers: fs.FSWatcher[] = [];
  private rescanTimer: NodeJS.Timeout | undefined;
  private eventTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  /** Paths named by file-system events since the last look; a full scan when an event names none. */
  private readonly touched = new Set<string>();
  private fullScanWanted = false;
  /** Real paths of the watched folder and of the done/failed folders, as read at the last full scan. */
  private real: { root: string; own: string[] } | undefined;
  /**
   * Make the folder before the next scan: until it was made once (a share not mounted at a later
   * scan must show as missing, not get a local folder in its place).
   */
  private createPending: boolean;

  constructor(private readonly options: ScannerOptions, private readonly sink: ScanSink) {
    super();
    this.filter = new FileFilter(options.include, options.exclude);
    this.createPending = options.createFolder === true;
  }

  /** undefined while the folder can be read; else why not. */
  get error(): string | undefined { return this.folderError; }

  /** A first scan at once (files already there are found too), then every `rescanMs`. */
  start(): void {
    void this.rescan();
    this.scheduleRescan();
  }

  /** One scan at a time; a request during a scan makes one more scan after it. */
  rescan(): Promise<void> {
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

  /** Stops timers and events; resolves when a scan under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of [this.rescanTimer, this.eventTimer]) if (t) clearTimeout(t);
    this.stopWatching();
    await this.scanning?.catch(() => undefined);
  }

  private scheduleRescan(): void {
    if (this.closed) return;
    this.rescanTimer = setTimeout(() => {
      void this.rescan().finally(() => this.scheduleRescan());
    }, this.options.rescanMs);
  }

  private async scan(): Promise<void> {
    const root = this.options.folder;
    try {
      if (this.createPending) {
        await fsp.mkdir(root, { recursive: true }).catch(notCreated);
        this.createPending = false;
      }
      const stat = await fsp.stat(root);
      if (!stat.isDirectory()) throw Object.assign(new Error(`${root} is not a folder`), { code: 'ENOTDIR' });
      await fsp.access(root, fs.constants.R_OK | fs.constants.X_OK);
      this.real = await this.realFolders();
    } catch (err) {
      this.setFolderError(err);
      return;
    }
    const present = new Set<string>();
    try {
      await this.walk(root, '', present);
    } catch (err) {
      // The folder went away during the scan: what is known stays, the state says why.
      this.setFolderError(err);
      return;
    }
    if (this.closed) return;
    if (this.folderError !== undefined) {
      this.folderError = undefined;
      this.emit('folder-ok');
    }
    this.ensureWatching();
    this.sink.scanned(present);
  }

  private async walk(dir: string, relativeDir: string, present: Set<string>): Promise<void> {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    const toRead: string[] = [];
    for (const entry of entries) {
      if (this.closed) return;
      const full = path.join(dir, entry.name);
      const relativePath = relativeDir ? `${relativeDir}/${entry.name}` : entry.name;
      if (this.filter.ignoresName(entry.name)) continue;
      if (entry.isDirectory()) {
        // A symbolic link to a folder is no directory here: the walk never leaves the real tree.
        if (this.options.recursive && !this.isOwn(relativePath)) {
          try {
            await this.walk(full, relativePath, present);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // a subfolder removed meanwhile
            this.emit('warning', `${full}: ${(err as Error).message}`);
          }
        }
        continue;
      }
      if (!entry.isFile() || !this.filter.takes(relativePath)) continue;
      present.add(relativePath);
      if (this.sink.wantsRead(relativePath)) toRead.push(relativePath);
    }
    // A folder's files are read together and recorded in one go, so that files dropped together
    // start their untouched interval together and are queued together, oldest first, however
    // slowly a busy machine answers the reads (one by one, a slow walk split them into groups).
    for (let i = 0; i < toRead.length && !this.closed; i += STAT_BATCH) {
      const batch = toRead.slice(i, i + STAT_BATCH);
      const stats = await Promise.all(batch.map(relativePath =>
        fsp.stat(path.join(this.options.folder, ...relativePath.split('/'))).catch(() => undefined)));
      if (this.closed) return;
      batch.forEach((relativePath, j) => {
        const stat = stats[j];
        if (stat) this.sink.observed(relativePath, stat);
        else present.delete(relativePath); // gone between readdir and stat
      });
    }
  }

  /** An event looks at the file it names (a stat), not at the whole folder. */
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
      await this.rescan();
      return;
    }
    const names = [...this.touched];
    this.touched.clear();
    for (const relativePath of names) {
      if (this.closed) return;
      const segments = relativePath.split('/');
      const full = path.join(this.options.folder, ...segments);
      if (this.isOwn(relativePath)) continue;
      let stat: fs.Stats;
      try {
        stat = await fsp.lstat(full); // a symbolic link is never taken, as in the full scan
      } catch {
        this.sink.gone(relativePath); // moved or removed
        continue;
      }
      if (stat.isDirectory()) {
        if (this.options.recursive) { await this.rescan(); return; } // a folder dropped in: what is in it
        continue;
      }
      if (!stat.isFile() || (segments.length > 1 && !this.options.recursive) || !this.filter.takes(relativePath)) continue;
      this.sink.observed(relativePath, stat);
    }
    this.sink.looked();
  }

  /**
   * The real paths of the watched folder and of the done/failed folders.
   * @throws when done or failed is, links resolved, the watched folder or above it (a folder error)
   */
  private async realFolders(): Promise<{ root: string; own: string[] }> {
    const root = await fsp.realpath(this.options.folder);
    const own: string[] = [];
    for (const [folder, setting, name] of [
      [this.options.doneFolder, 'doneFolder (Done folder)', 'done'], [this.options.failedFolder, 'failedFolder (Failed folder)', 'failed']
    ] as const) {
      if (folder === null) continue;
      const real = await realPath(folder);
      if (isInside(root, real)) {
        throw new Error(`is inside the ${name} folder ${real} once symbolic links are resolved: ${setting} must not be the watched folder or a folder above it`);
      }
      own.push(real);
    }
    return { root, own };
  }

  /** True for a path below the watched folder that is, links resolved, the done or failed folder or inside one. */
  private isOwn(relativePath: string): boolean {
    if (!this.real) return false;
    const real = path.join(this.real.root, ...relativePath.split('/'));
    return this.real.own.some(own => isInside(real, own));
  }

  private setFolderError(err: unknown): void {
    const code = (err as NodeJS.ErrnoException)?.code;
    const reason = (err as { creating?: boolean }).creating ? `cannot be created (${code ?? (err as Error).message})`
      : code === 'ENOENT' ? 'does not exist'
      : code === 'EACCES' || code === 'EPERM' ? 'cannot be read (permission denied)'
        : code === 'ENOTDIR' ? 'is not a folder' : (err as Error)?.message ?? String(err);
    const text = `${this.options.folder} ${reason}`;
    this.stopWatching();
    if (this.folderError === text) return;
    this.folderError = text;
    // The log line also says what to do (the status shows `text` alone).
    const advice = reason === 'does not exist' ? `: create it (or tick "create it when it is missing"); it is looked for again every ${Math.round(this.options.rescanMs / 1000)} s` : '';
    this.emit('folder-error', text + advice);
  }

  private ensureWatching(): void {
    if (this.options.polling || this.watchers.length > 0 || this.closed) return;
    try {
      const watcher = fs.watch(this.options.folder, { recursive: this.options.recursive, persistent: false }, (_event, name) => this.onFsEvent(name));
      watcher.on('error', () => { this.stopWatching(); this.onFsEvent(); });
      this.watchers.push(watcher);
    } catch {
      // No events here (e.g. too many watches): the rescans still find every file.
    }
  }

  private stopWatching(): void {
    for (const w of this.watchers.splice(0)) { try { w.close(); } catch { /* already closed */ } }
  }
}
