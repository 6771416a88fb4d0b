/**
 * {@link RequestTracker}: runs at most `limit` requests at once and queues the rest in arrival
 * order (status "2 running, 15 queued"), shows percent progress, gives each request an
 * AbortSignal, aborts the running ones and drops the queue on close.
 */
import { AssetApiError } from '../../api/errors';
import type { TransferProgress } from '../../api/transfer';
import { isIntegerText } from '../../api/values';
import { isBlankSetting } from './fields';
import type { Node, NodeAPI } from './node-red';
import { STATUS_INTERVAL_MS, errorStatusText, formatBytes, statusText } from './texts';

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
