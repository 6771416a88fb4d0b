/**
 * asset-event-in: the HTTP endpoint the asset server calls back (spec 2.3, 4.1 rule 12, section 6).
 *
 * - Settings: event-in-settings.ts. Route and body guard: event-in-route.ts (removed on close).
 * - Checks here: shared-secret header (401), content type / JSON / 2.3 shape / payload id
 *   (400), size (413). Then the duplicate filter, one msg per entry (or one per callback),
 *   then the success status once the messages are handed on.
 * - Optionally owns its subscription (event-in-subscription.ts): registered once the route is
 *   up, retried with backoff, deleted when the node is removed from the flow.
 * - Status under the node and live counters for the DAM sidebar.
 */
import { randomBytes } from 'crypto';
import type { IncomingMessage, ServerResponse } from 'http';
import { AssetApiError, redactSecrets } from '../api/errors';
import type { CallbackEntry } from '../api/types';
import {
  DuplicateFilter, contentTypeProblem, entryKey, isEmptyEntry, memoryEntryFilter, parseCallbackPayload, readJsonBody, secretMatches,
  type Claim, type EntryFilter
} from '../events';
import { eventInStats } from '../plugin/event-in-stats';
import type { AssetRedisConfigNode } from './asset-redis';
import type { AssetServerConfigNode } from './asset-server';
import { STATUS_INTERVAL_MS, SettingError, localText } from './common';
import { openRoute, reply } from './event-in-route';
import { callbackUrl, readSettings, subscriptionFields, type AssetEventInConfig, type Settings } from './event-in-settings';
import { OwnedSubscription, releaseSubscription, sweepRegistryOnStart, type OwnedSetup } from './event-in-subscription';
import type { Node, NodeAPI, NodeMessage, NodeStatus } from './node-red';
import { registryFor, sameSubscription, type RegisteredSubscription } from './subscription-registry';

export { DEFAULTS, callbackUrl, derivedSubscriptionId, type AssetEventInConfig } from './event-in-settings';

/** At most one warning per this interval for rejected callbacks (a hostile caller must not flood the log). */
const WARN_INTERVAL_MS = 60000;

/** Replaces every occurrence of the secret (should a message ever echo it) with ***. */
function redact(text: string, secret: string | undefined): string {
  return redactSecrets(text, [secret]);
}

function clockTime(date: Date): string {
  return date.toTimeString().slice(0, 8);
}

/**
 * What one callback's entries became: `sent` messages, `entries` emitted, `busy` entries another
 * copy is emitting now (answer 503: the retry finds them emitted), `closing` when the node closed
 * while the filter answered, `undo` for when it closes before its flow got them.
 */
type Emitted = { sent: number; entries: number; busy: number; closing?: boolean; undo?: () => Promise<void>; unconfirmed?: boolean };

export default function register(RED: NodeAPI): void {
  /** Locale string with an English fallback (the test helper's RED._ returns the key). */
  function t(key: string, english: string, params: Record<string, unknown> = {}): string {
    return localText(RED, `asset-event-in.${key}`, english, params);
  }

  function AssetEventInNode(this: Node, config: AssetEventInConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const secret = node.credentials?.secret || undefined;

    /** A setting that cannot work: said in the log and the status; the node then does nothing. */
    function refuse(err: unknown): void {
      const message = err instanceof Error ? err.message : String(err);
      node.error(t('errors.config', 'configuration: __message__', { message }));
      node.status({ fill: 'red', shape: 'ring', text: message.slice(0, 60) });
    }

    let settings: Settings;
    try {
      settings = readSettings(config, node.id);
    } catch (err) {
      refuse(err);
      return;
    }
    if (RED.settings.httpNodeRoot === false) {
      node.warn(t('errors.no-http', 'httpNodeRoot is false in the settings: no HTTP routes can be registered'));
      node.status({ fill: 'red', shape: 'ring', text: t('status.no-http', 'no httpNode') });
      return;
    }

    let filter: EntryFilter | undefined;
    try {
      filter = settings.dedup ? chooseFilter(config, settings.dedup) : undefined;
    } catch (err) {
      refuse(err);
      return;
    }
    const stats = eventInStats.open(node.id); // live counters for the editor's DAM sidebar
    const state = {
      closed: false,
      lastEventAt: undefined as Date | undefined,
      duplicates: 0,
      empties: 0,
      rejected: 0,
      lastWarnAt: 0,
      subscription: 'none' as 'none' | 'registering' | 'registered' | 'failed',
      subscriptionError: '',
      /** Why the last callback could not ask the duplicate filter (Redis down or slow); '' once it answers. */
      filterProblem: '',
      lastFilterWarnAt: 0
    };

    function showStatus(): void {
      if (statusTimer) { clearTimeout(statusTimer); statusTimer = undefined; }
      if (state.closed) return;
      const parts: string[] = [];
      if (settings.subscriptionId) parts.push(settings.subscriptionId);
      if (state.subscription === 'failed') {
        node.status({ fill: 'red', shape: 'ring', text: [...parts, state.subscriptionError].join(' · ') });
        return;
      }
      if (state.filterProblem) {
        node.status({ fill: 'red', shape: 'ring', text: [...parts, state.filterProblem].join(' · ') });
        return;
      }
      if (state.subscription === 'registering') parts.push(t('status.registering', 'registering'));
      if (state.lastEventAt) parts.push(t('status.last', 'last event __time__', { time: clockTime(state.lastEventAt) }));
      if (state.duplicates) parts.push(t('status.duplicates', '__count__ dup dropped', { count: state.duplicates }));
      if (state.empties) parts.push(t('status.empties', '__count__ empty dropped', { count: state.empties }));
      if (state.rejected) parts.push(t('status.rejected', '__count__ rejected', { count: state.rejected }));
      if (!parts.length) { node.status({}); return; }
      const fill = state.subscription === 'registering' ? 'yellow' : 'green';
      const shape = state.subscription === 'registering' ? 'ring' : 'dot';
      node.status({ fill, shape, text: parts.join(' · ') } as NodeStatus);
    }

    /**
     * Status after a callback: at once when the last such update is STATUS_INTERVAL_MS old,
     * else once that interval has passed (the final state always shows). Building the text
     * goes through RED._ / i18next, too dear to do for every callback of a burst.
     */
    let statusTimer: NodeJS.Timeout | undefined;
    let lastCallbackStatusAt = 0;
    function callbackStatus(): void {
      if (statusTimer || state.closed) return;
      const wait = lastCallbackStatusAt + STATUS_INTERVAL_MS - Date.now();
      const show = () => { lastCallbackStatusAt = Date.now(); showStatus(); };
      if (wait <= 0) show();
      else statusTimer = setTimeout(show, wait);
    }

    function rejectCall(res: ServerResponse, status: 400 | 401 | 413, reason: string): void {
      state.rejected++;
      stats.rejected(status, reason);
      const now = Date.now();
      if (now - state.lastWarnAt >= WARN_INTERVAL_MS) {
        state.lastWarnAt = now;
        node.warn(t('errors.rejected', 'callback rejected with __status__: __reason__', { status, reason }));
      }
      reply(res, status, { success: false, error: reason });
      callbackStatus();
    }

    /** Emits the entries of one callback that the duplicate filter lets through (see {@link Emitted}). */
    async function emitEntries(entries: CallbackEntry[], subscriptionId: string | undefined, receivedAt: string): Promise<Emitted> {
      const candidates: CallbackEntry[] = [];
      for (const entry of entries) {
        if (isEmptyEntry(entry) && !settings.emitEmpty) { state.empties++; stats.empty(); continue; }
        candidates.push(entry);
      }
      const kept: CallbackEntry[] = [];
      let busy = 0;
      let claim: Claim | undefined;
      if (filter) {
        // Empty entries, and entries without a key (no rrn: see entryKey), are never dropped.
        const keys = candidates.map((entry) => (isEmptyEntry(entry) ? undefined : entryKey(subscriptionId, entry)));
        const claimed = keys.filter((key): key is string => key !== undefined);
        const verdicts = claimed.length > 0 ? (claim = await filter.claim(claimed)).verdicts : [];
        let at = 0;
        candidates.forEach((entry, i) => {
          if (keys[i] === undefined) { kept.push(entry); return; }
          const verdict = verdicts[at++];
          if (verdict === 'duplicate') { state.duplicates++; stats.duplicate(); }
          else if (verdict === 'busy') busy++;
          else kept.push(entry);
        });
      } else {
        kept.push(...candidates);
      }
      // The confirmation's reply is awaited before the messages are handed on, whatever the Redis
      // client's pipelining does: a copy killed once its flow runs has confirmed them, so the
      // server's retry is not emitted twice; killed before, the claim lapses after the lease and
      // the retry emits them. A confirmation that fails does not hold the messages back (lost
      // would be worse than twice): they go out, and the status says why.
      let unconfirmed = false;
      if (claim && !state.closed) await claim.confirm().catch((err: unknown) => { unconfirmed = true; warnFilter(err); });
      // Closed while the filter answered: send nothing, and let the claims go so that the server's
      // retry is emitted at once (by the new node or another copy), not after the lease.
      if (state.closed) {
        if (claim) await claim.undo().catch(() => undefined);
        return { sent: 0, entries: 0, busy, closing: true };
      }
      const sent = sendEntries(kept, subscriptionId, receivedAt);
      return { sent, entries: kept.length, busy, undo: claim?.undo, unconfirmed };
    }

    /** Sends the kept entries and returns how many messages went out. */
    function sendEntries(kept: CallbackEntry[], subscriptionId: string | undefined, receivedAt: string): number {
      if (kept.length === 0) return 0;
      // Plain literals, not `{ ...common, payload }`: a spread per message is a measurable cost in bursts.
      if (settings.perCallback) {
        const msg: NodeMessage = { payload: kept, receivedAt };
        if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
        node.send(msg);
        return 1;
      }
      const partsId = randomBytes(8).toString('hex');
      const count = kept.length;
      for (let index = 0; index < count; index++) {
        const entry = kept[index];
        // type/len let a core join node in automatic mode rebuild the array of entries.
        const msg: NodeMessage = { payload: entry, receivedAt, parts: { id: partsId, index, count, type: 'array', len: 1 } };
        if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
        if (typeof entry.action === 'string') msg.topic = entry.action;
        // One send per message, as the core split node does: node.send([msgs]) deep-clones every
        // message after the first even on a single wire, though each is a new object.
        node.send(msg);
      }
      return count;
    }

    /**
     * Node-RED hands sent messages to the next nodes on a later turn of the event loop
     * (setImmediate). Answering success before that turn would let a stop in between (deploy,
     * flows stopped, SIGINT) drop the messages while the server counts the delivery done. So the
     * answer waits for that turn; if the node closed meanwhile, the messages may have been
     * dropped with the stopped flow: answer 503 and the server sends them again.
     */
    async function deliveredWhileOpen(res: ServerResponse, undo?: () => Promise<void>): Promise<boolean> {
      await new Promise((resolve) => setImmediate(resolve));
      if (!state.closed) return true;
      // Before the answer: the retry may reach another copy at once.
      if (undo) await undo().catch(() => undefined);
      replyClosing(res);
      return false;
    }

    /** The node closed under a callback: 503, so that the server sends it again (to the new node). */
    function replyClosing(res: ServerResponse): void {
      reply(res, 503, { success: false, error: 'endpoint is closing' });
    }

    async function handle(req: IncomingMessage & { query?: Record<string, unknown> }, res: ServerResponse): Promise<void> {
      const receivedAt = new Date();
      if (secret && !secretMatches(req.headers[settings.secretHeader.toLowerCase()], secret)) {
        return rejectCall(res, 401, `shared secret header ${settings.secretHeader} missing or wrong`);
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
        node.send(msg);
        state.lastEventAt = receivedAt;
        if (!await deliveredWhileOpen(res)) return;
        reply(res, settings.successCode, { success: true });
        stats.callback(receivedAt, 1);
        callbackStatus();
        return;
      }
      const typeProblem = contentTypeProblem(req.headers['content-type']);
      if (typeProblem) { req.resume(); return rejectCall(res, 400, typeProblem); }
      const body = await readJsonBody(req, settings.maxBodyBytes);
      if (!body.ok) return rejectCall(res, body.status, body.reason);
      const parsed = parseCallbackPayload(body.value);
      if (!parsed.ok) return rejectCall(res, 400, parsed.reason);
      if (settings.checkId && settings.subscriptionId && parsed.id !== settings.subscriptionId) {
        return rejectCall(res, 400, 'id: does not match the subscription of this endpoint');
      }
      if (state.closed) {
        // Redeployed while reading: the server will retry and reach the new node.
        replyClosing(res);
        return;
      }
      let outcome: Emitted;
      try {
        outcome = await emitEntries(parsed.entries, parsed.id ?? settings.subscriptionId, receivedAt.toISOString());
      } catch (err) {
        return filterUnavailable(res, err);
      }
      if (outcome.closing) {
        replyClosing(res);
        return;
      }
      const { sent, entries, busy, undo, unconfirmed } = outcome;
      state.lastEventAt = receivedAt;
      if (sent > 0 && !await deliveredWhileOpen(res, undo)) return;
      if (state.filterProblem && !unconfirmed) { state.filterProblem = ''; showStatus(); }
      stats.callback(receivedAt, entries);
      if (busy > 0) {
        reply(res, 503, { success: false, error: 'entries are being emitted by another instance; send again later', received: parsed.entries.length, emitted: sent });
      } else {
        reply(res, settings.successCode, { success: true, received: parsed.entries.length, emitted: sent });
      }
      callbackStatus();
    }

    /**
     * The duplicate filter did not answer (Redis down or slow): nothing was emitted, and the answer
     * is 503 so that the server sends the callback again; shown in the status until it answers.
     */
    function filterUnavailable(res: ServerResponse, err: unknown): void {
      warnFilter(err);
      reply(res, 503, { success: false, error: 'duplicate filter unavailable; send again later' });
    }

    function warnFilter(err: unknown): void {
      const message = (err as Error)?.message ?? String(err);
      state.filterProblem = message.slice(0, 60);
      showStatus();
      const now = Date.now();
      if (now - state.lastFilterWarnAt >= WARN_INTERVAL_MS) {
        state.lastFilterWarnAt = now;
        node.warn(t('errors.filter', 'duplicate filter: __message__', { message }));
      }
    }

    /** The in-memory filter, or the Redis one when an asset-redis node is selected. */
    function chooseFilter(cfg: AssetEventInConfig, dedup: { windowMs: number; maxKeys: number }): EntryFilter {
      if (!cfg.redis) return memoryEntryFilter(new DuplicateFilter(dedup));
      const redis = RED.nodes.getNode(cfg.redis) as AssetRedisConfigNode | null;
      if (!redis || typeof redis.filterFor !== 'function') throw new SettingError('redis: the selected asset-redis configuration node is missing');
      if (redis.configError) throw new SettingError(`redis: ${redis.configError}`);
      return redis.filterFor(node.id, dedup.windowMs);
    }

    // ---- the route
    const route = (req: any, res: ServerResponse, next: (err?: unknown) => void) => {
      if (state.closed) { next(); return; } // removed from the router, but a request may already be routed
      handle(req, res).catch((err: unknown) => {
        const message = redact(t('errors.internal', 'could not handle a callback: __message__', { message: (err as Error)?.message ?? String(err) }), secret);
        node.error(message);
        stats.error(message);
        reply(res, 500, { success: false, error: 'internal error' });
      });
    };
    const closeRoute = openRoute(RED, settings.method, settings.path, route);

    // ---- the owned subscription
    let owner: OwnedSubscription | undefined;
    const registry = registryFor(RED);
    if (!settings.manage) releaseRecorded(registry.get(node.id)); // "manage" unchecked: its old one goes
    if (settings.manage) {
      try {
        const setup = ownedSubscriptionSetup();
        // What this node registered before (id or server changed, also across a restart) goes.
        const before = registry.get(node.id);
        registry.set(node.id, setup.recorded);
        if (before && !sameSubscription(before, setup.recorded)) releaseSubscription(RED, t, before, (message) => node.warn(redact(message, secret)), node.id);
        owner = new OwnedSubscription(setup, (s, error) => {
          state.subscription = s;
          state.subscriptionError = error ? redact(error, secret) : '';
          stats.subscription(s, state.subscriptionError || undefined);
          showStatus();
        }, (message) => node.error(redact(message, secret)));
      } catch (err) {
        const message = err instanceof SettingError || err instanceof AssetApiError ? err.message : String(err);
        state.subscription = 'failed';
        state.subscriptionError = message.slice(0, 60);
        node.error(redact(t('errors.subscription-config', 'cannot manage the subscription: __message__', { message }), secret));
      }
      if (owner) {
        const registering = owner;
        stats.registerNow = () => registering.start().then((error) => error && redact(error, secret));
      }
      owner?.start(); // after the route: the server may call at once
    }
    showStatus();

    /** Deletes a subscription this node registered before and forgets it (kept for a retry when the server is unreachable). */
    function releaseRecorded(recorded: RegisteredSubscription | undefined): void {
      if (!recorded) return;
      registry.forget(node.id);
      releaseSubscription(RED, t, recorded, (message) => node.warn(redact(message, secret)), node.id);
    }

    function ownedSubscriptionSetup(): OwnedSetup {
      const server = config.server ? RED.nodes.getNode(config.server) as AssetServerConfigNode | null : null;
      if (!server || typeof server.getClient !== 'function') throw new SettingError('server: select an asset-server configuration node');
      const client = server.getClient();
      if (!server.publicBaseUrl) {
        throw new SettingError('server: the asset-server node has no public base URL, so no callback URL can be built');
      }
      const fields = subscriptionFields(config, settings, callbackUrl(server.publicBaseUrl, RED.settings.httpNodeRoot, settings.path), secret);
      const id = settings.subscriptionId as string;
      return { client, id, fields, t, recorded: { server: server.id, baseUrl: server.baseUrl, id } };
    }

    node.on('close', (removed: boolean, done: () => void) => {
      state.closed = true;
      eventInStats.close(stats);
      if (statusTimer) { clearTimeout(statusTimer); statusTimer = undefined; }
      closeRoute();
      node.status({});
      if (!owner) { done(); return; }
      const closing = owner;
      closing.close(removed).then((failure) => {
        if (!removed) return;
        // Removed: it owns nothing any more; a deletion that failed is tried again on the next start.
        registry.forget(node.id);
        if (failure) registry.addOrphan(closing.setup.recorded);
      }).then(done, done);
    });
  }

  sweepRegistryOnStart(RED, t);

  RED.nodes.registerType('asset-event-in', AssetEventInNode, {
    credentials: { secret: { type: 'password' } }
  });
}
