/**
 * asset-event-in paths that would take over the editor's own routes. With httpNodeRoot and
 * httpAdminRoot sharing a prefix (both `/` by default) an endpoint at `/auth/token` or `/flows`
 * sits on an admin route: its body guard makes the editor API skip the body of every login or
 * deploy (every login 500, every deploy 400), or the editor answers first and the endpoint never
 * gets a callback. Such paths are refused (editor copy: DamEditor.adminPathClash in
 * resources/dam-editor.js, checked against this file by test/api/editor-rules.test.js).
 */

/**
 * First path segments of the admin routes, relative to httpAdminRoot, as Node-RED 4.1 registers
 * them: @node-red/editor-api lib/index.js (auth/login, auth/token, auth/revoke), lib/auth/index.js
 * (auth/strategy), lib/admin/index.js (flows, flows/state, flow/:id, nodes..., context/...,
 * settings, plugins, plugins/messages, diagnostics), lib/editor/index.js (the editor at `/`,
 * icons, resources, theme, projects, locales, library, credentials, settings/user, the editor's
 * static files red/, vendor/, types/, favicon.ico), lib/editor/comms.js (comms, the websocket);
 * @node-red/nodes (inject/:id, debug/..., udp-ports/:id); this package's DAM sidebar (dam-assets).
 */
export const ADMIN_ROUTE_SEGMENTS: readonly string[] = [
  'auth', 'flows', 'flow', 'nodes', 'context', 'settings', 'plugins', 'diagnostics',
  'icons', 'resources', 'theme', 'projects', 'locales', 'library', 'credentials',
  'red', 'vendor', 'types', 'favicon.ico', 'comms',
  'inject', 'debug', 'udp-ports', 'dam-assets'
];

/** `/a//b/` -> `/a/b`, lower case (express routes ignore case and a trailing slash). */
function normalise(path: string): string {
  const joined = ('/' + path).replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1');
  return joined.toLowerCase();
}

/**
 * The admin route `path` (under httpNodeRoot) would collide with, as `httpAdminRoot` + segment;
 * undefined when none. httpAdminRoot false: no editor, no clash. A path with a parameter or pattern
 * (`:x`, `*`, `(`) in its first segment under the admin root, or in one above it, would match them all.
 */
export function adminRouteClash(path: string, httpNodeRoot: string | false | undefined, httpAdminRoot: string | false | undefined): string | undefined {
  if (httpAdminRoot === false || httpNodeRoot === false) return undefined;
  const adminRoot = normalise(httpAdminRoot || '/');
  const full = normalise(`${httpNodeRoot || '/'}/${path}`);
  const prefix = adminRoot === '/' ? '/' : `${adminRoot}/`;
  // A pattern before the end of the admin root may match it: then every editor route.
  const pattern = full.search(/[:*(?+]/);
  if (pattern >= 0 && pattern < prefix.length && adminRoot.startsWith(full.slice(0, pattern))) return `${adminRoot} (the editor)`;
  if (full !== adminRoot && !full.startsWith(prefix)) return undefined;
  const first = full.slice(prefix.length).split('/')[0];
  if (first === '') return `${adminRoot} (the editor)`;
  if (/[:*(?+]/.test(first) || ADMIN_ROUTE_SEGMENTS.includes(first)) return `${prefix}${first}`;
  return undefined;
}

/** The rule as said in errors. */
export function adminClashReason(route: string): string {
  return `path: collides with the editor's route ${route} (httpNodeRoot and httpAdminRoot share a prefix): ` +
    'choose another path, e.g. /dam/events';
}
