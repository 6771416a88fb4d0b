/**
 * asset-event-in's Delivery setting, "at least once": the node's entries go into an inbox
 * (src/events/inbox) before the callback is answered 2xx, and leave it as messages until an
 * asset-event-ack node acknowledges them.
 *
 * - Settings: readDeliverySettings (each problem names the field and the rule).
 * - The inbox of a node is `dam-assets-inbox/<node id>.journal` in Node-RED's user directory. A
 *   redeploy that keeps the node keeps it; removing the node removes it (with a warning naming
 *   how many entries were not acknowledged); a node switched back to "at most once" sends what it
 *   holds once, then removes it (file-leftovers.ts).
 * - The handle travels as `msg._inbox = { node, id, delivery }`: plain data, like websocket's
 *   `msg._session`, so it survives Node-RED's cloning (RED.util.cloneMessage deep-copies every
 *   property but req/res) in change, switch, function and link nodes.
 * - Running deliveries are listed by node id (runningDelivery) for the ack node and the sidebar.
 * - The DAM server away: deliveries held, one probe at a time (server-hold.ts).
 */
import * as path from 'path';
import type { CallbackEntry } from '../../api/types';
import { InboxFullError, JournalInbox, isAssetKey, orderKey, waitingEntries, type JournalInboxLoad, type Delivery, type Inbox, type InboxCounts, type NewEntry, type ParkedEntry } from '../../events/inbox';
import { SettingError, isBlankSetting, numberSetting } from '../shared';
import type { NodeMessage } from '../shared/node-red';
import { CallbackPacer, paceAbove } from './pacing';
import { ServerHold } from './server-hold';
import { warnKept, warnLost } from './inbox-warnings';

export const INBOX_DIRECTORY = 'dam-assets-inbox';

/** The editor properties of the Delivery setting (on asset-event-in). */
export interface DeliveryConfig {
  /** 'atMostOnce' (default) or 'atLeastOnce'. */
  delivery?: string;
  /** Inbox bound, entries. Default 10000. */
  inboxMax?: string | number;
  /** Inbox bound, MB (10^6 bytes) of the journal's records not acknowledged. Default 1024. */
  inboxMaxMB?: string | number;
  /** Entries in flight at once. Default 10. */
  maxInFlight?: string | number;
  /** Seconds before an entry not acknowledged is delivered again. Default 600. */
  visibilityTimeout?: string | number;
  /** Deliveries before an entry is parked. Default 5. */
  maxDeliveries?: string | number;
  /** Seconds before a rejected entry is delivered again (doubling each time). Default 10. */
  rejectBackoff?: string | number;
  /** Longest hold of a callback while the flow is behind (pacing.ts), seconds; 0: never held. Default 5. */
  holdMax?: string | number;
}

export interface DeliverySettings {
  maxEntries: number;
  /** Bound on the stored entries' bytes (types.ts passesBytes): the journal's records, or the Redis Stream's entry data. */
  maxBytes: number;
  maxInFlight: number;
  visibilityTimeoutMs: number;
  maxDeliveries: number;
  backoffMs: number;
  holdMaxMs: number;
}

export const DELIVERY_DEFAULTS = { inboxMax: 10000, inboxMaxMB: 1024, maxInFlight: 10, visibilityTimeoutS: 600, maxDeliveries: 5, rejectBackoffS: 10, holdMaxS: 5 } as const;

/** The handle on a msg from an at-least-once asset-event-in. */
export interface InboxHandle { node: string; id: string; delivery: number }

/** Undefined for "at most once"; else the checked settings. */
export function readDeliverySettings(config: DeliveryConfig, method: string, perCallback: boolean): DeliverySettings | undefined {
  const delivery = isBlankSetting(config.delivery) ? 'atMostOnce' : String(config.delivery);
  if (delivery === 'atMostOnce') return undefined;
  if (delivery !== 'atLeastOnce') throw new SettingError('delivery: must be "at most once" or "at least once"');
  if (method !== 'post') throw new SettingError('delivery: "at least once" needs method POST (a GET callback carries no entries)');
  if (perCallback) throw new SettingError('delivery: "at least once" acknowledges each entry: set output to one message per entry');
  const whole = (min: number) => (n: number) => Number.isInteger(n) && n >= min;
  return {
    maxEntries: numberSetting(config.inboxMax, 'inboxMax', DELIVERY_DEFAULTS.inboxMax, whole(1), 'must be a whole number, 1 or more'),
    maxBytes: Math.floor(1e6 * numberSetting(config.inboxMaxMB, 'inboxMaxMB', DELIVERY_DEFAULTS.inboxMaxMB, (n) => n >= 0.001, 'must be a number of MB, 0.001 (1 kB) or more')),
    maxInFlight: numberSetting(config.maxInFlight, 'maxInFlight', DELIVERY_DEFAULTS.maxInFlight, whole(1), 'must be a whole number, 1 or more'),
    visibilityTimeoutMs: 1000 * numberSetting(config.visibilityTimeout, 'visibilityTimeout', DELIVERY_DEFAULTS.visibilityTimeoutS, (n) => n > 0, 'must be a number of seconds above 0'),
    maxDeliveries: numberSetting(config.maxDeliveries, 'maxDeliveries', DELIVERY_DEFAULTS.maxDeliveries, whole(1), 'must be a whole number, 1 or more'),
    backoffMs: 1000 * numberSetting(config.rejectBackoff, 'rejectBackoff', DELIVERY_DEFAULTS.rejectBackoffS, (n) => n >= 0, 'must be a number of seconds, 0 or more'),
    // Below a server's callback timeout (the emulator's: 30 s), or the server gives the call up while it is held.
    holdMaxMs: 1000 * numberSetting(config.holdMax, 'holdMax', DELIVERY_DEFAULTS.holdMaxS, (n) => n >= 0 && n <= 25, 'must be a number of seconds from 0 to 25')
  };
}

/** The user directory, or undefined (an embedding without one: no inbox can be kept). */
export function userDirectory(settings: Record<string, any>): string | undefined {
  return typeof settings.userDir === 'string' && settings.userDir !== '' ? settings.userDir : undefined;
}

export function inboxFile(userDir: string, nodeId: string): string {
  return path.join(userDir, INBOX_DIRECTORY, nodeId.replace(/[^A-Za-z0-9_.-]/g, '_') + '.journal');
}

/**
 * What the inbox stores of one callback entry. Only an entry with an asset id has a revision: the
 * inbox keeps the newest revision of each key (for REVISION_HORIZON_MS), and an asset-less key is new every time.
 */
export function inboxEntry(entry: CallbackEntry, subscriptionId: string | undefined, receivedAt: string): NewEntry {
  const key = orderKey(entry?.assetId);
  const item: NewEntry = { key, entry, receivedAt };
  // An rrn beyond 2^53 (unsigned digits: the server's rrn counts up) stays exact digits in the entry;
  // it is compared as the nearest number, which never puts a newer rrn before an older one (two that
  // round to the same number count as equal: stored).
  const rrn = typeof entry?.rrn === 'string' && /^\d+$/.test(entry.rrn) ? Number(entry.rrn) : entry?.rrn;
  if (isAssetKey(key) && typeof rrn === 'number' && Number.isFinite(rrn)) item.revision = rrn;
  if (subscriptionId !== undefined) item.subscriptionId = subscriptionId;
  return item;
}

/** Where each of `some` (taken from `all` in order: the filters only leave entries out) is in `all`; undefined if one is not. */
function placesIn(all: readonly unknown[], some: readonly unknown[]): number[] | undefined {
  const places: number[] = new Array(some.length);
  let at = 0;
  for (let i = 0; i < some.length; i++) {
    while (at < all.length && all[at] !== some[i]) at++;
    if (at === all.length) return undefined;
    places[i] = at++;
  }
  return places;
}

/** The msg of an entry, as at-most-once sends it, plus the handle and the delivery count. */
export function entryMessage(entry: unknown, subscriptionId: string | undefined, receivedAt: string): NodeMessage {
  const msg: NodeMessage = { payload: entry, receivedAt };
  if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
  const action = (entry as CallbackEntry | null)?.action;
  if (typeof action === 'string') msg.topic = action;
  return msg;
}

/** Why a callback could not be stored: answered 503, said in the status. */
export class InboxRefusal extends Error {
  constructor(message: string, readonly full: boolean) { super(message); }
}

export interface DeliveryHooks {
  /** Sends on output 1 (an entry) or 2 (an entry just parked). */
  send(msg: NodeMessage, output: 0 | 1): void;
  warn(text: string): void;
  log(text: string): void;
  /** Counts or problems changed: refresh the status. */
  changed(): void;
  t(key: string, english: string, params?: Record<string, unknown>): string;
}

/** Opens an inbox other than the journal one; `load` as the journal's (nothing torn or parked: zeros, empty). */
export type InboxOpener = () => Promise<{ inbox: Inbox; load: JournalInboxLoad }>;

const running = new Map<string, AtLeastOnceDelivery>();

/** The at-least-once delivery of a running asset-event-in, by node id (for the ack node and the sidebar). */
export function runningDelivery(nodeId: string): AtLeastOnceDelivery | undefined {
  return running.get(nodeId);
}

/** Longest timer Node's setTimeout keeps (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class AtLeastOnceDelivery {
  /** Why storing fails now ('' once a store works): shown in the status. */
  problem = '';
  private inbox: Inbox | undefined;
  private readonly opening: Promise<Inbox>;
  private pumping = false;
  private pumpAgain = false;
  /** The last acknowledgement's promise from the inbox, and what follows it (see acknowledgeIn). */
  private lastAcknowledging: Promise<boolean> | undefined;
  private lastAcknowledged: Promise<boolean> | undefined;
  /** A pump is due after this turn. */
  private pumpSoon = false;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (a new one only when this changes: a pump per acknowledgement must not churn timers). */
  private timerAt: number | undefined;
  private closed = false;
  /** Holds callbacks while the flow is behind (pacing.ts). */
  private readonly pacer: CallbackPacer;
  /** Deliveries held while the DAM server is away. */
  private readonly hold: ServerHold;

  /** `source`: the journal file, or an opener of another inbox (inbox-choice.ts: the Redis Stream one). */
  constructor(readonly nodeId: string, source: string | InboxOpener, private readonly settings: DeliverySettings, private readonly hooks: DeliveryHooks) {
    running.set(nodeId, this);
    this.hold = new ServerHold(settings, hooks);
    const above = paceAbove(settings.maxInFlight, settings.maxEntries);
    this.pacer = new CallbackPacer(() => {
      const c = this.inbox?.counts();
      return !!c && waitingEntries(c) > above;
    }, settings.holdMaxMs);
    const file = typeof source === 'string' ? source : 'Redis';
    this.opening = (typeof source === 'string' ? JournalInbox.open(source, { ...settings, warn: (text) => hooks.warn(text) }) : source()).then(({ inbox, load }) => {
      if (load.tornBytes > 0) hooks.warn(hooks.t('inbox.torn', 'inbox: the last record was cut off by a crash (__bytes__ bytes); it was never answered, the server sends it again', { bytes: load.tornBytes }));
      if (load.corrupt > 0) hooks.warn(hooks.t('inbox.corrupt', 'inbox: __count__ damaged records skipped in __file__', { count: load.corrupt, file }));
      if (this.closed) { void inbox.close(); return inbox; }
      this.inbox = inbox;
      for (const p of load.parkedAtLoad) this.parked(p);
      this.hooks.changed();
      this.pump();
      return inbox;
    });
    this.opening.catch((err: Error) => {
      this.problem = hooks.t('inbox.open-failed', 'inbox cannot be opened: __message__', { message: err.message });
      hooks.warn(this.problem);
      hooks.changed();
    });
  }

  /** Before a callback is filtered and stored: resolves once the flow is not too far behind (pacing.ts). */
  paced(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const held = this.pacer.holding;
    const going = this.pacer.wait();
    if (this.pacer.holding !== held) this.hooks.changed();
    return going;
  }

  /** Callbacks held now (for the status). */
  get holding(): number {
    return this.pacer.holding;
  }

  /**
   * Stores one callback's entries durably; rejects with InboxRefusal when it cannot (answer 503).
   * Resolves with how many were left out as repeats: older than a stored revision of their asset (or an earlier entry of it in the callback).
   * `callback`: its JSON text and all its entries as read from it (`entries` are some of them, in order).
   */
  async store(entries: CallbackEntry[], subscriptionId: string | undefined, receivedAt: string,
    callback?: { text: string; entries: CallbackEntry[] }): Promise<number> {
    let inbox: Inbox;
    try {
      inbox = await this.opening;
    } catch (err) {
      throw new InboxRefusal(this.problem || String(err), false);
    }
    const items = entries.map((entry) => inboxEntry(entry, subscriptionId, receivedAt));
    let stale: number;
    try {
      const indexes = callback && placesIn(callback.entries, entries);
      stale = await inbox.store(items, indexes && { body: callback!.text, indexes, total: callback!.entries.length });
    } catch (err) {
      const full = err instanceof InboxFullError;
      const bytes = full && err.unit === 'bytes';
      const text = bytes ? this.hooks.t('inbox.full-bytes', 'inbox full (__mb__ MB)', { mb: err.capacity / 1e6 })
        : full ? this.hooks.t('inbox.full', 'inbox full (__count__)', { count: this.settings.maxEntries })
        : this.hooks.t('inbox.store-failed', 'inbox cannot store: __message__', { message: (err as Error).message });
      if (this.problem !== text) { this.problem = text; this.hooks.warn(text); this.hooks.changed(); }
      throw new InboxRefusal(text, full);
    }
    if (this.problem) { this.problem = ''; this.hooks.changed(); }
    this.pump();
    return stale;
  }

  /**
   * Hands out what is due, as long as the in-flight bound allows; then waits for the next due time.
   * After the current turn: the acknowledgements Node-RED delivers in one turn (one per msg) share one take.
   */
  pump(): void {
    if (this.closed || !this.inbox || this.pumpSoon) return;
    this.pumpSoon = true;
    setImmediate(() => { this.pumpSoon = false; this.pumpNow(); });
  }

  private pumpNow(): void {
    if (this.closed || !this.inbox) return;
    if (this.pumping) { this.pumpAgain = true; return; }
    this.pumping = true;
    const inbox = this.inbox;
    const loop = async () => {
      do {
        this.pumpAgain = false;
        // Held: take(0) still parks what timed out on its last delivery.
        const limit = this.hold.room(this.settings.maxInFlight);
        const { deliveries, parked } = await inbox.take(limit);
        if (this.closed) return;
        this.hold.took(limit, deliveries);
        for (const p of parked) this.parked(p);
        for (const d of deliveries) this.deliver(d);
        // Also after an empty take: acknowledgements written since (a pump follows each) are no longer counted as waiting.
        if (this.pacer.holding) { this.pacer.release(); if (!this.pacer.holding) this.hooks.changed(); }
        if (parked.length) this.hooks.changed();
      } while (this.pumpAgain && !this.closed);
    };
    loop().catch((err: Error) => this.hooks.warn(`inbox: ${err.message}`)).finally(() => {
      this.pumping = false;
      if (this.pumpAgain) { this.pumpNow(); return; }
      this.arm();
    });
  }

  /** A timer for the next entry due (a backoff or a visibility timeout; while held, the next probe). */
  private arm(): void {
    const due = this.closed ? undefined : this.hold.dueAt(() => this.inbox?.nextDueAt());
    if (this.timer && due === this.timerAt) return;
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    this.timerAt = due;
    if (due === undefined) return;
    this.timer = setTimeout(() => { this.timer = undefined; this.timerAt = undefined; this.pump(); }, Math.min(MAX_TIMER_MS, Math.max(0, due - Date.now())));
  }

  private deliver(d: Delivery): void {
    const msg = entryMessage(d.entry, d.subscriptionId, d.receivedAt);
    msg.redelivered = d.delivery - 1;
    msg._inbox = { node: this.nodeId, id: d.id, delivery: d.delivery } satisfies InboxHandle;
    this.hooks.send(msg, 0);
  }

  private parked(p: ParkedEntry): void {
    this.hooks.warn(this.hooks.t('inbox.parked', 'entry parked after __count__ deliveries (asset __asset__): __reason__', {
      count: p.deliveries, asset: (p.entry as CallbackEntry | null)?.assetId ?? '-', reason: p.reason
    }));
    const msg = entryMessage(p.entry, p.subscriptionId, p.receivedAt);
    msg.parked = { id: p.id, deliveries: p.deliveries, reason: p.reason, parkedAt: p.parkedAt };
    this.hooks.send(msg, 1);
  }

  /** The ack node: done. False when the entry is not in flight with this delivery any more. */
  acknowledge(handle: InboxHandle): Promise<boolean> {
    // No wait for `opening` once open (a promise turn per entry).
    return this.inbox ? this.acknowledgeIn(this.inbox, handle) : this.opening.then((inbox) => this.acknowledgeIn(inbox, handle));
  }

  private acknowledgeIn(inbox: Inbox, handle: InboxHandle): Promise<boolean> {
    this.hold.acknowledged(handle);
    const acknowledging = inbox.acknowledge(handle.id, handle.delivery);
    this.pump(); // its in-flight slot is free already
    // An inbox may answer the acknowledgements written together with one promise: then one follow-up for them all.
    if (acknowledging !== this.lastAcknowledging) {
      this.lastAcknowledging = acknowledging;
      this.lastAcknowledged = acknowledging.then((ok) => {
        this.pump(); // the next entry of its asset may go
        this.hooks.changed();
        return ok;
      });
    }
    return this.lastAcknowledged!;
  }

  /**
   * The ack node: not done, deliver again after a backoff (or park after the last delivery).
   * `failure`: the msg's assetError and the failed node's id, which may say the server is away (server-hold.ts).
   */
  async reject(handle: InboxHandle, reason: string, failure?: { assetError?: unknown; nodeId?: unknown }): Promise<'again' | 'parked' | undefined> {
    const inbox = await this.opening;
    const rejecting = inbox.reject(handle.id, handle.delivery, reason, this.hold.rejected(handle, reason, failure));
    this.pump();
    const outcome = await rejecting;
    if (outcome !== undefined && outcome !== 'again') this.parked(outcome);
    this.pump();
    this.hooks.changed();
    return outcome === undefined || outcome === 'again' ? outcome : 'parked';
  }

  /** Why deliveries are held (the DAM server away), short; undefined when they are not. */
  get heldFor(): string | undefined {
    return this.hold.reasonText;
  }

  async parkedEntries(): Promise<ParkedEntry[]> {
    return (await this.opening).parked();
  }

  async deliverAgain(id: string): Promise<boolean> {
    const ok = await (await this.opening).deliverAgain(id);
    this.pump();
    this.hooks.changed();
    return ok;
  }

  async discard(id: string): Promise<boolean> {
    const ok = await (await this.opening).discard(id);
    this.hooks.changed();
    return ok;
  }

  counts(): InboxCounts | undefined {
    return this.inbox?.counts();
  }

  /** Stopped (redeploy, stop): the inbox stays. Removed from the flows: it goes, with a warning if it held entries. */
  async close(removed: boolean): Promise<void> {
    this.closed = true;
    this.pacer.release(true); // they find the node closed: 503
    if (running.get(this.nodeId) === this) running.delete(this.nodeId);
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    let inbox: Inbox;
    try { inbox = await this.opening; } catch { return; }
    if (!removed) { await inbox.close(); return; }
    // Sent at once: asset-redis may be closing in the same deploy (its last commands go within a few steps).
    const [, lost] = await Promise.all([inbox.keptForOthers && warnKept(inbox.keptForOthers(), this.hooks), inbox.destroy()]);
    warnLost(lost, this.hooks);
  }
}
