/**
 * asset-event-in's HTTP side: its route on RED.httpNode (so httpNodeRoot, httpNodeAuth and
 * httpNodeMiddleware apply), the body guard in front of Node-RED's own body parsers, and the
 * JSON answer to a callback.
 */
import type { ServerResponse } from 'http';
import { READ_OWN_BODY } from '../../events';
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
    ? guardBody(RED.httpNode, RED.settings.httpNodeRoot || '/', routeLayer(RED.httpNode, handler))
    : () => undefined;
  return () => {
    removeRoute(RED.httpNode, handler);
    releaseGuard();
  };
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

/** The router stack of an express app (express 4 `_router`, express 5 `router`). */
function routerStack(app: any): any[] | undefined {
  const stack = app && (app._router || app.router)?.stack;
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

/** The router layer of the route whose handlers include `handler` (its `match(path)` is express's own). */
function routeLayer(app: any, handler: RouteHandler): any {
  return routerStack(app)?.find((layer) => routesTo(layer, handler));
}

/**
 * Body guard. With httpAdminRoot and httpNodeRoot the same (Node-RED's default, `/`), the editor
 * API's JSON body parser (limit apiMaxLength, 5 MB) reads every application/json request before
 * httpNode routes see it: the secret would be checked only after that read, Max body would not
 * apply, a big rrn would be rounded, and a deep body parsed. Core http in (4.1+) meets the same
 * stack for its raw-body option with a middleware moved to the top of the root app; so does this
 * guard, which only marks requests to our POST routes as read (`_body`, so parsers skip them) and
 * as ours (READ_OWN_BODY, so readJsonBody reads the stream). Nothing is read here. A request is
 * ours when our route's own layer matches its path under httpNodeRoot, as express will route it
 * (case, trailing slash, and `:parameters` in the path alike).
 */
interface GuardedRoute { mount: string; layer: { match(path: string): boolean } }

const guardedRoutes = new WeakMap<object, Set<GuardedRoute>>();

function rootAppOf(app: any): any {
  let root = app;
  while (root && root.parent) root = root.parent;
  return root;
}

/** `pathname` as httpNode's router sees it (httpNodeRoot taken off, as express's mount does: any case), or undefined when outside it. */
function underMount(pathname: string, mount: string): string | undefined {
  if (mount === '') return pathname;
  const lower = pathname.toLowerCase();
  if (lower === mount) return '/';
  return lower.startsWith(mount + '/') ? pathname.slice(mount.length) : undefined;
}

function isOurs(routes: Set<GuardedRoute>, pathname: string): boolean {
  for (const { mount, layer } of routes) {
    const path = underMount(pathname, mount);
    try {
      if (path !== undefined && layer.match(path)) return true;
    } catch {
      // A parameter that is not valid URI encoding: express answers it 400 itself.
    }
  }
  return false;
}

/** Guards POST requests to the route of `layer` (on an app mounted at `nodeRoot`); returns the function that stops guarding it. */
function guardBody(app: any, nodeRoot: string, layer: any): () => void {
  const root = rootAppOf(app);
  if (!root || typeof root.use !== 'function' || !layer || typeof layer.match !== 'function') return () => undefined;
  let routes = guardedRoutes.get(root);
  if (!routes) {
    const known = new Set<GuardedRoute>();
    routes = known;
    guardedRoutes.set(root, known);
    const guard = (req: any, _res: unknown, next: () => void) => {
      if (known.size && req.method === 'POST' && isOurs(known, String(req.originalUrl || req.url || '').split('?')[0])) {
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
  const route: GuardedRoute = { mount: nodeRoot.replace(/\/+$/, '').toLowerCase(), layer };
  routes.add(route);
  const guarded = routes;
  return () => { guarded.delete(route); };
}
