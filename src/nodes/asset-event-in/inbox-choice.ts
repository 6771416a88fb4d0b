/**
 * Which inbox an at-least-once asset-event-in keeps: the journal file in Node-RED's user directory
 * (one Node-RED), or, when an asset-redis node is chosen, a Redis Stream every copy shares
 * (src/events/inbox/redis-stream-inbox.ts). The node's settings and msg properties are the same
 * for both: a flow moves to several copies by choosing an asset-redis node, nothing else.
 * With the Redis inbox the duplicate window is kept by the inbox itself, in the script that stores
 * the entries (one round trip: an entry is never claimed without being stored), so the node's
 * separate duplicate filter is not used.
 */
import type { AssetRedisConfigNode } from '../asset-redis';
import { SettingError } from '../shared';
import type { NodeAPI } from '../shared/node-red';
import { inboxFile, type DeliverySettings, type InboxOpener } from './delivery';

/** The asset-redis node chosen on an asset-event-in, checked; undefined when none is chosen. */
export function chosenRedis(RED: NodeAPI, redisId: string | undefined): AssetRedisConfigNode | undefined {
  if (!redisId) return undefined;
  const redis = RED.nodes.getNode(redisId) as AssetRedisConfigNode | null;
  if (!redis || typeof redis.inboxFor !== 'function') throw new SettingError('redis: the selected asset-redis configuration node is missing');
  if (redis.configError) throw new SettingError(`redis: ${redis.configError}`);
  return redis;
}

/** The chosen asset-redis node when it can be used, else undefined (at most once: its own checks report it). */
export function usableRedis(RED: NodeAPI, redisId: string | undefined): AssetRedisConfigNode | undefined {
  try { return chosenRedis(RED, redisId); } catch { return undefined; }
}

/** The journal file's path, or an opener of the node's Redis Stream inbox. */
export function inboxSource(options: {
  redis: AssetRedisConfigNode | undefined; userDir: string | undefined; nodeId: string; settings: DeliverySettings;
  /** The node's duplicate window, ms (0: off). */
  windowMs: number; warn: (text: string) => void;
}): string | InboxOpener {
  const { redis, userDir, nodeId, settings, windowMs, warn } = options;
  if (!redis) {
    if (!userDir) throw new SettingError('delivery: "at least once" keeps its inbox in Node-RED\'s user directory, and settings.userDir is not set (or choose an asset-redis node)');
    return inboxFile(userDir, nodeId);
  }
  return async () => {
    const inbox = redis.inboxFor(nodeId, { ...settings, windowMs, warn });
    // Created now when Redis is up; else by the first store (its script creates it when missing).
    await inbox.ensureGroup().catch(() => undefined);
    return { inbox, load: { loaded: 0, tornBytes: 0, corrupt: 0, parkedAtLoad: [] } };
  };
}
