/**
 * asset-server's *Share session* field: the session of the automatic login kept in Redis through
 * an asset-redis node (asset-redis/session.ts), so that several Node-RED copies log in as one user
 * one at a time and use one cookie (api/shared-session.ts has the rules).
 */
import type { AssetClientOptions } from '../../api/client';
import { invalidInput } from '../../api/errors';
import type { SharedSessionOption } from '../../api/shared-session';
import type { AssetRedisConfigNode } from '../asset-redis';
import type { Node, NodeAPI } from '../shared/node-red';

/** How often at most the store's failures are logged. */
const WARN_INTERVAL_MS = 60000;

/** The shared-session option for the client; throws invalid-input naming `redis` when it cannot work. */
export function sharedSessionFor(RED: NodeAPI, node: Node, redisId: string, options: AssetClientOptions): SharedSessionOption {
  if (!options.login) throw invalidInput('redis', 'a shared session needs automatic login (the copies log in as one user)');
  const redis = RED.nodes.getNode(redisId) as AssetRedisConfigNode | null;
  if (!redis || typeof redis.sessionStoreFor !== 'function') throw invalidInput('redis', 'the selected asset-redis configuration node is missing');
  if (redis.configError) throw invalidInput('redis', redis.configError);
  let lastWarnAt = 0;
  return {
    store: redis.sessionStoreFor(options.baseUrl, options.login.username),
    // Redis's own messages: no cookie or password in them (the store's keys hold a hash, its values are never echoed).
    onProblem: (err: unknown) => {
      if (Date.now() - lastWarnAt < WARN_INTERVAL_MS) return;
      lastWarnAt = Date.now();
      const message = (err as Error)?.message ?? String(err);
      node.warn(`asset-server: shared session unavailable, this copy logs in by itself: ${message}`);
    }
  };
}
