/**
 * The session side of an asset-server node: its automatic-login settings, and where a cookie set
 * at run time (asset-session node) or obtained by an automatic login is kept.
 *
 * Kept in memory only, in this Node-RED process, per asset-server node id:
 * - a redeploy (full, flows or nodes) keeps it while the asset-server's base URL, cookie and
 *   login settings are unchanged; changing any of them in the editor starts again from what was
 *   configured (the user's say wins);
 * - removing the asset-server node forgets it;
 * - a restart of Node-RED forgets it: the configured cookie, or the automatic login, is used again.
 * It is never written to the flows or credentials file, and never shown.
 */
import { createHash } from 'crypto';
import type { AssetClient } from '../../api/client';
import type { LoginOptions } from '../../api/session';

/** The automatic-login properties of an asset-server node (user name and password are credentials). */
export interface LoginConfig {
  baseUrl?: string;
  /** Automatic login on (true or "true"). */
  loginEnabled?: boolean | string;
  /** `utility`, `form` or `custom`: the editor fills the fields below from a preset. */
  loginPreset?: string;
  loginUrl?: string;
  /** Optional page fetched first for a session (servlet form login). */
  loginSessionUrl?: string;
  loginMethod?: string;
  /** `query` or `form`. */
  loginFieldsIn?: string;
  /** One `name=value` per line; {{username}} and {{password}} are replaced. */
  loginFields?: string;
  /** `set-cookie` or `json`. */
  sessionFrom?: string;
  sessionName?: string;
  cookieName?: string;
}

/** The automatic-login properties besides `loginEnabled`, in one list (the connection test compares them too). */
export const LOGIN_SETTINGS = ['loginPreset', 'loginUrl', 'loginSessionUrl', 'loginMethod', 'loginFieldsIn', 'loginFields', 'sessionFrom', 'sessionName', 'cookieName'] as const;

/** Client login options from the node's properties and credentials; undefined when automatic login is off. */
export function loginOptions(config: LoginConfig, credentials: Record<string, string | undefined>): LoginOptions | undefined {
  if (config.loginEnabled !== true && config.loginEnabled !== 'true') return undefined;
  const preset = config.loginPreset === 'utility' || config.loginPreset === 'form' ? config.loginPreset : undefined;
  const text = (value: string | undefined) => (value ?? '').trim() || undefined;
  return {
    username: credentials.username ?? '',
    password: credentials.password ?? '',
    preset,
    url: text(config.loginUrl),
    sessionUrl: text(config.loginSessionUrl),
    method: text(config.loginMethod)?.toUpperCase() as LoginOptions['method'],
    fieldsIn: text(config.loginFieldsIn) as LoginOptions['fieldsIn'],
    fields: config.loginFields || undefined,
    sessionFrom: text(config.sessionFrom) as LoginOptions['sessionFrom'],
    sessionName: text(config.sessionName),
    cookieName: text(config.cookieName)
  };
}

interface Kept { fingerprint: string; cookie: string }

/** What was configured, as a hash (so a change in the editor is noticed without keeping it). */
function fingerprint(config: LoginConfig, credentials: Record<string, string | undefined>): string {
  const parts = [
    config.baseUrl, credentials.cookie, credentials.username, credentials.password, config.loginEnabled, ...LOGIN_SETTINGS.map((name) => config[name])
  ];
  return createHash('sha256').update(JSON.stringify(parts.map((p) => p === undefined ? null : String(p)))).digest('hex');
}

class KeptSessions {
  private readonly byServer = new Map<string, Kept>();

  /** Gives a new client the session kept for this server (when still valid) and keeps its next ones. */
  adopt(serverId: string, config: LoginConfig, credentials: Record<string, string | undefined>, client: AssetClient): void {
    const print = fingerprint(config, credentials);
    const kept = this.byServer.get(serverId);
    if (kept && kept.fingerprint === print) client.setCookie(kept.cookie);
    else this.byServer.delete(serverId);
    const keep = () => {
      const cookie = client.sessionCookie;
      if (cookie) this.byServer.set(serverId, { fingerprint: print, cookie });
    };
    client.on('session-renewed', keep);
    client.on('cookie-set', keep);
  }

  forget(serverId: string): void {
    this.byServer.delete(serverId);
  }
}

/** One per Node-RED process (module state outlives node instances, not the process). */
export const keptSessions = new KeptSessions();
