/**
 * The emulator's asset repository: folders and files (both are assets with a fuid), their
 * revisions, custom metadata, blobs on disk and ingest jobs.
 *
 * The journal (repository.jsonl) is the source of truth. One write transaction = one rrn = one
 * journal line holding its operations and the AssetChanges it causes, so a change is either wholly
 * durable or absent after a crash. Blobs are written and fsynced under blobs/ before the commit
 * line that references them; blobs no line references (a crash in between) are removed on open.
 */
import { promises as fsp } from 'fs';
import * as path from 'path';
import { randomUUID } from 'crypto';
import { Journal, syncDir } from './journal';
import type { AssetChange } from './feed-types';

export const ROOT_FUID = 1;
const FIRST_RRN = 1000;
/** Changes kept for re-publishing after a crash (the hub acknowledges each publish durably). */
const RECENT_COMMITS_KEPT = 1000;
/** Finished jobs kept in snapshots. */
const FINISHED_JOBS_KEPT = 1000;
/** Journal lines after which the journal is compacted into a snapshot on open. */
const COMPACT_AFTER_RECORDS = 2000;

export interface Revision {
  rrn: number;
  action: 'added' | 'modified' | 'deleted';
  at: string;
  /** User who made this change. */
  user: string;
  /** Content size in bytes (0 for folders). */
  size: number;
  /** Blob file name under blobs/ (null for folders and deletions). */
  blob: string | null;
  /** Custom metadata after this revision. */
  metadata: Record<string, string>;
  changedMetadataKeys: string[];
}

export interface Asset {
  fuid: number;
  kind: 'file' | 'folder';
  name: string;
  path: string;
  parent: number | null;
  owner: string;
  collectionId: number;
  created: string;
  revisions: Revision[];
  deleted: boolean;
}

export interface UploadResultData { bid: 1; fuids: number[]; rrn: number }

/** What an ingest job needs to run again after a restart. */
export interface IngestRequest {
  /** Blob (under blobs/) holding the received file. */
  blob: string;
  length: number;
  /** Name the file is stored under (name field, else the file part's file name). */
  name: string;
  destination?: string;
  destinationFuid?: number;
  collectionId: number;
  /** Expand the file as a zip archive. */
  expand: boolean;
  user: string;
}

export type JobState = 'queued' | 'running' | 'done' | 'failed';

export interface Job {
  id: string;
  state: JobState;
  createdAt: string;
  finishedAt?: string;
  length: number;
  request: IngestRequest;
  result?: UploadResultData;
  error?: string;
}

type Op =
  | { op: 'folder'; fuid: number; parent: number; name: string; path: string }
  | { op: 'add'; fuid: number; parent: number; name: string; path: string; blob: string; size: number; collectionId: number }
  | { op: 'revise'; fuid: number; blob: string; size: number; collectionId: number }
  | { op: 'meta'; fuid: number; set: Record<string, string | null> }
  | { op: 'delete'; fuid: number };

interface CommitRecord { t: 'commit'; rrn: number; at: string; user: string; job?: string; ops: Op[]; changes: AssetChange[]; result?: UploadResultData }
interface JobRecord { t: 'job'; id: string; at: string; request: IngestRequest }
interface JobFailedRecord { t: 'job-failed'; id: string; at: string; error: string }
interface InitRecord { t: 'init'; at: string }
interface SnapshotRecord {
  t: 'snapshot'; at: string; nextFuid: number; nextRrn: number; nextJob: number; rootCreated: string;
  assets: Asset[]; jobs: Job[]; recent: { rrn: number; changes: AssetChange[] }[];
}
type RepoRecord = CommitRecord | JobRecord | JobFailedRecord | InitRecord | SnapshotRecord;

/** A rule of the request was broken: answered as success false with this message. */
export class RepoError extends Error {}

/** Folder path as stored: `/` or `/a/b` (no trailing slash). Relative paths are taken from the root. */
export function normalizeFolderPath(raw: string, field = 'destination'): string {
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw new RepoError(`${field} must not contain control characters`);
  if (raw.length > 4096) throw new RepoError(`${field} is longer than 4096 characters`);
  const segments = raw.split('/').filter(s => s !== '');
  for (const s of segments) {
    if (s === '.' || s === '..') throw new RepoError(`${field} must not contain "." or ".." segments: ${JSON.stringify(raw)}`);
    if (s.length > 255) throw new RepoError(`${field} has a segment longer than 255 characters`);
  }
  return '/' + segments.join('/');
}

/** A single file or folder name: not empty, no slash, not `.` or `..`, no control characters. */
export function checkName(name: string, field = 'name'): string {
  if (name === '') throw new RepoError(`${field} must not be empty`);
  if (name.includes('/')) throw new RepoError(`${field} must not contain "/": ${JSON.stringify(name)}`);
  if (name === '.' || name === '..') throw new RepoError(`${field} must not be "." or ".."`);
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new RepoError(`${field} must not contain control characters`);
  if (name.length > 255) throw new RepoError(`${field} is longer than 255 characters`);
  return name;
}

function joinPath(parent: string, name: string): string {
  return parent === '/' ? `/${name}` : `${parent}/${name}`;
}

function latest(asset: Asset): Revision {
  return asset.revisions[asset.revisions.length - 1];
}

/**
 * Builds one write transaction against the committed state. Lookups see the transaction's own
 * earlier operations (a zip creates a folder, then files in it).
 */
export class Transaction {
  readonly ops: Op[] = [];
  private readonly pendingChildren = new Map<string, { fuid: number; kind: 'file' | 'folder'; path: string }>();
  private readonly opIndexByFuid = new Map<number, number>();

  constructor(private readonly repo: Repository, readonly user: string, private nextFuid: number) {}

  allocatedUpTo(): number { return this.nextFuid; }

  private child(parent: number, name: string): { fuid: number; kind: 'file' | 'folder'; path: string } | undefined {
    const pending = this.pendingChildren.get(`${parent}/${name}`);
    if (pending) return pending;
    const fuid = this.repo.childFuid(parent, name);
    if (fuid === undefined) return undefined;
    const a = this.repo.asset(fuid)!;
    return { fuid, kind: a.kind, path: a.path };
  }

  private pathOf(fuid: number): string {
    for (const v of this.pendingChildren.values()) if (v.fuid === fuid) return v.path;
    return this.repo.asset(fuid)!.path;
  }

  /** The folder at a normalized path, created (with its parents) when missing. */
  ensureFolder(folderPath: string): number {
    let fuid = ROOT_FUID;
    for (const name of folderPath.split('/').filter(s => s !== '')) {
      const existing = this.child(fuid, name);
      if (existing) {
        if (existing.kind !== 'folder') throw new RepoError(`${existing.path} is a file, not a folder`);
        fuid = existing.fuid;
        continue;
      }
      const created = { fuid: this.nextFuid++, kind: 'folder' as const, path: joinPath(this.pathOf(fuid), name) };
      this.ops.push({ op: 'folder', fuid: created.fuid, parent: fuid, name, path: created.path });
      this.pendingChildren.set(`${fuid}/${name}`, created);
      fuid = created.fuid;
    }
    return fuid;
  }

  /** Adds a file, or a new revision when the folder already has a file of that name. Returns its fuid. */
  putFile(parent: number, name: string, blob: string, size: number, collectionId: number): number {
    const existing = this.child(parent, name);
    if (existing && existing.kind === 'folder') throw new RepoError(`${existing.path} is a folder; a file cannot replace it`);
    if (existing) {
      const at = this.opIndexByFuid.get(existing.fuid);
      const op = at === undefined ? undefined : this.ops[at];
      if (op && (op.op === 'add' || op.op === 'revise')) { // same name twice in one zip: the last one wins
        op.blob = blob; op.size = size; op.collectionId = collectionId;
      } else {
        this.opIndexByFuid.set(existing.fuid, this.ops.length);
        this.ops.push({ op: 'revise', fuid: existing.fuid, blob, size, collectionId });
      }
      return existing.fuid;
    }
    const fuid = this.nextFuid++;
    const filePath = joinPath(this.pathOf(parent), name);
    this.pendingChildren.set(`${parent}/${name}`, { fuid, kind: 'file', path: filePath });
    this.opIndexByFuid.set(fuid, this.ops.length);
    this.ops.push({ op: 'add', fuid, parent, name, path: filePath, blob, size, collectionId });
    return fuid;
  }

  setMetadata(fuid: number, set: Record<string, string | null>): void {
    this.ops.push({ op: 'meta', fuid, set });
  }

  /** Deletes an asset; a folder takes every live descendant with it. */
  delete(fuid: number): void {
    const asset = this.repo.asset(fuid);
    if (!asset || asset.deleted) throw new RepoError(`no asset with fuid ${fuid}`);
    if (fuid === ROOT_FUID) throw new RepoError('the root folder cannot be deleted');
    if (asset.kind === 'folder') for (const child of this.repo.liveChildren(fuid)) this.delete(child);
    this.ops.push({ op: 'delete', fuid });
  }
}

export interface RepositoryOptions {
  /** Called for every committed change, in rrn order, before the writer's promise resolves. */
  publish: (change: AssetChange) => Promise<void>;
  log: (line: string) => void;
}

export class Repository {
  private readonly assets = new Map<number, Asset>();
  /** folder fuid -> name -> fuid of live (not deleted) children. */
  private readonly children = new Map<number, Map<string, number>>();
  private readonly jobs = new Map<string, Job>();
  private recent: { rrn: number; changes: AssetChange[] }[] = [];
  private nextFuid = ROOT_FUID + 1;
  private nextRrn = FIRST_RRN;
  private nextJob = 1;
  private rootCreated = new Date().toISOString();
  /** Serializes write transactions so rrns are committed (and published) in order. */
  private writeLock: Promise<unknown> = Promise.resolve();
  private closed = false;

  readonly blobDir: string;
  readonly tmpDir: string;

  private constructor(readonly dataDir: string, private journal: Journal<RepoRecord>, private readonly options: RepositoryOptions) {
    this.blobDir = path.join(dataDir, 'blobs');
    this.tmpDir = path.join(dataDir, 'tmp');
  }

  static async open(dataDir: string, options: RepositoryOptions): Promise<Repository> {
    const { journal, records } = await Journal.open<RepoRecord>(path.join(dataDir, 'repository.jsonl'));
    const repo = new Repository(dataDir, journal, options);
    if (journal.skipped) options.log(`repository journal: ${journal.skipped} torn line(s) skipped, every record after them read`);
    repo.initRoot();
    for (const r of records) repo.replay(r);
    if (records.length === 0) await journal.append({ t: 'init', at: repo.rootCreated });
    // A crash may leave half-received uploads in tmp/ and blobs no commit references: neither is visible.
    await fsp.rm(repo.tmpDir, { recursive: true, force: true });
    await fsp.mkdir(repo.tmpDir, { recursive: true });
    await fsp.mkdir(repo.blobDir, { recursive: true });
    await repo.removeUnreferencedBlobs();
    if (records.length > COMPACT_AFTER_RECORDS) await repo.compact();
    return repo;
  }

  // ---- reading ------------------------------------------------------------------------------

  asset(fuid: number): Asset | undefined { return this.assets.get(fuid); }

  childFuid(parent: number, name: string): number | undefined { return this.children.get(parent)?.get(name); }

  liveChildren(folder: number): number[] { return [...(this.children.get(folder)?.values() ?? [])]; }

  /** The live asset at a path (`/` is the root). */
  assetByPath(p: string): Asset | undefined {
    let fuid = ROOT_FUID;
    for (const name of p.split('/').filter(s => s !== '')) {
      const next = this.childFuid(fuid, name);
      if (next === undefined) return undefined;
      fuid = next;
    }
    return this.assets.get(fuid);
  }

  headRrn(): number { return this.nextRrn - 1; }

  job(id: string): Job | undefined { return this.jobs.get(id); }

  queuedJobs(): Job[] { return [...this.jobs.values()].filter(j => j.state === 'queued' || j.state === 'running'); }

  blobPath(blob: string): string { return path.join(this.blobDir, blob); }

  /**
   * The revision of an asset in effect at `rrn` (-1: the latest): the newest revision at or before it.
   * Throws a RepoError with a clear message when there is none.
   */
  revisionAt(fuid: number, rrn: number): { asset: Asset; revision: Revision; index: number } {
    const asset = this.assets.get(fuid);
    if (!asset) throw new RepoError(`no asset with fuid ${fuid}`);
    if (rrn === -1) {
      if (asset.deleted) throw new RepoError(`asset ${fuid} was deleted at rrn ${latest(asset).rrn}`);
      return { asset, revision: latest(asset), index: asset.revisions.length - 1 };
    }
    if (rrn > this.headRrn()) throw new RepoError(`no revision ${rrn}: the newest rrn is ${this.headRrn()}`);
    let index = -1;
    for (let i = 0; i < asset.revisions.length && asset.revisions[i].rrn <= rrn; i++) index = i;
    if (index < 0) throw new RepoError(`asset ${fuid} did not exist at rrn ${rrn} (first revision ${asset.revisions[0].rrn})`);
    const revision = asset.revisions[index];
    if (revision.action === 'deleted') throw new RepoError(`asset ${fuid} was deleted at rrn ${revision.rrn}`);
    return { asset, revision, index };
  }

  // ---- writing ------------------------------------------------------------------------------

  /** A fresh temporary file path under tmp/ (removed on the next open if left behind). */
  tmpFile(suffix = '.part'): string { return path.join(this.tmpDir, `${randomUUID()}${suffix}`); }

  /** Moves an fsynced temporary file into blobs/ durably and returns its blob name. */
  async adoptBlob(tmpPath: string): Promise<string> {
    const blob = randomUUID();
    await fsp.rename(tmpPath, this.blobPath(blob));
    await syncDir(this.blobDir);
    return blob;
  }

  async discardBlob(blob: string): Promise<void> {
    await fsp.rm(this.blobPath(blob), { force: true });
  }

  /**
   * Runs one write transaction: `build` plans operations against the committed state (throw a
   * RepoError to refuse), then the commit is made durable, applied, and its changes published,
   * all before the returned promise resolves. Returns the commit's rrn and the build's result.
   */
  async write<T>(user: string, build: (tx: Transaction) => T, job?: string, resultOf?: (value: T, rrn: number) => UploadResultData): Promise<{ rrn: number; value: T }> {
    const run = async (): Promise<{ rrn: number; value: T; changes: AssetChange[] }> => {
      if (this.closed) throw new RepoError('the emulator is shutting down');
      const tx = new Transaction(this, user, this.nextFuid);
      const value = build(tx);
      if (tx.ops.length === 0) throw new RepoError('nothing to change');
      const rrn = this.nextRrn;
      const at = new Date().toISOString();
      const record: CommitRecord = { t: 'commit', rrn, at, user, ops: tx.ops, changes: this.changesOf(tx.ops, rrn, user) };
      if (job) { record.job = job; if (resultOf) record.result = resultOf(value, rrn); }
      await this.journal.append(record);
      this.replay(record);
      // Published while still holding the lock so the hub sees rrns in order.
      for (const change of record.changes) {
        try { await this.options.publish(change); } catch (e) {
          this.options.log(`publish of rrn ${rrn} failed (re-published on the next start): ${(e as Error).message}`);
        }
      }
      return { rrn, value, changes: record.changes };
    };
    const result = this.writeLock.then(run, run);
    this.writeLock = result.catch(() => undefined);
    const { rrn, value } = await result;
    return { rrn, value };
  }

  /** Records an accepted ingest job durably; returns it queued. */
  async addJob(request: IngestRequest): Promise<Job> {
    const id = `job-${this.nextJob}`;
    const record: JobRecord = { t: 'job', id, at: new Date().toISOString(), request };
    this.nextJob++;
    await this.journal.append(record);
    this.replay(record);
    return this.jobs.get(id)!;
  }

  async failJob(id: string, error: string): Promise<void> {
    const record: JobFailedRecord = { t: 'job-failed', id, at: new Date().toISOString(), error };
    await this.journal.append(record);
    this.replay(record);
  }

  markRunning(id: string): void {
    const job = this.jobs.get(id);
    if (job && job.state === 'queued') job.state = 'running';
  }

  /**
   * Publishes again every change the hub may not have made durable (a crash between commit and
   * publish). Changes at `lastPublishedRrn` itself are sent again too, since a zip's files share one
   * rrn; the hub skips the ones it already has.
   */
  async republishFrom(lastPublishedRrn: number): Promise<number> {
    let count = 0;
    for (const commit of this.recent) {
      if (commit.rrn < lastPublishedRrn) continue;
      for (const change of commit.changes) { await this.options.publish(change); count++; }
    }
    return count;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.writeLock;
    await this.journal.close();
  }

  // ---- internals ----------------------------------------------------------------------------

  private initRoot(): void {
    this.assets.set(ROOT_FUID, {
      fuid: ROOT_FUID, kind: 'folder', name: '', path: '/', parent: null, owner: 'system', collectionId: 0,
      created: this.rootCreated, deleted: false,
      revisions: [{ rrn: 0, action: 'added', at: this.rootCreated, user: 'system', size: 0, blob: null, metadata: {}, changedMetadataKeys: [] }]
    });
  }

  private changesOf(ops: Op[], rrn: number, user: string): AssetChange[] {
    const changes: AssetChange[] = [];
    const metaOf = new Map<number, Record<string, string>>();
    const current = (fuid: number) => metaOf.get(fuid) ?? { ...(this.assets.get(fuid) ? latest(this.assets.get(fuid)!).metadata : {}) };
    for (const op of ops) {
      // Folders are containers: their creation is not reported (the spec's events are about files).
      if (op.op === 'folder') continue;
      const a = this.assets.get(op.fuid);
      if (op.op === 'add') {
        changes.push({ rrn, fuid: op.fuid, path: op.path, owner: user, action: 'added', metadata: {}, changedMetadataKeys: [] });
      } else if (op.op === 'revise') {
        changes.push({ rrn, fuid: op.fuid, path: a!.path, owner: a!.owner, action: 'modified', metadata: current(op.fuid), changedMetadataKeys: [] });
      } else if (op.op === 'meta') {
        const meta = current(op.fuid);
        for (const [k, v] of Object.entries(op.set)) { if (v === null) delete meta[k]; else meta[k] = v; }
        metaOf.set(op.fuid, meta);
        if (a!.kind === 'file') changes.push({ rrn, fuid: op.fuid, path: a!.path, owner: a!.owner, action: 'modified', metadata: { ...meta }, changedMetadataKeys: Object.keys(op.set) });
      } else if (op.op === 'delete') {
        if (a!.kind === 'file') changes.push({ rrn, fuid: op.fuid, path: a!.path, owner: a!.owner, action: 'deleted', metadata: current(op.fuid), changedMetadataKeys: [] });
      }
    }
    return changes;
  }

  private replay(r: RepoRecord): void {
    switch (r.t) {
      case 'init': this.rootCreated = r.at; this.assets.get(ROOT_FUID)!.created = r.at; break;
      case 'snapshot': this.loadSnapshot(r); break;
      case 'job':
        this.jobs.set(r.id, { id: r.id, state: 'queued', createdAt: r.at, length: r.request.length, request: r.request });
        this.nextJob = Math.max(this.nextJob, Number(r.id.slice(4)) + 1);
        break;
      case 'job-failed': {
        const job = this.jobs.get(r.id);
        if (job) { job.state = 'failed'; job.error = r.error; job.finishedAt = r.at; }
        break;
      }
      case 'commit': this.applyCommit(r); break;
    }
  }

  private applyCommit(c: CommitRecord): void {
    for (const op of c.ops) this.applyOp(op, c);
    this.nextRrn = Math.max(this.nextRrn, c.rrn + 1);
    if (c.job) {
      const job = this.jobs.get(c.job);
      if (job) { job.state = 'done'; job.finishedAt = c.at; job.result = c.result; }
    }
    this.recent.push({ rrn: c.rrn, changes: c.changes });
    if (this.recent.length > RECENT_COMMITS_KEPT) this.recent.splice(0, this.recent.length - RECENT_COMMITS_KEPT);
  }

  private applyOp(op: Op, c: CommitRecord): void {
    const base = { rrn: c.rrn, at: c.at, user: c.user };
    if (op.op === 'folder' || op.op === 'add') {
      const isFile = op.op === 'add';
      this.assets.set(op.fuid, {
        fuid: op.fuid, kind: isFile ? 'file' : 'folder', name: op.name, path: op.path, parent: op.parent, owner: c.user,
        collectionId: isFile ? op.collectionId : 0, created: c.at, deleted: false,
        revisions: [{ ...base, action: 'added', size: isFile ? op.size : 0, blob: isFile ? op.blob : null, metadata: {}, changedMetadataKeys: [] }]
      });
      let siblings = this.children.get(op.parent);
      if (!siblings) this.children.set(op.parent, siblings = new Map());
      siblings.set(op.name, op.fuid);
      this.nextFuid = Math.max(this.nextFuid, op.fuid + 1);
      return;
    }
    const asset = this.assets.get(op.fuid);
    if (!asset) return; // cannot happen for a journal this code wrote
    const prev = latest(asset);
    if (op.op === 'revise') {
      asset.collectionId = op.collectionId;
      asset.revisions.push({ ...base, action: 'modified', size: op.size, blob: op.blob, metadata: prev.metadata, changedMetadataKeys: [] });
    } else if (op.op === 'meta') {
      const metadata = { ...prev.metadata };
      for (const [k, v] of Object.entries(op.set)) { if (v === null) delete metadata[k]; else metadata[k] = v; }
      asset.revisions.push({ ...base, action: 'modified', size: prev.size, blob: prev.blob, metadata, changedMetadataKeys: Object.keys(op.set) });
    } else if (op.op === 'delete') {
      asset.deleted = true;
      asset.revisions.push({ ...base, action: 'deleted', size: 0, blob: null, metadata: prev.metadata, changedMetadataKeys: [] });
      if (asset.parent !== null) this.children.get(asset.parent)?.delete(asset.name);
    }
  }

  private loadSnapshot(s: SnapshotRecord): void {
    this.assets.clear(); this.children.clear(); this.jobs.clear();
    this.rootCreated = s.rootCreated;
    for (const a of s.assets) {
      this.assets.set(a.fuid, a);
      if (!a.deleted && a.parent !== null) {
        let siblings = this.children.get(a.parent);
        if (!siblings) this.children.set(a.parent, siblings = new Map());
        siblings.set(a.name, a.fuid);
      }
    }
    for (const j of s.jobs) this.jobs.set(j.id, j);
    this.recent = s.recent;
    this.nextFuid = s.nextFuid; this.nextRrn = s.nextRrn; this.nextJob = s.nextJob;
  }

  private async compact(): Promise<void> {
    const finished = [...this.jobs.values()].filter(j => j.state === 'done' || j.state === 'failed');
    const dropped = new Set(finished.slice(0, Math.max(0, finished.length - FINISHED_JOBS_KEPT)).map(j => j.id));
    const jobs = [...this.jobs.values()].filter(j => !dropped.has(j.id)).map(j => (j.state === 'running' ? { ...j, state: 'queued' as const } : j));
    for (const id of dropped) this.jobs.delete(id);
    const snapshot: SnapshotRecord = {
      t: 'snapshot', at: new Date().toISOString(), nextFuid: this.nextFuid, nextRrn: this.nextRrn, nextJob: this.nextJob,
      rootCreated: this.rootCreated, assets: [...this.assets.values()], jobs, recent: this.recent
    };
    await this.journal.compact([snapshot]);
    this.options.log(`repository journal compacted (${this.assets.size} assets)`);
  }

  private async removeUnreferencedBlobs(): Promise<void> {
    const referenced = new Set<string>();
    for (const a of this.assets.values()) for (const r of a.revisions) if (r.blob) referenced.add(r.blob);
    for (const j of this.jobs.values()) if (j.state === 'queued' || j.state === 'running') referenced.add(j.request.blob);
    for (const name of await fsp.readdir(this.blobDir)) {
      if (!referenced.has(name)) await fsp.rm(path.join(this.blobDir, name), { force: true });
    }
  }
}
