/**
 * The asset-server dialog's "Test connection" (resources/dam-connection-test.js is the editor
 * half): `POST <httpAdminRoot>dam-assets/connection-test`, guarded by `asset-server.write`,
 * answers a {@link ConnectionReport} for the values typed in the dialog (automatic login
 * included). Failures on the DAM server's side are answered with HTTP 200: a 401 from this route
 * would make the editor ask the Node-RED user to log in again. Nothing secret is answered.
 *
 * The rules of when a saved secret may be used live here: the saved password only in a login
 * exactly like the running node's, the saved cookie only towards the deployed base URL's server;
 * both only through the deployed Proxy choice and with its TLS settings. Values typed as `${NAME}`
 * are read from the environment only for a user who may deploy flows.
 */
import { AssetClient } from '../../api/client';
import { invalidInput, type AssetApiError } from '../../api/errors';
import { resolveLogin, sameLogin } from '../../api/session';
import { isBlankSetting, unsetEnvVar, unsetEnvVarRule } from '../shared/fields';
import type { NodeAPI } from '../shared/node-red';
import { checkConnection, checkWithLogin, configReport } from './connection-check';
import { DEFAULT_TIMEOUT_S, clientOptions, noCookieError, type AssetServerConfig, type AssetServerConfigNode } from './options';
import { sameProxy } from './proxy';
import { LOGIN_SETTINGS, loginOptions } from './session';
import { baseUrlProblem } from './reachability';

export const WRITE_PERMISSION = 'asset-server.write';
/** The editor shows this in a password field whose value is stored (not sent back). */
export const SAVED_PASSWORD = '__PWRD__';

/**
 * True when the dialog's values connect as the deployed node does: same base URL, timeout, TLS
 * choice, cookie and login (preset defaults filled in, so a dialog that filled in a preset's
 * fields still counts as the same).
 */
function sameConnection(typed: AssetServerConfig, typedCredentials: Record<string, string | undefined>,
  deployed: AssetServerConfig, savedCredentials: Record<string, string | undefined>): boolean {
  const seconds = (v: unknown) => isBlankSetting(v) ? DEFAULT_TIMEOUT_S : Number(v);
  return (typed.baseUrl || '').trim() === (deployed.baseUrl || '').trim()
    && seconds(typed.timeout) === seconds(deployed.timeout)
    && sameTls(typed, deployed)
    && (typedCredentials.cookie || '').trim() === (savedCredentials.cookie || '').trim()
    && sameProxy(typed, deployed)
    && sameLogin(loginOptions(typed, typedCredentials), loginOptions(deployed, savedCredentials));
}

/** The same TLS configuration node, or none and the same certificate check. */
function sameTls(a: AssetServerConfig, b: AssetServerConfig): boolean {
  const tls = (v: unknown) => typeof v === 'string' && v !== '_ADD_' ? v : '';
  return tls(a.tls) === tls(b.tls) && (tls(a.tls) !== '' || (a.rejectUnauthorized !== false) === (b.rejectUnauthorized !== false));
}

/** Scheme, host and port of a URL; undefined when it is not one. */
function originOf(url: string | undefined): string | undefined {
  try { return new URL((url || '').trim()).origin; } catch { return undefined; }
}

/**
 * Replaces each value typed as `${NAME}` (or `$(NAME)`) by the variable, as Node-RED does for a
 * deployed node (`read`: its flow's, else Node-RED's environment). An unset one stays as typed, as
 * there; the error naming it is returned when the node would refuse it: the base URL, the cookie
 * without automatic login, the user name and password with it (asset-server/index.ts). `read`
 * undefined: the user may not deploy flows, so may not have a variable sent anywhere (a flow could).
 */
function readEnvValues(config: AssetServerConfig, typed: Record<string, string | undefined>,
  read: ((name: string) => string | undefined) | undefined): AssetApiError | undefined {
  const needed = new Set(['baseUrl', ...(config.loginEnabled === true ? ['username', 'password'] : ['cookie'])]);
  let problem: AssetApiError | undefined;
  for (const holder of [config as unknown as Record<string, unknown>, typed]) {
    for (const [field, value] of Object.entries(holder)) {
      const name = field === 'id' ? undefined : unsetEnvVar(value);
      if (name === undefined) continue;
      if (!read) return invalidInput(field, `reads the environment variable ${name}: only a user who may deploy flows can test it; type the value`);
      const given = read(name);
      if (given !== undefined) holder[field] = given;
      else if (needed.has(field)) problem ??= invalidInput(field, unsetEnvVarRule(name));
    }
  }
  return problem;
}

/** Registers the route on `RED.httpAdmin` (the test helper's RED has no auth: then there is none to register). */
export function registerConnectionTest(RED: NodeAPI): void {
  if (!RED.httpAdmin || !RED.auth || !RED.nodes.eachNode) return;
  const eachNode = RED.nodes.eachNode.bind(RED.nodes);
  const write = RED.auth.needsPermission(WRITE_PERMISSION);
  const deploy = RED.auth.needsPermission('flows.write');
  /** Node-RED's own check, with an answer that only records it: may the request's user deploy flows? */
  const mayDeploy = (req: unknown): Promise<boolean> => new Promise((resolve) => {
    deploy(req as never, { status: () => ({ end: () => resolve(false) }) } as never, () => resolve(true));
  });

  function liveServer(id: string): AssetServerConfigNode | undefined {
    const node = RED.nodes.getNode(id) as AssetServerConfigNode | null;
    return node && node.type === 'asset-server' ? node : undefined;
  }

  /** The deployed configuration of an asset-server (as the flows hold it), or undefined. */
  function deployedConfig(id: string): AssetServerConfig | undefined {
    let found: AssetServerConfig | undefined;
    if (id) eachNode((config) => { if (config.id === id && config.type === 'asset-server') found = config as AssetServerConfig; });
    return found;
  }

  RED.httpAdmin.post('/dam-assets/connection-test', write, async (req: any, res: any) => {
    const body = req.body && typeof req.body === 'object' ? req.body : {};
    const text = (v: unknown) => typeof v === 'string' ? v : undefined;
    const config: AssetServerConfig = {
      id: text(body.id) || '',
      baseUrl: text(body.baseUrl),
      timeout: typeof body.timeout === 'number' ? body.timeout : text(body.timeout),
      rejectUnauthorized: body.rejectUnauthorized !== false,
      tls: text(body.tls) || undefined,
      loginEnabled: body.loginEnabled === true,
      proxyMode: text(body.proxyMode) || undefined,
      proxy: text(body.proxy) || undefined,
      ...Object.fromEntries(LOGIN_SETTINGS.map((key) => [key, text(body[key])]))
    };
    const typed: Record<string, string | undefined> = { cookie: text(body.cookie), username: text(body.username), password: text(body.password) };
    const running = config.id ? liveServer(config.id) : undefined;
    const deployed = running ? deployedConfig(config.id) : undefined;
    // A field still showing the saved placeholder means the deployed node's value (the running
    // node's copy has ${NAME} values read already).
    const saved = running?.credentials ?? {};
    const withSaved = (name: string) => typed[name] === SAVED_PASSWORD ? saved[name] : typed[name];
    // The settings as typed: the flows hold ${NAME} values that way (compared below with the deployed ones).
    const typedConfig = { ...config };
    // Values typed as ${NAME} are read as the node reads them, so that the rules below compare like with like.
    const read = (name: string) => RED.util.getSetting(running as never, name) as string | undefined;
    const unread = readEnvValues(config, typed, await mayDeploy(req) ? read : undefined);
    if (unread) { res.json(configReport(unread)); return; }
    // Settings as typed against the flows', secrets as read against the running node's.
    const unchanged = running?.client && deployed
      && sameConnection(typedConfig, { ...typed, cookie: withSaved('cookie'), password: withSaved('password') }, deployed, saved);
    // Reachability first, without cookie or login: a wrong base URL is named as such (issue 23 #5).
    const unreachable = await baseUrlProblem(RED, config, typed.username);
    if (unreachable) { res.json(unreachable); return; }
    // Nothing changed: the deployed node's client, with any cookie set at run time or by a login.
    if (unchanged) { res.json(await checkConnection(running.client!)); return; }
    const login = loginOptions(config, { username: typed.username, password: withSaved('password') });
    // Saved secrets only go where they were saved for. The saved password: only in a login exactly
    // like the running node's (same base URL; same login URL, session page, method, fields and user
    // name, with ${ENV} values resolved), else a user allowed to test connections could send it
    // to another host or path, or into another field.
    if (login && typed.password === SAVED_PASSWORD) {
      const typeAgain = () => res.json(configReport(invalidInput('password',
        'type the password again: the saved password is only used with the deployed base URL, login, proxy and TLS settings')));
      if (!running?.login) { typeAgain(); return; }
      // Login settings that cannot work are named first (else the answer would be "type it again").
      try { resolveLogin(login); } catch (err) { res.json(configReport(err)); return; }
      // Also through the same proxy (over plain http a proxy sees the login's fields), and with the
      // same certificate checks (else whoever answers in the server's name reads them).
      if ((config.baseUrl || '').trim() !== running.baseUrl || !sameLogin(login, running.login) || !deployed || !sameProxy(config, deployed)
        || !sameTls(config, deployed)) { typeAgain(); return; }
    }
    // With automatic login the check logs in first: the cookie is not sent.
    let cookie = login ? undefined : typed.cookie;
    if (cookie === SAVED_PASSWORD) {
      const sameBase = !!running && originOf(running.baseUrl) !== undefined && originOf(running.baseUrl) === originOf(config.baseUrl);
      // ... through the same proxy (over plain http a proxy sees the cookie), with the same certificate checks.
      if (!sameBase || !deployed || !sameProxy(config, deployed) || !sameTls(config, deployed)) {
        res.json(configReport(invalidInput('cookie', 'type the cookie again: the saved cookie is only sent to the deployed base URL\'s server, through its proxy and TLS settings')));
        return;
      }
      cookie = saved.cookie;
    }
    if (!login && !(cookie ?? '').trim()) { res.json(configReport(noCookieError())); return; }
    let client: AssetClient | undefined;
    try {
      client = new AssetClient(clientOptions(RED, config, { cookie, username: typed.username, password: withSaved('password') }));
    } catch (err) {
      res.json(configReport(err));
      return;
    }
    try {
      res.json(login ? await checkWithLogin(client) : await checkConnection(client));
    } finally {
      client.close();
    }
  });
}
