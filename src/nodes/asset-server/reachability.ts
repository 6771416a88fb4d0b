/**
 * First step of "Test connection": is the typed base URL reachable at all? One request to the
 * probe id without cookie and without login: any HTTP answer (a 401 included) means reachable.
 * Without this step a typo in the host (`http://locahost:8873`) was reported as a cookie
 * problem ("type the cookie again") when the saved cookie may only go to the deployed base URL,
 * and the real problem showed only after retyping the cookie (issue 23 #5).
 */
import { AssetClient } from '../../api/client';
import { AssetApiError } from '../../api/errors';
import type { NodeAPI } from '../shared/node-red';
import { configReport, PROBE_ID, type ConnectionReport } from './connection-check';
import { clientOptions, type AssetServerConfig } from './options';

/** Base URLs are reached within this (or the dialog's timeout when shorter). */
const REACH_TIMEOUT_MS = 10000;

/**
 * A report saying what is wrong with the settings or the base URL, or undefined when the server
 * answered. Settings that cannot work (base URL, timeout, TLS, a login on another host) are named
 * before anything is sent; then the probe goes out without cookie and without login.
 */
export async function baseUrlProblem(RED: NodeAPI, config: AssetServerConfig, username?: string): Promise<ConnectionReport | undefined> {
  let client: AssetClient;
  try {
    // Placeholder secrets let the options and the client check the settings (the login's host
    // among them); they are dropped before anything is sent.
    const options = clientOptions(RED, config, { cookie: 'unused', username: username || 'unused', password: 'unused' });
    new AssetClient({ ...options, transferThread: undefined }).close();
    client = new AssetClient({ ...options, cookie: '', login: undefined, transferThread: undefined });
  } catch (err) {
    return configReport(err);
  }
  try {
    await client.getSubscription(PROBE_ID, { timeout: REACH_TIMEOUT_MS });
    return undefined;
  } catch (err) {
    if (err instanceof AssetApiError && (err.kind === 'network' || err.kind === 'timeout')) {
      const what = err.message.replace(/^getSubscription: /, '');
      return { result: 'network', part: 'baseUrl', message: `the base URL ${(config.baseUrl || '').trim()} cannot be reached: ${what}`, checkedAt: new Date().toISOString() };
    }
    return undefined; // an answer, whatever it says: the server is there
  } finally {
    client.close();
  }
}
