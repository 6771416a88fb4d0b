/**
 * Backpressure for an at-least-once asset-event-in: while many entries wait in its inbox for the
 * flow, a new callback is held (before it is filtered and stored) until the flow is back at the mark
 * (paceAbove), at most for the node's *Hold up to* setting (default 5 s; 0: never held), then stored
 * and answered as always.
 *
 * Why: the inbox answers once entries are stored, not once the flow is done, so a server can
 * send far faster than the flow works. Unpaced, the inbox fills to its bound and answers 503: the
 * server retries a minute later, and after its last retry (spec section 3) the change is lost for
 * good. Held, the answer comes later and the server's next call with it (it waits for the answer),
 * so the server slows to the flow's pace. The hold must stay below the server's callback timeout
 * (the emulator's is 30 s; the setting allows 25); a flow that stays behind still fills the inbox, one hold at a time.
 * Waiting entries also cost memory and garbage collection: a deep backlog slows the flow itself.
 */

/** Fewest waiting entries that hold callbacks (when the inbox's bound allows as many: see paceAbove). */
export const PACE_ABOVE_MIN = 1000;

/**
 * Waiting entries above which callbacks are held: twice the in-flight bound, at least
 * PACE_ABOVE_MIN (a few callbacks' worth, so that the flow never runs dry while the server is held),
 * at most half the inbox's bound (so holding starts well before the inbox is full).
 */
export function paceAbove(maxInFlight: number, maxEntries: number): number {
  return Math.max(1, Math.min(Math.max(PACE_ABOVE_MIN, 2 * maxInFlight), Math.ceil(maxEntries / 2)));
}

export class CallbackPacer {
  /** Held callbacks' releases, in arrival order. */
  private held: Array<() => void> = [];

  /** `behind`: true while too many entries wait (checked on each callback and each `release`). `holdMaxMs` 0: never held. */
  constructor(private readonly behind: () => boolean, private readonly holdMaxMs: number) {}

  /** Callbacks held now. */
  get holding(): number {
    return this.held.length;
  }

  /**
   * Resolves at once unless the flow is behind or callbacks are held already (a callback never
   * overtakes one held before it); else when `release` finds the flow caught up, or after `holdMaxMs`.
   */
  wait(): Promise<void> {
    if (this.holdMaxMs <= 0 || (this.held.length === 0 && !this.behind())) return Promise.resolve();
    return new Promise((resolve) => {
      const go = () => {
        clearTimeout(timer);
        const i = this.held.indexOf(go);
        if (i >= 0) this.held.splice(i, 1);
        resolve();
      };
      const timer = setTimeout(go, this.holdMaxMs);
      this.held.push(go);
    });
  }

  /** The flow took entries (or the node closes: `all`): the held callbacks go on, in order, unless it is still behind. */
  release(all = false): void {
    if (this.held.length === 0 || (!all && this.behind())) return;
    const held = this.held;
    this.held = []; // each `go` then finds itself gone: no search per callback
    for (const go of held) go();
  }
}
