/**
 * One Redis command within a time limit, shared by the Redis duplicate filter and the Redis Stream
 * inbox: a callback's answer waits for it, so it must end in time whatever the connection does.
 */

/** What of an ioredis connection tells whether it is on its way to 'ready'. */
export interface ConnectionState {
  /** ioredis: 'ready' once connected; 'connecting', 'connect', 'reconnecting' on the way there. */
  status?: string;
  once?(event: 'ready', listener: () => void): unknown;
  removeListener?(event: 'ready', listener: () => void): unknown;
}

/** Connection states from which ioredis will soon be 'ready': worth waiting for within the timeout. */
const CONNECTING = new Set(['wait', 'connecting', 'connect', 'reconnecting']);

/**
 * Runs `call` within `timeoutMs`, waiting for a connection under way (the first callback after a
 * deploy) within it too; a connection that comes only after the timeout sends nothing, as the
 * callback was answered already. Every failure is rejected as `unavailable(text)`.
 */
export async function callWithin<T>(redis: ConnectionState, timeoutMs: number, call: () => Promise<T>,
  unavailable: new (message: string) => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onReady: (() => void) | undefined;
  let timedOut = false;
  try {
    const connected = redis.status && CONNECTING.has(redis.status) && redis.once
      ? new Promise<void>((resolve) => { onReady = resolve; redis.once!('ready', resolve); })
      : undefined;
    return await Promise.race([
      connected ? connected.then(() => (timedOut ? (undefined as T) : call())) : call(),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => { timedOut = true; reject(new unavailable(`Redis did not answer within ${timeoutMs} ms`)); }, timeoutMs);
      })
    ]);
  } catch (err) {
    if (err instanceof unavailable) throw err;
    throw new unavailable(`Redis: ${(err as Error)?.message ?? String(err)}`);
  } finally {
    if (timer) clearTimeout(timer);
    if (onReady && redis.removeListener) redis.removeListener('ready', onReady);
  }
}
