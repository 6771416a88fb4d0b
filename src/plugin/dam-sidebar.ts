/**
 * Runtime half of the editor's DAM sidebar (plugins/dam-sidebar.html is the editor half):
 * admin routes on RED.httpAdmin and live counters over RED.comms.
 *
 * Routes (under httpAdminRoot), guarded like Node-RED's own admin API:
 *   GET    dam-assets/overview                          asset-server.read   servers, subscriptions, event-in nodes, counters
 *   GET    dam-assets/servers/:id/check                 asset-server.read   connection check of a deployed server
 *   GET    dam-assets/subscriptions/:server/:sub        asset-server.read   the server's stored details, secrets masked
 *   DELETE dam-assets/subscriptions/:server/:sub        asset-server.write  delete it on the server
 *   POST   dam-assets/event-in/:id/register             asset-server.write  register an owned subscription again
 *   the at-least-once inbox's parked entries: inbox-routes.ts
 * A user whose permissions are 'read' passes the read guard only (Node-RED answers 401 to the rest).
 * Failures on the DAM server's side are answered with HTTP 200 and `{ ok: false, error }`: a 401 from
 * these routes would make the editor ask the Node-RED user to log in again.
 * Nothing secret is answered: no cookie, no webhook secret (headers and query values masked); the
 * read route answers the server's errors in our words, never its own text.
 *
 * The asset-server dialog's Test connection route lives with that node (src/nodes/asset-server/connection-test.ts).
 *
 * Comms topic `dam-assets/event-in/<node id>`: the node's counters, at most once a second per node;
 * `dam-assets/hot-folder/<node id>`: an asset-hot-folder's counters and last failed files, likewise.
 */
import { AssetApiError } from '../api/errors';
import { derivedSubscriptionId } from '../nodes/asset-event-in/settings';
import { checkConnection, configReport, type ConnectionReport } from '../nodes/asset-server/connection-check';
import { WRITE_PERMISSION } from '../nodes/asset-server/connection-test';
import type { AssetServerConfigNode } from '../nodes/asset-server/options';
import type { NodeAPI } from '../nodes/shared/node-red';
import { eventInStats, type EventInStats } from '../nodes/shared/event-in-stats';
import { maskHeaderValues } from '../nodes/shared/masking';
import { callbackMethodMismatch, type EventInRoute } from './callback-method';
import { hotFolderStats, type HotFolderView } from '../nodes/asset-hot-folder/stats';
import { runningDelivery } from '../nodes/asset-event-in/delivery';
import { registerInboxRoutes } from './inbox-routes';

export const READ_PERMISSION = 'asset-server.read';
export { WRITE_PERMISSION };
export const COMMS_TOPIC = 'dam-assets/event-in/';
export const HOT_FOLDER_TOPIC = 'dam-assets/hot-folder/';
/** Live counters of one node go to the editor at most this often. */
const PUBLISH_INTERVAL_MS = 1000;

interface SubscriptionUse { nodeId: string; type: string; name?: string; owned: boolean }
interface SubscriptionView { id: string; serverId: string; owned: boolean; usedBy: SubscriptionUse[] }

/** The subscription id an asset-event-in uses (same rule as the node: fixed id, else `nr-<id>` when it manages). */
function eventInSubscriptionId(config: Record<string, any>): string | undefined {
  const fixed = typeof config.subscriptionId === 'string' ? config.subscriptionId.trim() : '';
  if (fixed) return fixed;
  return config.manage === true ? derivedSubscriptionId(config.id) : undefined;
}

/** The fixed subscription id of an asset-subscribe (a typed value; msg/flow/env sources are known only at run time). */
function subscribeFixedId(config: Record<string, any>): string | undefined {
  const type = config.subscriptionIdType || 'str';
  const id = typeof config.subscriptionId === 'string' ? config.subscriptionId.trim() : '';
  return type === 'str' && id ? id : undefined;
}

function errorView(err: unknown): { kind: string; message: string } {
  if (err instanceof AssetApiError) return { kind: err.kind, message: err.message };
  return { kind: 'error', message: err instanceof Error ? err.message : String(err) };
}

/**
 * {@link errorView} for a read-only user: where the server said something (serverMessage), our
 * words for its kind and HTTP status instead of the message that quotes it. The base URL may point
 * at any service the Node-RED host reaches; what it says is not for every editor user to read.
 */
function classifiedErrorView(err: unknown): { kind: string; message: string } {
  if (!(err instanceof AssetApiError)) return { kind: 'error', message: 'the subscription could not be read' };
  if (err.serverMessage === undefined) return errorView(err);
  const status = err.status === undefined ? '' : ` (HTTP ${err.status})`;
  const words: Record<string, string> = {
    rejected: 'the server has no subscription with this id (success false)',
    permission: `permission denied by the server${status}: the user of the cookie has no permission for events`
  };
  const busy = err.status === 449 || err.status === 503;
  const message = words[err.kind] ?? (busy ? `the server is busy${status}: try again later` : `the server answered with an error${status}`);
  return { kind: err.kind, message: `${err.operation ?? 'getSubscription'}: ${message}` };
}

export default function register(RED: NodeAPI): void {
  RED.plugins.registerPlugin('dam-sidebar', { type: 'dam-assets-sidebar' });

  const read = RED.auth.needsPermission(READ_PERMISSION);
  const write = RED.auth.needsPermission(WRITE_PERMISSION);
  const app = RED.httpAdmin;

  /** Everything the flows hold that the sidebar lists, from the deployed configuration. */
  function overview() {
    const servers: Record<string, unknown>[] = [];
    const eventIns: Record<string, unknown>[] = [];
    const hotFolders: Record<string, unknown>[] = [];
    const subscriptions = new Map<string, SubscriptionView>();
    const use = (serverId: unknown, id: string | undefined, user: SubscriptionUse) => {
      if (!id || typeof serverId !== 'string' || !serverId) return;
      const key = `${serverId}\n${id}`;
      const entry = subscriptions.get(key) ?? { id, serverId, owned: false, usedBy: [] };
      entry.usedBy.push(user);
      entry.owned = entry.owned || user.owned;
      subscriptions.set(key, entry);
    };
    RED.nodes.eachNode((def) => {
      const config = def as typeof def & Record<string, any>; // a node's config as the flows hold it
      if (config.type === 'asset-server') {
        const live = RED.nodes.getNode(config.id) as AssetServerConfigNode | null;
        servers.push({
          id: config.id, name: config.name || '', baseUrl: (config.baseUrl || '').trim(),
          running: !!live, configError: live?.configError?.message
        });
      } else if (config.type === 'asset-event-in') {
        const subscriptionId = eventInSubscriptionId(config);
        const stats = eventInStats.get(config.id);
        eventIns.push({
          id: config.id, name: config.name || '', path: config.path || '', serverId: config.server || '',
          manage: config.manage === true, subscriptionId,
          running: !!stats, registrable: !!stats?.registerNow, ...(stats ? stats.view() : {}),
          inbox: runningDelivery(config.id)?.counts(),
          // Deliveries held while the DAM server is away (delivery.ts): why, short.
          inboxHeldFor: runningDelivery(config.id)?.heldFor
        });
        use(config.server, subscriptionId, { nodeId: config.id, type: config.type, name: config.name, owned: config.manage === true });
      } else if (config.type === 'asset-hot-folder') {
        const view = hotFolderStats.get(config.id);
        hotFolders.push({ id: config.id, name: config.name || '', folder: config.folder || '', running: !!view, ...(view ?? {}) });
      } else if (config.type === 'asset-subscribe') {
        use(config.server, subscribeFixedId(config), { nodeId: config.id, type: config.type, name: config.name, owned: false });
      }
    });
    return { servers, subscriptions: [...subscriptions.values()], eventIns, hotFolders };
  }

  function liveServer(id: string): AssetServerConfigNode | undefined {
    const node = RED.nodes.getNode(id) as AssetServerConfigNode | null;
    return node && node.type === 'asset-server' ? node : undefined;
  }

  /** A subscription the flows use, with its server's client; undefined when the flows do not use it. */
  function usedSubscription(serverId: string, id: string): SubscriptionView | undefined {
    return overview().subscriptions.find(s => s.serverId === serverId && s.id === id);
  }

  registerInboxRoutes(app, read, write);

  app.get('/dam-assets/overview', read, (_req: any, res: any) => {
    res.json(overview());
  });

  app.get('/dam-assets/servers/:id/check', read, async (req: any, res: any) => {
    const server = liveServer(req.params.id);
    if (!server) { res.status(404).json({ error: 'no deployed asset-server with this id' }); return; }
    let result: ConnectionReport;
    try {
      result = await checkConnection(server.getClient());
    } catch (err) {
      result = configReport(err);
    }
    res.json(result);
  });

  /** The live server of a subscription the deployed flows use; else answers 404 and returns undefined. */
  function serverOfUsedSubscription(req: any, res: any): AssetServerConfigNode | undefined {
    const server = liveServer(req.params.server);
    if (server && usedSubscription(req.params.server, req.params.id)) return server;
    res.status(404).json({ error: 'no subscription with this id is used by the deployed flows on this server' });
    return undefined;
  }

  /** The stored subscription's callback reaches an asset-event-in of these flows with another method (issue 23 #1). */
  function methodMismatchOf(details: unknown) {
    const stored = (details as { subscription?: { callback?: unknown; method?: unknown } } | null)?.subscription;
    if (!stored) return undefined;
    const eventIns: EventInRoute[] = [];
    const publicBaseUrls: string[] = [];
    RED.nodes.eachNode((def) => {
      const config = def as typeof def & Record<string, any>; // a node's config as the flows hold it
      if (config.type === 'asset-event-in') eventIns.push({ id: config.id, name: config.name, path: config.path, method: config.method });
      if (config.type === 'asset-server' && typeof config.publicBaseUrl === 'string') publicBaseUrls.push(config.publicBaseUrl);
    });
    const settings = RED.settings as unknown as { httpNodeRoot?: string; uiPort?: number };
    return callbackMethodMismatch(stored, eventIns, { httpNodeRoot: settings.httpNodeRoot, uiPort: settings.uiPort, publicBaseUrls });
  }

  app.get('/dam-assets/subscriptions/:server/:id', read, async (req: any, res: any) => {
    const server = serverOfUsedSubscription(req, res);
    if (!server) return;
    try {
      const details = await server.getClient().getSubscription(req.params.id, { timeout: 10000 });
      res.json({ ok: true, details: maskHeaderValues(details), methodMismatch: methodMismatchOf(details) });
    } catch (err) {
      res.json({ ok: false, error: classifiedErrorView(err) });
    }
  });

  app.delete('/dam-assets/subscriptions/:server/:id', write, async (req: any, res: any) => {
    const server = serverOfUsedSubscription(req, res);
    if (!server) return;
    try {
      await server.getClient().deleteSubscription(req.params.id, { timeout: 10000 });
      // An asset-event-in that manages it would otherwise still say "registered".
      eventInStats.owning(req.params.server, req.params.id)?.ownedSubscription?.deleted();
      res.json({ ok: true });
    } catch (err) {
      res.json({ ok: false, error: errorView(err) });
    }
  });

  app.post('/dam-assets/event-in/:id/register', write, async (req: any, res: any) => {
    const stats = eventInStats.get(req.params.id);
    if (!stats || !stats.registerNow) {
      res.status(404).json({ error: 'no running asset-event-in with this id owns a subscription' });
      return;
    }
    const error = await stats.registerNow();
    res.json(error ? { ok: false, error: { kind: 'register', message: error } } : { ok: true });
  });

  // ---- live counters: at most one message per node per PUBLISH_INTERVAL_MS, the last state always sent
  const lastSent = new Map<string, number>();
  const pending = new Map<string, NodeJS.Timeout>();
  const publish = (stats: EventInStats) => {
    pending.delete(stats.nodeId);
    lastSent.set(stats.nodeId, Date.now());
    RED.comms.publish(COMMS_TOPIC + stats.nodeId, stats.view(), false);
  };
  eventInStats.onChange((stats) => {
    if (pending.has(stats.nodeId)) return;
    const wait = (lastSent.get(stats.nodeId) ?? 0) + PUBLISH_INTERVAL_MS - Date.now();
    if (wait <= 0) { publish(stats); return; }
    const timer = setTimeout(() => publish(eventInStats.get(stats.nodeId) ?? stats), wait);
    timer.unref?.();
    pending.set(stats.nodeId, timer);
  });
  // Hot folders: the same throttle, keyed apart from the event-in nodes.
  const publishHot = (view: HotFolderView) => {
    pending.delete(`hot:${view.nodeId}`);
    lastSent.set(`hot:${view.nodeId}`, Date.now());
    RED.comms.publish(HOT_FOLDER_TOPIC + view.nodeId, hotFolderStats.get(view.nodeId) ?? view, false);
  };
  hotFolderStats.onChange((view) => {
    const key = `hot:${view.nodeId}`;
    if (pending.has(key)) return;
    const wait = (lastSent.get(key) ?? 0) + PUBLISH_INTERVAL_MS - Date.now();
    if (wait <= 0) { publishHot(view); return; }
    const timer = setTimeout(() => publishHot(view), wait);
    timer.unref?.();
    pending.set(key, timer);
  });
}
