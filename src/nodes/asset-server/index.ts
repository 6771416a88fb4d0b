/**
 * asset-server: configuration node. Holds the base URL, the session cookie (a
 * credential), timeout and TLS settings, the optional automatic login, and ONE
 * {@link AssetClient} shared by every node that uses this configuration. The client is
 * closed when the node closes.
 */
import { AssetClient } from '../../api/client';
import { AssetApiError, invalidInput } from '../../api/errors';
import { plainLoginWarning } from '../../api/session';
import { labelled, localText, unsetEnvVar, unsetEnvVarRule } from '../shared';
import { createNode, registerType, type NodeAPI } from '../shared/node-red';
import { registerConnectionTest } from './connection-test';
import { clientOptions, noCookieError, publicBaseUrl, type AssetServerConfig, type AssetServerConfigNode } from './options';
import { keptSessions, loginOptions } from './session';
import { sharedSessionFor } from './shared-session';

export * from './options';

/** Editor labels of the settings (catalogue `asset-server.label.*`), for error messages. */
const FIELD_LABELS: Record<string, string> = {
  baseUrl: 'Base URL', cookie: 'Cookie', timeout: 'Timeout', tls: 'TLS configuration', publicBaseUrl: 'Public URL',
  proxyMode: 'Proxy', proxy: 'HTTP proxy', redis: 'Share session', username: 'User name', password: 'Password',
  loginUrl: 'Login URL', loginSessionUrl: 'Session page', loginMethod: 'Method', loginFields: 'Fields', sessionFrom: 'Session from', cookieName: 'Send as cookie'
};

export default function register(RED: NodeAPI): void {
  function AssetServerNode(this: AssetServerConfigNode, config: AssetServerConfig) {
    createNode(RED, this, config);
    const node = this;
    node.name = config.name;
    node.baseUrl = (config.baseUrl || '').trim();
    /** A setting's error named by its editor label (`Base URL: is required`). */
    const named = (err: AssetApiError) => labelled(err, err.field
      ? { [err.field]: localText(RED, `asset-server.label.${err.field}`, FIELD_LABELS[err.field] ?? err.field) } : undefined);
    try {
      node.publicBaseUrl = publicBaseUrl(config.publicBaseUrl);
    } catch (err) {
      node.publicBaseUrl = '';
      node.publicBaseUrlError = named(err as AssetApiError);
    }
    /** The variable a `${NAME}` cookie reads when it is not set: no cookie until a flow sets one (asset-session). */
    let unsetCookie: string | undefined;
    try {
      const given = node.credentials ?? {};
      const login = loginOptions(config, given) !== undefined;
      for (const field of login ? ['username', 'password'] : []) {
        const name = unsetEnvVar(given[field]);
        if (name) throw invalidInput(field, unsetEnvVarRule(name));
      }
      // (with automatic login the cookie is not needed: a login replaces it)
      unsetCookie = login ? undefined : unsetEnvVar(given.cookie);
      if (unsetCookie) node.warn(named(invalidInput('cookie', unsetEnvVarRule(unsetCookie))).message);
      const credentials = unsetCookie ? { ...given, cookie: '' } : given;
      const options = clientOptions(RED, config, credentials);
      if (config.redis) options.sharedSession = sharedSessionFor(RED, node, config.redis, options);
      node.client = new AssetClient(options);
      node.login = options.login;
      keptSessions.adopt(node.id, config, node.credentials ?? {}, node.client);
      const exposed = plainLoginWarning(options.login, options.baseUrl);
      if (exposed) node.warn(exposed);
    } catch (err) {
      node.configError = err instanceof AssetApiError
        ? named(err)
        : new AssetApiError('invalid-input', `asset-server: ${(err as Error).message}`);
      node.error(node.configError.message);
    }
    const configuredClient = (): AssetClient => {
      if (node.client) return node.client;
      throw node.configError ?? invalidInput('server', 'configuration is invalid');
    };
    node.getClient = (noSessionYet = false) => {
      const client = configuredClient();
      if (!noSessionYet && !client.hasSession) {
        throw named(unsetCookie ? invalidInput('cookie', `${unsetEnvVarRule(unsetCookie)}; or set one with an asset-session node`) : noCookieError());
      }
      return client;
    };
    node.setCookie = (cookie: string) => configuredClient().setCookie(cookie);
    node.on('close', (removed: boolean, done: () => void) => {
      if (removed) keptSessions.forget(node.id);
      try { node.client?.close(); } finally { node.client = undefined; done(); }
    });
  }

  registerConnectionTest(RED);
  registerType(RED, 'asset-server', AssetServerNode, { cookie: { type: 'password' }, username: { type: 'text' }, password: { type: 'password' } });
}
