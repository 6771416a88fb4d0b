/**
 * Reading a callback request body: charset, size limit, JSON.
 *
 * Node-RED's httpNode has no app-wide body parser (the core http in node adds
 * its own per route), so the request normally reaches us as a raw stream and
 * we enforce our own limit without buffering past it. If some middleware
 * (httpNodeMiddleware, an embedding app) has already read the body, what it
 * left in `req.body` is used instead.
 */
import type { IncomingMessage } from 'http';
import { quoteUnsafeIntegers } from '../api/json';
import { LARGE_BODY_BYTES, SLOTS_BUSY_REASON, type BodyGate } from './body-slots';
import { capReason, entryLimits, tooManyEntries } from './entry-count';
import { yieldToEventLoop } from './entry-digest';
import { scanJsonText } from './text-scan';

export type BodyOutcome =
  /** `text`: the JSON text parsed (64-bit integers quoted, so JSON.parse reads it exactly), when the body was text (not an object a parser in front made). */
  | { ok: true; value: unknown; text?: string }
  | { ok: false; status: 400 | 413 | 503; reason: string };

/**
 * The body's text. Its declared media type is not checked: the spec leaves the callback's
 * Content-Type to the server (requestType auto, or a header of the subscription), and a Java client
 * may well call JSON a form or plain text; a refused type would be retried and then given up by the
 * server, the change lost. What is not JSON gets 400 anyway. A declared charset is honoured (a Java
 * client may send ISO-8859-1); none means UTF-8, JSON's own.
 */
export function bodyText(body: Buffer, contentType: string | undefined): { ok: true; text: string } | { ok: false; status: 400; reason: string } {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1].toLowerCase();
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return { ok: true, text: body.toString('utf8') };
  try {
    return { ok: true, text: new TextDecoder(charset).decode(body) };
  } catch {
    return { ok: false, status: 400, reason: `charset ${charset.slice(0, 40)} is not supported: send UTF-8` };
  }
}

/**
 * Deepest JSON nesting accepted. A callback is 4 levels deep (body, data, entry list, entry);
 * 64 leaves room for vendor fields. Far deeper input is refused before parsing: JSON.parse of
 * 25 million nested arrays (a 50 MB body) blocks for seconds and takes gigabytes, and a deep
 * value that got through would overflow the stack of Node-RED's message cloning.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Set on a request (by asset-event-in's guard at the top of Node-RED's root app) whose body this
 * module must read from the stream itself even though `_body` says a parser already did: the
 * guard sets `_body` so that body parsers in front of the route skip the request.
 */
export const READ_OWN_BODY = Symbol.for('@dam-assets/node-red.readOwnBody');

type MaybeParsed = IncomingMessage & { body?: unknown; _body?: boolean; [READ_OWN_BODY]?: boolean };

/**
 * Reads and parses the body of `req`, answering 413 past `limitBytes` or with more than
 * `maxEntries` callback entries (counted before parsing), and 400 for anything that is not JSON.
 * With a `gate`, a body above its threshold is read only once the gate lets it in, else 503
 * (body-slots.ts): asked before anything is read when Content-Length says so, else once that
 * many bytes have arrived.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number, maxEntries = Infinity, gate?: BodyGate): Promise<BodyOutcome> {
  const pre = req as MaybeParsed;
  if (req.readableEnded || (pre._body && !pre[READ_OWN_BODY])) return fromParsedBody(pre.body, maxEntries, req.headers['content-type']);

  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') {
    req.resume();
    return { ok: false, status: 400, reason: `content encoding ${encoding} is not supported` };
  }
  const read = await readLimited(req, limitBytes, gate);
  if (!read.ok) return read;
  if (read.body.length <= LARGE_BODY_BYTES) return parseBytes(read.body, req.headers['content-type'], maxEntries);
  return parseLarge(read.body, req.headers['content-type'], maxEntries);
}

/**
 * A large body: the event loop runs between the steps (each up to about 0.15 s for 42 MB), not
 * only after all of them; the bytes are let go once decoded.
 */
async function parseLarge(bytes: Buffer | undefined, contentType: string | undefined, maxEntries: number): Promise<BodyOutcome> {
  await yieldToEventLoop();
  const decoded = bodyText(bytes!, contentType);
  bytes = undefined;
  if (!decoded.ok) return decoded;
  await yieldToEventLoop();
  const checked = checkText(decoded.text, maxEntries);
  await yieldToEventLoop();
  return parseChecked(checked);
}

function parseBytes(body: Buffer, contentType: string | undefined, maxEntries: number): BodyOutcome {
  const decoded = bodyText(body, contentType);
  return decoded.ok ? parseText(decoded.text, maxEntries) : decoded;
}

/** An already parsed body's entries are counted by parseCallbackPayload. */
function fromParsedBody(body: unknown, maxEntries: number, contentType: string | undefined): BodyOutcome {
  if (Buffer.isBuffer(body)) return parseBytes(body, contentType, maxEntries);
  // No `text`: a string made by other code may hold lone surrogates, which a journal line would not keep.
  if (typeof body === 'string') { const parsed = parseText(body, maxEntries); return parsed.ok ? { ok: true, value: parsed.value } : parsed; }
  if (body === undefined || (typeof body === 'object' && body !== null && Object.keys(body).length === 0)) {
    return { ok: false, status: 400, reason: 'body is empty' };
  }
  if (valueDeeperThan(body, MAX_JSON_DEPTH)) return tooDeep();
  return { ok: true, value: body };
}

function tooDeep(): { ok: false; status: 400; reason: string } {
  return { ok: false, status: 400, reason: `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels` };
}

/** True when the JSON text opens more than `max` arrays/objects at once (strings are skipped). */
export function textDeeperThan(text: string, max: number): boolean {
  return scanJsonText(text, { maxDepth: max, maxEntries: Infinity, maxContainers: Infinity, maxValues: Infinity }).tooDeep;
}

/** Same for an already parsed value; iterative, so no depth can overflow the stack. */
export function valueDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

type Checked = { ok: true; text: string; longDigits: boolean } | { ok: false; status: 400 | 413; reason: string };

/** The checks before parsing, in one pass over the text (text-scan.ts): depth first, then entries, then the caps. */
function checkText(text: string, maxEntries: number): Checked {
  const trimmed = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (trimmed.trim() === '') return { ok: false, status: 400, reason: 'body is empty' };
  const scan = scanJsonText(trimmed, entryLimits(maxEntries, MAX_JSON_DEPTH));
  if (scan.tooDeep) return tooDeep();
  if (scan.entries > maxEntries) return { ok: false, status: 413, reason: tooManyEntries(maxEntries) };
  const overCap = capReason(scan, maxEntries);
  if (overCap) return { ok: false, status: 413, reason: overCap };
  return { ok: true, text: trimmed, longDigits: scan.longDigits };
}

/** Parses checked text; integers beyond 2^53 quoted first (as withExactIntegers, api/json.ts, whose look for 16 digits the scan did). */
function parseChecked(checked: Checked): BodyOutcome {
  if (!checked.ok) return checked;
  try {
    const json = checked.longDigits ? quoteUnsafeIntegers(checked.text) : checked.text;
    return { ok: true, value: JSON.parse(json), text: json };
  } catch {
    return { ok: false, status: 400, reason: 'body is not valid JSON' };
  }
}

function parseText(text: string, maxEntries: number): BodyOutcome {
  return parseChecked(checkText(text, maxEntries));
}

type Limited = { ok: true; body: Buffer } | { ok: false; status: 400 | 413 | 503; reason: string };

const BUSY: Limited = { ok: false, status: 503, reason: SLOTS_BUSY_REASON };

const NOT_RECEIVED: Limited = { ok: false, status: 400, reason: 'request body was not received completely' };

/**
 * Collects the stream up to `limitBytes`. Past the limit it stops keeping
 * data and lets the rest drain to nowhere, so the client can read the 413.
 * Past `gate.threshold` (see readJsonBody) it waits for the gate, the stream paused; refused, it
 * lets the rest drain the same way (503).
 */
export async function readLimited(req: IncomingMessage, limitBytes: number, gate?: BodyGate): Promise<Limited> {
  const tooLarge: Limited = { ok: false, status: 413, reason: `body is larger than ${limitBytes} bytes` };
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    return tooLarge;
  }
  // Gone already (an async middleware in front took its time): its events have fired, none will come.
  const gone = () => req.destroyed || req.socket?.destroyed === true;
  if (gone()) return NOT_RECEIVED;
  const declaredLarge = gate !== undefined && Number.isFinite(declared) && declared > gate.threshold;
  if (declaredLarge && !await gate.enter()) {
    req.resume();
    return BUSY;
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let asked = declaredLarge || gate === undefined;
    let finished = false;
    const finish = (result: Limited) => {
      finished = true;
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
      if (!asked && size > gate!.threshold) {
        asked = true;
        req.pause();
        void gate!.enter().then((ok) => {
          if (finished) return;
          if (ok) { req.resume(); return; }
          chunks.length = 0;
          finish(BUSY);
          req.resume();
        });
      }
    };
    const onEnd = () => finish({ ok: true, body: Buffer.concat(chunks, size) });
    const onError = () => finish(NOT_RECEIVED);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onError);
    if (gone() && !req.readableEnded) onError(); // went away while waiting for the gate
  });
}
