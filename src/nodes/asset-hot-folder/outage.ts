/**
 * The server as the hot folder sees it: away from a transient failure (shared/retry.ts) until it
 * answers a probe. Meanwhile uploads are held and one file at a time is sent as a probe, after
 * waits of 5 s doubling up to 5 minutes (or the server's Retry-After); a probe's failure counts
 * towards no file's Retries unless the server may have the file. Rules in watcher.ts.
 */
import type { AssetApiError } from '../../api/errors';
import { retryDelayMs, RETRY_BASE_MS } from '../shared/retry';

export class Outage {
  /** Probes that failed so far. */
  private probes = 0;
  /** When the next probe may start. */
  nextProbeAt: number;
  /** A probe is in flight. */
  probing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(public error: AssetApiError, private readonly baseMs = RETRY_BASE_MS) {
    this.nextProbeAt = this.after(1);
  }

  /** A probe met a transient failure too: the next one waits longer. */
  probeFailed(error: AssetApiError): void {
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
