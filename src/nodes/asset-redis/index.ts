/**
 * asset-redis: configuration node for the Redis that several Node-RED copies share (the
 * duplicate filter of asset-event-in, and the session of an asset-server: session.ts). Holds the URL (redis:// or rediss:// for TLS), the
 * password (a credential), a key prefix, a timeout and the claim lease, and ONE connection shared
 * by the nodes that use it, opened on first use and closed with the node. The Redis client
 * (ioredis) is loaded only when such a node exists.
 */
import { RedisDuplicateFilter, type RedisLike } from '../../events';
import { RedisStreamInbox, type StreamInboxOptions, type StreamRedis } from '../../events/inbox';
import { numberSetting } from '../shared';
import { createNode, registerType, type Node, type NodeAPI } from '../shared/node-red';
import { RedisSessionStore, sessionKey } from './session';

export interface AssetRedisConfig {
  id: string;
  name?: string;
  /** redis://host:port/db or rediss://host:port/db (TLS); a user name may be in it, never a password. */
  url?: string;
  /** With rediss://: refuse a server whose certificate does not verify. Default true. */
  rejectUnauthorized?: boolean;
  /** Prepended to every key. Default `dam:dedup:`. */
  prefix?: string;
  /** Most time a Redis round trip may take, in ms. Default 1000. */
  timeout?: string | number;
  /** How long a claimed entry stays claimed if the copy that claimed it dies before emitting it, in s. Default 10. */
  lease?: string | number;
}

export const REDIS_DEFAULTS = { prefix: 'dam:dedup:', timeoutMs: 1000, leaseS: 10 } as const;

export interface AssetRedisConfigNode extends Node {
  /** Why this configuration cannot be used (names the field); undefined when it can. */
  configError?: string;
  /** A duplicate filter for one asset-event-in node (keys under prefix + node id). Throws configError. */
  filterFor(nodeId: string, windowMs: number): RedisDuplicateFilter;
  /** The at-least-once inbox of one asset-event-in node, shared by every copy (keys under prefix + {node id} + `in:`). Throws configError. */
  inboxFor(nodeId: string, options: Omit<StreamInboxOptions, 'prefix' | 'timeoutMs'>): RedisStreamInbox;
  /** The session shared by every copy that logs in as `username` on `baseUrl` (session.ts). Throws configError. */
  sessionStoreFor(baseUrl: string, username: string): RedisSessionStore;
}

interface Settings { url: string; rejectUnauthorized: boolean; prefix: string; timeoutMs: number; leaseMs: number }

function readSettings(config: AssetRedisConfig): Settings {
  const url = (config.url || '').trim();
  if (!url) throw new Error('url: is required (redis://host:6379 or rediss://host:6380)');
  let parsed: URL;
  try { parsed = new URL(url); } catch { throw new Error('url: must be a redis:// or rediss:// URL'); }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new Error('url: must be a redis:// or rediss:// URL');
  // ioredis also takes a password from the query (?password=, ?sentinelPassword=): stored in the flow as plain text too.
  if (parsed.password || [...parsed.searchParams.keys()].some((name) => /password/i.test(name))) {
    throw new Error('url: must not hold a password; put it in the Password field (kept as a credential)');
  }
  const timeoutMs = numberSetting(config.timeout, 'timeout', REDIS_DEFAULTS.timeoutMs, (n) => n >= 10 && n <= 60000, 'must be a number of ms from 10 to 60000');
  const leaseMs = 1000 * numberSetting(config.lease, 'lease', REDIS_DEFAULTS.leaseS, (n) => n >= 0.1 && n <= 3600, 'must be a number of seconds from 0.1 to 3600');
  // A claim that may take the whole timeout to answer must still hold when it is confirmed.
  if (leaseMs <= timeoutMs) throw new Error(`lease: must be longer than the timeout (${timeoutMs} ms)`);
  return {
    url,
    rejectUnauthorized: config.rejectUnauthorized !== false,
    prefix: config.prefix === undefined || config.prefix === '' ? REDIS_DEFAULTS.prefix : String(config.prefix),
    timeoutMs,
    leaseMs
  };
}

/**
 * Resolves once no command waits in an auto-pipeline of `client` (one waits while a pipeline sent
 * before it is not answered yet), or after `ms`: what was sent is then written, in order.
 */
async function allWritten(client: { autoPipelineQueueSize: number }, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (client.autoPipelineQueueSize > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Reconnect after 100 ms, 200 ms, ... at most 2 s apart, for ever (a callback meanwhile is answered 503). */
const reconnectDelay = (times: number) => Math.min(times * 100, 2000);

export default function register(RED: NodeAPI): void {
  function AssetRedisNode(this: AssetRedisConfigNode, config: AssetRedisConfig) {
    createNode(RED, this, config);
    const node = this;
    node.name = config.name;
    let settings: Settings | undefined;
    try {
      settings = readSettings(config);
    } catch (err) {
      node.configError = (err as Error).message;
      node.error(`asset-redis: ${node.configError}`);
    }
    let client: (RedisLike & { disconnect(): void; quit(): Promise<unknown>; status: string; autoPipelineQueueSize: number; on(event: string, f: (...a: any[]) => void): unknown }) | undefined;
    let lastErrorLog = 0;

    function connection(s: Settings) {
      if (client) return client;
      // Loaded here, not at the top: a flow without Redis never loads the client.
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, see above
      const Redis = require('ioredis');
      const created = new Redis(s.url, {
        password: node.credentials?.password || undefined,
        tls: s.url.startsWith('rediss:') ? { rejectUnauthorized: s.rejectUnauthorized } : undefined,
        // Fail fast instead of queueing: a callback gets 503 and the server retries it later.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        // A command cut off by a lost connection has already failed for its caller (503): sent
        // again after the reconnect, a late claim would block its entries for the lease.
        autoResendUnfulfilledCommands: false,
        // Scripts of callbacks handled in the same turn of the event loop go out in one write.
        enableAutoPipelining: true,
        // The filter's deletion of a timed-out claim goes out at once (RedisLike.del).
        autoPipeliningIgnoredCommands: ['del'],
        connectTimeout: Math.max(s.timeoutMs, 1000),
        retryStrategy: reconnectDelay
      });
      created.on('error', (err: Error) => {
        // ioredis reports every failed reconnect: log at most one line per 30 s.
        const now = Date.now();
        if (now - lastErrorLog < 30000) return;
        lastErrorLog = now;
        node.warn(`asset-redis: ${err.message}`);
      });
      client = created;
      return created;
    }

    node.filterFor = (nodeId: string, windowMs: number) => {
      if (!settings) throw new Error(node.configError);
      return new RedisDuplicateFilter(connection(settings), {
        prefix: `${settings.prefix}{${nodeId}}:`, windowMs, leaseMs: settings.leaseMs, timeoutMs: settings.timeoutMs
      });
    };

    node.inboxFor = (nodeId, options) => {
      if (!settings) throw new Error(node.configError);
      const redis = connection(settings) as unknown as StreamRedis;
      return new RedisStreamInbox(redis, { ...options, prefix: `${settings.prefix}{${nodeId}}:in:`, timeoutMs: settings.timeoutMs });
    };

    node.sessionStoreFor = (baseUrl: string, username: string) => {
      if (!settings) throw new Error(node.configError);
      return new RedisSessionStore(connection(settings), sessionKey(settings.prefix, baseUrl, username), settings.timeoutMs);
    };

    node.on('close', (_removed: boolean, done: () => void) => {
      const closing = client;
      client = undefined;
      done();
      if (!closing) return;
      const timeoutMs = settings?.timeoutMs ?? REDIS_DEFAULTS.timeoutMs;
      // Nodes using the connection stop in the same deploy and send their last commands (the inbox
      // lets go of what it holds, counts what stays) a few promise steps later, which auto-pipelining
      // writes one setImmediate after that, or once a pipeline still under way is answered. QUIT,
      // which ioredis never pipelines, goes once they are all written, each wait bounded by the timeout.
      setImmediate(() => setImmediate(async () => {
        await allWritten(closing, timeoutMs);
        if (closing.status !== 'ready') { closing.disconnect(); return; }
        const timer = setTimeout(() => closing.disconnect(), timeoutMs);
        closing.quit().catch(() => undefined).finally(() => { clearTimeout(timer); closing.disconnect(); });
      }));
    });
  }

  registerType(RED, 'asset-redis', AssetRedisNode, { password: { type: 'password' } });
}
