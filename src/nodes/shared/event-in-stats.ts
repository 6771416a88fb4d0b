/**
 * Live counters of each running asset-event-in node, for the editor's DAM sidebar.
 *
 * An asset-event-in node opens its entry when it starts and closes it when it stops;
 * it bumps the counters as callbacks arrive. The sidebar plugin reads the entries and
 * listens for changes (it throttles what it sends to the editor). Nothing secret is
 * kept here: reasons and errors are the texts the node already logs (secret redacted).
 */

/** Why a callback was refused, grouped so the list of reasons stays short. */
export type RejectReason = 'secret' | 'too-large' | 'wrong-id' | 'bad-payload';

export interface EventInCounters {
  /** Callbacks accepted (answered with the success status). */
  callbacks: number;
  /** Entries sent on as messages (per-callback output: the entries in the array). */
  entriesEmitted: number;
  duplicatesDropped: number;
  emptiesDropped: number;
  /** Refused callbacks by reason. */
  rejected: Record<RejectReason, number>;
  /** ISO time of the last accepted callback. */
  lastCallbackAt?: string;
  /** The last problem: a refused callback, a failed registration, an internal error. */
  lastError?: { at: string; message: string };
}

/** Subscription state of a node that owns its subscription. */
export interface OwnedState {
  state: 'registering' | 'registered' | 'failed';
  error?: string;
}

/** One node's entry. */
export class EventInStats {
  readonly counters: EventInCounters = {
    callbacks: 0, entriesEmitted: 0, duplicatesDropped: 0, emptiesDropped: 0,
    rejected: { 'secret': 0, 'too-large': 0, 'wrong-id': 0, 'bad-payload': 0 }
  };
  owned?: OwnedState;
  /**
   * Set by a node that owns its subscription: registers it now (the sidebar's
   * "register again"); resolves with the error text, or undefined on success.
   */
  registerNow?: () => Promise<string | undefined>;
  /** Set with registerNow: the owned subscription (asset-server node id, subscription id), and what the node shows once the sidebar deleted it. */
  ownedSubscription?: { server: string; id: string; deleted: () => void };

  constructor(readonly nodeId: string, private readonly notify: (stats: EventInStats) => void) {}

  callback(at: Date, entriesEmitted: number): void {
    this.counters.callbacks++;
    this.counters.entriesEmitted += entriesEmitted;
    this.counters.lastCallbackAt = at.toISOString();
    this.notify(this);
  }

  duplicate(): void { this.counters.duplicatesDropped++; }

  empty(): void { this.counters.emptiesDropped++; }

  rejected(status: number, reason: string): void {
    const group: RejectReason = status === 401 ? 'secret' : status === 413 ? 'too-large'
      : /^id:/.test(reason) ? 'wrong-id' : 'bad-payload';
    this.counters.rejected[group]++;
    this.error(`${status}: ${reason}`);
  }

  error(message: string): void {
    this.counters.lastError = { at: new Date().toISOString(), message: message.slice(0, 300) };
    this.notify(this);
  }

  subscription(state: OwnedState['state'], error?: string): void {
    this.owned = error ? { state, error } : { state };
    if (error) this.error(error); else this.notify(this);
  }

  /** What the sidebar shows (plain data). */
  view(): { nodeId: string; counters: EventInCounters; owned?: OwnedState } {
    const view: { nodeId: string; counters: EventInCounters; owned?: OwnedState } = { nodeId: this.nodeId, counters: this.counters };
    if (this.owned) view.owned = this.owned;
    return view;
  }
}

type Listener = (stats: EventInStats) => void;

const entries = new Map<string, EventInStats>();
const listeners = new Set<Listener>();

function notify(stats: EventInStats): void {
  if (entries.get(stats.nodeId) !== stats) return; // a closed node's late update
  for (const listener of listeners) {
    try { listener(stats); } catch { /* a listener's failure must not reach the callback route */ }
  }
}

/** The registry: one entry per running node id. */
export const eventInStats = {
  /** A node starts: a fresh entry (a redeployed node starts from zero). */
  open(nodeId: string): EventInStats {
    const stats = new EventInStats(nodeId, notify);
    entries.set(nodeId, stats);
    notify(stats);
    return stats;
  },
  /** A node stops: its entry goes unless a newer node of the same id has opened one. */
  close(stats: EventInStats): void {
    if (entries.get(stats.nodeId) === stats) entries.delete(stats.nodeId);
  },
  get(nodeId: string): EventInStats | undefined {
    return entries.get(nodeId);
  },
  /** The running node that owns subscription `id` on asset-server `server`, if one does. */
  owning(server: string, id: string): EventInStats | undefined {
    return [...entries.values()].find((s) => s.ownedSubscription?.server === server && s.ownedSubscription.id === id);
  },
  /** Calls `listener` after each change; returns the function that stops it. */
  onChange(listener: Listener): () => void {
    listeners.add(listener);
    return () => { listeners.delete(listener); };
  }
};
