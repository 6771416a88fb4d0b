/**
 * Runtime helpers shared by the DAM nodes. Generic: nothing here knows a node type.
 *
 * - {@link resolveField} + `as*` converters: read one request field from the
 *   documented msg property (wins when present) or the editor's TypedInput
 *   (str, num, bool, json, msg, flow, global, env, jsonata, ...), and check its type
 *   with an `invalid-input` {@link AssetApiError} naming the field.
 * - {@link RequestTracker}: counts requests in flight (status "n in flight"), shows
 *   percent progress, gives each request an AbortSignal, aborts them all on close.
 * - {@link handleInput}: the input-handler skeleton: run the work, then `send` + `done()`,
 *   or red status + `done(err)` so Catch nodes receive the original msg.
 * - {@link resolvePath}, {@link formatBytes}, {@link statusText}: small shared pieces.
 *
 * Status texts come from the node's own message catalogue, keys `dam.status.*`
 * (see {@link STATUS_KEYS}); English is used when a key is missing.
 */
import * as path from 'path';
import { AssetApiError, invalidInput } from '../api/errors';
import type { TransferProgress } from '../api/client';
import type { Node, NodeAPI, NodeMessage, NodeSend, NodeDone } from './node-red';

// ---------------------------------------------------------------- messages

/** Catalogue keys (under `dam.status`) with their English fallback. */
export const STATUS_KEYS = {
  inFlight: '__count__ in flight',
  progress: '__percent__%',
  bytes: '__size__',
  error: '__kind__: __message__',
  aborted: 'aborted __count__ request(s) in flight on close'
} as const;

/** Looks up `dam.status.<name>` in the node's catalogue, falling back to English. */
export function statusText(RED: NodeAPI, name: keyof typeof STATUS_KEYS, params: Record<string, unknown> = {}): string {
  const key = `dam.status.${name}`;
  let text: string | undefined;
  try { text = RED._(key, params); } catch { text = undefined; }
  // RED._ answers the key itself (or namespace:key) when the catalogue lacks it.
  if (!text || text.endsWith(key)) {
    text = STATUS_KEYS[name].replace(/__(\w+)__/g, (_m, p: string) => String(params[p] ?? ''));
  }
  return text;
}

/** 1536 -> "1.5 kB"; decimal units as the editor shows sizes. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
  return `${value.toFixed(1)} ${units[unit]}`;
}

// ---------------------------------------------------------------- fields

/** Where one request field comes from. */
export interface FieldSource {
  /** Field name used in error messages, e.g. `destination`. */
  field: string;
  /** msg property that overrides the editor value when it is present (not undefined). */
  msgProperty?: string;
  /** TypedInput value from the editor. */
  value?: unknown;
  /** TypedInput type from the editor (`str`, `num`, `msg`, `env`, ...). Default `str`. */
  type?: string;
}

/** A field's value and a label saying where it came from (`msg.fuid` or `fuid`). */
export interface ResolvedField {
  label: string;
  /** undefined when the field is not set anywhere. */
  value: unknown;
}

/** Types whose empty editor value means "not set". */
const EMPTY_MEANS_UNSET = new Set(['str', 'num', 'json', 'msg', 'flow', 'global', 'env', 'jsonata', 're', 'bin']);

/** Evaluates a TypedInput value (async, so flow/global context stores and jsonata work). */
export function evaluateProperty(RED: NodeAPI, node: Node, msg: NodeMessage, value: unknown, type: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    try {
      RED.util.evaluateNodeProperty(value, type, node, msg, (err, result) => err ? reject(err) : resolve(result));
    } catch (err) {
      reject(err);
    }
  });
}

/**
 * Resolves one field: `msg[msgProperty]` when present, else the editor's TypedInput.
 * An evaluation failure (bad JSON, bad JSONata) becomes an invalid-input error naming the field.
 */
export async function resolveField(RED: NodeAPI, node: Node, msg: NodeMessage, source: FieldSource): Promise<ResolvedField> {
  if (source.msgProperty && msg[source.msgProperty] !== undefined && msg[source.msgProperty] !== null) {
    return { label: `msg.${source.msgProperty}`, value: msg[source.msgProperty] };
  }
  const type = source.type || 'str';
  if (source.value === undefined || source.value === null ||
      (source.value === '' && EMPTY_MEANS_UNSET.has(type))) {
    return { label: source.field, value: undefined };
  }
  try {
    const value = await evaluateProperty(RED, node, msg, source.value, type);
    return { label: source.field, value: value === null ? undefined : value };
  } catch (err) {
    throw invalidInput(source.field, `could not evaluate the ${type} value: ${(err as Error).message}`);
  }
}

/** Throws an invalid-input error when a required field is not set. */
export function required<T>(field: ResolvedField, value: T | undefined): T {
  if (value === undefined) throw invalidInput(field.label, 'is required');
  return value;
}

/** A string, or undefined when unset or empty. Numbers are accepted and turned into text. */
export function asString(field: ResolvedField): string | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  throw invalidInput(field.label, `must be a string, got ${describe(v)}`);
}

/** An integer (number or decimal text), or undefined when unset or empty. */
export function asInteger(field: ResolvedField): number | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
  throw invalidInput(field.label, `must be an integer, got ${describe(v)}`);
}

/** A finite number (number or decimal text, fractions allowed), or undefined when unset or empty. */
export function asNumber(field: ResolvedField): number | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\s*-?(\d+\.?\d*|\.\d+)\s*$/.test(v)) return Number(v);
  throw invalidInput(field.label, `must be a number, got ${describe(v)}`);
}

/**
 * An integer id such as a fuid or an rrn. Kept as text when it exceeds 2^53, so a
 * 64-bit revision number is never rounded (public-facts.md: never do arithmetic on rrn).
 */
export function asIntegerId(field: ResolvedField): number | string | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v)) {
    const text = v.trim();
    return Number.isSafeInteger(Number(text)) ? Number(text) : text;
  }
  throw invalidInput(field.label, `must be an integer, got ${describe(v)}`);
}

/** A boolean (true/false or the text "true"/"false"), or undefined when unset or empty. */
export function asBoolean(field: ResolvedField): boolean | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
  throw invalidInput(field.label, `must be true or false, got ${describe(v)}`);
}

/**
 * Resolves a file path like the core file nodes: relative to `fileWorkingDirectory` or the cwd.
 * A trailing separator is kept (it means "into this folder" to the download).
 */
export function resolvePath(RED: NodeAPI, file: string): string {
  const resolved = path.resolve(RED.settings.fileWorkingDirectory || process.cwd(), file);
  return /[\\/]$/.test(file) && !resolved.endsWith(path.sep) ? resolved + path.sep : resolved;
}

/** Short description of a wrong value for an error message (never the whole value). */
function describe(v: unknown): string {
  if (typeof v === 'string') return `"${v.length > 30 ? v.slice(0, 30) + '…' : v}"`;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Buffer.isBuffer(v)) return 'a Buffer';
  if (Array.isArray(v)) return 'an array';
  return v === null ? 'null' : `a ${typeof v}`;
}

// ---------------------------------------------------------------- requests in flight

/** One request in flight: its AbortSignal and a progress reporter. */
export interface ActiveRequest {
  readonly signal: AbortSignal;
  /** Shows percent (or bytes when the total is unknown) while this is the only request. */
  progress(p: TransferProgress): void;
}

interface Entry extends ActiveRequest {
  controller: AbortController;
  settled: Promise<void>;
  settle(): void;
  lastText: string;
  lastUpdate: number;
}

/** Milliseconds between two progress status updates of one request. */
const PROGRESS_INTERVAL_MS = 250;

/**
 * Counts a node's requests in flight and drives its status: blue "n in flight",
 * percent while one transfer runs, green text on success, red ring on failure.
 * On close it aborts everything in flight (see {@link RequestTracker.close}).
 */
export class RequestTracker {
  private readonly active = new Set<Entry>();
  /** True once the node is closing: failures after that are aborts, not errors. */
  closing = false;

  constructor(private readonly RED: NodeAPI, private readonly node: Node) {}

  get count(): number { return this.active.size; }

  /** Starts tracking a request. Call {@link end} exactly once when it settles. */
  begin(): ActiveRequest {
    const controller = new AbortController();
    let settle!: () => void;
    const settled = new Promise<void>(resolve => { settle = resolve; });
    const entry: Entry = {
      controller, signal: controller.signal, settled, settle, lastText: '', lastUpdate: 0,
      progress: (p) => this.showProgress(entry, p)
    };
    this.active.add(entry);
    this.showInFlight();
    return entry;
  }

  /** Stops tracking; shows a green status (or clears it) on success, a red ring with the error. */
  end(request: ActiveRequest, outcome: { ok: true; text?: string } | { ok: false; error: unknown }): void {
    const entry = request as Entry;
    if (!this.active.delete(entry)) return;
    entry.settle();
    if (this.closing) return;
    if (!outcome.ok) {
      this.node.status({ fill: 'red', shape: 'ring', text: errorStatusText(this.RED, outcome.error) });
    } else if (this.active.size > 0) {
      this.showInFlight();
    } else if (outcome.text) {
      this.node.status({ fill: 'green', shape: 'dot', text: outcome.text });
    } else {
      this.node.status({});
    }
  }

  /** Aborts every request in flight; returns how many there were. */
  abortAll(): number {
    const n = this.active.size;
    for (const entry of this.active) entry.controller.abort();
    return n;
  }

  /**
   * For the node's close handler: aborts what is in flight, waits for those
   * requests to settle (at most `waitMs`, default 4 s, inside Node-RED's close
   * timeout), clears the status.
   */
  async close(waitMs = 4000): Promise<void> {
    this.closing = true;
    const pending = [...this.active].map(e => e.settled);
    const n = this.abortAll();
    if (n > 0) this.node.warn(statusText(this.RED, 'aborted', { count: n }));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(pending),
      new Promise<void>(resolve => { timer = setTimeout(resolve, waitMs); })
    ]);
    if (timer) clearTimeout(timer);
    this.node.status({});
  }

  private showInFlight(): void {
    if (this.closing) return;
    this.node.status({ fill: 'blue', shape: 'dot', text: statusText(this.RED, 'inFlight', { count: this.active.size }) });
  }

  private showProgress(entry: Entry, p: TransferProgress): void {
    if (this.closing || this.active.size !== 1 || !this.active.has(entry)) return;
    const text = p.total
      ? statusText(this.RED, 'progress', { percent: Math.min(100, Math.floor((p.bytes / p.total) * 100)) })
      : statusText(this.RED, 'bytes', { size: formatBytes(p.bytes) });
    const now = Date.now();
    if (text === entry.lastText || now - entry.lastUpdate < PROGRESS_INTERVAL_MS) return;
    entry.lastText = text;
    entry.lastUpdate = now;
    this.node.status({ fill: 'blue', shape: 'dot', text });
  }
}

// ---------------------------------------------------------------- errors and the input handler

/** Short status text for an error: `<kind>: <message>` cut to 60 characters. */
export function errorStatusText(RED: NodeAPI, err: unknown): string {
  const kind = err instanceof AssetApiError ? err.kind : 'error';
  let message = err instanceof Error ? err.message : String(err);
  if (message.length > 60) message = message.slice(0, 59) + '…';
  return statusText(RED, 'error', { kind, message });
}

/**
 * The body of an input handler: receives the msg and the tracked request, does the
 * work, sets output properties on the msg, and returns the green status text (or
 * nothing to clear the status). Throw to fail.
 */
export type InputWork = (msg: NodeMessage, request: ActiveRequest) => Promise<string | undefined>;

/**
 * Registers `node.on('input')` and `node.on('close')` around `work`:
 * - success: `send(msg)` then `done()`;
 * - failure: red status, `msg.assetError` = the error's plain fields (kind, status,
 *   operation, field, serverMessage, code: Catch nodes only copy message and code into
 *   msg.error), then `done(err)` so Catch nodes receive the msg;
 * - close: abort in flight, then `done()` for those messages without an error
 *   (a redeploy is not a failure of the message; one warning counts them), close
 *   callback within 4 s.
 * `onClose` runs after the requests are settled (e.g. to release resources).
 */
export function handleInput(RED: NodeAPI, node: Node, work: InputWork, onClose?: () => void): RequestTracker {
  const tracker = new RequestTracker(RED, node);
  node.on('input', (msg: NodeMessage, send: NodeSend, done: NodeDone) => {
    const request = tracker.begin();
    let task: Promise<string | undefined>;
    try { task = work(msg, request); } catch (err) { task = Promise.reject(err); }
    task.then(text => {
      tracker.end(request, { ok: true, text });
      send(msg);
      done();
    }).catch((err: unknown) => {
      const closing = tracker.closing;
      tracker.end(request, { ok: false, error: err });
      // Closing: the request was aborted (or its config node's client closed under it);
      // that is the redeploy's doing, not the message's fault. close() has warned once.
      if (closing) { done(); return; }
      if (err instanceof AssetApiError) msg.assetError = err.toJSON();
      done(err instanceof Error ? err : new Error(String(err)));
    });
  });
  node.on('close', (_removed: boolean, closeDone: () => void) => {
    tracker.close().then(() => {
      try { onClose?.(); } finally { closeDone(); }
    }, () => closeDone());
  });
  return tracker;
}
