/**
 * How many large callback bodies one Node-RED reads and handles at the same time.
 *
 * Reading a body of tens of MB, scanning it and parsing it takes the event loop about half a
 * second (42 MB; in steps of up to about 0.15 s, during which the editor and every other callback
 * wait) and a few times the body's size in memory while it is handled (49 MB: about 125 MB). Unbounded, a busy or hostile sender
 * multiplies both: 12 such bodies at once stalled the editor 6.5 s and took 1.5 GB, 32 took 14.6 s
 * and 2.7 GB. So a body above LARGE_BODY_BYTES (declared by Content-Length, else once that many
 * bytes have arrived) needs a slot of one pool shared by every asset-event-in of the process:
 * LARGE_BODY_SLOTS read at once; up to LARGE_BODY_WAITING more wait for a slot, their bodies
 * unread (TCP keeps them at the sender), at most LARGE_BODY_WAIT_MS; any other is answered 503
 * with Retry-After at once, before its body is read, and the server sends it again (a failed
 * call is retried, spec section 3). Bodies up to LARGE_BODY_BYTES never ask. A slot is held until
 * the callback is answered, so what its entries cost until then stays within the bound.
 */
import type { IncomingMessage } from 'http';

/** Bodies above this many bytes take a slot. */
export const LARGE_BODY_BYTES = 1e6;
/** Large bodies read and handled at once, per Node-RED. */
export const LARGE_BODY_SLOTS = 2;
/** Large bodies that may wait for a slot (unread); more are answered 503 at once. */
export const LARGE_BODY_WAITING = 4;
/** Longest wait for a slot; then 503. Well below the server's call timeout (the emulator's: 30 s). */
export const LARGE_BODY_WAIT_MS = 10000;
/** Seconds in the Retry-After of a 503 for want of a slot: a slot is usually free again within seconds. */
export const LARGE_BODY_RETRY_AFTER_S = 10;

/** The reason of the 503 for want of a slot. */
export const SLOTS_BUSY_REASON = 'too many large callbacks are being read at once; send again later';

/** Admission of one request's large body (readJsonBody asks it once the body passes `threshold` bytes). */
export interface BodyGate {
  readonly threshold: number;
  /** True once the body may be read; false when it is to be answered 503. */
  enter(): Promise<boolean>;
}

/** A pool of slots with a bounded, timed queue of waiters. */
export class BodySlots {
  private free: number;
  private readonly waiters: Array<(ok: boolean) => void> = [];

  constructor(readonly slots = LARGE_BODY_SLOTS, readonly maxWaiting = LARGE_BODY_WAITING, readonly waitMs = LARGE_BODY_WAIT_MS,
    readonly threshold = LARGE_BODY_BYTES) {
    this.free = slots;
  }

  /** Slots in use and requests waiting (for tests and the curious). */
  get state(): { busy: number; waiting: number } {
    return { busy: this.slots - this.free, waiting: this.waiters.length };
  }

  /** Resolves true with a slot taken (give it back with {@link give}), false when none came in time or the request went away. */
  take(req: IncomingMessage): Promise<boolean> {
    if (req.socket?.destroyed) return Promise.resolve(false); // gone: its 'close' has fired already
    if (this.free > 0) { this.free--; return Promise.resolve(true); }
    if (this.waiters.length >= this.maxWaiting || this.waitMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const socket = req.socket;
      const settle = (ok: boolean) => {
        clearTimeout(timer);
        socket?.off('close', gone);
        const i = this.waiters.indexOf(settle);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(ok);
      };
      const gone = () => settle(false);
      const timer = setTimeout(gone, this.waitMs);
      socket?.once('close', gone);
      this.waiters.push(settle);
    });
  }

  /** Gives a slot back: to the first waiter, else to the pool. */
  give(): void {
    const next = this.waiters.shift();
    if (next) next(true); // the slot passes on: `free` unchanged
    else this.free = Math.min(this.slots, this.free + 1);
  }

  /** One request's gate; `release` it once the callback is answered (or failed), whatever happened. */
  ticket(req: IncomingMessage): BodyTicket {
    return new BodyTicket(this, req);
  }
}

/** A request's claim on a slot: taken at most once, given back once, also when the slot comes after the request ended. */
export class BodyTicket implements BodyGate {
  private held = false;
  private done = false;

  constructor(private readonly pool: BodySlots, private readonly req: IncomingMessage) {}

  get threshold(): number {
    return this.pool.threshold;
  }

  async enter(): Promise<boolean> {
    if (this.held) return true;
    if (this.done) return false;
    const ok = await this.pool.take(this.req);
    if (ok && this.done) { this.pool.give(); return false; }
    this.held = ok;
    return ok;
  }

  release(): void {
    this.done = true;
    if (this.held) { this.held = false; this.pool.give(); }
  }
}

/** The pool of this Node-RED (one per process: every asset-event-in shares it). */
export const largeBodies = new BodySlots();
