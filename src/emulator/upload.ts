/**
 * Upload (spec 4.2, 2.4): streaming multipart reception straight to a temporary file in the data
 * folder, zip expansion, and the ingest itself (inline for wait=true, as a durable job otherwise).
 *
 * A file is never held in memory: busboy's file stream is piped to disk with back-pressure, and
 * zip entries are inflated straight to their own files. Every file is fsynced and renamed into
 * blobs/ before the commit that references it; anything not committed is removed.
 */
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import type { IncomingMessage } from 'http';
import { Transform, type TransformCallback, type Readable } from 'stream';
import { pipeline } from 'stream/promises';
import busboy from 'busboy';
import * as yauzl from 'yauzl';
import { DEFAULT_FORM_CHARSET, bodyEncoding, declaredCharset, type FormCharset } from './charset';
import { DEFAULT_UPLOAD_LIMITS, type UploadLimits } from './limits';
import {
  Repository, RepoError, ROOT_FUID, checkName, normalizeFolderPath,
  type IngestRequest, type Job, type UploadResultData
} from './repository';

/** A rule of the upload request was broken: answered as success false with this message. */
export class UploadError extends Error {}
/** An ingest cancelled before it committed (waitInMinutes passed): nothing was stored. */
export class IngestCancelled extends UploadError {}

/** The request went away before it was complete: nothing to answer. */
export class ClientGone extends Error {}

const FIELD_LIMIT = 64 * 1024;

/** Fields of the upload form as received (strings), and the stored file. */
export interface ReceivedUpload {
  fields: Map<string, string>;
  file?: { tmpPath: string; length: number; fileName?: string; contentType: string; zipMagic: boolean };
}

/** Counts bytes and keeps the first four (zip magic) on their way to disk. */
class Meter extends Transform {
  length = 0;
  head = Buffer.alloc(0);
  _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.length += chunk.length;
    if (this.head.length < 4) this.head = Buffer.concat([this.head, chunk.subarray(0, 4 - this.head.length)]);
    cb(null, chunk);
  }
}

/**
 * Streams `source` into a new file and fsyncs it. Returns the byte count and the first bytes.
 * On failure it settles only once the file stream has closed: a stream still opening the file
 * when an upload was cut off created the file after the caller had removed it.
 */
async function streamToFile(source: Readable, file: string): Promise<{ length: number; head: Buffer }> {
  const meter = new Meter();
  const out = fs.createWriteStream(file, { flags: 'wx' });
  try {
    await pipeline(source, meter, out);
  } catch (err) {
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
    throw err;
  }
  // fsync through a second descriptor: it flushes the file's data all the same.
  const sync = await fsp.open(file, 'r');
  try { await sync.sync(); } finally { await sync.close(); }
  return { length: meter.length, head: meter.head };
}

/**
 * Reads a multipart upload: the `file` part goes to a temporary file under the data folder, the
 * other fields are collected (a repeated field: the last value wins). Fields may come before or
 * after the file. On any failure the temporary file is removed.
 */
export function receiveUpload(req: IncomingMessage, repo: Repository, formCharset: FormCharset = DEFAULT_FORM_CHARSET,
  limits: UploadLimits = DEFAULT_UPLOAD_LIMITS): Promise<ReceivedUpload> {
  return new Promise((resolve, reject) => {
    // Text fields: the declared charset, else formCharset (ISO-8859-1, as a servlet container).
    // The file name: UTF-8, as Tomcat 10 reads a part header (measured).
    const encoding = bodyEncoding(req.headers['content-type'], formCharset);
    if (encoding === undefined) {
      req.resume();
      reject(new UploadError(`unsupported charset ${JSON.stringify(declaredCharset(req.headers['content-type']))}: send UTF-8 (charset=UTF-8)`));
      return;
    }
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, defCharset: encoding, defParamCharset: 'utf8', limits: { fields: 50, fieldSize: FIELD_LIMIT, parts: 100, fieldNameSize: 200, fileSize: limits.maxUploadBytes + 1 } });
    } catch (e) {
      reject(new UploadError(`the request must be multipart/form-data with a boundary (${(e as Error).message})`));
      return;
    }
    const fields = new Map<string, string>();
    let file: ReceivedUpload['file'];
    let fileWrite: Promise<void> | undefined;
    let tmpPath: string | undefined;
    let settled = false;
    let tooLarge = false;

    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      req.unpipe(bb);
      bb.destroy();
      if (!req.complete && !req.destroyed) req.resume(); // drain the rest so the answer can be read
      const cleanup = async () => {
        if (fileWrite) await fileWrite.catch(() => undefined);
        if (tmpPath) await fsp.rm(tmpPath, { force: true });
      };
      cleanup().then(() => reject(err), () => reject(err));
    };

    req.on('close', () => { if (!req.complete) fail(new ClientGone('client disconnected during the upload')); });
    req.on('error', () => fail(new ClientGone('client disconnected during the upload')));
    bb.on('error', (e: Error) => fail(new UploadError(`malformed multipart body: ${e.message}`)));
    bb.on('partsLimit', () => fail(new UploadError('too many parts in the form (limit 100)')));
    bb.on('fieldsLimit', () => fail(new UploadError('too many fields in the form (limit 50)')));

    bb.on('field', (name: string, value: string, info: busboy.FieldInfo) => {
      if (name === 'file') return fail(new UploadError('field "file" must be sent as a file part (Content-Disposition with a filename, or Content-Type application/octet-stream)'));
      if (info.valueTruncated) return fail(new UploadError(`field "${name}" is longer than ${FIELD_LIMIT} bytes`));
      fields.set(name, value);
    });

    bb.on('file', (name: string, stream: Readable, info: busboy.FileInfo) => {
      stream.on('error', () => undefined); // destroying busboy errors the open part; fail() has the cause
      if (settled) { stream.resume(); return; } // parts parsed from the same chunk after a failure
      if (name !== 'file') { stream.resume(); return fail(new UploadError(`unexpected file part "${name}": the file goes in the part named "file"`)); }
      if (fileWrite) { stream.resume(); return fail(new UploadError('only one file part "file" is allowed per upload')); }
      // busboy stops the part at its limit (one byte past ours: it counts reaching it as over): refused, and the part kept so far removed. Not from
      // inside busboy's own 'limit' call (destroying it there breaks its parser): on the next tick,
      // and the form counts as failed at once.
      stream.once('limit', () => {
        tooLarge = true;
        process.nextTick(() => fail(new UploadError(`file: larger than ${limits.maxUploadBytes} bytes, the emulator's upload limit (--max-upload)`)));
      });
      const target = tmpPath = repo.tmpFile();
      fileWrite = streamToFile(stream, target).then(({ length, head }) => {
        file = {
          tmpPath: target, length, fileName: info.filename || undefined, contentType: info.mimeType,
          zipMagic: head.length === 4 && head.readUInt32LE(0) === 0x04034b50
        };
      });
      fileWrite.catch((e: Error) => fail(req.complete ? new UploadError(`could not store the file: ${e.message}`) : new ClientGone(e.message)));
    });

    bb.on('close', () => {
      (fileWrite ?? Promise.resolve()).then(() => {
        if (settled || tooLarge) return;
        settled = true;
        resolve({ fields, file });
      }, () => undefined);
    });

    req.pipe(bb);
  });
}

// ---- the upload's fields ----------------------------------------------------------------------

function parseBool(fields: Map<string, string>, name: string, fallback: boolean): boolean {
  const v = fields.get(name);
  if (v === undefined || v === '') return fallback;
  const s = v.trim().toLowerCase();
  if (s === 'true' || s === '1') return true;
  if (s === 'false' || s === '0') return false;
  throw new UploadError(`${name} must be true or false, got ${JSON.stringify(v)}`);
}

function parseInteger(fields: Map<string, string>, name: string): number | undefined {
  const v = fields.get(name);
  if (v === undefined || v.trim() === '') return undefined;
  if (!/^\s*\d+\s*$/.test(v) || !Number.isSafeInteger(Number(v))) throw new UploadError(`${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** Zip detection: a `.zip` name, a zip content type, or the zip signature on a name without extension. */
function looksLikeZip(fileName: string, contentType: string, zipMagic: boolean): boolean {
  if (/\.zip$/i.test(fileName)) return true;
  if (/^application\/(x-)?zip(-compressed)?$/i.test(contentType)) return true;
  // .docx, .xlsx, .jar, .epub... are zips too: they are stored as they are.
  return zipMagic && !/\.[^./]+$/.test(fileName);
}

export interface UploadOptions {
  wait: boolean;
  waitInMinutes: number;
}

/**
 * Checks the received fields (spec 4.2 table) and turns them into an ingest request whose
 * destination exists or can be created. The file must already be a blob.
 */
export function buildIngestRequest(repo: Repository, received: ReceivedUpload, blob: string, user: string): { request: IngestRequest; options: UploadOptions } {
  const { fields, file } = received;
  if (!file) throw new UploadError('missing file: send the file in a multipart part named "file"');
  const nameField = fields.get('name');
  const rawName = nameField !== undefined && nameField !== '' ? nameField : file.fileName;
  if (rawName === undefined) throw new UploadError('missing name: the file part has no file name and no "name" field was given');
  const name = nameField !== undefined && nameField !== '' ? checkName(nameField, 'name') : checkName(rawName, 'file name');

  const destinationField = fields.get('destination');
  const destinationFuid = parseInteger(fields, 'destinationFuid');
  let destination: string | undefined;
  let folderFuid: number | undefined;
  if (destinationField !== undefined && destinationField !== '') {
    destination = normalizeFolderPath(destinationField, 'destination'); // destination wins over destinationFuid
    const existing = repo.assetByPath(destination);
    if (existing && existing.kind !== 'folder') throw new UploadError(`destination ${destination} is a file, not a folder`);
  } else if (destinationFuid !== undefined && destinationFuid !== 0) {
    const folder = repo.asset(destinationFuid);
    if (!folder || folder.deleted) throw new UploadError(`destinationFuid ${destinationFuid}: no folder with that fuid`);
    if (folder.kind !== 'folder') throw new UploadError(`destinationFuid ${destinationFuid} is a file, not a folder`);
    folderFuid = destinationFuid;
  } else {
    throw new UploadError('missing destination: give the destination folder path (or destinationFuid)');
  }

  const collectionId = parseInteger(fields, 'collectionId') ?? 0;
  const wait = parseBool(fields, 'wait', false);
  const expandZip = parseBool(fields, 'expandZip', true);
  const waitField = fields.get('waitInMinutes');
  let waitInMinutes = 60;
  if (waitField !== undefined && waitField.trim() !== '') {
    waitInMinutes = Number(waitField);
    if (!Number.isFinite(waitInMinutes) || waitInMinutes <= 0) throw new UploadError(`waitInMinutes must be a positive number, got ${JSON.stringify(waitField)}`);
  }
  const expand = expandZip && looksLikeZip(file.fileName ?? name, file.contentType, file.zipMagic);
  return {
    request: { blob, length: file.length, name, destination, destinationFuid: folderFuid, collectionId, expand, user },
    options: { wait, waitInMinutes }
  };
}

// ---- zip ----------------------------------------------------------------------------------------

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, decodeStrings: false, autoClose: true, validateEntrySizes: true }, (err, zip) => {
      if (err || !zip) reject(new UploadError(`the file is not a valid zip archive (${err ? err.message : 'unreadable'}); send expandZip=false to store it as it is`));
      else resolve(zip);
    });
  });
}

/** The entry's path relative to the destination, or an UploadError when it would escape it (zip-slip). */
function entryPath(entry: yauzl.Entry): { segments: string[]; isDir: boolean } {
  const raw = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileName as unknown as Buffer, entry.extraFields, false);
  const shown = JSON.stringify(raw);
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw new UploadError(`zip entry ${shown} has control characters in its name`);
  if (raw.startsWith('/') || /^[a-zA-Z]:/.test(raw)) throw new UploadError(`zip entry ${shown} escapes the destination folder (absolute path)`);
  const all = raw.split('/');
  if (all.includes('..')) throw new UploadError(`zip entry ${shown} escapes the destination folder (".." in its path)`);
  const segments = all.filter(s => s !== '' && s !== '.');
  for (const s of segments) if (s.length > 255) throw new UploadError(`zip entry ${shown} has a name longer than 255 characters`);
  return { segments, isDir: raw.endsWith('/') };
}

/** Walks the central directory; `onEntry` may read the entry before the next one is read. */
async function eachEntry(file: string, onEntry: (zip: yauzl.ZipFile, entry: yauzl.Entry) => Promise<void>): Promise<void> {
  const zip = await openZip(file);
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    let current: Promise<void> = Promise.resolve();
    const fail = (e: Error) => {
      if (failed) return;
      failed = true;
      zip.close();
      // Settle only after the entry in progress did, so the caller can clean up what it stored.
      current.catch(() => undefined).then(() => reject(e instanceof UploadError ? e : new UploadError(`cannot read the zip archive: ${e.message}`)));
    };
    zip.on('error', fail);
    zip.on('end', () => { if (!failed) current.then(() => resolve(), fail); });
    zip.on('entry', (entry: yauzl.Entry) => {
      current = onEntry(zip, entry);
      current.then(() => { if (!failed) zip.readEntry(); }, fail);
    });
    zip.readEntry();
  });
}

/**
 * Checks every entry name, that there is at least one file, and that the archive expands no
 * further than the limits (its entries' sizes from the central directory; yauzl's
 * validateEntrySizes makes an entry that inflates to more than it declares fail); reads no file data.
 */
export async function scanZip(file: string, limits: UploadLimits = DEFAULT_UPLOAD_LIMITS): Promise<void> {
  let files = 0;
  // Folders count as entries whether listed or only implied by a path (a/b/c/f makes three).
  const folders = new Set<string>();
  let expanded = 0;
  const { size } = await fsp.stat(file);
  const allowed = Math.min(limits.maxZipBytes, limits.maxZipRatio * Math.max(size, 1));
  await eachEntry(file, async (_zip, entry) => {
    const { segments, isDir } = entryPath(entry);
    if (!isDir && segments.length > 0) files++;
    for (let depth = 1; depth < segments.length + (isDir ? 1 : 0); depth++) folders.add(segments.slice(0, depth).join('/'));
    if (files + folders.size > limits.maxZipEntries) {
      throw new UploadError(`the zip archive holds more than ${limits.maxZipEntries} files and folders, the emulator's limit (--max-zip-entries); ` +
        'send expandZip=false to store it as it is');
    }
    if (entry.isEncrypted()) throw new UploadError(`zip entry ${JSON.stringify(segments.join('/'))} is encrypted, which is not supported`);
    expanded += entry.uncompressedSize;
    if (expanded > allowed) {
      throw new UploadError(`the zip archive expands to more than ${allowed} bytes, the emulator's limit ` +
        `(${limits.maxZipRatio} times its size of ${size} bytes, --max-zip-ratio; at most ${limits.maxZipBytes} bytes, --max-zip-size); ` +
        'send expandZip=false to store it as it is');
    }
  });
  if (files === 0) throw new UploadError('the zip archive holds no files');
}

interface ExpandedEntry { segments: string[]; isDir: boolean; blob?: string; size: number }

/** Inflates every entry to its own blob. On failure, the blobs made so far are removed. */
async function expandZip(repo: Repository, file: string): Promise<ExpandedEntry[]> {
  const entries: ExpandedEntry[] = [];
  try {
    await eachEntry(file, async (zip, entry) => {
      const { segments, isDir } = entryPath(entry);
      if (segments.length === 0) return;
      if (isDir) { entries.push({ segments, isDir, size: 0 }); return; }
      const stream = await new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, s) => (err || !s ? reject(err ?? new Error('no stream')) : resolve(s))));
      const tmp = repo.tmpFile();
      try {
        const { length } = await streamToFile(stream, tmp);
        entries.push({ segments, isDir, size: length, blob: await repo.adoptBlob(tmp) });
      } catch (e) {
        await fsp.rm(tmp, { force: true });
        throw new UploadError(`cannot extract zip entry ${JSON.stringify(segments.join('/'))}: ${(e as Error).message}`);
      }
    });
  } catch (e) {
    for (const x of entries) if (x.blob) await repo.discardBlob(x.blob);
    throw e;
  }
  return entries;
}

// ---- ingest -------------------------------------------------------------------------------------

/**
 * Runs ingests: inline for wait=true, and a serial durable queue of jobs for wait=false (jobs left
 * queued by a crash are run again on start; a job's commit line marks it done).
 */
export class Ingester {
  private queue: string[] = [];
  private working: Promise<void> | null = null;
  private stopped = false;

  /**
   * @param delayMs how long every ingest takes at least before it commits (a slow server, for
   *   trying out waitInMinutes and timeouts); 0 = as fast as it goes.
   */
  constructor(private readonly repo: Repository, private readonly log: (line: string) => void, private readonly delayMs = 0,
    private readonly limits: UploadLimits = DEFAULT_UPLOAD_LIMITS) {}

  /** Requeues jobs a previous run accepted but did not finish. */
  resume(): void {
    for (const job of this.repo.queuedJobs()) this.queue.push(job.id);
    this.kick();
  }

  /**
   * Ingests now. Resolves with the 2.4 data once committed and published. When `cancel` aborts
   * before the commit, rejects with IngestCancelled and stores nothing; once the commit has
   * begun, cancelling changes nothing (the ingest finished, however late).
   */
  async ingest(request: IngestRequest, jobId?: string, cancel?: AbortSignal): Promise<UploadResultData> {
    const { repo } = this;
    const checkCancel = () => { if (cancel?.aborted) throw new IngestCancelled(String(cancel.reason ?? 'cancelled')); };
    try {
      if (this.delayMs > 0) await abortableDelay(this.delayMs, cancel);
      checkCancel();
      const folderOf = (tx: { ensureFolder(p: string): number }) => {
        checkCancel(); // the last point before the commit: build runs inside the write
        return request.destination !== undefined ? tx.ensureFolder(request.destination) : (request.destinationFuid ?? ROOT_FUID);
      };
      const toResult = (fuids: number[], rrn: number): UploadResultData => ({ bid: 1, fuids, rrn });
      if (!request.expand) {
        const { rrn, value } = await repo.write(request.user, tx => {
          const folder = folderOf(tx);
          checkLiveFolder(repo, folder);
          return [tx.putFile(folder, request.name, request.blob, request.length, request.collectionId)];
        }, jobId, toResult);
        return toResult(value, rrn);
      }
      await scanZip(repo.blobPath(request.blob), this.limits);
      const entries = await expandZip(repo, repo.blobPath(request.blob));
      try {
        const { rrn, value } = await repo.write(request.user, tx => {
          const folder = folderOf(tx);
          checkLiveFolder(repo, folder);
          const destination = repo.asset(folder)?.path ?? request.destination ?? '/';
          const fuids: number[] = [];
          for (const e of entries) {
            const dir = e.isDir ? e.segments : e.segments.slice(0, -1);
            const parent = tx.ensureFolder(normalizeFolderPath([destination, ...dir].join('/')));
            if (e.isDir) continue;
            const fuid = tx.putFile(parent, checkName(e.segments[e.segments.length - 1], 'zip entry name'), e.blob!, e.size, request.collectionId);
            if (!fuids.includes(fuid)) fuids.push(fuid);
          }
          return fuids;
        }, jobId, toResult);
        await repo.discardBlob(request.blob); // the archive itself is not stored once expanded
        return toResult(value, rrn);
      } catch (e) {
        for (const x of entries) if (x.blob) await repo.discardBlob(x.blob);
        throw e;
      }
    } catch (e) {
      if (e instanceof RepoError && !(e instanceof UploadError)) throw new UploadError(e.message);
      throw e;
    }
  }

  /** Records a job durably and queues it; resolves once the job record is on disk. */
  async enqueue(request: IngestRequest): Promise<Job> {
    const job = await this.repo.addJob(request);
    this.queue.push(job.id);
    this.kick();
    return job;
  }

  /** Waits for the job in progress; queued jobs stay queued for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue = [];
    if (this.working) await this.working;
  }

  private kick(): void {
    if (this.working || this.stopped) return;
    this.working = this.drain().finally(() => { this.working = null; });
  }

  private async drain(): Promise<void> {
    while (!this.stopped && this.queue.length > 0) {
      const id = this.queue.shift()!;
      const job = this.repo.job(id);
      if (!job || (job.state !== 'queued' && job.state !== 'running')) continue;
      this.repo.markRunning(id);
      try {
        await this.ingest(job.request, id);
      } catch (e) {
        if (this.stopped) return; // shutting down: the job runs again on the next start
        const message = e instanceof UploadError || e instanceof RepoError ? e.message : `internal error: ${(e as Error).message}`;
        if (!(e instanceof UploadError || e instanceof RepoError)) this.log(`job ${id} failed: ${(e as Error).stack}`);
        try {
          await this.repo.failJob(id, message);
          await this.repo.discardBlob(job.request.blob);
        } catch (e2) { this.log(`job ${id}: could not record the failure: ${(e2 as Error).message}`); }
      }
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (the caller then checks it). */
function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise(resolve => {
    if (signal?.aborted) { resolve(); return; }
    const done = () => { clearTimeout(timer); signal?.removeEventListener('abort', done); resolve(); };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function checkLiveFolder(repo: Repository, fuid: number): void {
  const folder = repo.asset(fuid);
  if (folder && (folder.deleted || folder.kind !== 'folder')) throw new UploadError(`destination folder ${fuid} no longer exists`);
}
