/**
 * Duplicate filter kept in Redis, shared by every Node-RED copy behind a load balancer.
 *
 * Two steps per callback, each ONE command and so one round trip whatever the number of entries
 * (a script over all the entry keys; Redis runs a script atomically, so each key is checked and
 * set in one atomic step, and no other client runs in between):
 * 1. claim, per key: nothing there -> set it to our claim token with the lease as expiry: `new`.
 *    `d` -> emitted within the window: `duplicate`. Another token -> another copy claimed it and
 *    has not yet handed it to its flow: `busy`. The claim expires after the lease, so a copy killed
 *    between claim and emit blocks nothing for longer than the lease, and the server's retry emits
 *    it. A claim that timed out is released (a script deleting the keys that still hold our token,
 *    sent behind it on the same connection, so Redis runs it right after the claim).
 * 2. confirm, once the entries are handed to the flow: `SET key d PX window` per key.
 * A script instead of a pipeline of `SET key token NX PX lease GET`: the same atomic step per key,
 * but one command to encode and one reply to parse instead of one per entry (the client's cost per
 * command halved the entries/s of 100-entry callbacks), and any Redis from 2.6 on.
 * The keys of one node share a hash tag (`{node id}`), so a script's keys are in one cluster slot.
 */
import { createHash, randomBytes } from 'crypto';
import type { EntryFilter, Verdict } from './entry-filter';

/** Per key: 0 new (now claimed with ARGV[1] for ARGV[2] ms), 1 duplicate, 2 busy. */
const CLAIM = `local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if not v then redis.call('SET', k, ARGV[1], 'PX', ARGV[2]) out[i] = 0
  elseif v == 'd' then out[i] = 1
  else out[i] = 2 end
end
return out`;
/** Every key: emitted, remembered for ARGV[1] ms. */
const CONFIRM = `for _, k in ipairs(KEYS) do redis.call('SET', k, 'd', 'PX', ARGV[1]) end
return #KEYS`;
/** Deletes each key that still holds ARGV[1] (this filter's claim). */
const RELEASE = `for _, k in ipairs(KEYS) do if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k) end end
return 0`;

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const SCRIPTS = { claim: { source: CLAIM, sha: sha1(CLAIM) }, confirm: { source: CONFIRM, sha: sha1(CONFIRM) }, release: { source: RELEASE, sha: sha1(RELEASE) } };

/** The part of an ioredis client used here. */
export interface RedisLike {
  evalsha(sha: string, numKeys: number, ...args: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
  /** ioredis: 'ready' once connected; 'connecting', 'connect', 'reconnecting' on the way there. */
  status?: string;
  once?(event: 'ready', listener: () => void): unknown;
  removeListener?(event: 'ready', listener: () => void): unknown;
}

/** Connection states from which ioredis will soon be 'ready': worth waiting for within the timeout. */
const CONNECTING = new Set(['wait', 'connecting', 'connect', 'reconnecting']);

export interface RedisFilterOptions {
  /** Prepended to every key; include the node id so that two endpoints never share keys. */
  prefix: string;
  /** How long an emitted key is remembered, in ms (asset-event-in's duplicate window). */
  windowMs: number;
  /** How long a claim holds before it is emitted, in ms. */
  leaseMs: number;
  /** Most time one round trip may take before the callback is answered 503, in ms. */
  timeoutMs: number;
}

/** Thrown when Redis did not answer in time or answered with an error. */
export class FilterUnavailableError extends Error {}

export class RedisDuplicateFilter implements EntryFilter {
  /** This filter's claim value: tells our claims from other copies' ones when releasing. */
  private readonly token = 'p' + randomBytes(6).toString('hex');

  constructor(private readonly redis: RedisLike, private readonly options: RedisFilterOptions) {}

  /** The Redis key of an entry key: the prefix and a hash (entry keys can be long; hashes have one size). */
  redisKey(key: string): string {
    return this.options.prefix + createHash('sha1').update(key).digest('base64url');
  }

  async claim(keys: string[]): Promise<Verdict[]> {
    if (this.options.windowMs <= 0 || keys.length === 0) return keys.map(() => 'new');
    // The same entry twice in one callback: the second is a duplicate of the first (as in memory).
    const firstAt = new Map<string, number>();
    const sent: string[] = [];
    const sentFor: number[] = [];
    keys.forEach((key, i) => {
      if (firstAt.has(key)) return;
      firstAt.set(key, i);
      sentFor.push(i);
      sent.push(this.redisKey(key));
    });
    let reply: unknown;
    try {
      reply = await this.run(SCRIPTS.claim, sent, [this.token, String(Math.max(1, Math.round(this.options.leaseMs)))]);
    } catch (err) {
      // Nothing is emitted: let the claims that may still land go, or the retry would wait for the lease.
      this.run(SCRIPTS.release, sent, [this.token]).catch(() => undefined);
      throw err;
    }
    if (!Array.isArray(reply) || reply.length !== sent.length) throw new FilterUnavailableError('Redis: unexpected answer to the claim');
    const verdicts: Verdict[] = keys.map(() => 'duplicate');
    sentFor.forEach((index, n) => {
      const code = Number(reply[n]);
      verdicts[index] = code === 0 ? 'new' : code === 1 ? 'duplicate' : 'busy';
    });
    return verdicts;
  }

  async confirm(keys: string[]): Promise<void> {
    if (this.options.windowMs <= 0 || keys.length === 0) return;
    const unique = [...new Set(keys)].map((key) => this.redisKey(key));
    await this.run(SCRIPTS.confirm, unique, [String(Math.max(1, Math.round(this.options.windowMs)))]);
  }

  /**
   * Runs a script (EVALSHA; EVAL when Redis does not know it yet, e.g. after a restart) within the
   * timeout, waiting for a connection under way within it too.
   */
  private async run(script: { source: string; sha: string }, keys: string[], args: string[]): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    let onReady: (() => void) | undefined;
    const { timeoutMs } = this.options;
    const redis = this.redis;
    const call = async () => {
      try {
        return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!/^NOSCRIPT/.test((err as Error)?.message ?? '')) throw err;
        return redis.eval(script.source, keys.length, ...keys, ...args);
      }
    };
    let timedOut = false;
    try {
      const connected = redis.status && CONNECTING.has(redis.status) && redis.once
        ? new Promise<void>((resolve) => { onReady = resolve; redis.once!('ready', resolve); })
        : undefined;
      return await Promise.race([
        // Connected only after the timeout: too late, the callback was answered 503 already.
        connected ? connected.then(() => (timedOut ? undefined : call())) : call(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => { timedOut = true; reject(new FilterUnavailableError(`Redis did not answer within ${timeoutMs} ms`)); }, timeoutMs);
        })
      ]);
    } catch (err) {
      if (err instanceof FilterUnavailableError) throw err;
      throw new FilterUnavailableError(`Redis: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      if (timer) clearTimeout(timer);
      if (onReady && redis.removeListener) redis.removeListener('ready', onReady);
    }
  }
}
