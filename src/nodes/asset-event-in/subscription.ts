/**
 * The subscription an asset-event-in node owns ("manage subscription"): registered once the
 * route is up (the same id replaces an old registration), retried with backoff, registered
 * again after an automatic login, deleted when the node is removed from the flow. What a node
 * registered is kept in the subscription registry, so that one left behind (id or server
 * changed, node removed while Node-RED was stopped, server unreachable) is deleted later.
 */
import type { EventEmitter } from 'events';
import type { AssetClient } from '../../api/client';
import { AssetApiError } from '../../api/errors';
import type { SubscriptionFields } from '../../api/types';
import { errorStatusText } from '../shared';
import { noCookieError } from '../asset-server/options';
import type { NodeAPI } from '../shared/node-red';
import { deleteRecorded, deleteWith, registryFor, type RegisteredSubscription } from './registry';
import { enabledFlowNodes } from '../shared/flows';
import { derivedSubscriptionId } from './settings';

/** Backoff between registration attempts: 5 s, doubling, at most 5 min. */
export const RETRY_FIRST_MS = 5000;
export const RETRY_MAX_MS = 300000;

/** asset-event-in's catalogue text with an English fallback. */
export type EventInText = (key: string, english: string, params?: Record<string, unknown>) => string;

/** What an owned subscription needs: the client, id and fields to register, and its registry record. */
export interface OwnedSetup {
  client: AssetClient;
  id: string;
  fields: SubscriptionFields;
  t: EventInText;
  recorded: RegisteredSubscription;
}

/**
 * A subscription the node owns: registered on start (same id replaces an old
 * registration), retried with backoff, deleted on close when the node is removed.
 */
export class OwnedSubscription {
  private timer: NodeJS.Timeout | undefined;
  private abort: AbortController | undefined;
  private delayMs = RETRY_FIRST_MS;
  private closed = false;
  /** True while a registration request is in flight. */
  private registering = false;
  /** True while waiting for a first session cookie (none configured, no automatic login). */
  private noSession = false;

  constructor(
    readonly setup: OwnedSetup,
    /** `error`: the short text for the status under the node; `detail`: the whole error, for the sidebar. */
    private readonly onState: (state: 'registering' | 'registered' | 'failed', error?: string, detail?: string) => void,
    private readonly logError: (message: string) => void
  ) {
    setup.client.on('session-renewed', this.registerAgain);
    setup.client.on('cookie-set', this.retryNow);
  }

  /**
   * An automatic login followed a 401: the old session is gone, and with it possibly what the
   * server tied to it, so the subscription is registered again (same id: it replaces itself).
   */
  private readonly registerAgain = (): void => {
    // A registration in flight goes through the same client, which repeats it with the new
    // session itself; aborting it here would hide a refused session and log in again at once.
    if (this.closed || this.registering) return;
    this.delayMs = RETRY_FIRST_MS;
    void this.start();
  };

  /** A cookie set at run time: a registration waiting to retry, or for a first cookie, goes now. */
  private readonly retryNow = (): void => {
    if (this.timer || this.noSession) this.registerAgain();
  };

  /** Registers now (a pending retry is replaced); resolves with the error text, or undefined on success. */
  start(): Promise<string | undefined> {
    if (this.closed) return Promise.resolve('the node is closing');
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.abort?.abort();
    const { client, id, fields } = this.setup;
    // No cookie configured and none set yet (a flow sets it with asset-session): nothing to send;
    // the cookie-set event starts the registration.
    this.noSession = !client.hasSession;
    if (this.noSession) {
      const err = noCookieError();
      this.onState('failed', this.setup.t('status.no-session', 'waiting for a session cookie'), `${err.kind}: ${err.message}`);
      return Promise.resolve(`${err.kind}: ${err.message}`);
    }
    this.onState('registering');
    const abort = this.abort = new AbortController();
    this.registering = true;
    const settled = (): void => { if (abort === this.abort) this.registering = false; };
    return client.registerSubscription(id, fields, { signal: abort.signal }).finally(settled).then(() => {
      if (this.closed || abort.signal.aborted) return undefined;
      this.delayMs = RETRY_FIRST_MS;
      this.onState('registered');
      return undefined;
    }, (err: unknown) => {
      if (this.closed || abort.signal.aborted) return (err as Error)?.message ?? String(err);
      const kind = err instanceof AssetApiError ? err.kind : 'error';
      const message = err instanceof Error ? err.message : String(err);
      // A rule broken in the node's own settings will not heal by waiting.
      const retry = kind !== 'invalid-input';
      this.logError(this.setup.t('errors.register', 'registering subscription __id__ failed (__kind__): __message__', { id, kind, message })
        + (retry ? ' ' + this.setup.t('errors.retry', '(retry in __seconds__ s)', { seconds: Math.round(this.delayMs / 1000) }) : ''));
      this.onState('failed', errorStatusText(undefined, err), `${kind}: ${message}`);
      if (retry) {
        this.timer = setTimeout(() => { this.start(); }, this.delayMs);
        this.delayMs = Math.min(this.delayMs * 2, RETRY_MAX_MS);
      }
      return `${kind}: ${message}`;
    });
  }

  /**
   * Stops retrying; when the node was removed, deletes the subscription (bounded in time).
   * Resolves the error when that deletion failed.
   */
  async close(removed: boolean): Promise<Error | undefined> {
    this.closed = true;
    this.setup.client.off('session-renewed', this.registerAgain);
    this.setup.client.off('cookie-set', this.retryNow);
    if (this.timer) clearTimeout(this.timer);
    this.abort?.abort();
    if (!removed) return undefined; // redeploy or restart: the new node registers the same id again
    const { client, id } = this.setup;
    const failure = await deleteWith(client, id);
    if (failure) {
      this.logError(this.setup.t('errors.delete', 'deleting subscription __id__ failed: __message__', { id, message: failure.message })
        + ' ' + this.setup.t('errors.delete-later', '(tried again on the next start)'));
    }
    return failure;
  }
}

/**
 * True when a running asset-event-in (or `self`, being set up now) records the same base URL and
 * subscription id: deleting it would take that node's subscription away (an undone removal, a
 * pasted copy with the same fixed id, a node moved to another config node for the same server).
 */
function ownedByLiveNode(RED: NodeAPI, subscription: RegisteredSubscription, self?: string): boolean {
  const mine = self === undefined ? undefined : registryFor(RED).get(self);
  return (mine !== undefined && sameServerAndId(mine, subscription)) || otherOwner(RED, subscription, self) !== undefined;
}

/** The id of a running asset-event-in other than `self` that records the same base URL and subscription id. */
function otherOwner(RED: NodeAPI, subscription: RegisteredSubscription, self?: string): string | undefined {
  const registry = registryFor(RED);
  return registry.nodeIds().find((nodeId) => {
    const other = registry.get(nodeId);
    return nodeId !== self && other !== undefined && sameServerAndId(other, subscription) && RED.nodes.getNode(nodeId)?.type === 'asset-event-in';
  });
}

/**
 * Which enabled asset-event-in of the flows manages `subscription` (the same base URL and id): the
 * one the registry records for it (it had it), else the first in the flows; `self` when no other
 * does. Not the one started first: that depends on the order of the flows and of a deploy.
 */
export function ownerOf(RED: NodeAPI, subscription: RegisteredSubscription, self: string): string {
  const registry = registryFor(RED);
  const managers = enabledFlowNodes(RED).filter((n) => {
    if (n.type !== 'asset-event-in' || n.manage !== true) return false;
    const id = (typeof n.subscriptionId === 'string' ? n.subscriptionId.trim() : '') || derivedSubscriptionId(n.id);
    const server = typeof n.server === 'string' ? RED.nodes.getNode(n.server) as { baseUrl?: unknown } | null : null;
    return id === subscription.id && server?.baseUrl === subscription.baseUrl;
  }).map((n) => n.id);
  if (managers.length < 2 || !managers.includes(self)) return self;
  return managers.find((id) => { const r = registry.get(id); return r !== undefined && sameServerAndId(r, subscription); }) ?? managers[0];
}

function sameServerAndId(a: RegisteredSubscription, b: RegisteredSubscription): boolean {
  return a.baseUrl === b.baseUrl && a.id === b.id;
}

/**
 * Deletes a subscription recorded in the registry, unless a running node owns it now; one the
 * server cannot be reached for now is kept for the next start.
 */
export function releaseSubscription(RED: NodeAPI, t: EventInText, recorded: RegisteredSubscription, warn: (message: string) => void, self?: string): void {
  const registry = registryFor(RED);
  if (ownedByLiveNode(RED, recorded, self)) return;
  deleteRecorded(RED, recorded).then((outcome) => {
    if (outcome === undefined) return;
    if (outcome === 'no-server') {
      warn(t('errors.orphan-no-server', 'subscription __id__ on __server__ was not deleted: its server is no longer configured here; delete it there by hand',
        { id: recorded.id, server: recorded.baseUrl }));
      return;
    }
    registry.addOrphan(recorded);
    warn(t('errors.orphan-later', 'deleting subscription __id__ failed: __message__ (tried again on the next start)', { id: recorded.id, message: outcome.message }));
  }, () => undefined);
}

/** The registry sweep listening on each runtime's events (replaced when the module registers again). */
const sweepListeners = new WeakMap<EventEmitter, () => void>();

/**
 * On each start of the flows: deletes what nodes that no longer exist (removed or disabled
 * while Node-RED was stopped) registered, and retries deletions that failed before.
 */
export function sweepRegistryOnStart(RED: NodeAPI, t: EventInText): void {
  function sweepRegistry(): void {
    const registry = registryFor(RED);
    if (!registry.persistent) return;
    const warn = (message: string) => RED.log.warn(`asset-event-in: ${message}`);
    for (const nodeId of registry.nodeIds()) {
      const live = RED.nodes.getNode(nodeId);
      if (live && live.type === 'asset-event-in') continue;
      const recorded = registry.get(nodeId)!;
      registry.forget(nodeId);
      releaseSubscription(RED, t, recorded, warn);
    }
    for (const orphan of registry.orphans()) {
      registry.removeOrphan(orphan);
      releaseSubscription(RED, t, orphan, warn);
    }
  }
  const events = (RED as NodeAPI & { events?: EventEmitter }).events;
  if (!events || typeof events.on !== 'function') return;
  // One listener per runtime, also when the module is registered again (the test helper does).
  const previous = sweepListeners.get(events);
  if (previous) events.off('flows:started', previous);
  sweepListeners.set(events, sweepRegistry);
  events.on('flows:started', sweepRegistry);
}
