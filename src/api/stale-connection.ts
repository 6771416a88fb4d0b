/**
 * Keep-alive connections the server may already have closed. A server closes an idle
 * connection after its keep-alive timeout; a request written to it in that moment is reset
 * before any answer. Node 20's agent ignores the server's `Keep-Alive: timeout=N` hint unless
 * the agent has a timeout of its own, so an idle socket was kept for ever and reused after
 * the server had closed it (an upload reset 219 ms in, on a loaded machine).
 */
import type * as http from 'http';
import type { Duplex } from 'stream';

/** Idle sockets are closed by us after this long when the server gives no hint (ms). */
export const IDLE_SOCKET_MS = 4000;
/** Closed this long before the server's announced keep-alive timeout (as Node's own agent does). */
const HINT_MARGIN_MS = 1000;

/** The server's announced keep-alive timeout for the answer just read on `socket` (ms), if any. */
function serverIdleLimit(socket: Duplex): number | undefined {
  const answer = (socket as Duplex & { _httpMessage?: { res?: http.IncomingMessage } })._httpMessage?.res;
  const hint = /^\s*timeout=(\d+)/i.exec(String(answer?.headers['keep-alive'] ?? ''))?.[1];
  return hint === undefined ? undefined : Number(hint) * 1000 - HINT_MARGIN_MS;
}

/** The server end (address and port) of the pooled socket each request of a limited agent was sent on. */
const reusedPeer = new WeakMap<object, string>();

function peerOf(socket: Duplex): string {
  const { remoteAddress, remotePort } = socket as Duplex & { remoteAddress?: string; remotePort?: number };
  return `${remoteAddress}|${remotePort}`;
}

/** Makes `agent` close idle sockets before the server would: its hint minus a margin, at most `idleMs`. */
export function limitIdleSockets<A extends http.Agent>(agent: A, idleMs = IDLE_SOCKET_MS): A {
  const keep = agent.keepSocketAlive.bind(agent) as (socket: Duplex) => boolean;
  agent.keepSocketAlive = ((socket: Duplex): boolean => {
    if (!keep(socket)) return false;
    const limit = Math.min(idleMs, serverIdleLimit(socket) ?? idleMs);
    if (limit <= 0) return false;
    // The agent destroys a free socket on its 'timeout'.
    (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(limit);
    return true;
  }) as unknown as A['keepSocketAlive'];
  const reuse = agent.reuseSocket.bind(agent);
  agent.reuseSocket = (socket, request) => {
    reuse(socket, request);
    reusedPeer.set(request, peerOf(socket));
    // Busy again: the idle limit is not a limit on the request (CallControl times requests).
    (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(0);
  };
  return agent;
}

/**
 * A request that failed on a reused keep-alive connection before any answer arrived, most likely
 * because the server had closed that connection, and that may be sent again on a new one (as
 * browsers do). A reset can also come after the server acted on the request (it crashed before
 * answering, a proxy cut the line): so a request that is not idempotent (an upload makes a new
 * asset each time) is sent again only if its body had not all been sent, i.e. the server cannot
 * have read it whole. The automatic login is the exception, sent again as idempotent (session.ts):
 * its small form is nearly always all sent, and a second login only makes a spare session (or,
 * with a wrong password, one more refusal).
 */
export function isStaleConnection(err: unknown, idempotent: boolean): boolean {
  const failure = err as { code?: string; response?: unknown; request?: { reusedSocket?: boolean; writableFinished?: boolean } } | null;
  if (failure === null || typeof failure !== 'object' || failure.response !== undefined) return false;
  if (failure.request?.reusedSocket !== true || (failure.code !== 'ECONNRESET' && failure.code !== 'EPIPE')) return false;
  return idempotent || failure.request.writableFinished === false;
}

/** `send`, and once more on a new connection when it failed on a reused one the server had closed (above), unless `signal` ended it. */
export async function sendAgainIfStale<T>(send: () => Promise<T>, idempotent: boolean, signal?: AbortSignal): Promise<T> {
  try {
    return await send();
  } catch (err) {
    if (!isStaleConnection(err, idempotent) || signal?.aborted) throw err;
    closeIdleSockets(err);
    return send();
  }
}

/**
 * Before the second try of a request that met a closed connection: a server that closed one idle
 * connection (a restart, its keep-alive timeout) most likely closed the others too, and the second
 * try must not take one of them. Closes the idle connections to the same server end, of an agent
 * limitIdleSockets made (its own: an agent given by the user may hold connections of others).
 */
export function closeIdleSockets(staleError: unknown): void {
  const request = (staleError as { request?: { agent?: http.Agent } }).request;
  const peer = request && reusedPeer.get(request);
  if (peer === undefined) return;
  for (const sockets of Object.values(request!.agent?.freeSockets ?? {})) {
    for (const socket of sockets ?? []) if (peerOf(socket) === peer) socket.destroy();
  }
}
