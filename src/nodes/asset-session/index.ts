/**
 * asset-session: gives an asset-server a new session at run time, without a redeploy.
 * Action `set`: the cookie read from the configured property is sent by every node on that
 * server from the next request on; when it came from a msg property, that property is removed
 * before the msg goes on. Action `login`: runs the server's automatic login now.
 * The cookie never appears in a status, log, msg or error (asset-server/session.ts says where it is kept).
 */
import { invalidInput } from '../../api/errors';
import type { AssetServerConfigNode } from '../asset-server';
import { evaluateProperty, handleInputAndClose, localText } from '../shared';
import { clockTime } from '../shared/texts';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';

/** Editor properties. */
export interface AssetSessionConfig {
  id: string;
  name?: string;
  server?: string;
  /** `set` (default) or `login`. */
  action?: string;
  /** Where the cookie comes from (TypedInput): default msg.payload. */
  cookie?: string;
  cookieType?: string;
}

/** Removes a msg property given as a Node-RED property expression (`payload`, `a.b`, `a["b"]`). */
function deleteMessageProperty(RED: NodeAPI, msg: NodeMessage, expression: string): void {
  const parts = (RED.util as unknown as { normalisePropertyExpression(p: string): Array<string | number> }).normalisePropertyExpression(expression);
  let parent: any = msg;
  for (const part of parts.slice(0, -1)) {
    parent = parent?.[part];
    if (parent === null || typeof parent !== 'object') return;
  }
  delete parent[parts[parts.length - 1]];
}

export default function register(RED: NodeAPI): void {
  function AssetSessionNode(this: Node, config: AssetSessionConfig) {
    createNode(RED, this, config);
    const node = this;
    const action = config.action === 'login' ? 'login' : 'set';
    const cookieType = config.cookieType || 'msg';
    const cookieProperty = config.cookie || (cookieType === 'msg' ? 'payload' : '');

    /** The cookie from where the editor points; a msg property holding it is removed at once, whatever follows. */
    async function takeCookie(msg: NodeMessage): Promise<string> {
      let cookie: unknown;
      try {
        cookie = await evaluateProperty(RED, node, msg, cookieProperty, cookieType);
      } catch {
        throw invalidInput('cookie', `could not read the cookie from ${cookieType}.${cookieProperty}`);
      } finally {
        if (cookieType === 'msg') deleteMessageProperty(RED, msg, cookieProperty);
      }
      if (typeof cookie !== 'string' || cookie.trim() === '') {
        throw invalidInput('cookie', `${cookieType}.${cookieProperty} must be a non-empty string: Name=value or a bare session id`);
      }
      return cookie;
    }

    handleInputAndClose(RED, node, async (msg) => {
      const cookie = action === 'set' ? await takeCookie(msg) : undefined;
      const server = config.server ? RED.nodes.getNode(config.server) as AssetServerConfigNode | null : null;
      if (!server || typeof server.getClient !== 'function') throw invalidInput('server', 'select an asset-server configuration node');
      const time = clockTime(new Date());
      if (cookie === undefined) {
        await server.getClient().login();
        return localText(RED, 'asset-session.status.loggedIn', 'logged in __time__', { time });
      }
      server.setCookie(cookie);
      return localText(RED, 'asset-session.status.set', 'cookie set __time__', { time });
    }, { server: action === 'login' ? config.server : undefined }); // "set" asks no server
  }

  registerType(RED, 'asset-session', AssetSessionNode);
}
