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
 *   POST   dam-assets/connection-test                   asset-server.write  the dialog's test, with the typed values
 *                                                                           (automatic login included)
 * A user whose permissions are 'read' passes the read guard only (Node-RED answers 401 to the rest).
 * Failures on the DAM server's side are answered with HTTP 200 and `{ ok: false, error }`: a 401 from
 * these routes would make the editor ask the Node-RED user to log in again.
 * Nothing secret is answered: no cookie, no webhook secret (headers and query values masked).
 *
 * Comms topic `dam-assets/event-in/<node id>`: the node's counters, at most once a second per node.
 */
import { AssetClient } from '../api/client';
import { AssetApiError, invalidInput } from '../api/errors';
import { resolveLogin, sameLogin } from '../api/session';
import { clientOptions, DEFAULT_TIMEOUT_S, type AssetServerConfig, type AssetServerConfigNode } from '../nodes/asset-server';
import { isBlankSetting } from '../nodes/common';
import { LOGIN_SETTINGS, loginOptions } from '../nodes/server-session';
import { derivedSubscriptionId } from '../nodes/asset-event-in';
import { maskHeaderValues } from '../nodes/asset-subscribe';
import { checkConnection, checkWithLogin, configReport, type ConnectionReport } from './connection-check';
import { eventInStats, type EventInStats } from './event-in-stats';
import { callbackMethodMismatch, type EventInRoute } from './callback-method';
import { baseUrlProblem } from './reachability';

export const READ_PERMISSION = 'asset-server.read';
export const WRITE_PERMISSION = 'asset-server.write';
export const COMMS_TOPIC = 'dam-assets/event-in/';
/** Live counters of one node go to the editor at most this often. */
const PUBLISH_INTERVAL_MS = 1000;
/** The editor shows this in a password field whose value is stored (not sent back). */
const SAVED_PASSWORD = '__PWRD__';

/** The part of Node-RED's plugin API used here. */
interface PluginAPI {
  plugins: { registerPlugin(id: string, definition: Record<string, unknown>): void };
  nodes: {
    getNode(id: string): any;
    eachNode(cb: (config: Record<string, any>) => void): void;
    getCredentials(id: string): Record<string, string> | undefined;
  };
  auth: { needsPermission(permission: string): (req: any, res: any, next: () => void) => void };
  comms: { publish(topic: string, data: unknown, retain?: boolean): void };
  httpAdmin: any;
  settings: Record<string, any>;
  log: { warn(m: unknown): void };
}

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

/**
 * True when the dialog's values connect as the deployed node does: same base URL, timeout, TLS
 * choice, cookie and login (preset defaults filled in, so a dialog that filled in a preset's
 * fields still counts as the same).
 */
function sameConnection(typed: AssetServerConfig, typedCredentials: Record<string, string | undefined>,
  deployed: AssetServerConfig, savedCredentials: Record<string, string | undefined>): boolean {
  const seconds = (v: unknown) => isBlankSetting(v) ? DEFAULT_TIMEOUT_S : Number(v);
  const tls = (v: unknown) => typeof v === 'string' && v !== '_ADD_' ? v : '';
  return (typed.baseUrl || '').trim() === (deployed.baseUrl || '').trim()
    && seconds(typed.timeout) === seconds(deployed.timeout)
    && tls(typed.tls) === tls(deployed.tls)
    && (tls(typed.tls) !== '' || (typed.rejectUnauthorized !== false) === (deployed.rejectUnauthorized !== false))
    && (typedCredentials.cookie || '').trim() === (savedCredentials.cookie || '').trim()
    && sameLogin(loginOptions(typed, typedCredentials), loginOptions(deployed, savedCredentials));
}

function errorView(err: unknown): { kind: string; message: string } {
  if (err instanceof AssetApiError) return { kind: err.kind, message: err.message };
  return { kind: 'error', message: err instanceof Error ? err.message : String(err) };
}

/** Scheme, host and port of a URL; undefined when it is not one. */
function originOf(url: string | undefined): string | undefined {
  try { return new URL((url || '').trim()).origin; } catch { return undefined; }
}

export default function register(RED: PluginAPI): void {
  RED.plugins.registerPlugin('dam-sidebar', { type: 'dam-assets-sidebar' });

  const read = RED.auth.needsPermission(READ_PERMISSION);
  const write = RED.auth.needsPermission(WRITE_PERMISSION);
  const app = RED.httpAdmin;

  /** Everything the flows hold that the sidebar lists, from the deployed configuration. */
  function overview() {
    const servers: Record<string, unknown>[] = [];
    const eventIns: Record<string, unknown>[] = [];
    const subscriptions = new Map<string, SubscriptionView>();
    const use = (serverId: unknown, id: string | undefined, user: SubscriptionUse) => {
      if (!id || typeof serverId !== 'string' || !serverId) return;
      const key = `${serverId}\n${id}`;
      const entry = subscriptions.get(key) ?? { id, serverId, owned: false, usedBy: [] };
      entry.usedBy.push(user);
      entry.owned = entry.owned || user.owned;
      subscriptions.set(key, entry);
    };
    RED.nodes.eachNode((config) => {
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
          running: !!stats, registrable: !!stats?.registerNow, ...(stats ? stats.view() : {})
        });
        use(config.server, subscriptionId, { nodeId: config.id, type: config.type, name: config.name, owned: config.manage === true });
      } else if (config.type === 'asset-subscribe') {
        use(config.server, subscribeFixedId(config), { nodeId: config.id, type: config.type, name: config.name, owned: false });
      }
    });
    return { servers, subscriptions: [...subscriptions.values()], eventIns };
  }

  function liveServer(id: string): AssetServerConfigNode | undefined {
    const node = RED.nodes.getNode(id) as AssetServerConfigNode | null;
    return node && node.type === 'asset-server' ? node : undefined;
  }

  /** A subscription the flows use, with its server's client; undefined when the flows do not use it. */
  function usedSubscription(serverId: string, id: string): SubscriptionView | undefined {
    return overview().subscriptions.find(s => s.serverId === serverId && s.id === id);
  }

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

  /** The stored subscription's callback reaches an asset-event-in of these flows with another method. */
  function methodMismatchOf(details: unknown) {
    const stored = (details as { subscription?: { callback?: unknown; method?: unknown } } | null)?.subscription;
    if (!stored) return undefined;
    const eventIns: EventInRoute[] = [];
    const publicBaseUrls: string[] = [];
    RED.nodes.eachNode((config) => {
      if (config.type === 'asset-event-in') eventIns.push({ id: config.id, name: config.name, path: config.path, method: config.method });
      if (config.type === 'asset-server' && typeof config.publicBaseUrl === 'string') publicBaseUrls.push(config.publicBaseUrl);
    });
    return callbackMethodMismatch(stored, eventIns, { httpNodeRoot: RED.settings.httpNodeRoot, uiPort: RED.settings.uiPort, publicBaseUrls });
  }

  app.get('/dam-assets/subscriptions/:server/:id', read, async (req: any, res: any) => {
    const server = serverOfUsedSubscription(req, res);
    if (!server) return;
    try {
      const details = await server.getClient().getSubscription(req.params.id, { timeout: 10000 });
      res.json({ ok: true, details: maskHeaderValues(details), methodMismatch: methodMismatchOf(details) });
    } catch (err) {
      res.json({ ok: false, error: errorView(err) });
    }
  });

  app.delete('/dam-assets/subscriptions/:server/:id', write, async (req: any, res: any) => {
    const server = serverOfUsedSubscription(req, res);
    if (!server) return;
    try {
      await server.getClient().deleteSubscription(req.params.id, { timeout: 10000 });
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

  /** The deployed configuration of an asset-server (as the flows hold it), or undefined. */
  function deployedConfig(id: string): AssetServerConfig | undefined {
    let found: AssetServerConfig | undefined;
    if (id) RED.nodes.eachNode((config) => { if (config.id === id && config.type === 'asset-server') found = config as AssetServerConfig; });
    return found;
  }

  app.post('/dam-assets/connection-test', write, async (req: any, res: any) => {
    const body = req.body && typeof req.body === 'object' ? req.body : {};
    const text = (v: unknown) => typeof v === 'string' ? v : undefined;
    const config: AssetServerConfig = {
      id: text(body.id) || '',
      baseUrl: text(body.baseUrl),
      timeout: typeof body.timeout === 'number' ? body.timeout : text(body.timeout),
      rejectUnauthorized: body.rejectUnauthorized !== false,
      tls: text(body.tls) || undefined,
      loginEnabled: body.loginEnabled === true,
      ...Object.fromEntries(LOGIN_SETTINGS.map((key) => [key, text(body[key])]))
    };
    const typed: Record<string, string | undefined> = { cookie: text(body.cookie), username: text(body.username), password: text(body.password) };
    // Reachability first, without cookie or login: a wrong base URL is named as such.
    const unreachable = await baseUrlProblem(RED as any, config);
    if (unreachable) { res.json(unreachable); return; }
    const running = config.id ? liveServer(config.id) : undefined;
    const deployed = running ? deployedConfig(config.id) : undefined;
    // A field still showing the saved placeholder means the deployed node's value (the running
    // node's copy has ${ENV_VAR} already replaced).
    const saved = running?.credentials ?? {};
    const withSaved = (name: string) => typed[name] === SAVED_PASSWORD ? saved[name] : typed[name];
    const login = loginOptions(config, { username: typed.username, password: withSaved('password') });

    // Nothing changed: the deployed node's client, with any cookie set at run time or by a login.
    if (running?.client && deployed && sameConnection(config, { ...typed, cookie: withSaved('cookie'), password: withSaved('password') },
      deployed, saved)) {
      res.json(await checkConnection(running.client));
      return;
    }
    // Saved secrets only go where they were saved for. The saved password: only in a login exactly
    // like the running node's (same base URL; same login URL, session page, method, fields and user
    // name, with ${ENV} values resolved), else a user allowed to test connections could send it
    // to another host or path, or into another field.
    if (login && typed.password === SAVED_PASSWORD) {
      const typeAgain = () => res.json(configReport(invalidInput('password',
        'type the password again: the saved password is only used with the deployed base URL and login settings')));
      if (!running?.login) { typeAgain(); return; }
      // Login settings that cannot work are named first (else the answer would be "type it again").
      try { resolveLogin(login); } catch (err) { res.json(configReport(err)); return; }
      if ((config.baseUrl || '').trim() !== running.baseUrl || !sameLogin(login, running.login)) { typeAgain(); return; }
    }
    // With automatic login the check logs in first: the cookie is not sent.
    let cookie = login ? undefined : typed.cookie;
    if (cookie === SAVED_PASSWORD) {
      const sameBase = !!running && originOf(running.baseUrl) !== undefined && originOf(running.baseUrl) === originOf(config.baseUrl);
      if (!sameBase) {
        res.json(configReport(invalidInput('cookie', 'type the cookie again: the saved cookie is only sent to the deployed base URL\'s server')));
        return;
      }
      cookie = saved.cookie;
    }
    let client: AssetClient | undefined;
    try {
      client = new AssetClient(clientOptions(RED as any, config, { cookie, username: typed.username, password: withSaved('password') }));
    } catch (err) {
      res.json(configReport(err));
      return;
    }
    try {
      res.json(login ? await checkWithLogin(client) : await checkConnection(client));
    } finally {
      client.close();
    }
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
}
