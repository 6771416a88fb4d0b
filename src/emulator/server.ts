/**
 * The emulator's HTTP side: routing, cookie authentication (spec 5), and the handlers of the
 * subscribe (4.1), upload (4.2), download (4.3), export (4.4) and /emulator/ routes.
 *
 * Every answer is JSON except a download's body. A handler that throws gets a 500 JSON answer and a
 * log line; request log lines carry method, path, status and time, never headers or the query
 * string (a subscribe query may hold a webhook secret in a header field).
 */
import * as fs from 'fs';
import type { IncomingMessage, ServerResponse } from 'http';
import { pipeline } from 'stream/promises';
import busboy from 'busboy';
import type { Permission } from '../api/types';
import type { FormFields, SubscriptionHub } from './feed-types';
import { Repository, RepoError, type Asset, type Job, type Revision } from './repository';
import { bodyEncoding, declaredCharset, parseUrlEncodedBody, type FormCharset } from './charset';
import { ClientGone, IngestCancelled, Ingester, UploadError, buildIngestRequest, receiveUpload, scanZip } from './upload';
import { DEFAULT_UPLOAD_LIMITS, type UploadLimits } from './limits';
import { SESSION_COOKIE, SessionStore, handleLogin, parseCookieHeader, type EmulatorUser, type Session } from './sessions';
import type { FaultPlan } from './faults';

export { DEFAULT_USER, SESSION_COOKIE, SessionStore, parseCookieHeader, type Session } from './sessions';

/** Largest URL-encoded or JSON request body read (uploads are streamed and have no limit). */
export const BODY_LIMIT = 1024 * 1024;

const PERMISSION_ERRORS: Record<Permission, string> = {
  events: 'permission denied for events',
  add: 'permission denied for adding files'
};

const MIME_TYPES: Record<string, string> = {
  txt: 'text/plain; charset=utf-8', csv: 'text/csv; charset=utf-8', html: 'text/html; charset=utf-8', htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8', js: 'text/javascript; charset=utf-8', json: 'application/json', xml: 'application/xml', md: 'text/markdown; charset=utf-8',
  jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml', tif: 'image/tiff', tiff: 'image/tiff',
  bmp: 'image/bmp', heic: 'image/heic', psd: 'image/vnd.adobe.photoshop', pdf: 'application/pdf', zip: 'application/zip', gz: 'application/gzip',
  mp4: 'video/mp4', mov: 'video/quicktime', webm: 'video/webm', avi: 'video/x-msvideo', mxf: 'application/mxf', mp3: 'audio/mpeg', wav: 'audio/wav',
  doc: 'application/msword', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint', pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  indd: 'application/x-indesign', ai: 'application/postscript', eps: 'application/postscript'
};

export function contentTypeOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot >= 0 && MIME_TYPES[name.slice(dot + 1).toLowerCase()]) || 'application/octet-stream';
}

/** `attachment; filename="..."` with an ASCII fallback, plus RFC 5987 `filename*` for other names. */
export function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  if (fallback === name) return `attachment; filename="${name}"`;
  const encoded = encodeURIComponent(name).replace(/['()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) { res.destroy(); return; }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-store',
    ...headers
  });
  res.end(text);
}

/** Reads a request body of at most `limit` bytes. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > limit) { reject(new HttpError(413, `request body larger than ${limit} bytes`)); return; }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) { done = true; reject(new HttpError(413, `request body larger than ${limit} bytes`)); return; }
      chunks.push(chunk);
    });
    req.on('end', () => { if (!done) { done = true; resolve(Buffer.concat(chunks)); } });
    req.on('error', e => { if (!done) { done = true; reject(e); } });
    req.on('close', () => { if (!done) { done = true; reject(new ClientGone('client disconnected')); } });
  });
}

/** Adds the fields of a URL-encoded string to `into`, keeping order. */
function addUrlEncoded(into: FormFields, text: string): void {
  for (const [name, value] of new URLSearchParams(text)) (into[name] ??= []).push(value);
}

/**
 * Fields of a URL-encoded (or multipart, fields only) request body, decoded with the body's declared
 * charset, else `formCharset` (ISO-8859-1 by default, as a servlet container: see charset.ts).
 */
async function readFormBody(req: IncomingMessage, into: FormFields, formCharset: FormCharset): Promise<void> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  const encoding = bodyEncoding(req.headers['content-type'], formCharset);
  if (encoding === undefined) {
    throw new HttpError(415, `unsupported charset ${JSON.stringify(declaredCharset(req.headers['content-type']))}: send UTF-8 (charset=UTF-8)`);
  }
  if (type === 'multipart/form-data') {
    await new Promise<void>((resolve, reject) => {
      let bb: busboy.Busboy;
      try { bb = busboy({ headers: req.headers, defCharset: encoding, defParamCharset: 'utf8', limits: { fieldSize: BODY_LIMIT, fields: 1000, files: 0 } }); } catch (e) {
        reject(new HttpError(400, `malformed multipart request: ${(e as Error).message}`)); return;
      }
      bb.on('field', (name: string, value: string, info: busboy.FieldInfo) => {
        if (info.valueTruncated) reject(new HttpError(413, `field ${JSON.stringify(name)} is larger than ${BODY_LIMIT} bytes`));
        (into[name] ??= []).push(value);
      });
      bb.on('fieldsLimit', () => reject(new HttpError(413, 'more than 1000 fields')));
      bb.on('filesLimit', () => reject(new HttpError(400, 'this call takes form fields, not files')));
      bb.on('error', (e: Error) => reject(new HttpError(400, `malformed multipart request: ${e.message}`)));
      bb.on('close', () => resolve());
      req.on('close', () => { if (!req.complete) reject(new ClientGone('client disconnected')); });
      req.pipe(bb);
    });
    return;
  }
  const body = await readBody(req, BODY_LIMIT);
  if (body.length === 0) return;
  if (type === '' || type === 'application/x-www-form-urlencoded') {
    for (const [name, value] of parseUrlEncodedBody(body, encoding)) (into[name] ??= []).push(value);
    return;
  }
  throw new HttpError(415, `unsupported Content-Type ${JSON.stringify(type)}: send the fields as application/x-www-form-urlencoded`);
}

/** Last value of a single-valued parameter (a body value comes after, so wins over, a query value). */
function single(fields: FormFields, name: string): string | undefined {
  const v = fields[name];
  return v && v.length > 0 ? v[v.length - 1] : undefined;
}

function parseFuid(raw: string | undefined, field = 'fuid'): number {
  if (raw === undefined || raw === '') throw new RepoError(`missing ${field}`);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(Number(raw))) throw new RepoError(`${field} must be a positive integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function parseRrn(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return -1;
  const n = Number(raw);
  if (!/^\s*-?\d+\s*$/.test(raw) || !Number.isSafeInteger(n) || n < -1) throw new RepoError(`rrn must be -1 (latest) or a revision number, got ${JSON.stringify(raw)}`);
  return n;
}

function xmlEscape(s: string): string {
  // Characters XML 1.0 cannot carry at all are replaced.
  return s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The export body (spec 4.4): the asset as of one revision. */
function exportRecord(asset: Asset, index: number) {
  const rev = asset.revisions[index];
  return {
    fuid: asset.fuid, rrn: rev.rrn, path: asset.path, name: asset.name, kind: asset.kind, owner: asset.owner,
    size: rev.size, collectionId: asset.collectionId, created: asset.created, modified: rev.at,
    revisions: asset.revisions.slice(0, index + 1).map(r => ({ rrn: r.rrn, size: r.size, action: r.action, at: r.at, user: r.user })),
    metadata: { ...rev.metadata }
  };
}

function exportXml(rec: ReturnType<typeof exportRecord>): string {
  const el = (name: string, value: string | number) => `  <${name}>${xmlEscape(String(value))}</${name}>\n`;
  return '<?xml version="1.0" encoding="UTF-8"?>\n'
    + `<asset fuid="${rec.fuid}" rrn="${rec.rrn}">\n`
    + el('path', rec.path) + el('name', rec.name) + el('kind', rec.kind) + el('owner', rec.owner) + el('size', rec.size)
    + el('collectionId', rec.collectionId) + el('created', rec.created) + el('modified', rec.modified)
    + '  <revisions>\n'
    + rec.revisions.map(r => `    <revision rrn="${r.rrn}" size="${r.size}" action="${r.action}" at="${xmlEscape(r.at)}" user="${xmlEscape(r.user)}"/>\n`).join('')
    + '  </revisions>\n  <metadata>\n'
    + Object.entries(rec.metadata).map(([k, v]) => `    <field key="${xmlEscape(k)}">${xmlEscape(v)}</field>\n`).join('')
    + '  </metadata>\n</asset>\n';
}

function assetView(repo: Repository, asset: Asset) {
  return {
    fuid: asset.fuid, kind: asset.kind, name: asset.name, path: asset.path, parentFuid: asset.parent, owner: asset.owner,
    collectionId: asset.collectionId, created: asset.created, deleted: asset.deleted,
    rrn: asset.revisions[asset.revisions.length - 1].rrn,
    size: asset.revisions[asset.revisions.length - 1].size,
    metadata: { ...asset.revisions[asset.revisions.length - 1].metadata },
    revisions: asset.revisions.map((r: Revision) => ({ rrn: r.rrn, action: r.action, at: r.at, user: r.user, size: r.size, metadata: r.metadata, changedMetadataKeys: r.changedMetadataKeys })),
    ...(asset.kind === 'folder' ? { children: repo.liveChildren(asset.fuid) } : {})
  };
}

function jobView(job: Job) {
  return {
    id: job.id, state: job.state, length: job.length, name: job.request.name,
    destination: job.request.destination, destinationFuid: job.request.destinationFuid,
    createdAt: job.createdAt, finishedAt: job.finishedAt,
    ...(job.result ? { result: job.result } : {}), ...(job.error ? { error: job.error } : {})
  };
}

export interface ServerDeps {
  repo: Repository;
  hub: SubscriptionHub;
  ingester: Ingester;
  sessions: SessionStore;
  /** Who may log in through the login endpoints (sessions.ts). */
  users?: EmulatorUser[];
  log: (line: string) => void;
  /** Charset of a form or multipart body that declares none (see charset.ts). */
  formCharset: FormCharset;
  /** Upload size and zip expansion limits (default DEFAULT_UPLOAD_LIMITS). */
  limits?: UploadLimits;
  /** Busy, slow and cut answers armed by a test (faults.ts). */
  faults?: FaultPlan;
}

/** Method, raw path (no query) and query fields of a request target; absolute-form targets too. */
function splitTarget(url: string): { path: string; query: string } {
  let target = url;
  const abs = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (abs) target = target.slice(abs[0].length) || '/';
  const hash = target.indexOf('#');
  if (hash >= 0) target = target.slice(0, hash);
  const q = target.indexOf('?');
  return q < 0 ? { path: target, query: '' } : { path: target.slice(0, q), query: target.slice(q + 1) };
}

export function createHandler(deps: ServerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { repo, hub, ingester, sessions, log, formCharset } = deps;
  const limits = deps.limits ?? DEFAULT_UPLOAD_LIMITS;
  const users = deps.users ?? [];

  const authenticate = (req: IncomingMessage): Session | undefined => {
    for (const [name, value] of parseCookieHeader(req.headers.cookie)) {
      if (name !== SESSION_COOKIE) continue;
      const session = sessions.get(value);
      if (session) { sessions.countRequest(value); return session; }
    }
    return undefined;
  };

  type Handler = (req: IncomingMessage, res: ServerResponse, ctx: { session: Session; fields: FormFields; path: string; params: string[] }) => Promise<void>;
  interface Route { pattern: RegExp; methods: Record<string, Handler>; permission?: Permission; errorExtra?: (params: string[]) => Record<string, unknown> }

  const fail = (res: ServerResponse, error: string, extra: Record<string, unknown> = {}) => sendJson(res, 200, { ...extra, success: false, error });

  // ---- 4.1 subscribe ----
  const subscribeId = (params: string[]): string => {
    try { return decodeURIComponent(params[0]); } catch { return params[0]; }
  };
  const subscribeRoute: Route = {
    pattern: /^\/review\/api\/events\/assets\/subscribe(?:\/(.*))?$/,
    permission: 'events',
    errorExtra: params => ({ id: subscribeId(params) }),
    methods: {
      POST: async (req, res, { fields, params }) => {
        await readFormBody(req, fields, formCharset);
        const id = subscribeId(params);
        const result = await hub.register(id, fields);
        sendJson(res, 200, result.ok ? { id, success: true } : { id, success: false, error: result.error });
      },
      GET: async (_req, res, { params }) => {
        const id = subscribeId(params);
        const subscription = hub.get(id);
        sendJson(res, 200, subscription ? { success: true, id, subscription } : { success: false, id, error: `no subscription with id ${id}` });
      },
      DELETE: async (_req, res, { params }) => {
        const id = subscribeId(params);
        const removed = await hub.remove(id);
        sendJson(res, 200, removed ? { id, success: true } : { id, success: false, error: `no subscription with id ${id}` });
      }
    }
  };

  // ---- 4.2 upload ----
  const upload: Handler = async (req, res, { session }) => {
    let received;
    try { received = await receiveUpload(req, repo, formCharset, limits); } catch (e) {
      if (e instanceof ClientGone) { log(`upload abandoned by the client: nothing stored`); return; }
      throw e;
    }
    if (!received.file) return fail(res, 'missing file: send the file in a multipart part named "file"');
    const blob = await repo.adoptBlob(received.file.tmpPath);
    let job: Job | undefined;
    try {
      const { request, options } = buildIngestRequest(repo, received, blob, session.user);
      if (request.expand) await scanZip(repo.blobPath(blob), limits); // bad entry names and zip bombs are refused before anything is accepted
      if (!options.wait) {
        job = await ingester.enqueue(request);
        // The ingest finishes in the background: no fuids or rrn yet (GET /emulator/jobs/:id has them).
        sendJson(res, 200, { success: true, jobId: job.id, length: request.length, data: { bid: 1, fuids: [], rrn: -1 } });
        return;
      }
      // Spec 4.2: waitInMinutes is the time "to wait before cancelling". Past it the job is
      // cancelled and nothing is stored, so a client that retries makes no duplicate revision.
      // An ingest already committing when the time runs out finishes and is answered as done.
      const cancel = new AbortController();
      const timer = setTimeout(() => cancel.abort(`the ingest did not finish within waitInMinutes (${options.waitInMinutes}): cancelled, nothing stored`),
        Math.min(options.waitInMinutes * 60_000, 2 ** 31 - 1));
      let data;
      try {
        data = await ingester.ingest(request, undefined, cancel.signal);
      } catch (e) {
        if (!(e instanceof IngestCancelled)) throw e;
        await repo.discardBlob(blob).catch(() => undefined);
        log(`upload of ${request.name}: ${e.message}`);
        fail(res, e.message);
        return;
      } finally {
        clearTimeout(timer);
      }
      sendJson(res, 200, { success: true, data, length: request.length });
    } catch (e) {
      if (!job) await repo.discardBlob(blob).catch(() => undefined);
      throw e;
    }
  };

  // ---- 4.3 download ----
  const download: Handler = async (_req, res, { fields }) => {
    const fuid = parseFuid(single(fields, 'fuid'));
    const rrn = parseRrn(single(fields, 'rrn'));
    const collectionId = single(fields, 'collectionId');
    if (collectionId !== undefined && collectionId !== '' && !/^\d+$/.test(collectionId)) throw new RepoError(`collectionId must be an integer, got ${JSON.stringify(collectionId)}`);
    const { asset, revision } = repo.revisionAt(fuid, rrn);
    if (asset.kind !== 'file' || !revision.blob) throw new RepoError(`asset ${fuid} is a folder; only files can be downloaded`);
    const file = repo.blobPath(revision.blob);
    const handle = await fs.promises.open(file, 'r');
    const stat = await handle.stat();
    const stream = handle.createReadStream();
    res.writeHead(200, {
      'Content-Type': contentTypeOf(asset.name),
      'Content-Length': String(stat.size),
      'Content-Disposition': contentDisposition(asset.name),
      'X-Asset-Fuid': String(asset.fuid),
      'X-Asset-Rrn': String(revision.rrn),
      'Cache-Control': 'no-store'
    });
    try { await pipeline(stream, res); } catch { res.destroy(); }
  };

  // ---- 4.4 export ----
  const exportMetadata: Handler = async (req, res, { fields }) => {
    await readFormBody(req, fields, formCharset);
    const fuid = parseFuid(single(fields, 'fuid'));
    const rrn = parseRrn(single(fields, 'rrn'));
    const type = (single(fields, 'type') ?? 'json').trim().toLowerCase() || 'json';
    if (type !== 'json' && type !== 'xml') throw new RepoError(`type must be one of: json, xml (got ${JSON.stringify(single(fields, 'type'))})`);
    const { asset, index } = repo.revisionAt(fuid, rrn);
    const rec = exportRecord(asset, index);
    if (type === 'json') { sendJson(res, 200, { success: true, ...rec }); return; }
    const xml = exportXml(rec);
    res.writeHead(200, { 'Content-Type': 'application/xml; charset=utf-8', 'Content-Length': String(Buffer.byteLength(xml)), 'Cache-Control': 'no-store' });
    res.end(xml);
  };

  // ---- /emulator/ ----
  const readJson = async (req: IncomingMessage): Promise<unknown> => {
    const body = await readBody(req, BODY_LIMIT);
    try { return JSON.parse(body.toString('utf8')); } catch (e) { throw new HttpError(400, `body is not valid JSON: ${(e as Error).message}`); }
  };

  const putMetadata: Handler = async (req, res, { session, params }) => {
    const fuid = parseFuid(params[0]);
    const body = await readJson(req);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'body must be a JSON object of metadata keys and string values');
    const set: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
      if (k === '' || k.includes('=') || k === '*') throw new HttpError(400, `metadata key ${JSON.stringify(k)} is not allowed (empty, "*", or containing "=")`);
      if (typeof v !== 'string' && v !== null) throw new HttpError(400, `metadata value of ${JSON.stringify(k)} must be a string (or null to remove the key)`);
      set[k] = v;
    }
    if (Object.keys(set).length === 0) throw new HttpError(400, 'body has no metadata keys');
    const asset = repo.asset(fuid);
    if (!asset || asset.deleted) throw new RepoError(`no asset with fuid ${fuid}`);
    const { rrn } = await repo.write(session.user, tx => tx.setMetadata(fuid, set));
    sendJson(res, 200, { success: true, fuid, rrn, metadata: repo.revisionAt(fuid, -1).revision.metadata });
  };

  const deleteAsset: Handler = async (_req, res, { session, params }) => {
    const fuid = parseFuid(params[0]);
    const { rrn } = await repo.write(session.user, tx => tx.delete(fuid));
    sendJson(res, 200, { success: true, fuid, rrn });
  };

  const getAsset: Handler = async (_req, res, { params }) => {
    const fuid = parseFuid(params[0]);
    const asset = repo.asset(fuid);
    if (!asset) throw new RepoError(`no asset with fuid ${fuid}`);
    sendJson(res, 200, { success: true, asset: assetView(repo, asset) });
  };

  const findAsset: Handler = async (_req, res, { fields }) => {
    const p = single(fields, 'path');
    if (p === undefined) throw new RepoError('missing path');
    const asset = repo.assetByPath(p);
    if (!asset) throw new RepoError(`no asset at path ${JSON.stringify(p)}`);
    sendJson(res, 200, { success: true, asset: assetView(repo, asset) });
  };

  const routes: Route[] = [
    subscribeRoute,
    { pattern: /^\/review\/api\/asset\/upload\/?$/, permission: 'add', methods: { POST: upload } },
    { pattern: /^\/review\/api\/asset\/download\/?$/, methods: { GET: download } },
    { pattern: /^\/review\/api\/asset\/export\/metadata\/?$/, methods: { GET: exportMetadata, POST: exportMetadata } },
    { pattern: /^\/emulator\/assets\/?$/, methods: { GET: findAsset } },
    { pattern: /^\/emulator\/assets\/([^/]*)\/metadata\/?$/, methods: { PUT: putMetadata } },
    { pattern: /^\/emulator\/assets\/([^/]*)\/?$/, methods: { GET: getAsset, DELETE: deleteAsset } },
    {
      pattern: /^\/emulator\/deliveries\/?$/,
      methods: { GET: async (_req, res, { fields }) => sendJson(res, 200, { success: true, deliveries: hub.deliveries(single(fields, 'subscription') || undefined) }) }
    },
    {
      pattern: /^\/emulator\/jobs\/([^/]*)\/?$/,
      methods: {
        GET: async (_req, res, { params }) => {
          let id = params[0];
          try { id = decodeURIComponent(id); } catch { /* keep raw */ }
          const job = repo.job(id);
          sendJson(res, 200, job ? { success: true, job: jobView(job) } : { success: false, error: `no job with id ${id}` });
        }
      }
    }
  ];

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const { path: rawPath, query } = splitTarget(req.url ?? '/');
    const routePath = rawPath.replace(/\/{2,}/g, '/');
    if (await deps.faults?.hold(req, res, routePath)) return;
    if (deps.faults?.answer(req, res, routePath)) return;
    deps.faults?.cut(res, routePath);
    if (await handleLogin(req, res, routePath, query, { sessions, users, log })) return;
    let route: Route | undefined;
    let match: RegExpExecArray | null = null;
    for (const r of routes) { match = r.pattern.exec(routePath); if (match) { route = r; break; } }
    if (!route || !match) { sendJson(res, 404, { success: false, error: `no such endpoint: ${req.method} ${routePath.slice(0, 200)}` }); return; }
    const handler = route.methods[req.method ?? ''];
    if (!handler) {
      sendJson(res, 405, { success: false, error: `method ${req.method} not allowed here; use ${Object.keys(route.methods).join(' or ')}` }, { Allow: Object.keys(route.methods).join(', ') });
      return;
    }
    const params = match.slice(1).map(p => p ?? '');
    const extra = route.errorExtra ? route.errorExtra(params) : {};
    const session = authenticate(req);
    if (!session) { sendJson(res, 401, { success: false, error: 'authentication failed' }); return; }
    if (route.permission && !session.permissions.has(route.permission)) { fail(res, PERMISSION_ERRORS[route.permission], extra); return; }
    const fields: FormFields = Object.create(null); // field names come from the request: no prototype keys
    addUrlEncoded(fields, query);
    try {
      await handler(req, res, { session, fields, path: routePath, params });
    } catch (e) {
      if (e instanceof ClientGone) return;
      if (e instanceof RepoError || e instanceof UploadError) { fail(res, e.message, extra); return; }
      if (e instanceof HttpError) {
        sendJson(res, e.status, { ...extra, success: false, error: e.message }, e.status === 413 ? { Connection: 'close' } : {});
        return;
      }
      throw e;
    }
  };

  return (req, res) => {
    const started = Date.now();
    res.on('finish', () => {
      const { path: p } = splitTarget(req.url ?? '/');
      log(`${req.method} ${JSON.stringify(p.slice(0, 200)).slice(1, -1)} ${res.statusCode} ${Date.now() - started}ms`);
    });
    handle(req, res).catch((e: Error) => {
      log(`internal error on ${req.method} ${splitTarget(req.url ?? '/').path.slice(0, 200)}: ${e.stack ?? e.message}`);
      if (!res.headersSent) sendJson(res, 500, { success: false, error: `internal error: ${e.message}` });
      else res.destroy();
    });
  };
}
