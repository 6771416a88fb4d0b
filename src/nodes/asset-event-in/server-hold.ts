/**
 * asset-event-in "at least once": the hold of deliveries while the DAM server is away.
 *
 * - Starts on a rejection whose msg.assetError says the server is away (shared/retry.ts
 *   serverAway: no answer, busy, a failed login, a gateway's 502/504; not a download that broke
 *   off after the server had begun to answer: that counts as the entry's own failure, and ends a
 *   hold). That rejection counts towards its entry's Deliveries, as in the hot folder: an entry
 *   whose own failure only looks like an outage (a slow export's 504) still ends parked once
 *   others show the server works. Those saying the server is away during the hold (probes, entries out
 *   before) are given back; the flow's own failures count as always.
 * - While held, one entry at a time goes as a probe (shared/outage.ts: Reject backoff, 5 s if 0,
 *   doubling to 5 minutes, or the server's Retry-After).
 * - Ends when the server of the DAM node whose failure said it is away (shared/server-answers.ts;
 *   not known, e.g. no Catch's msg.error: any server) answered a DAM call since the last such failure,
 *   at the next acknowledgement or rejection; or on a rejection with the server's own answer (a
 *   404, a permission error).
 */
import { AssetApiError } from '../../api/errors';
import { Outage } from '../shared/outage';
import { RETRY_BASE_MS, errorFields, isServerAnswer, serverAway } from '../shared/retry';
import { isCalled, serverAnswersSoFar, serverOf } from '../shared/server-answers';
import { errorStatusText } from '../shared/texts';
import type { Delivery } from '../../events/inbox';
import type { DeliveryHooks, InboxHandle } from './delivery';

export type HoldHooks = Pick<DeliveryHooks, 'warn' | 'log' | 'changed' | 't'>;

export class ServerHold {
  private away: Outage | undefined;
  /** The last failure's msg.error.message while away. */
  private reason = '';
  /** The probe out, until its visibility timeout. */
  private probe: { id: string; delivery: number; until: number } | undefined;
  /**
   * The asset-server of the last failure that said the server is away (undefined: not known), and
   * its answers then and those of any server (server-answers.ts): the latter count once no running
   * node calls that server any more (a deploy moved the nodes to another asset-server node).
   */
  private server: string | undefined;
  private answersAt = 0;
  private anyAnswersAt = 0;
  /** The last take of a probe found nothing that could go. */
  private foundNone = false;

  constructor(private readonly settings: { backoffMs: number; visibilityTimeoutMs: number }, private readonly hooks: HoldHooks) {}

  get held(): boolean {
    return this.away !== undefined;
  }

  /** How many entries the next take may hand out: all `maxInFlight`; held, 1 when a probe may go now, else 0. */
  room(maxInFlight: number): number {
    if (!this.away) return maxInFlight;
    const now = Date.now();
    if (this.probe && now < this.probe.until) return 0;
    this.probe = undefined;
    return now >= this.away.nextProbeAt ? 1 : 0;
  }

  /** What a take with `limit` (from room) handed out: held, its probe, or that nothing could go. */
  took(limit: number, deliveries: Delivery[]): void {
    if (!this.away) return;
    this.foundNone = limit === 1 && deliveries.length === 0;
    if (deliveries.length) this.probe = { id: deliveries[0].id, delivery: deliveries[0].delivery, until: Date.now() + this.settings.visibilityTimeoutMs };
  }

  /**
   * Held: when to take next (the probe's visibility timeout; the next probe; once a probe was due and
   * nothing could go, when an entry becomes due: `inboxDue`, none: no timer, a store or an answer pumps).
   */
  dueAt(inboxDue: () => number | undefined): number | undefined {
    if (!this.away) return inboxDue();
    if (this.probe) return this.probe.until;
    return this.foundNone ? inboxDue() : this.away.nextProbeAt;
  }

  /** An entry acknowledged. */
  acknowledged(handle: InboxHandle): void {
    if (!this.away) return;
    if (this.isProbe(handle)) this.probe = undefined;
    if (this.answered()) this.end();
  }

  /**
   * An entry rejected: true when the rejection is given back (not counted). Starts, extends or
   * ends the hold. `failure`: the msg's assetError, and the id of the node that failed (msg.error.source).
   */
  rejected(handle: InboxHandle, reason: string, failure: { assetError?: unknown; nodeId?: unknown } = {}): boolean {
    const fields = errorFields(failure.assetError);
    const away = fields !== undefined && serverAway(fields);
    const probe = this.isProbe(handle);
    if (probe) this.probe = undefined;
    const failedOn = serverOf(failure.nodeId);
    if (away) {
      this.server = failedOn;
      this.answersAt = serverAnswersSoFar(failedOn);
      this.anyAnswersAt = serverAnswersSoFar(undefined);
    }
    if (away && !this.away) {
      this.away = new Outage(fields, this.settings.backoffMs > 0 ? this.settings.backoffMs : RETRY_BASE_MS);
      this.reason = reason;
      this.hooks.warn(this.hooks.t('inbox.server-away', 'DAM server unavailable (__reason__): deliveries held, one entry at a time goes as a probe; no entry is parked meanwhile', { reason }));
      this.hooks.changed();
      return false;
    }
    if (away && probe) { this.away!.probeFailed(fields); this.reason = reason; }
    // A known node's server answer is counted already (for its own server: maybe another one).
    else if (this.away && ((fields && isServerAnswer(fields) && failedOn === undefined) || this.answered())) this.end();
    return away;
  }

  private isProbe(handle: InboxHandle): boolean {
    return this.probe !== undefined && this.probe.id === handle.id && this.probe.delivery === handle.delivery;
  }

  /** The server of the last away failure answered a DAM call since. */
  private answered(): boolean {
    if (this.server !== undefined && isCalled(this.server)) return serverAnswersSoFar(this.server) > this.answersAt;
    return serverAnswersSoFar(undefined) > this.anyAnswersAt;
  }

  /** Why deliveries are held, short, as the nodes' statuses say it; undefined when they are not. */
  get reasonText(): string | undefined {
    if (!this.away) return undefined;
    const { kind, status, code, operation } = this.away.error;
    return errorStatusText(undefined, new AssetApiError(kind, this.reason, { status, code, operation }));
  }

  private end(): void {
    this.away = undefined;
    this.probe = undefined;
    this.hooks.log(this.hooks.t('inbox.server-back', 'DAM server available again: deliveries resume'));
    this.hooks.changed();
  }
}
