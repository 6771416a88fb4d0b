/**
 * One asset-event-in's callback endpoint: what it does with a callback (checks, duplicate filter,
 * messages, answer) and the state a reader needs to follow it, as fields of one class:
 * `closed`, the counters shown in the status, the owned subscription's state, the filter's problem.
 * The node (index.ts) builds it from its settings, routes requests to {@link handle}, and sets
 * `closed` and the subscription state.
 */
import { randomBytes } from 'crypto';
import type { IncomingMessage, ServerResponse } from 'http';
import { redactSecrets } from '../../api/errors';
import type { CallbackEntry } from '../../api/types';
import { waitingEntries } from '../../events/inbox';
import {
  ClaimLapsedError, LARGE_BODY_RETRY_AFTER_S, largeBodies, parseCallbackPayload, readJsonBody, secretMatches, yieldToEventLoop,
  type BodyGate, type EntryFilter
} from '../../events';
import type { EventInStats } from '../shared/event-in-stats';
import type { Node, NodeMessage, NodeStatus } from '../shared/node-red';
import { STATUS_INTERVAL_MS, clockTime, cutText } from '../shared/texts';
import { cutAndClaim } from './chunks';
import { InboxRefusal, type AtLeastOnceDelivery } from './delivery';
import { reply } from './route';
import type { Settings } from './settings';

/** At most one warning of a kind per this interval (a hostile caller must not flood the log). */
const WARN_INTERVAL_MS = 60000;

/** The last time a warning of one kind went out; `due` says whether the next may go now (and counts it). */
class WarnedAt {
  private at = 0;

  due(): boolean {
    const now = Date.now();
    if (now - this.at < WARN_INTERVAL_MS) return false;
    this.at = now;
    return true;
  }
}

/** Locale text of asset-event-in with an English fallback. */
export type EventInText = (key: string, english: string, params?: Record<string, unknown>) => string;

export type SubscriptionState = 'none' | 'registering' | 'registered' | 'failed';

/** Replaces every occurrence of the secret (should a message ever echo it) with ***. */
export function redact(text: string, secret: string | undefined): string {
  return redactSecrets(text, [secret]);
}

/**
 * What one callback's entries became: `sent` messages, `entries` emitted, `busy` entries another
 * copy is emitting now (answer 503: the retry finds them emitted), `closing` when the node closed
 * while the filter answered, `undo` for when it closes before its flow got them.
 */
type Emitted = { sent: number; entries: number; busy: number; closing?: boolean; undo?: () => Promise<void>; unconfirmed?: boolean };

/** Longest status text under the node; the whole text is in the log (and the DAM tab). */
const STATUS_MAX = 60;

/** The text, cut with an ellipsis when longer than {@link STATUS_MAX}, so a cut is seen as one (issue 23 #10). */
export function shortStatus(text: string): string {
  return cutText(text, STATUS_MAX);
}

export class EventInEndpoint {
  /** Set when the node closes: callbacks still running answer 503 so that the server retries. */
  closed = false;
  lastEventAt: Date | undefined = undefined;
  duplicates = 0;
  empties = 0;
  rejected = 0;
  private readonly rejectWarned = new WarnedAt();
  private readonly busyWarned = new WarnedAt();
  /** The owned subscription's state and its last error (set by the node). */
  subscription: SubscriptionState = 'none';
  subscriptionError = '';
  /** Why the last callback could not ask the duplicate filter (Redis down or slow); '' once it answers. */
  filterProblem = '';
  private readonly filterWarned = new WarnedAt();
  private statusTimer: NodeJS.Timeout | undefined;
  private lastCallbackStatusAt = 0;
  /** Delivery "at least once": the inbox the entries go to (delivery.ts); set by the node. */
  delivery: AtLeastOnceDelivery | undefined;

  constructor(
    private readonly node: Node,
    private readonly settings: Settings,
    private readonly filter: EntryFilter | undefined,
    private readonly stats: EventInStats,
    private readonly secret: string | undefined,
    private readonly t: EventInText
  ) {}

  showStatus(): void {
    this.stopStatusTimer();
    if (this.closed) return;
    const { node, settings, t } = this;
    const parts: string[] = [];
    if (settings.subscriptionId) parts.push(settings.subscriptionId);
    if (this.subscription === 'failed') {
      node.status({ fill: 'red', shape: 'ring', text: shortStatus([...parts, this.subscriptionError].join(' · ')) });
      return;
    }
    if (this.filterProblem || this.delivery?.problem) {
      node.status({ fill: 'red', shape: 'ring', text: shortStatus([...parts, this.filterProblem || this.delivery?.problem].join(' · ')) });
      return;
    }
    const parked = this.delivery?.counts()?.parked;
    if (parked) parts.push(t('status.parked', '__count__ parked', { count: parked }));
    if (this.delivery?.holding) parts.push(t('status.holding', 'flow behind: __count__ held', { count: this.delivery.holding }));
    const away = this.delivery?.heldFor;
    if (away) {
      const c = this.delivery!.counts();
      parts.push(t('status.server-away', 'server unavailable (__reason__): __count__ waiting', { reason: away, count: c ? waitingEntries(c) : 0 }));
    }
    if (this.subscription === 'registering') parts.push(t('status.registering', 'registering'));
    if (this.lastEventAt) parts.push(t('status.last', 'last event __time__', { time: clockTime(this.lastEventAt) }));
    if (this.duplicates) parts.push(t('status.duplicates', '__count__ dup dropped', { count: this.duplicates }));
    if (this.empties) parts.push(t('status.empties', '__count__ empty dropped', { count: this.empties }));
    if (this.rejected) parts.push(t('status.rejected', '__count__ rejected', { count: this.rejected }));
    if (!parts.length) { node.status({}); return; }
    const warning = this.subscription === 'registering' || !!away;
    // Parked entries wait for someone (the DAM tab's deliver again or discard): yellow, though running.
    const fill = warning || parked ? 'yellow' : 'green';
    const shape = warning ? 'ring' : 'dot';
    node.status({ fill, shape, text: shortStatus(parts.join(' · ')) } as NodeStatus);
  }

  stopStatusTimer(): void {
    if (this.statusTimer) { clearTimeout(this.statusTimer); this.statusTimer = undefined; }
  }

  /**
   * Status after a callback: at once when the last such update is STATUS_INTERVAL_MS old,
   * else once that interval has passed (the final state always shows). Building the text
   * goes through RED._ / i18next, too dear to do for every callback of a burst.
   */
  callbackStatus(): void {
    if (this.statusTimer || this.closed) return;
    const wait = this.lastCallbackStatusAt + STATUS_INTERVAL_MS - Date.now();
    const show = () => { this.lastCallbackStatusAt = Date.now(); this.showStatus(); };
    if (wait <= 0) show();
    else this.statusTimer = setTimeout(show, wait);
  }

  private rejectCall(res: ServerResponse, status: 400 | 401 | 413, reason: string): void {
    this.rejected++;
    this.stats.rejected(status, reason);
    if (this.rejectWarned.due()) this.node.warn(this.t('errors.rejected', 'callback rejected with __status__: __reason__', { status, reason }));
    reply(res, status, { success: false, error: reason });
    this.callbackStatus();
  }

  /**
   * Emits the entries of one callback that the duplicate filter lets through (see {@link Emitted}),
   * chunk by chunk (chunks.ts): each chunk's claim is confirmed, its reply awaited whatever the Redis
   * client's pipelining does, before the chunk is handed on (issue 26). A copy killed once its flow
   * has a chunk has confirmed it, so the server's retry does not emit it again; killed before, the
   * chunk's claim lapses after the lease and the retry emits it. A claim that lapsed before its
   * confirmation stops the callback there (503, the rest let go): another copy may have it. A
   * confirmation without an answer (Redis gone) may have landed: that chunk is handed on anyway,
   * as undoing it could lose it (the retry would find it emitted); the status turns red.
   */
  /** `text`: the callback's JSON text, when it was read as text (the inbox may keep it instead of the entries). */
  private async emitEntries(entries: CallbackEntry[], subscriptionId: string | undefined, receivedAt: string, text?: string): Promise<Emitted> {
    const { stats } = this;
    const cut = await cutAndClaim(entries, subscriptionId, this.filter, { emitEmpty: this.settings.emitEmpty, oneChunk: this.settings.perCallback || !!this.delivery });
    for (let i = 0; i < cut.empties; i++) { this.empties++; stats.empty(); }
    for (let i = 0; i < cut.duplicates; i++) { this.duplicates++; stats.duplicate(); }
    const { chunks, busy } = cut;
    // Chunks not (or perhaps not) in the flow: their claims go, so that the retry is emitted at once, not after the lease.
    const undoFrom = async (c: number) => { await Promise.all(chunks.slice(Math.max(0, c)).map((chunk) => chunk.claim?.undo().catch(() => undefined))); };
    // Closed while the filter answered: send nothing.
    if (this.closed) { await undoFrom(0); return { sent: 0, entries: 0, busy, closing: true }; }
    if (this.delivery) {
      const claim = chunks[0]?.claim;
      const kept = chunks[0]?.kept ?? [];
      // Stored before the answer; the inbox sends them. A failed store lets the claims go, so that the retry is not a duplicate.
      let stale: number;
      try {
        stale = await this.delivery.store(kept, subscriptionId, receivedAt, text === undefined ? undefined : { text, entries });
      } catch (err) {
        if (claim) await claim.undo().catch(() => undefined);
        throw err;
      }
      claim?.confirm().catch((err: unknown) => this.warnFilter(err));
      // Repeats the inbox recognised (older than a stored revision of their asset, or an earlier entry of it): counted as duplicates.
      for (let i = 0; i < stale; i++) { this.duplicates++; stats.duplicate(); }
      return { sent: 0, entries: kept.length - stale, busy };
    }
    const partsId = randomBytes(8).toString('hex');
    let sent = 0;
    let unconfirmed = false;
    for (let c = 0; c < chunks.length; c++) {
      if (c > 0) {
        await yieldToEventLoop(); // Node-RED delivers the last chunk; the editor and other callbacks are answered
        // Closed meanwhile: the last chunk may have been dropped with the stopped flow (as in deliveredWhileOpen).
        if (this.closed) { await undoFrom(c - 1); return { sent, entries: sent, busy, closing: true }; }
      }
      const { claim, kept } = chunks[c];
      if (claim) {
        try {
          await claim.confirm();
        } catch (err) {
          if (err instanceof ClaimLapsedError) { await undoFrom(c + 1); throw err; }
          unconfirmed = true; // outcome unknown: handed on anyway, the status stays red
          this.warnFilter(err);
        }
      }
      // Closed while the confirmation was awaited: this chunk is not handed on, its claim goes (see docs/scale-out.md).
      if (this.closed) { await undoFrom(c); return { sent, entries: sent, busy, closing: true }; }
      sent += this.sendChunk(kept, sent, cut.kept, partsId, subscriptionId, receivedAt);
    }
    return { sent, entries: cut.kept, busy, undo: chunks[chunks.length - 1]?.claim?.undo, unconfirmed };
  }

  /**
   * Sends one chunk (at most YIELD_EVERY messages, or the one message of a callback) and returns how
   * many messages went out; `index` and `count` are the messages' place in the whole callback.
   */
  private sendChunk(kept: CallbackEntry[], index: number, count: number, partsId: string, subscriptionId: string | undefined, receivedAt: string): number {
    if (kept.length === 0) return 0;
    const node = this.node;
    // Plain literals, not `{ ...common, payload }`: a spread per message is a measurable cost in bursts.
    if (this.settings.perCallback) {
      const msg: NodeMessage = { payload: kept, receivedAt };
      if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
      node.send(msg);
      return 1;
    }
    for (let i = 0; i < kept.length; i++) {
      const entry = kept[i];
      // type/len let a core join node in automatic mode rebuild the array of entries.
      const msg: NodeMessage = { payload: entry, receivedAt, parts: { id: partsId, index: index + i, count, type: 'array', len: 1 } };
      if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
      if (typeof entry.action === 'string') msg.topic = entry.action;
      // One send per message, as the core split node does: node.send([msgs]) deep-clones every
      // message after the first even on a single wire, though each is a new object.
      node.send(msg);
    }
    return kept.length;
  }

  /**
   * Node-RED hands sent messages to the next nodes on a later turn of the event loop
   * (setImmediate). Answering success before that turn would let a stop in between (deploy,
   * flows stopped, SIGINT) drop the messages while the server counts the delivery done. So the
   * answer waits for that turn; if the node closed meanwhile, the messages may have been
   * dropped with the stopped flow: answer 503 and the server sends them again.
   */
  private async deliveredWhileOpen(res: ServerResponse, undo?: () => Promise<void>): Promise<boolean> {
    await new Promise((resolve) => setImmediate(resolve));
    if (!this.closed) return true;
    // Before the answer: the retry may reach another copy at once.
    if (undo) await undo().catch(() => undefined);
    this.replyClosing(res);
    return false;
  }

  /**
   * No slot for a large body (body-slots.ts): 503 with Retry-After, its body not read; the server
   * sends it again. Not a rejection (the callback may be fine): logged at most once a minute.
   */
  private replyBusy(res: ServerResponse, reason: string): void {
    if (this.busyWarned.due()) this.node.warn(this.t('errors.busy', 'callback answered 503: __reason__', { reason }));
    if (!res.headersSent) res.setHeader('Retry-After', String(LARGE_BODY_RETRY_AFTER_S));
    reply(res, 503, { success: false, error: reason });
  }

  /** The node closed under a callback: 503, so that the server sends it again (to the new node). */
  private replyClosing(res: ServerResponse): void {
    reply(res, 503, { success: false, error: 'endpoint is closing' });
  }

  /** One request routed to this endpoint: a callback, a GET callback or a HEAD probe. */
  async handle(req: IncomingMessage & { query?: Record<string, unknown> }, res: ServerResponse): Promise<void> {
    const { settings, secret } = this;
    const receivedAt = new Date();
    if (secret && !secretMatches(req.headers[settings.secretHeader.toLowerCase()], secret)) {
      return this.rejectCall(res, 401, `shared secret header ${settings.secretHeader} missing or wrong`);
    }
    if (req.method === 'HEAD') {
      // express routes HEAD to GET routes: a probe of the endpoint, not a callback.
      reply(res, settings.successCode, {});
      return;
    }
    if (settings.method === 'get') {
      // A GET callback carries no body (spec 4.1 rule 12): one msg with the query parameters.
      const msg: NodeMessage = { payload: {}, query: { ...(req.query || {}) }, receivedAt: receivedAt.toISOString() };
      if (settings.subscriptionId) msg.subscriptionId = settings.subscriptionId;
      this.node.send(msg);
      this.lastEventAt = receivedAt;
      if (!await this.deliveredWhileOpen(res)) return;
      reply(res, settings.successCode, { success: true });
      this.stats.callback(receivedAt, 1);
      this.callbackStatus();
      return;
    }
    // A large body needs one of this Node-RED's slots (events/body-slots.ts), held until the answer.
    const ticket = largeBodies.ticket(req);
    try {
      await this.handleBody(req, res, receivedAt, ticket);
    } finally {
      ticket.release();
    }
  }

  /** A POST callback: its body read (through `gate`), checked, filtered, emitted or stored, answered. */
  private async handleBody(req: IncomingMessage, res: ServerResponse, receivedAt: Date, gate: BodyGate): Promise<void> {
    const { settings } = this;
    const body = await readJsonBody(req, settings.maxBodyBytes, settings.maxEntries, gate);
    if (!body.ok) return body.status === 503 ? this.replyBusy(res, body.reason) : this.rejectCall(res, body.status, body.reason);
    const parsed = parseCallbackPayload(body.value, settings.maxEntries);
    if (!parsed.ok) return this.rejectCall(res, parsed.status ?? 400, parsed.reason);
    if (settings.checkId && settings.subscriptionId && parsed.id !== settings.subscriptionId) {
      return this.rejectCall(res, 400, 'id: does not match the subscription of this endpoint');
    }
    // At least once, with the flow far behind: held a while, so that the server slows down (pacing.ts).
    if (this.delivery && parsed.entries.length > 0) {
      await this.delivery.paced();
      // The server gave the call up while it was held (its timeout): it sends it again, so nothing is stored now.
      if (req.socket.destroyed) return;
    }
    if (this.closed) {
      // Redeployed while reading (or held): the server will retry and reach the new node.
      this.replyClosing(res);
      return;
    }
    let outcome: Emitted;
    try {
      outcome = await this.emitEntries(parsed.entries, parsed.id ?? settings.subscriptionId, receivedAt.toISOString(), body.text);
    } catch (err) {
      if (err instanceof InboxRefusal) {
        reply(res, 503, { success: false, error: `${err.message}; send again later` });
        return;
      }
      return this.filterUnavailable(res, err);
    }
    if (outcome.closing) {
      this.replyClosing(res);
      return;
    }
    const { sent, entries, busy, undo, unconfirmed } = outcome;
    this.lastEventAt = receivedAt;
    if (sent > 0 && !await this.deliveredWhileOpen(res, undo)) return;
    if (this.filterProblem && !unconfirmed) { this.filterProblem = ''; this.showStatus(); }
    this.stats.callback(receivedAt, entries);
    if (busy > 0) {
      reply(res, 503, { success: false, error: 'entries are being emitted by another instance; send again later', received: parsed.entries.length, emitted: sent });
    } else {
      reply(res, settings.successCode, this.delivery
        ? { success: true, received: parsed.entries.length, stored: entries }
        : { success: true, received: parsed.entries.length, emitted: sent });
    }
    this.callbackStatus();
  }

  /**
   * The duplicate filter did not answer (Redis down or slow): nothing was emitted, and the answer
   * is 503 so that the server sends the callback again; shown in the status until it answers.
   */
  private filterUnavailable(res: ServerResponse, err: unknown): void {
    this.warnFilter(err);
    reply(res, 503, { success: false, error: 'duplicate filter unavailable; send again later' });
  }

  private warnFilter(err: unknown): void {
    const message = (err as Error)?.message ?? String(err);
    this.filterProblem = message.slice(0, 60);
    this.showStatus();
    if (this.filterWarned.due()) this.node.warn(this.t('errors.filter', 'duplicate filter: __message__', { message }));
  }

  /** The route's handler: a failure of {@link handle} is logged (secret redacted) and answered 500. */
  route(): (req: any, res: ServerResponse, next: (err?: unknown) => void) => void {
    return (req, res, next) => {
      if (this.closed) { next(); return; } // removed from the router, but a request may already be routed
      this.handle(req, res).catch((err: unknown) => {
        const message = redact(this.t('errors.internal', 'could not handle a callback: __message__', { message: (err as Error)?.message ?? String(err) }), this.secret);
        this.node.error(message);
        this.stats.error(message);
        reply(res, 500, { success: false, error: 'internal error' });
      });
    };
  }
}
