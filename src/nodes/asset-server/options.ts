/**
 * asset-server's settings: the config and what the node offers to the nodes that use it
 * ({@link AssetServerConfigNode}), the client options built from the settings (one rule for
 * the node and the connection test) and {@link clientFor}.
 */
import { AssetClient, type AssetClientOptions } from '../../api/client';
import { parseBaseUrl } from '../../api/client-options';
import { AssetApiError, invalidInput } from '../../api/errors';
import type { LoginOptions } from '../../api/session';
import { isBlankSetting } from '../shared';
import type { Node, NodeAPI, TlsConfigNode } from '../shared/node-red';
import { loginOptions, type LoginConfig } from './session';
import { proxyOptions, type ProxyConfig } from './proxy';

/** Editor properties of an asset-server node. */
export interface AssetServerConfig extends LoginConfig, ProxyConfig {
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
  /** Why the public base URL setting cannot be used (publicBaseUrl is then ''). */
  publicBaseUrlError?: AssetApiError;
  /** The automatic login as this node runs it (${ENV} values resolved); undefined when off. Holds the password. */
  login?: LoginOptions;
  /**
   * The client, or throws {@link configError}, or noCookieError while there is no session to send
   * (unless `noSessionYet`: for a caller that waits for one, such as an owned subscription).
   */
  getClient(noSessionYet?: boolean): AssetClient;
  /**
   * Sends this cookie from the next request on, for every node on this server (asset-session
   * node). Kept in memory: see asset-server/session.ts for what survives a redeploy.
   */
  setCookie(cookie: string): void;
}

/** Default request timeout, seconds. */
export const DEFAULT_TIMEOUT_S = 30;

/**
 * Finds the client for a node's `server` property, or throws an invalid-input
 * error naming the field: the node has no server selected, or it is misconfigured (or has no
 * session yet, unless `noSessionYet`: see AssetServerConfigNode.getClient).
 */
export function clientFor(RED: NodeAPI, serverId: string | undefined, noSessionYet = false): AssetClient {
  const server = serverId ? RED.nodes.getNode(serverId) as AssetServerConfigNode | null : null;
  if (!server || typeof server.getClient !== 'function') {
    throw invalidInput('server', 'select an asset-server configuration node');
  }
  return server.getClient(noSessionYet);
}

/**
 * The timeout setting in seconds: blank is {@link DEFAULT_TIMEOUT_S}; else a finite number, 0 or
 * more (0 = none). Editor copy: DamEditor.timeoutSetting (test/house/rules.test.js compares them).
 */
export function timeoutSeconds(value: unknown): number {
  const seconds = isBlankSetting(value) ? DEFAULT_TIMEOUT_S : Number(String(value));
  if (!Number.isFinite(seconds) || seconds < 0) throw invalidInput('timeout', 'must be a number of seconds, 0 or more');
  return seconds;
}

/**
 * The public URL setting, trimmed; '' when blank. The base URL's rule (parseBaseUrl): it becomes
 * the callback URL the server stores and calls, so no ? or # (they would cut the path off) and no
 * user:password@ (stored and shown in plain text). Editor copy: asset-server.html (rules.test.js).
 */
export function publicBaseUrl(value: unknown): string {
  if (isBlankSetting(value)) return '';
  parseBaseUrl(value, 'publicBaseUrl');
  return String(value).trim();
}

/**
 * A request with no session to send: no cookie typed, none set by an asset-session node yet, no
 * automatic login. Checked per request, not at deploy: a flow may set the cookie at start.
 */
export function noCookieError(): AssetApiError {
  return invalidInput('cookie', 'is required (the session cookie, Name=value or a bare value): type it in the asset-server configuration, ' +
    'set it with an asset-session node before the first request, or switch on automatic login');
}

/**
 * Builds the client options; throws invalid-input naming the field that is wrong. Also used by
 * the connection test. A blank cookie is allowed (noCookieError).
 */
export function clientOptions(RED: NodeAPI, config: AssetServerConfig, credentials: Record<string, string | undefined>): AssetClientOptions {
  const baseUrl = (config.baseUrl || '').trim();
  if (!baseUrl) throw invalidInput('baseUrl', 'is required');
  parseBaseUrl(baseUrl); // the client's rule, one place: absolute http(s) with a host, no ? or #
  const cookie = credentials.cookie || '';
  const login = loginOptions(config, credentials);
  const timeoutS = timeoutSeconds(config.timeout);

  // Big transfers on a worker thread: Node-RED's heap then does not pay for their buffers' garbage collection.
  const options: AssetClientOptions = { baseUrl, cookie: cookie.trim(), timeout: Math.round(timeoutS * 1000), transferThread: 'worker' };
  if (login) options.login = login;
  Object.assign(options, proxyOptions(RED, config));
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
