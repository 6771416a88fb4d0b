/**
 * asset-event-in: the HTTP endpoint the asset server calls back (spec 2.3, 4.1 rule 12, section 6).
 *
 * - Settings: settings.ts. Route and body guard: route.ts (removed on close).
 * - Checks here: shared-secret header (401), content type / JSON / 2.3 shape / payload id
 *   (400), size (413). Then the duplicate filter, one msg per entry (or one per callback),
 *   then the success status once the messages are handed on.
 * - Optionally owns its subscription (subscription.ts): registered once the route is
 *   up, retried with backoff, deleted when the node is removed from the flow.
 * - What a callback goes through, and the state it changes: endpoint.ts (class EventInEndpoint).
 * - Status under the node and live counters for the DAM sidebar.
 */
import { AssetApiError } from '../../api/errors';
import { DuplicateFilter, memoryEntryFilter, type EntryFilter } from '../../events';
import { eventInStats } from '../shared/event-in-stats';
import type { AssetRedisConfigNode } from '../asset-redis';
import type { AssetServerConfigNode } from '../asset-server';
import { SettingError, localText } from '../shared';
import { secretProblem } from '../shared/masking';
import { adminClashReason, adminRouteClash } from './admin-paths';
import { EventInEndpoint, redact, shortStatus } from './endpoint';
import { openRoute, routeSharedWith } from './route';
import { flowNode } from '../shared/flows';
import { AtLeastOnceDelivery, inboxFile, readDeliverySettings, userDirectory, type DeliveryConfig } from './delivery';
import { deliverLeftovers, removeLeftovers } from './file-leftovers';
import { chosenRedis, inboxSource, usableRedis } from './inbox-choice';
import { deliverStreamLeftovers } from './stream-leftovers';
import { callbackUrl, readSettings, subscriptionFields, type AssetEventInConfig, type Settings } from './settings';
import { OwnedSubscription, ownerOf, releaseSubscription, sweepRegistryOnStart, type OwnedSetup } from './subscription';
import { createNode, registerType, type Node, type NodeAPI } from '../shared/node-red';
import { registryFor, sameSubscription, type RegisteredSubscription } from './registry';

export { DEFAULTS, callbackUrl, derivedSubscriptionId, type AssetEventInConfig } from './settings';

export default function register(RED: NodeAPI): void {
  /** Locale string with an English fallback (the test helper's RED._ returns the key). */
  function t(key: string, english: string, params: Record<string, unknown> = {}): string {
    return localText(RED, `asset-event-in.${key}`, english, params);
  }

  function AssetEventInNode(this: Node, config: AssetEventInConfig & DeliveryConfig) {
    createNode(RED, this, config);
    const node = this;
    const secret = node.credentials?.secret || undefined;

    /** A setting that cannot work: said in the log and the status; the node then does nothing. */
    function refuse(err: unknown): void {
      const message = err instanceof Error ? err.message : String(err);
      node.error(t('errors.config', 'configuration: __message__', { message }));
      node.status({ fill: 'red', shape: 'ring', text: shortStatus(message) });
    }

    let settings: Settings;
    try {
      const wrongSecret = secret === undefined ? undefined : secretProblem(secret);
      if (wrongSecret) throw new SettingError(`secret: ${wrongSecret}`);
      settings = readSettings(config, node.id);
      const clash = adminRouteClash(settings.path, RED.settings.httpNodeRoot, RED.settings.httpAdminRoot);
      if (clash) throw new SettingError(adminClashReason(clash));
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
    let deliverySettings: ReturnType<typeof readDeliverySettings>;
    let inbox: ReturnType<typeof inboxSource> | undefined;
    const userDir = userDirectory(RED.settings);
    try {
      deliverySettings = readDeliverySettings(config, settings.method, settings.perCallback);
      const shared = deliverySettings ? chosenRedis(RED, config.redis) : undefined;
      // The Redis Stream inbox keeps the duplicate window itself (inbox-choice.ts).
      filter = settings.dedup && !shared ? chooseFilter(config, settings.dedup) : undefined;
      if (deliverySettings) {
        inbox = inboxSource({ redis: shared, userDir, nodeId: node.id, settings: deliverySettings, windowMs: settings.dedup?.windowMs ?? 0, warn: (text) => node.warn(text) });
      }
    } catch (err) {
      refuse(err);
      return;
    }
    const stats = eventInStats.open(node.id); // live counters for the editor's DAM sidebar
    let streamLeftovers: ReturnType<typeof deliverStreamLeftovers> | undefined;
    let fileLeftovers: Promise<unknown> = Promise.resolve(); // closing waits for it: a new node may open the same file
    const endpoint = new EventInEndpoint(node, settings, filter, stats, secret, t);
    // Delivery "at least once": the entries go through this node's inbox (delivery.ts).
    if (deliverySettings && inbox) {
      endpoint.delivery = new AtLeastOnceDelivery(node.id, inbox, deliverySettings, {
        send: (msg, output) => node.send(output === 0 ? msg : [null, msg]),
        warn: (text) => node.warn(text),
        log: (text) => node.log(text),
        changed: () => endpoint.callbackStatus(),
        t
      });
    } else {
      // Switched back to "at most once": what the inbox (file or Redis Stream) still holds is sent once.
      if (userDir) {
        fileLeftovers = deliverLeftovers(inboxFile(userDir, node.id), (msg) => node.send(msg), (text) => node.warn(text), t, () => endpoint.closed)
          .catch((err: Error) => node.warn(err.message));
      }
      const redis = usableRedis(RED, config.redis);
      if (redis) streamLeftovers = deliverStreamLeftovers({ redis, nodeId: node.id, visibilityTimeout: config.visibilityTimeout, send: (msg) => node.send(msg), warn: (text) => node.warn(text), t });
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
    const closeRoute = openRoute(RED, settings.method, settings.path, endpoint.route());
    const sharing = routeSharedWith(RED, node.id, settings.method, settings.path);
    if (sharing) node.warn(t('errors.route-shared', '__method__ __path__ is also the route of __other__: each call goes to one of them only; give one another path', { method: settings.method.toUpperCase(), path: settings.path, other: sharing }));

    // ---- the owned subscription
    let owner: OwnedSubscription | undefined;
    const registry = registryFor(RED);
    if (!settings.manage) releaseRecorded(registry.get(node.id)); // "manage" unchecked: its old one goes
    if (settings.manage) {
      try {
        const setup = ownedSubscriptionSetup();
        // What this node registered before (id or server changed, also across a restart) goes.
        const before = registry.get(node.id);
        // Two owners of one subscription would take it from each other, and removing one would delete the other's.
        const manager = ownerOf(RED, setup.recorded, node.id);
        if (manager === node.id) registry.set(node.id, setup.recorded);
        else if (before) registry.forget(node.id);
        if (before && !sameSubscription(before, setup.recorded)) releaseSubscription(RED, t, before, (message) => node.warn(redact(message, secret)), node.id);
        if (manager !== node.id) {
          throw new SettingError(`subscriptionId: ${setup.id} on this server is managed by another asset-event-in (${nameOfNode(manager)}): give one of them another Id`);
        }
        const showOwned = (s: 'registering' | 'registered' | 'failed', error?: string, detail?: string) => {
          endpoint.subscription = s;
          endpoint.subscriptionError = error ? redact(error, secret) : '';
          // The sidebar shows the whole error; the status under the node its short text.
          stats.subscription(s, detail ? redact(detail, secret) : endpoint.subscriptionError || undefined);
          endpoint.showStatus();
        };
        owner = new OwnedSubscription(setup, showOwned, (message) => node.error(redact(message, secret)));
        stats.ownedSubscription = { server: setup.recorded.server, id: setup.id, deleted: () => showOwned('failed', t('status.deleted', 'deleted in the DAM tab'),
          t('errors.deleted', 'deleted in the DAM tab: no change arrives until "register again" or a redeploy registers it')) };
      } catch (err) {
        const message = err instanceof SettingError || err instanceof AssetApiError ? err.message : String(err);
        endpoint.subscription = 'failed';
        endpoint.subscriptionError = message.slice(0, 60);
        node.error(redact(t('errors.subscription-config', 'cannot manage the subscription: __message__', { message }), secret));
      }
      if (owner) {
        const registering = owner;
        stats.registerNow = () => registering.start().then((error) => error && redact(error, secret));
      }
      owner?.start(); // after the route: the server may call at once
    }
    endpoint.showStatus();

    /** Deletes a subscription this node registered before and forgets it (kept for a retry when the server is unreachable). */
    function releaseRecorded(recorded: RegisteredSubscription | undefined): void {
      if (!recorded) return;
      registry.forget(node.id);
      releaseSubscription(RED, t, recorded, (message) => node.warn(redact(message, secret)), node.id);
    }

    /** A node of the flows as the user knows it: its name (from the flows: it may not be started yet) and id. */
    function nameOfNode(id: string): string {
      const name = flowNode(RED, id)?.name;
      return typeof name === 'string' && name ? `"${name}", ${id}` : id;
    }

    function ownedSubscriptionSetup(): OwnedSetup {
      const server = config.server ? RED.nodes.getNode(config.server) as AssetServerConfigNode | null : null;
      if (!server || typeof server.getClient !== 'function') throw new SettingError('server: select an asset-server configuration node');
      const client = server.getClient(true); // no cookie yet: registered once a flow sets one (subscription.ts)
      if (server.publicBaseUrlError) throw server.publicBaseUrlError;
      if (!server.publicBaseUrl) {
        throw new SettingError('server: the asset-server node has no public base URL, so no callback URL can be built');
      }
      const fields = subscriptionFields(config, settings, callbackUrl(server.publicBaseUrl, RED.settings.httpNodeRoot || undefined, settings.path), secret);
      const id = settings.subscriptionId as string;
      return { client, id, fields, t, recorded: { server: server.id, baseUrl: server.baseUrl, id } };
    }

    node.on('close', (removed: boolean, done: () => void) => {
      endpoint.closed = true;
      eventInStats.close(stats);
      endpoint.stopStatusTimer();
      closeRoute();
      node.status({});
      // Node-RED says "removed" also for a node disabled (or on a disabled flow): still in the flows, its inbox stays.
      const gone = removed && flowNode(RED, node.id) === undefined;
      const closingInbox = endpoint.delivery
        ? endpoint.delivery.close(gone).catch((err: Error) => node.warn(err.message))
        : Promise.all([
          streamLeftovers?.close(gone),
          fileLeftovers.then(() => (gone && userDir ? removeLeftovers(inboxFile(userDir, node.id), (text) => node.warn(text), t) : undefined))
        ]).catch((err: Error) => node.warn(err.message));
      if (!owner) { closingInbox.then(() => done(), () => done()); return; }
      const closing = owner;
      closing.close(removed).then(async (failure) => {
        await closingInbox;
        if (!removed) return;
        // Removed: it owns nothing any more; a deletion that failed is tried again on the next start.
        registry.forget(node.id);
        if (failure) registry.addOrphan(closing.setup.recorded);
      }).then(done, done);
    });
  }

  sweepRegistryOnStart(RED, t);

  registerType(RED, 'asset-event-in', AssetEventInNode, { secret: { type: 'password' } });
}
