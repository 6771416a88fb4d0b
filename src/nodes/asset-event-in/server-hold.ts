/**
 * asset-event-in "at least once": the hold of deliveries while the DAM server is away.
 *
 * - Starts on a rejection whose msg.assetError says the server is away (shared/retry.ts
 *   serverAway: no answer, busy, a failed login, a gateway's 502/504). That rejection counts
 *   towards its entry's Deliveries, as in the hot folder: an entry whose own failure only looks
 *   like an outage (a download cut off, a slow export's 504) still ends parked once others show
 *   the server works. Rejections during the hold (probes, entries out before) are given back.
 * - While held, one entry at a time goes as a probe (shared/outage.ts: Reject backoff, 5 s if 0,
 *   doubling to 5 minutes, or the server's Retry-After).
 * - Ends on an acknowledgement when a DAM call in this Node-RED was answered since the last
 *   failure that said the server is away (shared/server-answers.ts), or on a rejection with the
 *   server's own answer (a 404, a permission error).
 */
import { AssetApiError } from '../../api/errors';
import { Outage } from '../shared/outage';
import { RETRY_BASE_MS, errorFields, isServerAnswer, serverAway } from '../shared/retry';
import { serverAnswersSoFar } from '../shared/server-answers';
import { errorStatusText } from '../shared/texts';
import type { Delivery } from '../../events/inbox';

export interface HoldHooks {
  warn(text: string): void;
  log(text: string): void;
  /** The hold started or ended: refresh the status. */
  changed(): void;
  t(key: string, english: string, params?: Record<string, unknown>): string;
}

export class ServerHold {
  private away: Outage | undefined;
  /** The last failure's msg.error.message while away. */
  private reason = '';
  /** The probe out, until its visibility timeout. */
  private probe: { id: string; until: number } | undefined;
  /** DAM calls answered (server-answers.ts) by the last failure that said the server is away. */
  private answersAt = 0;
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
    if (deliveries.length) this.probe = { id: deliveries[0].id, until: Date.now() + this.settings.visibilityTimeoutMs };
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

  /** An entry acknowledged (late ones too: the work was done). */
  acknowledged(id: string): void {
    if (!this.away) return;
    if (this.probe?.id === id) this.probe = undefined;
    if (serverAnswersSoFar() > this.answersAt) this.end();
  }

  /** An entry rejected: true when the rejection is given back (not counted). Starts, extends or ends the hold. */
  rejected(id: string, reason: string, assetError: unknown): boolean {
    const fields = errorFields(assetError);
    const away = fields !== undefined && serverAway(fields);
    const probe = this.away !== undefined && this.probe?.id === id;
    if (probe) this.probe = undefined;
    if (away) this.answersAt = serverAnswersSoFar();
    if (away && !this.away) {
      this.away = new Outage(fields, this.settings.backoffMs > 0 ? this.settings.backoffMs : RETRY_BASE_MS);
      this.reason = reason;
      this.hooks.warn(this.hooks.t('inbox.server-away', 'DAM server unavailable (__reason__): deliveries held, one entry at a time goes as a probe; no entry is parked meanwhile', { reason }));
      this.hooks.changed();
      return false;
    }
    if (away && probe) { this.away!.probeFailed(fields); this.reason = reason; }
    else if (this.away && fields && isServerAnswer(fields)) this.end();
    return away;
  }

  /** Why deliveries are held, short, as the nodes' statuses say it; undefined when they are not. */
  get reasonText(): string | undefined {
    if (!this.away) return undefined;
    const { kind, status, code, operation } = this.away.error as AssetApiError;
    return errorStatusText(undefined, new AssetApiError(kind, this.reason, { status, code, operation }));
  }

  private end(): void {
    this.away = undefined;
    this.probe = undefined;
    this.hooks.log(this.hooks.t('inbox.server-back', 'DAM server available again: deliveries resume'));
    this.hooks.changed();
  }
}
