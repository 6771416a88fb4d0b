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
    ? guardBody(RED.httpNode, (RED.settings.httpNodeRoot || '/') + path)
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

/** Removes every route of `app` whose handlers include `handler` (express 4 `_router`, express 5 `router`). */
function removeRoute(app: any, handler: RouteHandler): void {
  const router = app && (app._router || app.router);
  const stack: any[] | undefined = router && router.stack;
  if (!Array.isArray(stack)) return;
  for (let i = stack.length - 1; i >= 0; i--) {
    const route = stack[i] && stack[i].route;
    if (route && Array.isArray(route.stack) && route.stack.some((layer: any) => layer.handle === handler)) stack.splice(i, 1);
  }
}

/**
 * Body guard. With httpAdminRoot and httpNodeRoot the same (Node-RED's default, `/`), the editor
 * API's JSON body parser (limit apiMaxLength, 5 MB) reads every application/json request before
 * httpNode routes see it: the secret would be checked only after that read, Max body would not
 * apply, a big rrn would be rounded, and a deep body parsed. Core http in (4.1+) meets the same
 * stack for its raw-body option with a middleware moved to the top of the root app; so does this
 * guard, which only marks requests to our POST routes as read (`_body`, so parsers skip them) and
 * as ours (READ_OWN_BODY, so readJsonBody reads the stream). Nothing is read here.
 */
const guardedPaths = new WeakMap<object, Map<string, number>>();

function rootAppOf(app: any): any {
  let root = app;
  while (root && root.parent) root = root.parent;
  return root;
}

/** `POST /a/b`: method and full path, slashes collapsed, no trailing slash, case-insensitive as express routes. */
function guardKey(method: string, fullPath: string): string {
  return `${method.toUpperCase()} ${fullPath.replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1').toLowerCase()}`;
}

/** Guards POST `fullPath`; returns the function that stops guarding it. */
function guardBody(app: any, fullPath: string): () => void {
  const root = rootAppOf(app);
  if (!root || typeof root.use !== 'function') return () => undefined;
  let paths = guardedPaths.get(root);
  if (!paths) {
    const known = new Map<string, number>();
    paths = known;
    guardedPaths.set(root, known);
    const guard = (req: any, _res: unknown, next: () => void) => {
      if (known.size && known.has(guardKey(req.method || '', String(req.originalUrl || req.url || '').split('?')[0]))) {
        req._body = true;
        req[READ_OWN_BODY] = true;
      }
      next();
    };
    root.use(guard);
    const stack: any[] | undefined = (root._router || root.router)?.stack;
    const at = Array.isArray(stack) ? stack.findIndex((layer) => layer && layer.handle === guard) : -1;
    if (at > 0) stack!.unshift(stack!.splice(at, 1)[0]);
  }
  const key = guardKey('POST', fullPath);
  paths.set(key, (paths.get(key) || 0) + 1);
  const counts = paths;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (counts.get(key) || 1) - 1;
    if (n > 0) counts.set(key, n); else counts.delete(key);
  };
}
