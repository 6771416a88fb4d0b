/**
 * A node in "at most once" mode with an asset-redis node chosen whose Redis Stream inbox still
 * holds entries (it was "at least once" before): they are sent in the order stored per asset,
 * as at-most-once sends, before they go from Redis (the journal's counterpart is
 * deliverLeftovers in file-leftovers.ts). Each batch is given out to this copy in one script, so
 * two copies never both send an entry, and taken out once sent: a batch whose answer was lost is
 * given out again at the next pass, one answered after the close began is not sent and goes back
 * at once; none is lost. Entries a copy still in "at least once" holds are left to it and looked
 * at again until nothing is stored, then the keys go.
 */
import type { AssetRedisConfigNode } from '../asset-redis';
import type { NodeMessage } from '../shared/node-red';
import { DELIVERY_DEFAULTS, entryMessage, type DeliveryHooks } from './delivery';
import { warnKept } from './inbox-warnings';

const BATCH = 1000;
/** Wait before looking again at entries held by a copy still in "at least once", or after Redis failed. */
const AGAIN_MS = 1000;

/** Starts sending the leftovers; `close` (the node closes) ends it and resolves once no batch is under way. */
export function deliverStreamLeftovers(options: {
  redis: AssetRedisConfigNode; nodeId: string; visibilityTimeout: unknown;
  send: (msg: NodeMessage) => void; warn: (text: string) => void; t: DeliveryHooks['t'];
}): { close(removed: boolean): Promise<void>; done: Promise<number> } {
  const { redis, nodeId, send, warn, t } = options;
  const seconds = Number(options.visibilityTimeout);
  const visibilityTimeoutMs = 1000 * (seconds > 0 ? seconds : DELIVERY_DEFAULTS.visibilityTimeoutS);
  const inbox = redis.inboxFor(nodeId, {
    maxEntries: Number.MAX_SAFE_INTEGER, maxInFlight: 1, visibilityTimeoutMs, maxDeliveries: Number.MAX_SAFE_INTEGER, backoffMs: 0, windowMs: 0
  });
  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = () => new Promise<void>((resolve) => {
    if (stopped) { resolve(); return; }
    const timer = setTimeout(resolve, AGAIN_MS);
    wake = () => { clearTimeout(timer); resolve(); };
  });
  // Whether this copy may hold entries given out and not taken out, for the close to let go of:
  // from a drain's call until its batch is taken out (or it gave nothing), and after a failure (an
  // answer may have been lost) until nothing is stored. A node with nothing left (the usual case)
  // sends nothing at its close.
  let holding = false;
  let failed = false;
  let ended = false;
  let warned = false;
  const unreachable = async (err: unknown) => {
    failed = true;
    if (!warned) warn(t('inbox.leftovers-unreachable', 'the Redis inbox cannot be checked for entries left from "at least once" (__message__); trying again', { message: (err as Error).message }));
    warned = true;
    await pause();
  };

  const run = async (): Promise<number> => {
    let start = '-';
    let sent = 0;
    while (!stopped) {
      let batch: Awaited<ReturnType<typeof inbox.drain>>;
      holding = true;
      try {
        batch = await inbox.drain(start, BATCH);
      } catch (err) {
        // Nothing sent: what the script gave out, if it ran, is given out again at the next pass.
        if (stopped) break;
        await unreachable(err);
        start = '-';
        continue;
      }
      if (batch.entries.length === 0) holding = failed;
      // Closing: not sent into a stopping flow; the close let go of them (LET_GO runs after this drain).
      if (stopped) break;
      for (const d of batch.entries) {
        const msg = entryMessage(d.entry, d.subscriptionId, d.receivedAt);
        if (d.delivery > 0) msg.redelivered = d.delivery;
        send(msg);
      }
      sent += batch.entries.length;
      let left = batch.left;
      if (batch.entries.length > 0) {
        try {
          left = await inbox.drained(batch.entries);
          holding = failed;
        } catch (err) {
          // Sent, not taken out: they go out again (at least once, as they were stored).
          if (stopped) break;
          await unreachable(err);
        }
      }
      if (left === 0) { ended = true; holding = false; break; }
      start = batch.next;
      if (start === '-' && batch.entries.length === 0) await pause(); // only entries held by copies in "at least once"
    }
    if (sent > 0) warn(t('inbox.leftovers-redis', 'delivery is "at most once" now: the __count__ entries left in the Redis inbox were sent and taken out of it', { count: sent }));
    return sent;
  };
  const done = run().catch((err: Error) => { warn(`inbox (Redis): ${err.message}`); return 0; });
  return {
    done,
    close: async (removed) => {
      stopped = true;
      wake?.();
      // Sent at once: asset-redis may be closing in the same deploy (its last commands go within a few steps).
      const lettingGo = holding ? inbox.letGoDrained().catch(() => undefined) : undefined;
      const kept = removed && !ended ? warnKept(inbox.keptForOthers(), { warn, t }) : undefined;
      await Promise.all([done, lettingGo, kept]);
    }
  };
}
