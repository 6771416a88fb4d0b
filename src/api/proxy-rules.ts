/**
 * Which proxy a URL goes through: Node-RED core's rules (its http request node, "strict" mode of
 * `@node-red/nodes/core/network/lib/proxyHelper.js`, itself based on Rob Wu's proxy-from-env,
 * MIT licence). Ported rather than depended on: proxy-from-env reads only process.env, while an
 * `http proxy` config node is judged by core with the same rules over its own URL and no-proxy
 * list. test/api/proxy-rules.test.js compares this file with core's helper case by case.
 *
 * - `<scheme>_proxy`, then `all_proxy` (and npm's `npm_config_<scheme>_proxy` /
 *   `npm_config_proxy`, as core reads them); lower case first unless told otherwise;
 * - `no_proxy` (or `npm_config_no_proxy`): `*`, a host name (exact), `.example.com` or
 *   `*.example.com` (suffix), any of them with `:port`; separated by commas or spaces.
 * Core's "legacy" mode (NR_PROXY_MODE=legacy, for Node-RED 3.0 flows) is not followed.
 */

/** Core's `RED.settings.proxyOptions` (the ones that change the rules). */
export interface ProxyEnvOptions {
  /** Read HTTP_PROXY before http_proxy. */
  favourUpperCase?: boolean;
  /** Read only the lower-case names. */
  lowerCaseOnly?: boolean;
  /** Ignore npm's `npm_config_*` variables. */
  excludeNpm?: boolean;
}

export type ProxyEnv = Record<string, string | undefined>;

const DEFAULT_PORTS: Record<string, number> = { ftp: 21, gopher: 70, http: 80, https: 443, ws: 80, wss: 443, mqtt: 1880, mqtts: 8883 };

/** The proxy URL for `url` ('' = go direct), from `env` (default process.env) and the rules above. */
export function proxyForUrl(url: string, env: ProxyEnv = process.env, options: ProxyEnvOptions = {}): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '';
  }
  if (!parsed.host) return '';
  const scheme = parsed.protocol.split(':', 1)[0];
  // Port stripped from host (not hostname) so that an IPv6 address keeps its brackets.
  return proxyFor(scheme, parsed.host.replace(/:\d*$/, ''), parseInt(parsed.port, 10) || DEFAULT_PORTS[scheme] || 0, env, options);
}

/**
 * The same for a URL already taken apart (the agents know scheme, host and port; no parsing per
 * request): `hostname` lower case, an IPv6 address in brackets.
 */
export function proxyFor(scheme: string, hostname: string, port: number, env: ProxyEnv = process.env, options: ProxyEnvOptions = {}): string {
  if (!shouldProxy(hostname, port, env, options)) return '';
  let proxy = read(`npm_config_${scheme}_proxy`, env, options) || read(`${scheme}_proxy`, env, options)
    || read('npm_config_proxy', env, options) || read('all_proxy', env, options);
  if (proxy && !proxy.includes('://')) proxy = `${scheme}://${proxy}`;
  return proxy;
}

/** False when the no-proxy list names this host (and port). */
function shouldProxy(hostname: string, port: number, env: ProxyEnv, options: ProxyEnvOptions): boolean {
  const noProxy = (read('npm_config_no_proxy', env, options) || read('no_proxy', env, options)).toLowerCase();
  if (!noProxy) return true;
  if (noProxy === '*') return false;
  return noProxy.split(/[,\s]/).every((entry) => {
    if (!entry) return true;
    const withPort = entry.match(/^(.+):(\d+)$/);
    let host = withPort ? withPort[1] : entry;
    const entryPort = withPort ? parseInt(withPort[2], 10) : 0;
    if (entryPort && entryPort !== port) return true;
    if (!/^[.*]/.test(host)) return hostname !== host;
    if (host.charAt(0) === '*') host = host.slice(1);
    return !hostname.endsWith(host);
  });
}

function read(key: string, env: ProxyEnv, options: ProxyEnvOptions): string {
  if (options.excludeNpm === true && key.startsWith('npm_config_')) return '';
  if (options.lowerCaseOnly === true) return env[key.toLowerCase()] || '';
  if (options.favourUpperCase === true) return env[key.toUpperCase()] || env[key.toLowerCase()] || '';
  return env[key.toLowerCase()] || env[key.toUpperCase()] || '';
}

/**
 * The environment core builds for an `http proxy` config node: its URL for both schemes and its
 * no-proxy list; nothing of process.env.
 */
export function configNodeEnv(url: string, noProxy: string[]): ProxyEnv {
  return { http_proxy: url, https_proxy: url, no_proxy: noProxy.join(',') };
}
