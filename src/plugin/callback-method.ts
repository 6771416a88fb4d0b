/**
 * Does a subscription's callback point at an asset-event-in of this Node-RED that listens for
 * another method? (Issue 23 #1: asset-subscribe registered GET, the spec's default, while
 * asset-event-in listens for POST: the server's calls got 404 and the changes were dropped.)
 *
 * The editor keeps a copy of this rule (DamEditor.callbackMethodMismatch in
 * resources/dam-editor.js) for the asset-subscribe dialog; test/nodes/callback-method.test.js
 * runs both on the same cases.
 */
import { callbackUrl } from '../nodes/asset-event-in/settings';

/** What the rule needs of an asset-event-in's configuration. */
export interface EventInRoute { id: string; name?: string; path?: string; method?: string }

/** A callback that reaches an asset-event-in with another method. */
export interface MethodMismatch {
  nodeId: string;
  nodeName: string;
  /** The node's route path under httpNodeRoot. */
  path: string;
  /** What the node listens for (POST or GET). */
  eventInMethod: string;
  /** What the subscription makes the server send (GET when it names none: spec 2.1). */
  subscriptionMethod: string;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** The path part of a URL without trailing slashes; undefined when it is not an http(s) URL. */
function urlOf(text: unknown): URL | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const url = new URL(text.trim());
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch { return undefined; }
}

const trimSlashes = (p: string) => p.replace(/\/+$/, '') || '/';

/**
 * The mismatch, if `callback` points at one of `eventIns` (same path under `httpNodeRoot`, and a
 * host of this Node-RED: a loopback address, the port Node-RED listens on, or one of the
 * public base URLs of the flows' asset-servers) and `method` differs from the node's.
 */
export function callbackMethodMismatch(subscription: { callback?: unknown; method?: unknown }, eventIns: EventInRoute[],
  here: { httpNodeRoot?: string; uiPort?: number | string; publicBaseUrls?: string[] }): MethodMismatch | undefined {
  const callback = urlOf(subscription.callback);
  if (!callback) return undefined;
  const origins = new Set((here.publicBaseUrls ?? []).map(urlOf).filter((u): u is URL => !!u).map(u => u.origin));
  const port = callback.port || (callback.protocol === 'https:' ? '443' : '80');
  const ours = LOOPBACK.has(callback.hostname) || origins.has(callback.origin) || (here.uiPort !== undefined && String(here.uiPort) === port);
  if (!ours) return undefined;
  const method = (typeof subscription.method === 'string' && subscription.method.trim() ? subscription.method.trim() : 'GET').toUpperCase();
  for (const node of eventIns) {
    const path = (node.path || '').trim();
    if (!path) continue;
    if (trimSlashes(callbackUrl('', here.httpNodeRoot, path)) !== trimSlashes(decodeURI(callback.pathname))) continue;
    const listens = (node.method || 'post').toUpperCase();
    if (listens === method) return undefined;
    return { nodeId: node.id, nodeName: node.name || '', path: path.startsWith('/') ? path : '/' + path, eventInMethod: listens, subscriptionMethod: method };
  }
  return undefined;
}
