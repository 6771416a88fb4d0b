/**
 * asset-event-in's HTTP side: its route on RED.httpNode (so httpNodeRoot, httpNodeAuth and
 * httpNodeMiddleware apply), the body guard in front of Node-RED's own body parsers, and the
 * JSON answer to a callback.
 */
import type { ServerResponse } from 'http';
import { READ_OWN_BODY } from '../../events';
import { describeFlowNode, enabledFlowNodes } from '../shared/flows';
import type { NodeAPI } from '../shared/node-red';

/**
 * Registers `handler` for `method path` on RED.httpNode, behind httpNodeMiddleware, and guards
 * the body of a POST route. Returns the function that removes both again.
 */
export function openRoute(RED: NodeAPI, method: 'post' | 'get', path: string, handler: RouteHandler): () => void {
  const configured = RED.settings.httpNodeMiddleware;
  const middleware = typeof configured === 'function' || Array.isArray(configured) ? [configured] : [];
  RED.httpNode[method](path, ...middleware, handler);
  const releaseGuard = method === 'post'
    ? guardBody(RED.httpNode, RED.settings.httpNodeRoot || '/', handler)
    : () => undefined;
  return () => {
    removeRoute(RED.httpNode, handler);
    releaseGuard();
  };
}

/**
 * Another enabled node of the flows on the same method and path (a core http in, another
 * asset-event-in): Express gives each call to the route started first, so one of them never gets any.
 */
export function routeSharedWith(RED: NodeAPI, self: string, method: 'post' | 'get', path: string): string | undefined {
  // As Express routes by default: case-insensitive, a trailing slash ignored.
  const plain = (p: unknown) => (typeof p === 'string' ? ('/' + p.trim().replace(/^\/+/, '')).replace(/(.)\/+$/, '$1').toLowerCase() : '');
  const mine = plain(path);
  const other = enabledFlowNodes(RED).find((n) => {
    const route = n.type === 'http in' ? n.url : n.type === 'asset-event-in' ? n.path : undefined;
    const theirs = String(n.method || (n.type === 'http in' ? 'get' : 'post')).toLowerCase();
    return n.id !== self && route !== undefined && theirs === method && plain(route) === mine;
  });
  return other && describeFlowNode(other);
}

/** Answers a callback with a JSON body (none for 204 and 205), unless an answer went out already. */
export function reply(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  if (res.headersSent) return;
  res.statusCode = status;
  if (status === 204 || status === 205) { res.end(); return; }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** An express route handler. */
export type RouteHandler = (req: any, res: any, next: (err?: unknown) => void) => void;

/** The router of an express app (express 4 `_router`, express 5 `router`). */
function routerOf(app: any): any {
  return app && (app._router || app.router);
}

function routerStack(app: any): any[] | undefined {
  const stack = routerOf(app)?.stack;
  return Array.isArray(stack) ? stack : undefined;
}

function routesTo(layer: any, handler: RouteHandler): boolean {
  const route = layer && layer.route;
  return !!route && Array.isArray(route.stack) && route.stack.some((l: any) => l.handle === handler);
}

/** Removes every route of `app` whose handlers include `handler`. */
function removeRoute(app: any, handler: RouteHandler): void {
  const stack = routerStack(app);
  if (!stack) return;
  for (let i = stack.length - 1; i >= 0; i--) if (routesTo(stack[i], handler)) stack.splice(i, 1);
}

/**
 * Body guard. With httpAdminRoot and httpNodeRoot the same (Node-RED's default, `/`), the editor
 * API's JSON body parser (limit apiMaxLength, 5 MB) reads every application/json request before
 * httpNode routes see it: the secret would be checked only after that read, Max body would not
 * apply, a big rrn would be rounded, and a deep body parsed. Core http in (4.1+) meets the same
 * stack for its raw-body option with a middleware moved to the top of the root app; so does this
 * guard, which only marks requests to our POST routes as read (`_body`, so parsers skip them) and
 * as ours (READ_OWN_BODY, so readJsonBody reads the stream). Nothing is read here.
 * A request is ours when express will route it to one of our handlers: the first POST route of
 * httpNode whose own layer matches its path under httpNode's mount is ours (case, trailing slash
 * and `:parameters` as express matches them; an http in route before ours keeps its body).
 */
interface GuardedApp { nodeRoot: string; handlers: Set<RouteHandler> }

/** Per root app: the apps (RED.httpNode) with guarded POST routes, and our handlers on each. */
const guardedApps = new WeakMap<object, Map<any, GuardedApp>>();

function rootAppOf(app: any): any {
  let root = app;
  while (root && root.parent) root = root.parent;
  return root;
}

/** The path express routes: without the scheme and host of an absolute-form target, without the query. */
function requestPath(url: string): string {
  let path = url;
  if (path[0] !== '/') {
    const scheme = path.indexOf('://');
    const slash = scheme < 0 ? -1 : path.indexOf('/', scheme + 3);
    path = slash < 0 ? '/' : path.slice(slash);
  }
  const query = path.indexOf('?');
  return query < 0 ? path : path.slice(0, query);
}

/** Where `app` is mounted, without a trailing slash ('' for `/`): express's own `app.path()`, else httpNodeRoot. */
function mountOf(app: any, nodeRoot: string): string {
  const mounted = typeof app.path === 'function' ? app.path() : undefined;
  return (typeof mounted === 'string' ? mounted : nodeRoot).replace(/\/+$/, '');
}

/** `path` as the mounted app's router sees it, or undefined outside the mount (express takes one slash after the mount with it). */
function underMount(path: string, mount: string, caseSensitive: boolean): string | undefined {
  if (mount === '') return path;
  const head = path.slice(0, mount.length);
  if (caseSensitive ? head !== mount : head.toLowerCase() !== mount.toLowerCase()) return undefined;
  const rest = path.slice(mount.length);
  if (rest === '') return '/';
  if (rest[0] !== '/') return undefined;
  return rest.startsWith('//') ? rest.slice(1) : rest;
}

/** The first route of `app` that a POST to `path` goes to (express tries them in order), or undefined. */
function firstPostRoute(app: any, path: string): any {
  for (const layer of routerStack(app) ?? []) {
    const methods = layer?.route?.methods;
    if (!methods || !(methods.post || methods._all)) continue;
    try {
      if (layer.match(path)) return layer.route;
    } catch {
      return undefined; // a parameter that is not valid URI encoding: express answers 400 itself
    }
  }
  return undefined;
}

function isOurs(apps: Map<any, GuardedApp>, path: string, caseSensitive: boolean): boolean {
  for (const [app, { nodeRoot, handlers }] of apps) {
    const under = underMount(path, mountOf(app, nodeRoot), caseSensitive);
    const route = under === undefined ? undefined : firstPostRoute(app, under);
    if (route && Array.isArray(route.stack) && route.stack.some((layer: any) => handlers.has(layer.handle))) return true;
  }
  return false;
}

/** Guards POST requests routed to `handler` on `app` (mounted at `nodeRoot`); returns the function that stops guarding it. */
function guardBody(app: any, nodeRoot: string, handler: RouteHandler): () => void {
  const root = rootAppOf(app);
  if (!root || typeof root.use !== 'function') return () => undefined;
  let apps = guardedApps.get(root);
  if (!apps) {
    const known = new Map<any, GuardedApp>();
    apps = known;
    guardedApps.set(root, known);
    const guard = (req: any, _res: unknown, next: () => void) => {
      if (known.size && req.method === 'POST' && isOurs(known, requestPath(String(req.url || '')), !!routerOf(root)?.caseSensitive)) {
        req._body = true;
        req[READ_OWN_BODY] = true;
      }
      next();
    };
    root.use(guard);
    const stack = routerStack(root);
    const at = stack ? stack.findIndex((l) => l && l.handle === guard) : -1;
    if (at > 0) stack!.unshift(stack!.splice(at, 1)[0]);
  }
  let entry = apps.get(app);
  if (!entry) { entry = { nodeRoot, handlers: new Set() }; apps.set(app, entry); }
  entry.handlers.add(handler);
  const guarded = entry;
  const known = apps;
  return () => {
    guarded.handlers.delete(handler);
    if (guarded.handlers.size === 0 && known.get(app) === guarded) known.delete(app);
  };
}
