/**
 * asset-event-ack: placed where a flow's work for a change is done. It acknowledges (or rejects)
 * the inbox entry a msg came from, found through `msg._inbox` (set by an asset-event-in whose
 * Delivery is "at least once"; see src/nodes/asset-event-in/delivery.ts), then passes the msg on.
 *
 * - Acknowledge: the entry leaves the inbox; the next entry of the same asset may go.
 * - Reject: delivered again after the node's backoff (doubling), parked after the last delivery.
 *   The reason is msg.error.message when there is one (a Catch node sets it), else "rejected".
 *   When msg.assetError says the DAM server is away, the delivery does not count and deliveries
 *   are held until the server is back (asset-event-in/server-hold.ts).
 * A msg without a handle, or whose asset-event-in is not running, ends in done(err) (Catch sees it).
 * An acknowledgement that comes too late (the entry was delivered again meanwhile) is counted in
 * the status; the later delivery acknowledges it.
 */
import { AssetApiError } from '../../api/errors';
import { endWithError, localText } from '../shared';
import { cutText } from '../shared/texts';
import type { InboxHandle } from '../asset-event-in/delivery';
import { runningDelivery } from '../asset-event-in/delivery';
import { createNode, registerType, type Node, type NodeAPI, type NodeMessage } from '../shared/node-red';

interface AssetEventAckConfig {
  id: string;
  name?: string;
  /** 'ack' (default) or 'reject'. */
  action?: string;
}

const STATUS_EVERY_MS = 250;
/** Longest rejection reason kept (in the inbox, its warning and the sidebar). */
const MAX_REASON = 1000;

/** The handle on a msg, or a text saying what is wrong with it. */
export function readHandle(value: unknown): InboxHandle | string {
  if (value === undefined || value === null) {
    return 'msg._inbox: missing: the msg must come from an asset-event-in with Delivery "at least once" (a node that builds a new msg must copy msg._inbox)';
  }
  const h = value as Record<string, unknown>;
  if (typeof h !== 'object' || typeof h.node !== 'string' || typeof h.id !== 'string' || !Number.isInteger(h.delivery)) {
    return 'msg._inbox: must be the object { node, id, delivery } set by asset-event-in; it was changed';
  }
  return h as unknown as InboxHandle; // no copy per msg: nothing changes it while this node holds the msg
}

export default function register(RED: NodeAPI): void {
  const t = (key: string, english: string, params: Record<string, unknown> = {}) => localText(RED, `asset-event-ack.${key}`, english, params);

  function AssetEventAckNode(this: Node, config: AssetEventAckConfig) {
    createNode(RED, this, config);
    const node = this;
    const rejecting = config.action === 'reject';
    const counts = { done: 0, late: 0 };
    let timer: NodeJS.Timeout | undefined;
    let shownAt = 0;

    function showStatus(): void {
      timer = undefined;
      shownAt = Date.now();
      const parts = [rejecting ? t('status.rejected', '__count__ rejected', { count: counts.done }) : t('status.acknowledged', '__count__ acknowledged', { count: counts.done })];
      if (counts.late) parts.push(t('status.late', '__count__ late', { count: counts.late }));
      node.status({ fill: 'green', shape: 'dot', text: parts.join(' · ') });
    }
    function statusSoon(): void {
      if (timer) return;
      timer = setTimeout(showStatus, Math.max(0, shownAt + STATUS_EVERY_MS - Date.now()));
    }

    node.on('input', (msg: NodeMessage, send, done) => {
      const handle = readHandle(msg._inbox);
      if (typeof handle === 'string') { endWithError(msg, done, new AssetApiError('invalid-input', handle, { field: 'msg._inbox' })); return; }
      const delivery = runningDelivery(handle.node);
      if (!delivery) {
        endWithError(msg, done, new AssetApiError('invalid-input', t('errors.not-running',
          'msg._inbox: asset-event-in __node__ is not running with Delivery "at least once" (redeployed or removed): the entry is delivered again', { node: handle.node }),
        { field: 'msg._inbox' }));
        return;
      }
      const error = msg.error as { message?: unknown; source?: { id?: unknown; type?: unknown } } | undefined;
      const reason = error?.message;
      // msg.assetError stays on a msg until a DAM node succeeds: it tells only when the error the
      // Catch caught is a DAM node's own (or there is no Catch's error at all).
      const sourceType = error?.source?.type;
      const assetError = typeof sourceType === 'string' && !sourceType.startsWith('asset-') ? undefined : msg.assetError;
      // The reason goes into the inbox, a warning and the sidebar: a few lines, not a whole error dump.
      const why = typeof reason === 'string' && reason ? cutText(reason, MAX_REASON) : 'rejected';
      const work = rejecting
        ? delivery.reject(handle, why, { assetError, nodeId: error?.source?.id }).then((outcome) => outcome !== undefined)
        : delivery.acknowledge(handle);
      work.then((ok) => {
        if (ok) counts.done++; else counts.late++;
        statusSoon();
        send(msg);
        done();
      }, (err: Error) => endWithError(msg, done, err instanceof AssetApiError ? err : notWritten(err)));
    });

    /** The inbox's write failed (a full disk, Redis away): said as the local file errors are, with the code. */
    function notWritten(err: Error): AssetApiError {
      const code = (err as NodeJS.ErrnoException).code;
      return new AssetApiError('invalid-input', t('errors.not-written', 'inbox: the __action__ could not be written (__message__): the entry is delivered again',
        { action: rejecting ? 'rejection' : 'acknowledgement', message: err.message }), { field: 'inbox', ...(typeof code === 'string' ? { code } : {}) });
    }

    node.on('close', () => {
      if (timer) clearTimeout(timer);
    });
  }

  registerType(RED, 'asset-event-ack', AssetEventAckNode);
}
