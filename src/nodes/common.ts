/**
 * Runtime helpers shared by the DAM nodes. Generic: nothing here knows a node type.
 *
 * - {@link resolveField} + `as*` converters: read one request field from where the editor's
 *   TypedInput points (str, num, bool, json, msg, flow, global, env, jsonata, ...). A msg
 *   property never replaces a value set on the node; it comes in only when the TypedInput
 *   points at it (`msg.fuid`), or when the field is blank and names a `blankReads`
 *   property (flows saved before the TypedInputs pointed at msg). Type errors are
 *   `invalid-input` {@link AssetApiError}s naming the field.
 * - {@link RequestTracker}: runs at most `limit` requests at once and queues the rest in
 *   arrival order (status "2 running, 15 queued"), shows percent progress, gives each request
 *   an AbortSignal, aborts the running ones and drops the queue on close.
 * - {@link handleInputAndClose}: wires a node's input and close: run the work, then `send` + `done()`,
 *   or red status + `done(err)` so Catch nodes receive the original msg.
 * - {@link resolvePath}, {@link formatBytes}, {@link statusText}, {@link errorStatusText}.
 *
 * Status texts come from the node's own message catalogue, keys `dam.status.*`
 * (see {@link STATUS_KEYS}); English is used when a key is missing.
 */
import * as path from 'path';
import { AssetApiError, invalidInput } from '../api/errors';
import type { TransferProgress } from '../api/transfer';
import { exactInteger, isIntegerText, readFlag } from '../api/values';
import type { Node, NodeAPI, NodeMessage, NodeSend, NodeDone } from './node-red';

// ---------------------------------------------------------------- messages

/** Catalogue keys (under `dam.status`) with their English fallback. */
export const STATUS_KEYS = {
  inFlight: '__count__ running',
  queued: '__count__ running, __queued__ queued',
  progress: '__percent__%',
  bytes: '__size__',
  aborted: 'aborted __count__ request(s) in flight on close',
  dropped: 'dropped __count__ queued message(s) on close',
  droppedError: 'dropped: the node closed before this message\'s turn (__queued__ were queued); send it again',
  // Work lost on close, named (msg.filename, msg.fuid, ...) so that a flow or a person can send it again.
  abortedNames: 'aborted __count__ request(s) in flight on close: __names__',
  droppedNames: 'dropped __count__ queued message(s) on close: __names__',
  abortedError: 'aborted: the node closed (redeploy, removal or stop) while this message was worked on; send it again',
  badLimit: 'Parallel requests must be a whole number from 1 to __max__; using __default__',
  // Short reasons for the status under a node (errorStatusText); the full text is in msg.error.
  reasonAuth: 'auth: cookie rejected',
  reasonLoginRefused: 'auth: session from login refused',
  reasonPermission: 'permission: denied',
  reasonNotFound: '404: check base URL',
  reasonRedirect: '__status__: redirect, check base URL',
  reasonBusy: '__status__: server busy, retry',
  reasonServerError: '__status__: server error',
  reasonRefusedStatus: '__status__: request refused',
  reasonTimeout: 'timeout: no answer',
  reasonRefused: 'network: connection refused',
  reasonNotFoundHost: 'network: host not found',
  reasonTls: 'network: TLS certificate',
  reasonNetwork: 'network: __code__',
  reasonAborted: 'aborted'
} as const;

/**
 * Looks up `key` in the node's catalogue, falling back to `english` (with the same __params__);
 * English when no RED is at hand.
 */
export function localText(RED: NodeAPI | undefined, key: string, english: string, params: Record<string, unknown> = {}): string {
  let text: string | undefined;
  try { text = RED?._(key, params); } catch { text = undefined; }
  // RED._ answers the key itself (or namespace:key) when the catalogue lacks it.
  if (!text || text.endsWith(key)) {
    text = english.replace(/__(\w+)__/g, (_m, p: string) => String(params[p] ?? ''));
  }
  return text;
}

/** Looks up `dam.status.<name>` in the node's catalogue, falling back to English. */
export function statusText(RED: NodeAPI | undefined, name: keyof typeof STATUS_KEYS, params: Record<string, unknown> = {}): string {
  return localText(RED, `dam.status.${name}`, STATUS_KEYS[name], params);
}

/** A node's status changes at most this often; a trailing update shows the final state. */
export const STATUS_INTERVAL_MS = 250;

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
  /** TypedInput value from the editor. */
  value?: unknown;
  /** TypedInput type from the editor (`str`, `num`, `msg`, `env`, ...). Default `str`. */
  type?: string;
  /**
   * msg property read only when the editor field is blank: flows saved before new nodes showed
   * `msg.<name>` explicitly left these fields blank and documented the msg property. Leave it
   * out where a stray msg property could do harm (a file to write, an export type, an action).
   */
  blankReads?: string;
  /**
   * The field's label in the editor (`Folder fuid`): errors then name it as the user sees it,
   * with the msg property it reads (`Folder fuid (msg.destinationFuid): must be an integer`).
   */
  label?: string;
}

/** A field's value and a label saying where it came from (`msg.fuid` or `fuid`). */
export interface ResolvedField {
  /** Short name (`msg.fuid` or `fuid`), also msg.assetError.field of an error about it. */
  label: string;
  /** How error messages name the field: the editor label and the msg property, when known. */
  text?: string;
  /** undefined when the field is not set anywhere. */
  value: unknown;
}

/** Types whose empty editor value means "not set". */
const EMPTY_MEANS_UNSET = new Set(['str', 'num', 'bool', 'json', 'msg', 'flow', 'global', 'env', 'jsonata', 're', 'bin']);

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

/** True when the editor left the field blank (nothing to evaluate). */
export function isBlank(source: FieldSource): boolean {
  return source.value === undefined || source.value === null ||
    (source.value === '' && EMPTY_MEANS_UNSET.has(source.type || 'str'));
}

/**
 * Resolves one field from where the editor's TypedInput points. A blank field reads
 * `msg[blankReads]` when that is given, else it is unset. A msg property never wins over a
 * value set on the node. An evaluation failure (bad JSON, bad JSONata) becomes an
 * invalid-input error naming the field.
 */
export async function resolveField(RED: NodeAPI, node: Node, msg: NodeMessage, source: FieldSource): Promise<ResolvedField> {
  const type = source.type || 'str';
  const text = (property?: string) => source.label === undefined ? undefined
    : property ? `${source.label} (msg.${property})` : source.label;
  if (isBlank(source)) {
    const fallback = source.blankReads;
    if (fallback && msg[fallback] !== undefined && msg[fallback] !== null) {
      return { label: `msg.${fallback}`, text: text(fallback), value: msg[fallback] };
    }
    return { label: source.field, text: text(fallback), value: undefined };
  }
  const label = type === 'msg' ? `msg.${String(source.value)}` : source.field;
  const named = text(type === 'msg' ? String(source.value) : undefined);
  try {
    const value = await evaluateProperty(RED, node, msg, source.value, type);
    return { label, text: named, value: value === null ? undefined : value };
  } catch (err) {
    throw fieldError({ label: source.field, text: named }, `could not evaluate the ${type} value: ${(err as Error).message}`);
  }
}

/**
 * An invalid-input error about a field: the message names it as the editor does
 * (`Folder fuid (msg.destinationFuid): is required`), msg.assetError.field keeps the short name.
 */
export function fieldError(field: { label: string; text?: string }, rule: string): AssetApiError {
  if (field.text === undefined) return invalidInput(field.label, rule);
  return new AssetApiError('invalid-input', `${field.text}: ${rule}`, { field: field.label });
}

/** Throws an invalid-input error when a required field is not set. */
export function required<T>(field: ResolvedField, value: T | undefined): T {
  if (value === undefined) throw fieldError(field, 'is required');
  return value;
}

/** A string, or undefined when unset or empty. Numbers are accepted and turned into text. */
export function asString(field: ResolvedField): string | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  throw fieldError(field, `must be a string, got ${describe(v)}`);
}

/** An integer (number or decimal text), or undefined when unset or empty. */
export function asInteger(field: ResolvedField): number | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (isIntegerText(v)) {
    const n = exactInteger(v);
    if (typeof n === 'number') return n;
  }
  throw fieldError(field, `must be an integer, got ${describe(v)}`);
}

/** A finite number (number or decimal text, fractions allowed), or undefined when unset or empty. */
export function asNumber(field: ResolvedField): number | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\s*-?(\d+\.?\d*|\.\d+)\s*$/.test(v)) return Number(v);
  throw fieldError(field, `must be a number, got ${describe(v)}`);
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
  if (isIntegerText(v)) return exactInteger(v);
  throw fieldError(field, `must be an integer, got ${describe(v)}`);
}

/** A bad editor setting; the message names the setting and the rule ("dedupMax: must be ..."). */
export class SettingError extends Error {}

/**
 * True for an editor setting left blank: unset, empty or only spaces; its default then applies.
 * The editor's copy is DamEditor.isBlankSetting (test/api/editor-rules.test.js compares them).
 */
export function isBlankSetting(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/**
 * A number setting from the editor: blank (see {@link isBlankSetting}) is `fallback`; anything
 * else must be a finite number that passes `check`. Editor copy: DamEditor.numberSetting.
 * @throws SettingError "field: rule"
 */
export function numberSetting(value: unknown, field: string, fallback: number, check: (n: number) => boolean, rule: string): number {
  if (isBlankSetting(value)) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || !check(n)) throw new SettingError(`${field}: ${rule}`);
  return n;
}

/** A boolean (true/false or the text "true"/"false"), or undefined when unset or empty. */
export function asBoolean(field: ResolvedField): boolean | undefined {
  const v = field.value;
  if (v === undefined || v === '') return undefined;
  const flag = readFlag(v);
  if (flag !== undefined) return flag;
  throw fieldError(field, `must be true or false, got ${describe(v)}`);
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

/** Work waiting for its turn: started with its request, or dropped with an error on close. */
export interface Waiting {
  start(request: ActiveRequest): void;
  drop(err: AssetApiError): void;
}


/** Requests a node runs at once unless its editor says otherwise. */
export const DEFAULT_IN_FLIGHT_LIMIT = 2;
/** Highest "Parallel requests" the editor accepts. */
export const MAX_IN_FLIGHT_LIMIT = 32;

/**
 * Runs a node's requests, at most `limit` at once, the rest queued in arrival order, and
 * drives its status: blue "n running" or "n running, m queued", percent while one transfer
 * runs alone, green text on success, red ring on failure. On close it aborts what runs and
 * drops the queue (see {@link RequestTracker.close}).
 */
export class RequestTracker {
  private readonly active = new Set<Entry>();
  private readonly waiting: Waiting[] = [];
  /** True once the node is closing: failures after that are aborts, not errors. */
  closing = false;

  constructor(private readonly RED: NodeAPI, private readonly node: Node, readonly limit = DEFAULT_IN_FLIGHT_LIMIT) {}

  get count(): number { return this.active.size; }
  get queued(): number { return this.waiting.length; }

  /** Starts `work` now when fewer than `limit` requests run, else queues it. */
  submit(work: Waiting): void {
    if (this.closing) { work.drop(this.droppedError(1)); return; }
    if (this.active.size < this.limit) { work.start(this.begin()); return; }
    this.waiting.push(work);
    this.showBusy();
  }

  /** Starts tracking a request (use {@link submit} to respect the limit). Call {@link end} exactly once. */
  begin(): ActiveRequest {
    const controller = new AbortController();
    let settle!: () => void;
    const settled = new Promise<void>(resolve => { settle = resolve; });
    const entry: Entry = {
      controller, signal: controller.signal, settled, settle, lastText: '', lastUpdate: 0,
      progress: (p) => this.showProgress(entry, p)
    };
    this.active.add(entry);
    this.showBusy();
    return entry;
  }

  /**
   * Stops tracking and starts the next queued work; shows a green status (or clears it) on
   * success, a red ring with the error's reason on failure.
   */
  end(request: ActiveRequest, outcome: { ok: true; text?: string } | { ok: false; error: unknown }): void {
    const entry = request as Entry;
    if (!this.active.delete(entry)) return;
    entry.settle();
    if (this.closing) return;
    const next = this.waiting.shift();
    if (next) next.start(this.begin());
    if (!outcome.ok) {
      this.node.status({ fill: 'red', shape: 'ring', text: errorStatusText(this.RED, outcome.error) });
    } else if (this.active.size > 0) {
      this.showBusy();
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
   * For the node's close handler: drops the queue (each waiting message fails with kind
   * `aborted`), aborts what is in flight, waits for those requests to settle (at most
   * `waitMs`, default 4 s, inside Node-RED's close timeout), clears the status.
   */
  async close(waitMs = 4000, names?: { running: string[]; queued: string[] }): Promise<void> {
    this.closing = true;
    const dropped = this.waiting.splice(0);
    if (dropped.length > 0) {
      this.node.warn(names?.queued.length ? statusText(this.RED, 'droppedNames', { count: dropped.length, names: nameList(names.queued) })
        : statusText(this.RED, 'dropped', { count: dropped.length }));
      const err = this.droppedError(dropped.length);
      for (const work of dropped) work.drop(err);
    }
    const pending = [...this.active].map(e => e.settled);
    const n = this.abortAll();
    if (n > 0) {
      this.node.warn(names?.running.length ? statusText(this.RED, 'abortedNames', { count: n, names: nameList(names.running) })
        : statusText(this.RED, 'aborted', { count: n }));
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(pending),
      new Promise<void>(resolve => { timer = setTimeout(resolve, waitMs); })
    ]);
    if (timer) clearTimeout(timer);
    this.node.status({});
  }

  private droppedError(queued: number): AssetApiError {
    return new AssetApiError('aborted', statusText(this.RED, 'droppedError', { queued }));
  }

  private showBusy(): void {
    if (this.closing) return;
    const text = this.waiting.length
      ? statusText(this.RED, 'queued', { count: this.active.size, queued: this.waiting.length })
      : statusText(this.RED, 'inFlight', { count: this.active.size });
    this.node.status({ fill: 'blue', shape: 'dot', text });
  }

  private showProgress(entry: Entry, p: TransferProgress): void {
    if (this.closing || this.active.size !== 1 || this.waiting.length > 0 || !this.active.has(entry)) return;
    const text = p.total
      ? statusText(this.RED, 'progress', { percent: Math.min(100, Math.floor((p.bytes / p.total) * 100)) })
      : statusText(this.RED, 'bytes', { size: formatBytes(p.bytes) });
    const now = Date.now();
    if (text === entry.lastText || now - entry.lastUpdate < STATUS_INTERVAL_MS) return;
    entry.lastText = text;
    entry.lastUpdate = now;
    this.node.status({ fill: 'blue', shape: 'dot', text });
  }
}

/** At most this many messages are named in one warning; the rest are counted. */
const NAMES_SHOWN = 5;

/** "a, b, c and 4 more". */
function nameList(names: string[]): string {
  const shown = names.slice(0, NAMES_SHOWN).join(', ');
  return names.length > NAMES_SHOWN ? `${shown} and ${names.length - NAMES_SHOWN} more` : shown;
}

/** `msg.filename "…/a.txt"`: a msg property and its value, short, for warnings about lost work. */
export function nameOf(property: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'number' || typeof value === 'bigint') return `msg.${property} ${String(value)}`;
  if (typeof value !== 'string') return undefined;
  return `msg.${property} "${value.length > 60 ? '…' + value.slice(-59) : value}"`;
}

/**
 * The editor's "Parallel requests" (`maxInFlight`): a whole number from 1 to
 * {@link MAX_IN_FLIGHT_LIMIT}; blank (flows saved before the setting, or only spaces) is the
 * default. Anything else warns once and uses the default.
 */
export function inFlightLimit(RED: NodeAPI, node: Node, value: unknown): number {
  if (isBlankSetting(value)) return DEFAULT_IN_FLIGHT_LIMIT;
  const n = typeof value === 'number' ? value : isIntegerText(value) ? Number(value) : NaN;
  if (Number.isInteger(n) && n >= 1 && n <= MAX_IN_FLIGHT_LIMIT) return n;
  node.warn(statusText(RED, 'badLimit', { max: MAX_IN_FLIGHT_LIMIT, default: DEFAULT_IN_FLIGHT_LIMIT }));
  return DEFAULT_IN_FLIGHT_LIMIT;
}

// ---------------------------------------------------------------- errors and the input handler

/** Longest status text under a node; the full message is in msg.error. */
const STATUS_MAX = 40;

/** A network error code's short reason, if it has one. */
function networkReason(code: string | undefined): keyof typeof STATUS_KEYS | undefined {
  if (code === 'ECONNREFUSED') return 'reasonRefused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'reasonNotFoundHost';
  if (code && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return 'reasonTls';
  return undefined;
}

/**
 * Short status text for an error, reason first, cut to fit under a node:
 * "auth: cookie rejected", "404: check base URL", "rejected: disk full", "fuid: is required".
 */
export function errorStatusText(RED: NodeAPI | undefined, err: unknown): string {
  let text: string;
  if (err instanceof AssetApiError) {
    const status = err.status;
    const code = err.code;
    switch (err.kind) {
      case 'auth':
        // A failed automatic login says so and when it tries again; a plain 401 is a rejected cookie.
        text = err.code === 'LOGIN_FAILED' ? `auth: ${withoutOperation(err)}`
          : err.code === 'LOGIN_REFUSED' ? statusText(RED, 'reasonLoginRefused') : statusText(RED, 'reasonAuth');
        break;
      case 'permission': text = statusText(RED, 'reasonPermission'); break;
      case 'timeout': text = statusText(RED, 'reasonTimeout'); break;
      case 'aborted': text = statusText(RED, 'reasonAborted'); break;
      case 'http':
        if (status === 404) text = statusText(RED, 'reasonNotFound');
        else if (status !== undefined && status >= 300 && status < 400) text = statusText(RED, 'reasonRedirect', { status });
        else if (status === 449 || status === 503) text = statusText(RED, 'reasonBusy', { status });
        else if (status !== undefined && status >= 500) text = statusText(RED, 'reasonServerError', { status });
        else if (status !== undefined && status >= 400) text = statusText(RED, 'reasonRefusedStatus', { status });
        else text = `http: ${withoutOperation(err)}`; // e.g. a 200 whose answer is not JSON
        break;
      case 'network': {
        const reason = networkReason(code);
        text = reason ? statusText(RED, reason) : code ? statusText(RED, 'reasonNetwork', { code }) : `network: ${withoutOperation(err)}`;
        break;
      }
      case 'rejected':
        text = `rejected: ${err.serverMessage ?? withoutOperation(err)}`;
        break;
      default: // invalid-input: the message is already "<field>: <rule>"
        text = withoutOperation(err);
    }
  } else {
    text = err instanceof Error ? err.message : String(err);
  }
  return text.length > STATUS_MAX ? text.slice(0, STATUS_MAX - 1) + '…' : text;
}

/** The message without a leading "<operation>: ". */
function withoutOperation(err: AssetApiError): string {
  return err.operation && err.message.startsWith(`${err.operation}: `) ? err.message.slice(err.operation.length + 2) : err.message;
}

/** True for an error of kind `aborted` (a request stopped by its AbortSignal). */
function isAbort(err: unknown): boolean {
  return err instanceof AssetApiError && err.kind === 'aborted';
}

/**
 * The body of an input handler: receives the msg and the tracked request, does the
 * work, sets output properties on the msg, and returns the green status text (or
 * nothing to clear the status). Throw to fail.
 */
export type InputWork = (msg: NodeMessage, request: ActiveRequest) => Promise<string | undefined>;

/** Options of {@link handleInputAndClose}. */
export interface InputOptions {
  /** The editor's "Parallel requests" (`config.maxInFlight`); see {@link inFlightLimit}. */
  maxInFlight?: unknown;
  /** Runs after the requests are settled on close (e.g. to release resources). */
  onClose?: () => void;
  /**
   * Names a message in the warnings and errors about work lost on close (`msg.filename "/in/a.txt"`,
   * `msg.fuid 1042`; see {@link nameOf}); undefined falls back to its `_msgid`.
   */
  describe?: (msg: NodeMessage) => string | undefined;
}

/**
 * Registers `node.on('input')` and `node.on('close')` around `work`:
 * - at most `maxInFlight` messages are worked on at once, the others wait in arrival order;
 * - success: `msg.assetError` of an earlier failure removed, `send(msg)` then `done()`;
 * - failure: red status, `msg.assetError` = the error's plain fields (kind, status,
 *   operation, field, serverMessage, code: Catch nodes only copy message and code into
 *   msg.error), then `done(err)` so Catch nodes receive the msg;
 * - close: every queued message ends in `done(err)` (kind `aborted`: it was never sent and
 *   the flow may want it again); the running ones are aborted and end in `done(err)` too (kind
 *   `aborted`; any other failure with its own error). One warning per kind names the messages
 *   (`options.describe`), so the loss shows in the debug sidebar even where no Catch node can
 *   take it: Node-RED delivers done(err) during a close only to Catch nodes that still run (see
 *   docs/architecture.md, "Work lost on close"). Close callback within 4 s.
 */
export function handleInputAndClose(RED: NodeAPI, node: Node, work: InputWork, options: InputOptions = {}): RequestTracker {
  const tracker = new RequestTracker(RED, node, inFlightLimit(RED, node, options.maxInFlight));
  /** Messages taken in and not finished, queued or running: named in the close's warnings. */
  const running = new Set<NodeMessage>();
  const queued = new Set<NodeMessage>();
  const named = (msg: NodeMessage) => options.describe?.(msg) ?? `msg._msgid ${String(msg._msgid)}`;
  /** The error of a message the close took away, naming it. */
  const lostError = (msg: NodeMessage, err: AssetApiError) => new AssetApiError('aborted', `${named(msg)}: ${err.message}`, { code: err.code });

  function fail(msg: NodeMessage, done: NodeDone, err: unknown): void {
    if (err instanceof AssetApiError) msg.assetError = err.toJSON();
    // The message as a string, as core nodes report errors: the debug sidebar shows an Error
    // object cut at about 80 characters, and the advice at the end of ours would be lost.
    done(err instanceof Error ? err.message : String(err));
  }

  node.on('input', (msg: NodeMessage, send: NodeSend, done: NodeDone) => {
    queued.add(msg);
    tracker.submit({
      drop: (err) => { queued.delete(msg); fail(msg, done, lostError(msg, err)); },
      start: (request) => {
        queued.delete(msg);
        running.add(msg);
        let task: Promise<string | undefined>;
        try { task = work(msg, request); } catch (err) { task = Promise.reject(err); }
        task.then(text => {
          running.delete(msg);
          tracker.end(request, { ok: true, text });
          delete msg.assetError;
          send(msg);
          done();
        }).catch((err: unknown) => {
          running.delete(msg);
          const closing = tracker.closing;
          tracker.end(request, { ok: false, error: err });
          // An abort by the close: done(err) naming the message, so that a Catch node that still
          // runs can send it again (close() has warned, naming it). Any other failure, even one
          // that settles during the close, is the message's own error.
          if (closing && isAbort(err)) {
            fail(msg, done, lostError(msg, new AssetApiError('aborted', statusText(RED, 'abortedError'))));
            return;
          }
          fail(msg, done, err);
        });
      }
    });
  });
  node.on('close', (_removed: boolean, closeDone: () => void) => {
    tracker.close(undefined, { running: [...running].map(named), queued: [...queued].map(named) }).then(() => {
      try { options.onClose?.(); } finally { closeDone(); }
    }, () => closeDone());
  });
  return tracker;
}
