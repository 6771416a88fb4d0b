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
import { limitIdleSockets } from './stale-connection';

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

/**
 * A checked setting. `env` holds the proxy variables as they were when the client was made (an
 * asset-server node: at deploy); core reads them at each request, which only differs when a flow
 * changes process.env at run time.
 */
export type ResolvedProxy =
  | { mode: 'none' }
  | { mode: 'env'; env: ProxyEnv; options: ProxyEnvOptions }
  | { mode: 'server'; env: ProxyEnv; username: string; password: string };

/** The variables the rules read, in both cases. */
const ENV_NAMES = ['http_proxy', 'https_proxy', 'all_proxy', 'no_proxy', 'npm_config_http_proxy', 'npm_config_https_proxy', 'npm_config_proxy', 'npm_config_no_proxy']
  .flatMap((name) => [name, name.toUpperCase()]);

/** The proxy variables of `env` (default process.env), set ones only. */
export function proxyEnvironment(env: ProxyEnv = process.env): ProxyEnv {
  const found: ProxyEnv = {};
  for (const name of ENV_NAMES) if (env[name]) found[name] = env[name];
  return found;
}

/** False when no request can go through a proxy: `none`, or an environment without any proxy variable. */
export function usesProxy(proxy: ResolvedProxy): boolean {
  if (proxy.mode === 'none') return false;
  return Object.keys(proxy.env).some((name) => !/no_proxy$/i.test(name));
}

const URL_RULE = 'must be an http:// or https:// URL with a host, such as http://proxy.example:3128';

/** Checks a proxy setting; throws invalid-input naming the field (`proxy`, `proxy.url`, ...). */
export function resolveProxy(setting: unknown, envOptions: unknown): ResolvedProxy {
  if (setting === undefined || setting === null || setting === 'env') return { mode: 'env', env: proxyEnvironment(), options: envOptionsOf(envOptions) };
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
  // The agents decode user name and password when they connect: https-proxy-agent's throw left its
  // socket to the proxy open without an error listener (a refused connection then crashed Node-RED).
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    throw invalidInput(field, 'a user name or password in the URL must be URL-encoded: write % as %25');
  }
  return url;
}

/** Requests sent to a proxy, and its origin (no credentials). */
const routed = new WeakMap<object, string>();
/** Requests whose CONNECT the proxy refused: their answer is the proxy's. */
const tunnelRefused = new WeakSet<object>();
/** Requests whose CONNECT the proxy answered (so a later TLS failure is with the server, not the proxy). */
const tunnelAnswered = new WeakSet<object>();

/** True when the proxy answered this request's CONNECT (an https server through a tunnel). */
export function tunnelAnsweredFor(request: unknown): boolean {
  return request !== null && typeof request === 'object' && tunnelAnswered.has(request);
}

/** The proxy's origin when the answer to this request (an axios response's `request`) came from the proxy refusing a CONNECT. */
export function refusedTunnelOf(request: unknown): string | undefined {
  return request !== null && typeof request === 'object' && tunnelRefused.has(request) ? routed.get(request) : undefined;
}

/** The origin of the proxy a request (e.g. an axios error's `request`) was sent to; undefined when it went direct. */
export function proxyOriginOf(request: unknown): string | undefined {
  return request !== null && typeof request === 'object' ? routed.get(request) : undefined;
}

/** Agent options the proxy agents share with the direct ones: pool size and the server's TLS settings. */
export type TunnelOptions = http.AgentOptions & https.AgentOptions;

/**
 * Picks, for each request, the agent for its URL: undefined to go direct (the client's own
 * agents), else the proxy agent the rules give (one per proxy and scheme, each pooling its
 * connections). Decisions are kept per scheme, host and port, so a request costs one lookup.
 * Used from an axios request interceptor: the agent is chosen before the request exists.
 */
export class ProxyRouter {
  private readonly viaProxy = new Map<string, http.Agent>();
  private readonly decisions = new Map<string, http.Agent | undefined>();

  constructor(private readonly proxy: Exclude<ResolvedProxy, { mode: 'none' }>, private readonly tunnel: TunnelOptions) {}

  /** Every proxy agent made so far (to close their idle sockets with the client). */
  get proxyAgents(): http.Agent[] {
    return [...this.viaProxy.values()];
  }

  /** The proxy agent for an absolute http(s) URL, or undefined to go direct. */
  agentFor(url: string): http.Agent | undefined {
    const origin = /^(https?):\/\/([^/?#]*)/i.exec(url);
    if (!origin) return undefined;
    const key = origin[0].toLowerCase();
    if (this.decisions.has(key)) return this.decisions.get(key);
    const agent = this.decide(key);
    // Bounded: a client talks to its server and perhaps a login host.
    if (this.decisions.size >= 64) this.decisions.clear();
    this.decisions.set(key, agent);
    return agent;
  }

  private decide(origin: string): http.Agent | undefined {
    const parsed = new URL(origin);
    const secure = parsed.protocol === 'https:';
    const scheme = secure ? 'https' : 'http';
    const hostname = parsed.host.replace(/:\d*$/, '');
    const port = Number(parsed.port) || (secure ? 443 : 80);
    const found = proxyFor(scheme, hostname, port, this.proxy.env, this.proxy.mode === 'env' ? this.proxy.options : {});
    if (!found) return undefined;
    const key = `${scheme} ${found}`;
    let agent = this.viaProxy.get(key);
    if (!agent) {
      const url = this.withCredentials(found, secure);
      const pool = { keepAlive: true, maxSockets: this.tunnel.maxSockets };
      const { ca, cert, key: tlsKey, passphrase, rejectUnauthorized } = this.tunnel;
      const tlsOptions = { ca, cert, key: tlsKey, passphrase, rejectUnauthorized } as tls.ConnectionOptions;
      agent = limitIdleSockets(secure ? new TunnelAgent(url, pool, tlsOptions) : new ForwardAgent(url, pool, tlsOptions));
      this.viaProxy.set(key, agent);
    }
    return agent;
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

/**
 * HTTPS through the proxy: https-proxy-agent's CONNECT tunnel, then TLS to the server with the
 * client's TLS settings (https-proxy-agent reads them from the request's options, not its own).
 */
class TunnelAgent extends HttpsProxyAgent<string> {
  private readonly origin: string;

  constructor(proxyUrl: URL, pool: http.AgentOptions, private readonly tlsToServer: tls.ConnectionOptions) {
    super(proxyUrl as unknown as string, pool);
    this.origin = proxyUrl.origin;
  }

  addRequest(req: http.ClientRequest, options: https.RequestOptions): void {
    routed.set(req, this.origin);
    // A CONNECT the proxy refuses is answered by the proxy itself (the agent replays its answer as
    // the request's): remembered so that the error says so, not "the server answered".
    req.once('proxyConnect', (connect: { statusCode?: number }) => {
      tunnelAnswered.add(req);
      if (connect.statusCode !== 200) tunnelRefused.add(req);
    });
    (HttpsProxyAgent.prototype as unknown as { addRequest(r: http.ClientRequest, o: https.RequestOptions): void })
      .addRequest.call(this, req, { ...this.tlsToServer, ...options });
  }
}

/** The secrets of a proxy setting (user name is not one; the password is), for redaction from error text. */
export function proxySecrets(proxy: ResolvedProxy): string[] {
  const secrets: string[] = [];
  const fromUrl = (text: string | undefined) => {
    if (!text) return;
    try {
      const url = new URL(text.includes('://') ? text : `http://${text}`);
      if (!url.password) return;
      secrets.push(url.password); // kept when the decoding below throws
      secrets.push(decodeURIComponent(url.password));
    } catch { /* not a URL: no credentials in it */ }
  };
  if (proxy.mode === 'server') {
    if (proxy.password) secrets.push(proxy.password);
    fromUrl(proxy.env.http_proxy);
  } else if (proxy.mode === 'env') {
    for (const value of Object.values(proxy.env)) fromUrl(value);
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
    routed.set(req, this.proxyUrl.origin);
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
