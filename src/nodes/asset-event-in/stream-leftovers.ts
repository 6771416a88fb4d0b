/**
 * A node in "at most once" mode with an asset-redis node chosen whose Redis Stream inbox still
 * holds entries (it was "at least once" before): they are sent once, in the order stored per
 * asset, before they are gone from Redis, as at-most-once sends (the journal's counterpart is
 * deliverLeftovers in file-leftovers.ts). Each batch is taken out of the stream in one script, so two
 * copies never both send an entry; entries a copy still in "at least once" holds are left to it
 * and looked at again until the stream is empty, then its keys go.
 */
import type { AssetRedisConfigNode } from '../asset-redis';
import type { NodeMessage } from '../shared/node-red';
import { DELIVERY_DEFAULTS, entryMessage, type DeliveryHooks } from './delivery';

const BATCH = 1000;
/** Wait before looking again at entries held by a copy still in "at least once", or after Redis failed. */
const AGAIN_MS = 1000;

/** Starts sending the leftovers; `stop` (the node closes) ends the wait for held entries. */
export function deliverStreamLeftovers(options: {
  redis: AssetRedisConfigNode; nodeId: string; visibilityTimeout: unknown;
  send: (msg: NodeMessage) => void; warn: (text: string) => void; t: DeliveryHooks['t'];
}): { stop(): void; done: Promise<number> } {
  const { redis, nodeId, send, warn, t } = options;
  const seconds = Number(options.visibilityTimeout);
  const visibilityTimeoutMs = 1000 * (seconds > 0 ? seconds : DELIVERY_DEFAULTS.visibilityTimeoutS);
  const inbox = redis.inboxFor(nodeId, {
    maxEntries: Number.MAX_SAFE_INTEGER, maxInFlight: 1, visibilityTimeoutMs, maxDeliveries: Number.MAX_SAFE_INTEGER, backoffMs: 0, windowMs: 0
  });
  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = () => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, AGAIN_MS);
    wake = () => { clearTimeout(timer); resolve(); };
  });

  const run = async (): Promise<number> => {
    let start = '-';
    let withParked = true;
    let sent = 0;
    let failed = false;
    while (!stopped) {
      let batch: Awaited<ReturnType<typeof inbox.drain>>;
      try {
        batch = await inbox.drain(start, BATCH, withParked);
      } catch (err) {
        // Nothing was taken: the entries stay in Redis; looked at again while the node runs.
        if (!failed) warn(t('inbox.leftovers-unreachable', 'the Redis inbox cannot be checked for entries left from "at least once" (__message__); trying again', { message: (err as Error).message }));
        failed = true;
        await pause();
        continue;
      }
      withParked = false;
      for (const d of batch.entries) {
        const msg = entryMessage(d.entry, d.subscriptionId, d.receivedAt);
        if (d.delivery > 0) msg.redelivered = d.delivery;
        send(msg);
      }
      sent += batch.entries.length;
      if (batch.left === 0) break;
      start = batch.next;
      if (start === '-' && batch.entries.length === 0) await pause(); // only entries held by copies in "at least once"
    }
    if (sent > 0) warn(t('inbox.leftovers-redis', 'delivery is "at most once" now: the __count__ entries left in the Redis inbox were sent once and taken out of it', { count: sent }));
    return sent;
  };
  const done = run().catch((err: Error) => { warn(`inbox (Redis): ${err.message}`); return 0; });
  return { stop: () => { stopped = true; wake?.(); }, done };
}
