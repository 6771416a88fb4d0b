/**
 * The asset-server's Proxy setting as client options: from the environment (default, also for
 * nodes saved before the setting existed), none, or a core `http proxy` config node (its URL,
 * no-proxy list and credentials), as Node-RED's http request node reads them. Node-RED's
 * `proxyOptions` setting (settings.js) applies to the environment's variables, as in core.
 */
import type { AssetClientOptions } from '../../api/client';
import { invalidInput } from '../../api/errors';
import type { Node, NodeAPI } from '../shared/node-red';

/** The editor properties of the Proxy setting. */
export interface ProxyConfig {
  /** `env` (default), `none` or `node`. */
  proxyMode?: string;
  /** Id of a core `http proxy` config node, for proxyMode `node`. */
  proxy?: string;
}

/** What a core `http proxy` config node holds (node-red/nodes/core/network/06-httpproxy.js). */
interface HttpProxyNode extends Node {
  url?: string;
  noproxy?: string[];
}

/** The client's `proxy` and `proxyOptions`; throws invalid-input naming the field. */
export function proxyOptions(RED: NodeAPI, config: ProxyConfig): Pick<AssetClientOptions, 'proxy' | 'proxyOptions'> {
  const mode = config.proxyMode || 'env';
  if (mode === 'env') {
    const settings = (RED.settings as { proxyOptions?: unknown } | undefined)?.proxyOptions;
    return settings && typeof settings === 'object' ? { proxy: 'env', proxyOptions: settings as AssetClientOptions['proxyOptions'] } : { proxy: 'env' };
  }
  if (mode === 'none') return { proxy: 'none' };
  if (mode !== 'node') throw invalidInput('proxyMode', 'must be env (from the environment), none, or node (an http proxy configuration)');
  const id = config.proxy && config.proxy !== '_ADD_' ? config.proxy : '';
  if (!id) throw invalidInput('proxy', 'select an http proxy configuration node (or choose Proxy: from the environment, or none)');
  const node = RED.nodes.getNode(id) as HttpProxyNode | null;
  if (!node) throw invalidInput('proxy', 'the selected http proxy configuration node is missing (deploy it first)');
  return {
    proxy: {
      url: typeof node.url === 'string' ? node.url : '',
      username: node.credentials?.username || undefined,
      password: node.credentials?.password || undefined,
      noProxy: Array.isArray(node.noproxy) ? node.noproxy : []
    }
  };
}

/** True when both dialogs' Proxy settings are the same (for the connection test's "nothing changed"). */
export function sameProxy(a: ProxyConfig, b: ProxyConfig): boolean {
  const mode = (c: ProxyConfig) => c.proxyMode || 'env';
  const id = (c: ProxyConfig) => (mode(c) === 'node' && c.proxy && c.proxy !== '_ADD_' ? c.proxy : '');
  return mode(a) === mode(b) && id(a) === id(b);
}
