/**
 * The client's HTTP proxy: the setting (from the environment, none, or a given proxy server with
 * its credentials and no-proxy list), checked once; and the agent that sends each connection
 * direct or through the proxy, decided per URL by core's rules (proxy-rules.ts), so that an
 * automatic login on another host gets its own decision.
 *
 * HTTPS targets go through a CONNECT tunnel (https-proxy-agent, of the proxy-agents project): the
 * proxy sees host and port, never the cookie, body or answer. Plain-HTTP targets send the absolute
 * URI to the proxy over a kept-alive connection ({@link ForwardAgent}, no tunnel, ~30 lines). Not
 * http-proxy-agent 7.0.2: its connect() re-generates the request header with `_implicitHeader()`,
 * which clears Node's "header sent" flag, so a body written both before and after that moment goes
 * out with the header twice (shown with a bare http.request; our uploads' timing happened to miss
 * it, a guarantee we do not want to rest on). docs/proxy.md has the details.
 */
import * as http from 'http';
import * as https from 'https';
import * as net from 'net';
import type { Duplex } from 'stream';
import * as tls from 'tls';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { invalidInput } from './errors';
import { configNodeEnv, proxyFor, type ProxyEnv, type ProxyEnvOptions } from './proxy-rules';

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

/** Requests sent to a proxy, and its origin (no credentials). */
const routed = new WeakMap<object, string>();

/** The origin of the proxy a request (e.g. an axios error's `request`) was sent to; undefined when it went direct. */
export function proxyOriginOf(request: unknown): string | undefined {
  return request !== null && typeof request === 'object' ? routed.get(request) : undefined;
}

/** Agent options the proxy agents share with the direct ones: pool size and the server's TLS settings. */
export type TunnelOptions = http.AgentOptions & https.AgentOptions;

/**
 * One agent per scheme for axios (`httpAgent`, `httpsAgent`): each sends a request on to the
 * client's own agent (direct) or to the proxy agent the rules give for its URL, which pool the
 * connections. The choice is made in `addRequest`, synchronously when the request is created:
 * the forward agent must rewrite the path to the absolute URI before the request's header is
 * written. Each request sent to a proxy is remembered ({@link proxyOriginOf}) so that an error
 * can say the proxy, not the server, could not be reached.
 */
export class ProxyRouter {
  readonly http: http.Agent;
  readonly https: https.Agent;
  private readonly viaProxy = new Map<string, { agent: http.Agent; origin: string }>();

  constructor(private readonly proxy: Exclude<ResolvedProxy, { mode: 'none' }>,
    direct: { http: http.Agent; https: https.Agent }, private readonly tunnel: TunnelOptions) {
    const router = this;
    // keepAlive: Node sends `Connection: close` through an agent without it. These agents hold no
    // socket of their own.
    this.http = new (class extends http.Agent {
      addRequest(req: http.ClientRequest, options: http.RequestOptions): void {
        const agent = router.agentFor(req, false, options) ?? direct.http;
        (agent as unknown as { addRequest(r: http.ClientRequest, o: http.RequestOptions): void }).addRequest(req, options);
      }
    })({ keepAlive: true });
    this.https = new (class extends https.Agent {
      addRequest(req: http.ClientRequest, options: https.RequestOptions): void {
        const agent = router.agentFor(req, true, options);
        // https-proxy-agent takes the target's TLS settings from the request, not from its own options.
        if (agent) (agent as unknown as { addRequest(r: http.ClientRequest, o: https.RequestOptions): void }).addRequest(req, { ...router.tlsOptions(), ...options });
        else (direct.https as unknown as { addRequest(r: http.ClientRequest, o: https.RequestOptions): void }).addRequest(req, options);
      }
    })({ keepAlive: true });
  }

  /** Every proxy agent made so far (to close their idle sockets with the client). */
  get proxyAgents(): http.Agent[] {
    return [...this.viaProxy.values()].map((entry) => entry.agent);
  }

  private tlsOptions(): https.RequestOptions {
    const { ca, cert, key, passphrase, rejectUnauthorized } = this.tunnel;
    return { ca, cert, key, passphrase, rejectUnauthorized };
  }

  /** The proxy agent for this request's URL, or undefined to go direct. */
  private agentFor(req: http.ClientRequest, secure: boolean, options: http.RequestOptions): http.Agent | undefined {
    const host = String(options.hostname || options.host || 'localhost').toLowerCase();
    const port = Number(options.port) || (secure ? 443 : 80);
    const hostname = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
    const scheme = secure ? 'https' : 'http';
    const found = this.proxy.mode === 'env'
      ? proxyFor(scheme, hostname, port, process.env, this.proxy.options)
      : proxyFor(scheme, hostname, port, this.proxy.env);
    if (!found) return undefined;
    const key = `${secure ? 'tunnel' : 'forward'} ${found}`;
    let entry = this.viaProxy.get(key);
    if (!entry) {
      const url = this.withCredentials(found, secure);
      const pool = { keepAlive: true, maxSockets: this.tunnel.maxSockets };
      entry = {
        agent: secure ? new HttpsProxyAgent(url, pool) : new ForwardAgent(url, pool, this.tlsOptions() as tls.ConnectionOptions),
        origin: url.origin // scheme, host and port: never the credentials
      };
      this.viaProxy.set(key, entry);
    }
    routed.set(req, entry.origin);
    return entry.agent;
  }

  /** The proxy URL with the config node's user name and password (they win over any in the URL, as in core). */
  private withCredentials(found: string, secure: boolean): URL {
    const field = this.proxy.mode === 'env' ? (secure ? 'https_proxy' : 'http_proxy') : 'proxy.url';
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

/**
 * Plain-HTTP requests through a proxy (RFC 9112 3.2.2): the request line carries the absolute URI,
 * the Host header stays the target's, `Proxy-Authorization` carries the proxy's credentials; the
 * connections go to the proxy and are kept alive there. Both are set when the request is created,
 * before its header is written. `tlsToProxy`: the TLS settings for an https:// proxy.
 */
class ForwardAgent extends http.Agent {
  private readonly authorization: string | undefined;

  constructor(private readonly proxyUrl: URL, pool: http.AgentOptions, private readonly tlsToProxy: tls.ConnectionOptions) {
    super(pool);
    if (proxyUrl.username || proxyUrl.password) {
      const pair = `${decodeURIComponent(proxyUrl.username)}:${decodeURIComponent(proxyUrl.password)}`;
      this.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
  }

  addRequest(req: http.ClientRequest, options: http.RequestOptions): void {
    const host = String(options.hostname || options.host || 'localhost');
    const port = Number(options.port) || 80;
    const authority = `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}${port === 80 ? '' : `:${port}`}`;
    req.path = `http://${authority}${req.path}`;
    if (this.authorization) req.setHeader('Proxy-Authorization', this.authorization);
    const proxyHost = this.proxyUrl.hostname.replace(/^\[|\]$/g, '');
    const proxyPort = Number(this.proxyUrl.port) || (this.proxyUrl.protocol === 'https:' ? 443 : 80);
    (http.Agent.prototype as unknown as { addRequest(r: http.ClientRequest, o: http.RequestOptions): void })
      .addRequest.call(this, req, { ...options, host: proxyHost, hostname: proxyHost, port: proxyPort });
  }

  createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    if (this.proxyUrl.protocol !== 'https:') return super.createConnection(options, callback);
    const host = String(options.host);
    return tls.connect({ ...this.tlsToProxy, host, port: Number(options.port), servername: net.isIP(host) ? undefined : host });
  }
}
