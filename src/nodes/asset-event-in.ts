/**
 * asset-event-in: the HTTP endpoint the asset server calls back (spec 2.3, 4.1 rule 12, section 6).
 *
 * - A route on RED.httpNode (so httpNodeRoot, httpNodeAuth and httpNodeMiddleware
 *   apply), removed on close.
 * - Checks: shared-secret header (401), content type / JSON / 2.3 shape / payload id
 *   (400), size (413). Then one msg per entry (or one per callback), then the success status.
 * - Optionally owns its subscription: registers it once the route is up, retries
 *   with backoff, deletes it when the node is removed from the flow.
 */
import { randomBytes, createHash } from 'crypto';
import type { EventEmitter } from 'events';
import type { IncomingMessage, ServerResponse } from 'http';
import type { AssetClient } from '../api/client';
import { AssetApiError } from '../api/errors';
import type { CallbackEntry, SubscriptionFields } from '../api/types';
import {
  DuplicateFilter, READ_OWN_BODY, contentTypeProblem, entryKey, isEmptyEntry, memoryEntryFilter, parseCallbackPayload, readJsonBody, secretMatches,
  type EntryFilter
} from '../events';
import type { AssetRedisConfigNode } from './asset-redis';
import type { AssetServerConfigNode } from './asset-server';
import { errorStatusText, localText, numberSetting, STATUS_INTERVAL_MS, SettingError } from './common';
import { SUBSCRIPTION_ID_RULE, isSubscriptionId, isToken } from '../api/values';
import { eventInStats } from '../plugin/event-in-stats';
import { deleteRecorded, deleteWith, registryFor, sameSubscription, type RegisteredSubscription } from './subscription-registry';
import type { Node, NodeAPI, NodeMessage, NodeStatus } from './node-red';

/** Editor properties. */
export interface AssetEventInConfig {
  id: string;
  name?: string;
  /** Route path under httpNodeRoot. */
  path?: string;
  /** 'post' (default) or 'get'. */
  method?: string;
  /** Status answered once the messages are sent. Default 200. */
  successCode?: string | number;
  /** 'entry' (default): one msg per entry; 'callback': one msg per callback, payload = array. */
  output?: string;
  /** Emit entries that are empty objects. Default false (dropped, counted in the status). */
  emitEmpty?: boolean;
  /** Body size limit in MB (10^6 bytes). Default 50. */
  maxBodyMB?: string | number;
  /** Header carrying the shared secret. Default X-DAM-Secret. */
  secretHeader?: string;
  /** Fixed subscription id; blank = derived from the node id (`nr-<id>`) when managing. */
  subscriptionId?: string;
  /** Answer 400 when the payload's id is not the subscription id. Default true. */
  checkId?: boolean;
  /** Duplicate filter. Default true. */
  dedup?: boolean;
  /** Duplicate window in seconds. Default 600. */
  dedupWindow?: string | number;
  /** Most remembered entries. Default 10000. */
  dedupMax?: string | number;
  /** asset-redis config node id: keep the duplicate filter in Redis (several Node-RED copies). Blank = in memory. */
  redis?: string;
  /** asset-server config node id. */
  server?: string;
  /** Register / delete the subscription with the node. */
  manage?: boolean;
  watchPath?: string[];
  watchMetadata?: string[];
  /** '' = server default (OR). */
  logicalOperand?: string;
  /** '' = server default (3). */
  retryCount?: string | number;
}

/** Settings read from the editor properties, checked. */
interface Settings {
  path: string;
  method: 'post' | 'get';
  successCode: number;
  perCallback: boolean;
  emitEmpty: boolean;
  maxBodyBytes: number;
  secretHeader: string;
  subscriptionId?: string;
  checkId: boolean;
  dedup?: { windowMs: number; maxKeys: number };
  manage: boolean;
}

export const DEFAULTS = {
  successCode: 200,
  maxBodyMB: 50,
  secretHeader: 'X-DAM-Secret',
  dedupWindowS: 600,
  dedupMax: 10000
} as const;

/** Backoff between registration attempts: 5 s, doubling, at most 5 min. */
export const RETRY_FIRST_MS = 5000;
export const RETRY_MAX_MS = 300000;
/** At most one warning per this interval for rejected callbacks (a hostile caller must not flood the log). */
const WARN_INTERVAL_MS = 60000;

/** What an owned subscription needs: the client, id and fields to register, and its registry record. */
interface OwnedSetup {
  client: AssetClient;
  id: string;
  fields: SubscriptionFields;
  t: (key: string, english: string, params?: Record<string, unknown>) => string;
  recorded: RegisteredSubscription;
}

/** The registry sweep listening on each runtime's events (replaced when the module registers again). */
const sweepListeners = new WeakMap<EventEmitter, () => void>();

function readSettings(config: AssetEventInConfig, nodeId: string): Settings {
  let path = (config.path || '').trim();
  if (!path) throw new SettingError('path: is required');
  if (!path.startsWith('/')) path = '/' + path;
  const method = (config.method || 'post').toLowerCase();
  if (method !== 'post' && method !== 'get') throw new SettingError('method: must be POST or GET');
  const successCode = numberSetting(config.successCode, 'successCode', DEFAULTS.successCode,
    (n) => Number.isInteger(n) && n >= 200 && n <= 299, 'must be an HTTP status from 200 to 299');
  const maxBodyMB = numberSetting(config.maxBodyMB, 'maxBodyMB', DEFAULTS.maxBodyMB, (n) => n > 0, 'must be a number of MB above 0');
  const secretHeader = (config.secretHeader || DEFAULTS.secretHeader).trim();
  if (!isToken(secretHeader)) throw new SettingError('secretHeader: must be a valid HTTP header name');
  const manage = config.manage === true;
  let subscriptionId = (config.subscriptionId || '').trim() || undefined;
  if (subscriptionId === undefined && manage) subscriptionId = derivedSubscriptionId(nodeId);
  if (subscriptionId !== undefined && !isSubscriptionId(subscriptionId)) {
    throw new SettingError(`subscriptionId: ${SUBSCRIPTION_ID_RULE} (spec 2.1)`);
  }
  const settings: Settings = {
    path, method, successCode, manage, secretHeader, subscriptionId,
    perCallback: config.output === 'callback',
    emitEmpty: config.emitEmpty === true,
    maxBodyBytes: Math.floor(maxBodyMB * 1e6),
    checkId: config.checkId !== false
  };
  if (config.dedup !== false) {
    const windowS = numberSetting(config.dedupWindow, 'dedupWindow', DEFAULTS.dedupWindowS, (n) => n >= 0, 'must be a number of seconds, 0 or more');
    const maxKeys = numberSetting(config.dedupMax, 'dedupMax', DEFAULTS.dedupMax, (n) => Number.isInteger(n) && n >= 1, 'must be a whole number, 1 or more');
    settings.dedup = { windowMs: windowS * 1000, maxKeys };
  }
  return settings;
}

/** `nr-` + the node id, valid per spec 2.1 (8..40 of [A-Za-z0-9-]); hashed when the id does not fit. */
export function derivedSubscriptionId(nodeId: string): string {
  const candidate = 'nr-' + nodeId.replace(/[^A-Za-z0-9-]/g, '-');
  if (isSubscriptionId(candidate)) return candidate;
  return 'nr-' + createHash('sha256').update(nodeId).digest('hex').slice(0, 16);
}

/** publicBaseUrl + httpNodeRoot + path, with exactly one slash at each joint. */
export function callbackUrl(publicBaseUrl: string, httpNodeRoot: string | undefined, path: string): string {
  const parts = [publicBaseUrl.replace(/\/+$/, ''), (httpNodeRoot || '/').replace(/^\/+|\/+$/g, ''), path.replace(/^\/+/, '')];
  return parts.filter((p, i) => i === 0 || p !== '').join('/');
}

/** Removes every route of `app` whose handlers include `handler` (express 4 `_router`, express 5 `router`). */
function removeRoute(app: any, handler: Function): void {
  const router = app && (app._router || app.router);
  const stack: any[] | undefined = router && router.stack;
  if (!Array.isArray(stack)) return;
  for (let i = stack.length - 1; i >= 0; i--) {
    const route = stack[i] && stack[i].route;
    if (route && Array.isArray(route.stack) && route.stack.some((layer: any) => layer.handle === handler)) stack.splice(i, 1);
  }
}

/**
 * Body guard. With httpAdminRoot and httpNodeRoot the same (Node-RED's default, `/`), the editor
 * API's JSON body parser (limit apiMaxLength, 5 MB) reads every application/json request before
 * httpNode routes see it: the secret would be checked only after that read, Max body would not
 * apply, a big rrn would be rounded, and a deep body parsed. Core http in (4.1+) meets the same
 * stack for its raw-body option with a middleware moved to the top of the root app; so does this
 * guard, which only marks requests to our POST routes as read (`_body`, so parsers skip them) and
 * as ours (READ_OWN_BODY, so readJsonBody reads the stream). Nothing is read here.
 */
const guardedPaths = new WeakMap<object, Map<string, number>>();

function rootAppOf(app: any): any {
  let root = app;
  while (root && root.parent) root = root.parent;
  return root;
}

/** `POST /a/b`: method and full path, slashes collapsed, no trailing slash, case-insensitive as express routes. */
function guardKey(method: string, fullPath: string): string {
  return `${method.toUpperCase()} ${fullPath.replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1').toLowerCase()}`;
}

/** Guards POST `fullPath`; returns the function that stops guarding it. */
function guardBody(app: any, fullPath: string): () => void {
  const root = rootAppOf(app);
  if (!root || typeof root.use !== 'function') return () => undefined;
  let paths = guardedPaths.get(root);
  if (!paths) {
    const known = new Map<string, number>();
    paths = known;
    guardedPaths.set(root, known);
    const guard = (req: any, _res: unknown, next: () => void) => {
      if (known.size && known.has(guardKey(req.method || '', String(req.originalUrl || req.url || '').split('?')[0]))) {
        req._body = true;
        req[READ_OWN_BODY] = true;
      }
      next();
    };
    root.use(guard);
    const stack: any[] | undefined = (root._router || root.router)?.stack;
    const at = Array.isArray(stack) ? stack.findIndex((layer) => layer && layer.handle === guard) : -1;
    if (at > 0) stack!.unshift(stack!.splice(at, 1)[0]);
  }
  const key = guardKey('POST', fullPath);
  paths.set(key, (paths.get(key) || 0) + 1);
  const counts = paths;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (counts.get(key) || 1) - 1;
    if (n > 0) counts.set(key, n); else counts.delete(key);
  };
}

function reply(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  if (res.headersSent) return;
  res.statusCode = status;
  if (status === 204 || status === 205) { res.end(); return; }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** Replaces every occurrence of the secret (should a message ever echo it) with ***. */
function redact(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('***') : text;
}

function clockTime(date: Date): string {
  return date.toTimeString().slice(0, 8);
}

export default function register(RED: NodeAPI): void {
  /** Locale string with an English fallback (the test helper's RED._ returns the key). */
  function t(key: string, english: string, params: Record<string, unknown> = {}): string {
    return localText(RED, `asset-event-in.${key}`, english, params);
  }

  function AssetEventInNode(this: Node, config: AssetEventInConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const secret = node.credentials?.secret || undefined;

    let settings: Settings;
    try {
      settings = readSettings(config, node.id);
    } catch (err) {
      const message = err instanceof SettingError ? err.message : String(err);
      node.error(t('errors.config', 'configuration: __message__', { message }));
      node.status({ fill: 'red', shape: 'ring', text: message.slice(0, 60) });
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
      const message = (err as Error).message;
      node.error(t('errors.config', 'configuration: __message__', { message }));
      node.status({ fill: 'red', shape: 'ring', text: message.slice(0, 60) });
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
     * goes through RED._ / i18next, which cost ~4% of the CPU in bursts of small callbacks.
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

    /**
     * Emits the entries of one callback that the duplicate filter lets through. `sent`: messages
     * that went out; `busy`: entries another copy is emitting right now (answer 503, the retry
     * finds them emitted); `confirm`: to call once the messages were handed on.
     */
    async function emitEntries(entries: CallbackEntry[], subscriptionId: string | undefined, receivedAt: string): Promise<{ sent: number; entries: number; busy: number; confirm?: () => Promise<void> }> {
      const candidates: CallbackEntry[] = [];
      for (const entry of entries) {
        if (isEmptyEntry(entry) && !settings.emitEmpty) { state.empties++; stats.empty(); continue; }
        candidates.push(entry);
      }
      const kept: CallbackEntry[] = [];
      let busy = 0;
      let confirm: (() => Promise<void>) | undefined;
      if (filter) {
        // Empty entries, and entries without a key (no rrn: see entryKey), are never dropped.
        const keys = candidates.map((entry) => (isEmptyEntry(entry) ? undefined : entryKey(subscriptionId, entry)));
        const claimed = keys.filter((key): key is string => key !== undefined);
        const claim = claimed.length > 0 ? await filter.claim(claimed) : { verdicts: [], confirm: undefined };
        confirm = claim.confirm;
        let at = 0;
        candidates.forEach((entry, i) => {
          if (keys[i] === undefined) { kept.push(entry); return; }
          const verdict = claim.verdicts[at++];
          if (verdict === 'duplicate') { state.duplicates++; stats.duplicate(); }
          else if (verdict === 'busy') busy++;
          else kept.push(entry);
        });
      } else {
        kept.push(...candidates);
      }
      const sent = sendEntries(kept, subscriptionId, receivedAt);
      return { sent, entries: kept.length, busy, confirm };
    }

    /** Sends the kept entries and returns how many messages went out. */
    function sendEntries(kept: CallbackEntry[], subscriptionId: string | undefined, receivedAt: string): number {
      if (kept.length === 0) return 0;
      // Plain literals, not `{ ...common, payload }`: a spread per message was ~5% of the CPU in bursts.
      if (settings.perCallback) {
        const msg: NodeMessage = { payload: kept, receivedAt };
        if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
        node.send(msg);
        return 1;
      }
      const partsId = randomBytes(8).toString('hex');
      const count = kept.length;
      const msgs: NodeMessage[] = new Array(count);
      for (let index = 0; index < count; index++) {
        const entry = kept[index];
        // type/len let a core join node in automatic mode rebuild the array of entries.
        const msg: NodeMessage = { payload: entry, receivedAt, parts: { id: partsId, index, count, type: 'array', len: 1 } };
        if (subscriptionId !== undefined) msg.subscriptionId = subscriptionId;
        if (typeof entry.action === 'string') msg.topic = entry.action;
        msgs[index] = msg;
      }
      node.send([msgs]);
      return count;
    }

    /**
     * Node-RED hands sent messages to the next nodes on a later turn of the event loop
     * (setImmediate). Answering success before that turn would let a stop in between (deploy,
     * flows stopped, SIGINT) drop the messages while the server counts the delivery done. So the
     * answer waits for that turn; if the node closed meanwhile, the messages may have been
     * dropped with the stopped flow: answer 503 and the server sends them again.
     */
    async function deliveredWhileOpen(res: ServerResponse): Promise<boolean> {
      await new Promise((resolve) => setImmediate(resolve));
      if (!state.closed) return true;
      reply(res, 503, { success: false, error: 'endpoint is closing' });
      return false;
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
        reply(res, 503, { success: false, error: 'endpoint is closing' });
        return;
      }
      let outcome: { sent: number; entries: number; busy: number; confirm?: () => Promise<void> };
      try {
        outcome = await emitEntries(parsed.entries, parsed.id ?? settings.subscriptionId, receivedAt.toISOString());
      } catch (err) {
        return filterUnavailable(res, err);
      }
      const { sent, entries, busy, confirm } = outcome;
      state.lastEventAt = receivedAt;
      if (sent > 0 && !await deliveredWhileOpen(res)) return;
      if (confirm) {
        // Not awaited: the confirmation is on its way before the answer (one connection, in order),
        // and whatever it meets, the messages are out, so the answer is success (anything else would
        // emit them twice). Until it lands, a copy asking about these entries hears 'busy' and 503.
        confirm().catch((err: unknown) => warnFilter(err));
      }
      if (state.filterProblem) { state.filterProblem = ''; showStatus(); }
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
    const configured = RED.settings.httpNodeMiddleware;
    const middleware = typeof configured === 'function' || Array.isArray(configured) ? [configured] : [];
    RED.httpNode[settings.method](settings.path, ...middleware, route);
    const releaseGuard = settings.method === 'post'
      ? guardBody(RED.httpNode, (RED.settings.httpNodeRoot || '/') + settings.path)
      : () => undefined;

    // ---- the owned subscription
    let owner: OwnedSubscription | undefined;
    const registry = registryFor(RED);
    if (!settings.manage) releaseRecorded(registry.get(node.id)); // "manage" unchecked: its old one goes
    if (settings.manage) {
      try {
        const setup = ownedSubscriptionSetup();
        // What this node registered before (id or server changed, also across a restart) goes.
        const before = registry.get(node.id);
        if (before && !sameSubscription(before, setup.recorded)) releaseRecorded(before);
        registry.set(node.id, setup.recorded);
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
      releaseSubscription(recorded, (message) => node.warn(redact(message, secret)));
    }

    function ownedSubscriptionSetup(): OwnedSetup {
      const server = config.server ? RED.nodes.getNode(config.server) as AssetServerConfigNode | null : null;
      if (!server || typeof server.getClient !== 'function') throw new SettingError('server: select an asset-server configuration node');
      const client = server.getClient();
      if (!server.publicBaseUrl) {
        throw new SettingError('server: the asset-server node has no public base URL, so no callback URL can be built');
      }
      const fields: SubscriptionFields = {
        callback: callbackUrl(server.publicBaseUrl, RED.settings.httpNodeRoot, settings.path),
        method: settings.method.toUpperCase(),
        successCode: settings.successCode
      };
      if (secret) fields.header = [`${settings.secretHeader}: ${secret}`];
      const list = (v: unknown) => Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string' && s.trim() !== '') : [];
      if (list(config.watchPath).length) fields.watchPath = list(config.watchPath);
      if (list(config.watchMetadata).length) fields.watchMetadata = list(config.watchMetadata);
      if (config.logicalOperand) fields.logicalOperand = config.logicalOperand;
      if (config.retryCount !== undefined && config.retryCount !== '') {
        fields.retryCount = numberSetting(config.retryCount, 'retryCount', 3, (n) => Number.isInteger(n) && n >= 0, 'must be a whole number, 0 or more');
      }
      const id = settings.subscriptionId as string;
      return { client, id, fields, t, recorded: { server: server.id, baseUrl: server.baseUrl, id } };
    }

    node.on('close', (removed: boolean, done: () => void) => {
      state.closed = true;
      eventInStats.close(stats);
      if (statusTimer) { clearTimeout(statusTimer); statusTimer = undefined; }
      removeRoute(RED.httpNode, route);
      releaseGuard();
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

  /**
   * A subscription the node owns: registered on start (same id replaces an old
   * registration), retried with backoff, deleted on close when the node is removed.
   */
  class OwnedSubscription {
    private timer: NodeJS.Timeout | undefined;
    private abort: AbortController | undefined;
    private delayMs = RETRY_FIRST_MS;
    private closed = false;

    constructor(
      readonly setup: OwnedSetup,
      private readonly onState: (state: 'registering' | 'registered' | 'failed', error?: string) => void,
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
      if (this.closed) return;
      this.delayMs = RETRY_FIRST_MS;
      void this.start();
    };

    /** A cookie set at run time: a registration waiting to retry goes now. */
    private readonly retryNow = (): void => {
      if (this.timer) this.registerAgain();
    };

    /** Registers now (a pending retry is replaced); resolves with the error text, or undefined on success. */
    start(): Promise<string | undefined> {
      if (this.closed) return Promise.resolve('the node is closing');
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      this.abort?.abort();
      this.onState('registering');
      const abort = this.abort = new AbortController();
      const { client, id, fields } = this.setup;
      return client.registerSubscription(id, fields, { signal: abort.signal }).then(() => {
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
        this.onState('failed', errorStatusText(undefined, err));
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

  /** Deletes a subscription recorded in the registry; one the server cannot be reached for now is kept for the next start. */
  function releaseSubscription(recorded: RegisteredSubscription, warn: (message: string) => void): void {
    const registry = registryFor(RED);
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

  /**
   * On each start of the flows: deletes what nodes that no longer exist (removed or disabled
   * while Node-RED was stopped) registered, and retries deletions that failed before.
   */
  function sweepRegistry(): void {
    const registry = registryFor(RED);
    if (!registry.persistent) return;
    const warn = (message: string) => RED.log.warn(`asset-event-in: ${message}`);
    for (const nodeId of registry.nodeIds()) {
      const live = RED.nodes.getNode(nodeId);
      if (live && live.type === 'asset-event-in') continue;
      const recorded = registry.get(nodeId)!;
      registry.forget(nodeId);
      releaseSubscription(recorded, warn);
    }
    for (const orphan of registry.orphans()) {
      registry.removeOrphan(orphan);
      releaseSubscription(orphan, warn);
    }
  }
  const events = (RED as NodeAPI & { events?: EventEmitter }).events;
  if (events && typeof events.on === 'function') {
    // One listener per runtime, also when the module is registered again (the test helper does).
    const previous = sweepListeners.get(events);
    if (previous) events.off('flows:started', previous);
    sweepListeners.set(events, sweepRegistry);
    events.on('flows:started', sweepRegistry);
  }

  RED.nodes.registerType('asset-event-in', AssetEventInNode, {
    credentials: { secret: { type: 'password' } }
  });
}
