/**
 * asset-server: configuration node. Holds the base URL, the session cookie (a
 * credential), timeout and TLS settings, the optional automatic login, and ONE
 * {@link AssetClient} shared by every node that uses this configuration. The client is
 * closed when the node closes.
 */
import { AssetClient, type AssetClientOptions } from '../api/client';
import { AssetApiError, invalidInput } from '../api/errors';
import { plainLoginWarning, type LoginOptions } from '../api/session';
import type { AssetRedisConfigNode } from './asset-redis';
import { isBlankSetting } from './common';
import type { Node, NodeAPI, TlsConfigNode } from './node-red';
import { keptSessions, loginOptions, type LoginConfig } from './server-session';

/** Editor properties of an asset-server node. */
export interface AssetServerConfig extends LoginConfig {
  id: string;
  name?: string;
  baseUrl?: string;
  /** Request timeout in seconds; 0 = none. */
  timeout?: number | string;
  /** Used when no tls-config node is selected. Default true. */
  rejectUnauthorized?: boolean;
  /** Optional id of a core tls-config node. */
  tls?: string;
  publicBaseUrl?: string;
  /** Optional asset-redis node: the automatic login's session is shared through it by every copy. */
  redis?: string;
}

/**
 * What an asset-server node offers to the nodes that use it
 * (`RED.nodes.getNode(config.server) as AssetServerConfigNode`).
 */
export interface AssetServerConfigNode extends Node {
  /** The shared client; undefined when the configuration is invalid (see {@link configError}). */
  client?: AssetClient;
  /** Why there is no client (missing base URL or cookie, bad TLS config...). Never holds the cookie. */
  configError?: AssetApiError;
  /** Server base URL as configured (no secret in it). */
  baseUrl: string;
  /**
   * Public base URL under which this Node-RED can be reached by the server,
   * e.g. `http://node-red.example:1880`; empty string when not configured.
   * Used to build callback URLs (asset-event-in).
   */
  publicBaseUrl: string;
  /** The automatic login as this node runs it (${ENV} values resolved); undefined when off. Holds the password. */
  login?: LoginOptions;
  /** The client, or throws {@link configError}. */
  getClient(): AssetClient;
  /**
   * Sends this cookie from the next request on, for every node on this server (asset-session
   * node). Kept in memory: see server-session.ts for what survives a redeploy.
   */
  setCookie(cookie: string): void;
}

/** Default request timeout, seconds. */
export const DEFAULT_TIMEOUT_S = 30;

/**
 * Finds the client for a node's `server` property, or throws an invalid-input
 * error naming the field: the node has no server selected, or it is misconfigured.
 */
export function clientFor(RED: NodeAPI, serverId: string | undefined): AssetClient {
  const server = serverId ? RED.nodes.getNode(serverId) as AssetServerConfigNode | null : null;
  if (!server || typeof server.getClient !== 'function') {
    throw invalidInput('server', 'select an asset-server configuration node');
  }
  return server.getClient();
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Builds the client options; throws invalid-input naming the field that is wrong. Also used by the connection test. */
export function clientOptions(RED: NodeAPI, config: AssetServerConfig, credentials: Record<string, string | undefined>): AssetClientOptions {
  const baseUrl = (config.baseUrl || '').trim();
  if (!baseUrl) throw invalidInput('baseUrl', 'is required');
  if (!isHttpUrl(baseUrl)) throw invalidInput('baseUrl', 'must be an http:// or https:// URL');
  const cookie = credentials.cookie || '';
  const login = loginOptions(config, credentials);
  if (!cookie.trim() && !login) {
    throw invalidInput('cookie', 'is required (the session cookie, Name=value or a bare value), unless automatic login is on');
  }
  const timeoutText = isBlankSetting(config.timeout) ? String(DEFAULT_TIMEOUT_S) : String(config.timeout);
  const timeoutS = Number(timeoutText);
  if (!Number.isFinite(timeoutS) || timeoutS < 0) throw invalidInput('timeout', 'must be a number of seconds, 0 or more');

  // Big transfers on a worker thread: Node-RED's heap then does not pay for their buffers' garbage collection.
  const options: AssetClientOptions = { baseUrl, cookie: cookie.trim(), timeout: Math.round(timeoutS * 1000), transferThread: 'worker' };
  if (login) options.login = login;
  if (config.tls) {
    const tlsNode = RED.nodes.getNode(config.tls) as TlsConfigNode | null;
    if (!tlsNode || typeof tlsNode.addTLSOptions !== 'function') throw invalidInput('tls', 'the selected TLS configuration node is missing');
    if (tlsNode.valid === false) throw invalidInput('tls', 'the selected TLS configuration is invalid (see its log message)');
    const tls = tlsNode.addTLSOptions({}) as Record<string, any>;
    if (tls.ca) options.ca = tls.ca;
    if (tls.cert) options.cert = tls.cert;
    if (tls.key) options.key = tls.key;
    if (tls.passphrase) options.passphrase = tls.passphrase;
    options.rejectUnauthorized = tls.rejectUnauthorized !== false;
  } else {
    options.rejectUnauthorized = config.rejectUnauthorized !== false;
  }
  return options;
}

export default function register(RED: NodeAPI): void {
  function AssetServerNode(this: AssetServerConfigNode, config: AssetServerConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    node.name = config.name;
    node.baseUrl = (config.baseUrl || '').trim();
    node.publicBaseUrl = (config.publicBaseUrl || '').trim();
    try {
      const options = clientOptions(RED, config, node.credentials ?? {});
      if (config.redis) options.sharedSession = sharedSession(config.redis, options);
      node.client = new AssetClient(options);
      node.login = options.login;
      keptSessions.adopt(node.id, config, node.credentials ?? {}, node.client);
      const exposed = plainLoginWarning(options.login, options.baseUrl);
      if (exposed) node.warn(exposed);
    } catch (err) {
      node.configError = err instanceof AssetApiError
        ? err
        : new AssetApiError('invalid-input', `asset-server: ${(err as Error).message}`);
      node.error(node.configError.message);
    }
    /** The session in Redis (redis-session.ts); needs automatic login. Its problems: one warning per minute. */
    function sharedSession(redisId: string, options: AssetClientOptions) {
      if (!options.login) throw invalidInput('redis', 'a shared session needs automatic login (the copies log in as one user)');
      const redis = RED.nodes.getNode(redisId) as AssetRedisConfigNode | null;
      if (!redis || typeof redis.sessionStoreFor !== 'function') throw invalidInput('redis', 'the selected asset-redis configuration node is missing');
      if (redis.configError) throw invalidInput('redis', redis.configError);
      let lastWarnAt = 0;
      return {
        store: redis.sessionStoreFor(options.baseUrl, options.login.username),
        onProblem: (err: unknown) => {
          if (Date.now() - lastWarnAt < 60000) return;
          lastWarnAt = Date.now();
          const message = (err as Error)?.message ?? String(err);
          node.warn(`asset-server: shared session unavailable, this copy logs in by itself: ${message}`);
        }
      };
    }
    node.getClient = () => {
      if (node.client) return node.client;
      throw node.configError ?? invalidInput('server', 'configuration is invalid');
    };
    node.setCookie = (cookie: string) => node.getClient().setCookie(cookie);
    node.on('close', (removed: boolean, done: () => void) => {
      if (removed) keptSessions.forget(node.id);
      try { node.client?.close(); } finally { node.client = undefined; done(); }
    });
  }

  RED.nodes.registerType('asset-server', AssetServerNode, {
    credentials: { cookie: { type: 'password' }, username: { type: 'text' }, password: { type: 'password' } }
  });
}
