/**
 * One session shared by several copies of the client (Node-RED copies behind a load balancer):
 * the server allows one active session per named user, so copies that each log in as the same
 * user end each other's sessions (a login storm). With a shared store:
 * - the current Cookie header lives in the store;
 * - one login at a time across all copies: a lock with a lease; the copy holding it logs in and
 *   publishes the cookie; the others wait for it and use it;
 * - a copy whose 401 came with a cookie other than the store's (older: the store holds the newest)
 *   takes the store's instead of logging in.
 * The store is an interface (no Redis here); nodes/asset-redis/session.ts implements it.
 */

/** What the store answers to a copy whose request met a 401. */
export type LockStep =
  /** The store holds another (newer) cookie: use it. */
  | { kind: 'newer'; header: string }
  /** This copy holds the login lock (token): log in, then publish. */
  | { kind: 'locked'; token: string }
  /** Another copy holds the lock: wait and ask again. */
  | { kind: 'busy' };

export interface SharedSessionStore {
  /**
   * One atomic step: when the store's cookie is set and differs from `stale` (the Cookie header
   * that met the 401; undefined for none), answers it; else takes the lock for `leaseMs` if free.
   */
  lockOrNewer(stale: string | undefined, leaseMs: number): Promise<LockStep>;
  /** Stores the cookie and lets the lock go, if `token` still holds it (false: the lease ended first). */
  publish(token: string, header: string): Promise<boolean>;
  /** Lets the lock go if `token` still holds it (the login failed). */
  release(token: string): Promise<void>;
}

/** A session shared with other copies through a store; `onProblem` hears the store's failures. */
export interface SharedSessionOption {
  store: SharedSessionStore;
  onProblem?: (err: unknown) => void;
}

/** How often a waiting copy asks the store again. */
export const SHARED_POLL_MS = 50;

/**
 * The lock's lease for a login whose requests each may take `timeoutMs` (0 = no timeout): a
 * session page and the login request, plus a margin. A copy killed while it holds the lock blocks
 * the others' logins at most this long.
 */
export function loginLeaseMs(timeoutMs: number): number {
  return timeoutMs > 0 ? Math.min(2 * timeoutMs + 1000, 120000) : 60000;
}

/** After the lease and this much more, a waiting copy stops waiting for the holder and logs in by itself. */
const GIVE_UP_MARGIN_MS = 2000;

/**
 * Longest a call may wait for a shared renewal with nothing received: another copy's lock may be
 * held by a copy that died, so the wait is up to the lease and the margin, then a login of its own
 * (one `timeoutMs` deadline). A call's inactivity timeout alone would fail the calls of every copy
 * waiting for a dead holder.
 */
export function sharedLoginWaitMs(timeoutMs: number): number {
  return loginLeaseMs(timeoutMs) + GIVE_UP_MARGIN_MS + timeoutMs;
}

export interface SharedRenewSteps {
  /** Logs in locally; resolves with the new Cookie header, rejects as the local login does. */
  login(): Promise<string>;
  /** Uses a cookie another copy published. */
  adopt(header: string): void;
  /** The store failed (down, slow, refused): said once per problem by the caller; no secret in it. */
  storeProblem(err: unknown): void;
}

/**
 * Makes sure a cookie newer than `stale` is in use, through the store (see the file comment).
 * When the store fails, this copy logs in by itself: a session is worth more than the sharing.
 */
export async function renewShared(store: SharedSessionStore, stale: string | undefined, leaseMs: number, steps: SharedRenewSteps): Promise<void> {
  // A holder killed with the lock blocks for at most the lease: after lease + a margin, log in alone.
  const giveUpAt = Date.now() + leaseMs + GIVE_UP_MARGIN_MS;
  for (;;) {
    let step: LockStep;
    try {
      step = await store.lockOrNewer(stale, leaseMs);
    } catch (err) {
      steps.storeProblem(err);
      await steps.login();
      return;
    }
    if (step.kind === 'newer') { steps.adopt(step.header); return; }
    if (step.kind === 'locked') {
      let header: string;
      try {
        header = await steps.login();
      } catch (err) {
        await store.release(step.token).catch((problem: unknown) => steps.storeProblem(problem));
        throw err;
      }
      await store.publish(step.token, header).catch((problem: unknown) => { steps.storeProblem(problem); });
      return;
    }
    if (Date.now() > giveUpAt) {
      await steps.login();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, SHARED_POLL_MS));
  }
}
