/**
 * Reading a callback request body: content type, size limit, JSON.
 *
 * Node-RED's httpNode has no app-wide body parser (the core http in node adds
 * its own per route), so the request normally reaches us as a raw stream and
 * we enforce our own limit without buffering past it. If some middleware
 * (httpNodeMiddleware, an embedding app) has already read the body, what it
 * left in `req.body` is used instead.
 */
import type { IncomingMessage } from 'http';
import { parseJsonKeepingBigInts } from '../api/json';

export type BodyOutcome =
  | { ok: true; value: unknown }
  | { ok: false; status: 400 | 413; reason: string };

/** Media types accepted as JSON. A missing Content-Type is accepted too (the spec says the data is JSON). */
export function contentTypeProblem(header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const type = header.split(';')[0].trim().toLowerCase();
  if (type === 'application/json' || type === 'text/json' || type === 'text/plain' || /^application\/[\w.+-]+\+json$/.test(type)) {
    return undefined;
  }
  return `content type ${type || '(empty)'} is not JSON`;
}

type MaybeParsed = IncomingMessage & { body?: unknown; _body?: boolean };

/** Reads and parses the body of `req`, answering 413 past `limitBytes` and 400 for anything that is not JSON. */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<BodyOutcome> {
  const pre = req as MaybeParsed;
  if (pre._body || req.readableEnded) return fromParsedBody(pre.body);

  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') {
    req.resume();
    return { ok: false, status: 400, reason: `content encoding ${encoding} is not supported` };
  }
  const read = await readLimited(req, limitBytes);
  if (!read.ok) return read;
  return parseText(read.body.toString('utf8'));
}

function fromParsedBody(body: unknown): BodyOutcome {
  if (Buffer.isBuffer(body)) return parseText(body.toString('utf8'));
  if (typeof body === 'string') return parseText(body);
  if (body === undefined || (typeof body === 'object' && body !== null && Object.keys(body).length === 0)) {
    return { ok: false, status: 400, reason: 'body is empty' };
  }
  return { ok: true, value: body };
}

function parseText(text: string): BodyOutcome {
  const trimmed = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (trimmed.trim() === '') return { ok: false, status: 400, reason: 'body is empty' };
  try {
    return { ok: true, value: parseJsonKeepingBigInts(trimmed) };
  } catch {
    return { ok: false, status: 400, reason: 'body is not valid JSON' };
  }
}

type Limited = { ok: true; body: Buffer } | { ok: false; status: 400 | 413; reason: string };

/**
 * Collects the stream up to `limitBytes`. Past the limit it stops keeping
 * data and lets the rest drain to nowhere, so the client can read the 413.
 */
export function readLimited(req: IncomingMessage, limitBytes: number): Promise<Limited> {
  const tooLarge: Limited = { ok: false, status: 413, reason: `body is larger than ${limitBytes} bytes` };
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    return Promise.resolve(tooLarge);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: Limited) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        chunks.length = 0;
        finish(tooLarge);
        req.resume(); // keep draining, without holding anything
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish({ ok: true, body: Buffer.concat(chunks, size) });
    const onError = () => finish({ ok: false, status: 400, reason: 'request body was not received completely' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onError);
  });
}
