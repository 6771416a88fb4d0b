/**
 * The client's HTTP proxy: the setting (from the environment, none, or a given proxy server with
 * its credentials and no-proxy list), checked once; and the agent that sends each connection
 * direct or through the proxy, decided per URL by core's rules (proxy-rules.ts), so that an
 * automatic login on another host gets its own decision.
 *
 * HTTPS targets go through a CONNECT tunnel (https-proxy-agent): the proxy sees host and port,
 * never the cookie, body or answer. Plain-HTTP targets send the absolute URI to the proxy
 * (http-proxy-agent). Both from the proxy-agents project; no tunnel code of our own.
 */
import * as http from 'http';
import * as https from 'https';
import { Agent as AgentBase, type AgentConnectOpts } from 'agent-base';
import { HttpProxyAgent } from 'http-proxy-agent';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { invalidInput } from './errors';
import { configNodeEnv, proxyForUrl, type ProxyEnv, type ProxyEnvOptions } from './proxy-rules';

export type { ProxyEnvOptions };

/** A proxy server given explicitly (what a core `http proxy` config node holds). */
export interface ProxyServer {
  /** `http://host:port` (or `https://` for a TLS proxy). */
  url: string;
  /** Proxy user name and password (basic authentication); override any in the URL. Secrets. */
  username?: string;
  password?: string;
  /** Hosts reached direct: `host`, `.domain`, `*.domain`, with optional `:port`, or `*`. */
  noProxy?: string | string[];
}

/**
 * `env` (default): `http_proxy`, `https_proxy`, `no_proxy` (upper or lower case) as Node-RED's
 * http request node reads them; `none`: always direct; or a {@link ProxyServer}.
 */
export type ProxySetting = 'env' | 'none' | ProxyServer;

/** A checked setting. `env` is read at each new connection (as core does for each request). */
export type ResolvedProxy =
  | { mode: 'none' }
  | { mode: 'env'; options: ProxyEnvOptions }
  | { mode: 'server'; env: ProxyEnv; username: string; password: string };

const URL_RULE = 'must be an http:// or https:// URL with a host, such as http://proxy.example:3128';

/** Checks a proxy setting; throws invalid-input naming the field (`proxy`, `proxy.url`, ...). */
export function resolveProxy(setting: unknown, envOptions: unknown): ResolvedProxy {
  if (setting === undefined || setting === null || setting === 'env') return { mode: 'env', options: envOptionsOf(envOptions) };
  if (setting === 'none') return { mode: 'none' };
  if (typeof setting !== 'object' || Array.isArray(setting)) {
    throw invalidInput('proxy', "must be 'env', 'none' or an object with url (and optional username, password, noProxy)");
  }
  const server = setting as ProxyServer;
  const url = typeof server.url === 'string' ? server.url.trim() : '';
  if (!url) throw invalidInput('proxy.url', `is required: ${URL_RULE}`);
  proxyUrlOf(url, 'proxy.url');
  for (const name of ['username', 'password'] as const) {
    if (server[name] !== undefined && server[name] !== null && typeof server[name] !== 'string') throw invalidInput(`proxy.${name}`, 'must be text');
  }
  const list = server.noProxy === undefined || server.noProxy === null ? []
    : typeof server.noProxy === 'string' ? server.noProxy.split(/[,\s]+/)
      : Array.isArray(server.noProxy) ? server.noProxy : undefined;
  if (!list || list.some((entry) => typeof entry !== 'string')) throw invalidInput('proxy.noProxy', 'must be a list of host names, or text with them separated by commas');
  return {
    mode: 'server',
    env: configNodeEnv(url, list.map((entry) => entry.trim()).filter(Boolean)),
    username: server.username ?? '',
    password: server.password ?? ''
  };
}

function envOptionsOf(value: unknown): ProxyEnvOptions {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') throw invalidInput('proxyOptions', 'must be an object (favourUpperCase, lowerCaseOnly, excludeNpm)');
  const o = value as Record<string, unknown>;
  return { favourUpperCase: o.favourUpperCase === true, lowerCaseOnly: o.lowerCaseOnly === true, excludeNpm: o.excludeNpm === true };
}

/** A proxy URL (a scheme-less one was already given the target's scheme by the rules); throws naming `field`. */
function proxyUrlOf(text: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidInput(field, URL_RULE);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) throw invalidInput(field, URL_RULE);
  return url;
}

/** Agent options the proxy agents share with the direct ones: pool size and the server's TLS settings. */
export type TunnelOptions = http.AgentOptions & https.AgentOptions;

/**
 * Sends each new connection direct (through the client's own agents) or through the proxy the
 * rules give for its URL. Holds one proxy agent per proxy and scheme, each with its own pool.
 */
export class ProxyRouter extends AgentBase {
  private readonly viaProxy = new Map<string, http.Agent>();

  constructor(private readonly proxy: Exclude<ResolvedProxy, { mode: 'none' }>,
    private readonly direct: { http: http.Agent; https: https.Agent }, private readonly tunnel: TunnelOptions) {
    // Every request goes on to the agent chosen below, which pools. keepAlive: Node sends
    // `Connection: close` through an agent without it. The TLS options ride along with each
    // request: https-proxy-agent takes the target's TLS settings from the request, not its own.
    super({ keepAlive: true, ca: tunnel.ca, cert: tunnel.cert, key: tunnel.key, passphrase: tunnel.passphrase, rejectUnauthorized: tunnel.rejectUnauthorized } as http.AgentOptions);
  }

  /** Every proxy agent made so far (to close their idle sockets with the client). */
  get proxyAgents(): http.Agent[] {
    return [...this.viaProxy.values()];
  }

  connect(_req: http.ClientRequest, opts: AgentConnectOpts): http.Agent {
    const secure = opts.secureEndpoint;
    const host = opts.host ?? 'localhost';
    const target = `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${opts.port}/`;
    const found = this.proxy.mode === 'env'
      ? proxyForUrl(target, process.env, this.proxy.options)
      : proxyForUrl(target, this.proxy.env);
    if (!found) return secure ? this.direct.https : this.direct.http;
    const key = `${secure ? 'tunnel' : 'forward'} ${found}`;
    let agent = this.viaProxy.get(key);
    if (!agent) {
      const url = this.withCredentials(found);
      agent = secure ? new HttpsProxyAgent(url, this.tunnel) : new HttpProxyAgent(url, { keepAlive: this.tunnel.keepAlive, maxSockets: this.tunnel.maxSockets });
      this.viaProxy.set(key, agent);
    }
    return agent;
  }

  /** The proxy URL with the config node's user name and password (they win over any in the URL, as in core). */
  private withCredentials(found: string): URL {
    const field = this.proxy.mode === 'env' ? (found.startsWith('https') ? 'https_proxy' : 'http_proxy') : 'proxy.url';
    const url = proxyUrlOf(found, field);
    if (this.proxy.mode === 'server' && (this.proxy.username || this.proxy.password)) {
      // Encoded here, decoded by the agents: a % or : in a password survives the round trip.
      url.username = encodeURIComponent(this.proxy.username);
      url.password = encodeURIComponent(this.proxy.password);
    }
    return url;
  }
}

/** The secrets of a proxy setting (user name is not one; the password is), for redaction from error text. */
export function proxySecrets(proxy: ResolvedProxy): string[] {
  const secrets: string[] = [];
  const fromUrl = (text: string | undefined) => {
    if (!text) return;
    try {
      const url = new URL(text.includes('://') ? text : `http://${text}`);
      if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
    } catch { /* not a URL: no credentials in it */ }
  };
  if (proxy.mode === 'server') {
    if (proxy.password) secrets.push(proxy.password);
    fromUrl(proxy.env.http_proxy);
  } else if (proxy.mode === 'env') {
    for (const name of ['http_proxy', 'https_proxy', 'all_proxy', 'npm_config_proxy', 'npm_config_http_proxy', 'npm_config_https_proxy']) {
      fromUrl(process.env[name]);
      fromUrl(process.env[name.toUpperCase()]);
    }
  }
  return secrets;
}
