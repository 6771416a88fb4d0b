/**
 * The DAM server as a node sees it while it is away: from a failure that says so (shared/retry.ts)
 * until it answers a probe. Meanwhile the node holds its work and starts one probe at a time,
 * after waits doubling from the base (5 s unless given) up to 5 minutes, or the server's
 * Retry-After. Used by asset-hot-folder (watcher.ts) and asset-event-in at least once (server-hold.ts).
 */
import { retryDelayMs, RETRY_BASE_MS, type ErrorFields } from './retry';

export class Outage<E extends ErrorFields = ErrorFields> {
  /** Probes that failed so far. */
  private probes = 0;
  /** When the next probe may start. */
  nextProbeAt: number;
  /** A probe is in flight. */
  probing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(public error: E, private readonly baseMs = RETRY_BASE_MS) {
    this.nextProbeAt = this.after(1);
  }

  /** A probe met a failure that holds too: the next one waits longer. */
  probeFailed(error: E): void {
    this.error = error;
    this.probes++;
    this.nextProbeAt = this.after(this.probes + 1);
  }

  /** The wait before probe `n`: never below 1 s (the base in tests), whatever a Retry-After of 0 or a past date says. */
  private after(n: number): number {
    return Date.now() + Math.max(Math.min(1000, this.baseMs), retryDelayMs(this.error, n, this.baseMs));
  }

  /** Calls `start` when the next probe is due (one timer at a time). */
  whenDue(start: () => void): void {
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = undefined; start(); }, Math.max(0, this.nextProbeAt - Date.now()));
  }

  cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
