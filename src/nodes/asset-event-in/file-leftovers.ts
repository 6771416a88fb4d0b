/**
 * A node in "at most once" mode whose inbox file is still there (it was "at least once" before):
 * what it holds is sent once, in the order stored, then the file goes (deliverLeftovers). The
 * node's close waits for that run: a redeploy back to "at least once" opens the same file.
 */
import * as fs from 'fs';
import { JournalInbox } from '../../events/inbox';
import type { NodeMessage } from '../shared/node-red';
import { entryMessage, type DeliveryHooks } from './delivery';
import { warnLost } from './inbox-warnings';

const LEFTOVERS_OPTIONS = { maxEntries: Number.MAX_SAFE_INTEGER, maxInFlight: 1, visibilityTimeoutMs: 1, maxDeliveries: Number.MAX_SAFE_INTEGER, backoffMs: 0 };

/**
 * Sends what the file holds, then removes it. A node closed meanwhile (`closed()`) keeps the file:
 * sent or not, its entries go out again with the next start (or go with removeLeftovers when the
 * node was removed).
 */
export async function deliverLeftovers(file: string, send: (msg: NodeMessage) => void, warn: (text: string) => void,
  t: DeliveryHooks['t'], closed: () => boolean = () => false): Promise<number> {
  if (!fs.existsSync(file)) return 0;
  const { inbox } = await JournalInbox.open(file, LEFTOVERS_OPTIONS);
  if (closed()) { await inbox.close(); return 0; }
  const left = inbox.remaining();
  for (const d of left) {
    const msg = entryMessage(d.entry, d.subscriptionId, d.receivedAt);
    if (d.delivery > 0) msg.redelivered = d.delivery;
    send(msg);
  }
  // After Node-RED's turn that hands the messages on (as at-most-once answers a callback).
  await new Promise((resolve) => setImmediate(resolve));
  if (closed()) { await inbox.close(); return 0; }
  await inbox.destroy();
  if (left.length > 0) warn(t('inbox.leftovers', 'delivery is "at most once" now: the __count__ entries left in the inbox were sent once and the inbox removed', { count: left.length }));
  return left.length;
}

/** The node was removed while its leftovers were being sent: the file goes, with the warning a removed inbox gives. */
export async function removeLeftovers(file: string, warn: (text: string) => void, t: DeliveryHooks['t']): Promise<void> {
  if (!fs.existsSync(file)) return;
  const { inbox } = await JournalInbox.open(file, LEFTOVERS_OPTIONS);
  warnLost(await inbox.destroy(), { warn, t });
}
