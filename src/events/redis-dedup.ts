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
 * 2. confirm, once the entries are handed to the flow: `SET key d PX window` per new key.
 * A script instead of a pipeline of `SET key token NX PX lease GET`: the same atomic step per key,
 * but one command to encode and one reply to parse instead of one per entry (the client's cost per
 * command halved the entries/s of 100-entry callbacks), and any Redis from 2.6.12 on. The keys go as
 * one argument, 20-byte SHA-1 digests end to end (the client's cost per argument counted too); the
 * key prefix, which carries the node id as a cluster hash tag, is the script's one declared key.
 */
import * as crypto from 'crypto';
import type { Claim, EntryFilter, Verdict } from './entry-filter';

const DIGEST = 20;

/**
 * KEYS[1] prefix, ARGV[1] packed digests, ARGV[2] token, ARGV[3] lease ms. One char per key: 0 new
 * (now claimed), 1 duplicate, 2 busy. Redis 7 does it in one call per key (SET NX GET), older ones in two.
 */
const CLAIM = `local p, blob, out = KEYS[1], ARGV[1], {}
local setGet = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
for i = 1, #blob / ${DIGEST} do
  local k = p .. string.sub(blob, (i - 1) * ${DIGEST} + 1, i * ${DIGEST})
  local v
  if setGet then v = redis.call('SET', k, ARGV[2], 'PX', ARGV[3], 'NX', 'GET')
  else
    v = redis.call('GET', k)
    if not v then redis.call('SET', k, ARGV[2], 'PX', ARGV[3]) end
  end
  if not v then out[i] = '0'
  elseif v == 'd' then out[i] = '1'
  else out[i] = '2' end
end
return table.concat(out)`;
/** KEYS[1] prefix, ARGV[1] packed digests, ARGV[2] window ms: each key emitted, remembered for the window. */
const CONFIRM = `local p, blob = KEYS[1], ARGV[1]
for i = 1, #blob / ${DIGEST} do
  redis.call('SET', p .. string.sub(blob, (i - 1) * ${DIGEST} + 1, i * ${DIGEST}), 'd', 'PX', ARGV[2])
end
return 0`;
/** KEYS[1] prefix, ARGV[1] packed digests, ARGV[2] token: deletes each key that still holds the token. */
const RELEASE = `local p, blob = KEYS[1], ARGV[1]
for i = 1, #blob / ${DIGEST} do
  local k = p .. string.sub(blob, (i - 1) * ${DIGEST} + 1, i * ${DIGEST})
  if redis.call('GET', k) == ARGV[2] then redis.call('DEL', k) end
end
return 0`;

/** KEYS[1] prefix, ARGV[1] packed digests: deletes each key (confirmed by this copy, then undone). */
const FORGET = `local p, blob = KEYS[1], ARGV[1]
for i = 1, #blob / ${DIGEST} do
  redis.call('DEL', p .. string.sub(blob, (i - 1) * ${DIGEST} + 1, i * ${DIGEST}))
end
return 0`;

/** Exported for the tests (the pre-7 branch of CLAIM is run by forcing the version to 0). */
export const SCRIPTS = { claim: CLAIM, confirm: CONFIRM, release: RELEASE, forget: FORGET };

/** SHA-1 of a string as 20 bytes; `crypto.hash` (Node 20.12+) is about twice as fast for short strings. */
const fastHash = (crypto as unknown as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;
const digest: (text: string) => Buffer = fastHash
  ? (text) => fastHash('sha1', text, 'buffer')
  : (text) => crypto.createHash('sha1').update(text).digest();

/** The part of an ioredis client used here. */
export interface RedisLike {
  eval(script: string, numKeys: number, ...args: Array<string | Buffer>): Promise<unknown>;
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

const nothingToConfirm = async (): Promise<void> => undefined;

export class RedisDuplicateFilter implements EntryFilter {
  /** This filter's claim value: tells our claims from other copies' ones when releasing. */
  private readonly token = 'p' + crypto.randomBytes(6).toString('hex');

  constructor(private readonly redis: RedisLike, private readonly options: RedisFilterOptions) {}

  /** The Redis key of an entry key: the prefix and the entry key's SHA-1 (20 bytes; entry keys can be long). */
  redisKey(key: string): Buffer {
    return Buffer.concat([Buffer.from(this.options.prefix), digest(key)]);
  }

  async claim(keys: string[]): Promise<Claim> {
    if (this.options.windowMs <= 0 || keys.length === 0) return { verdicts: keys.map(() => 'new'), confirm: nothingToConfirm, undo: nothingToConfirm };
    // The same entry twice in one callback: the second is a duplicate of the first (as in memory).
    const seen = new Set<string>();
    const sentFor: number[] = [];
    const digests: Buffer[] = [];
    keys.forEach((key, i) => {
      if (seen.has(key)) return;
      seen.add(key);
      sentFor.push(i);
      digests.push(digest(key));
    });
    const packed = Buffer.concat(digests);
    let reply: unknown;
    try {
      reply = await this.run(SCRIPTS.claim, [packed, this.token, String(Math.max(1, Math.round(this.options.leaseMs)))]);
    } catch (err) {
      // Nothing is emitted: let the claims that may still land go, or the retry would wait for the lease.
      this.run(SCRIPTS.release, [packed, this.token]).catch(() => undefined);
      throw err;
    }
    const codes = typeof reply === 'string' ? reply : Buffer.isBuffer(reply) ? reply.toString('latin1') : '';
    if (codes.length !== sentFor.length) throw new FilterUnavailableError('Redis: unexpected answer to the claim');
    const verdicts: Verdict[] = keys.map(() => 'duplicate');
    const claimed: Buffer[] = [];
    sentFor.forEach((index, n) => {
      const code = codes.charCodeAt(n);
      if (code === 48) { verdicts[index] = 'new'; claimed.push(digests[n]); } else if (code !== 49) verdicts[index] = 'busy';
    });
    if (!claimed.length) return { verdicts, confirm: nothingToConfirm, undo: nothingToConfirm };
    const window = String(Math.max(1, Math.round(this.options.windowMs)));
    const blob = Buffer.concat(claimed);
    return {
      verdicts,
      confirm: async () => { await this.run(SCRIPTS.confirm, [blob, window]); },
      undo: async () => { await this.run(SCRIPTS.forget, [blob]); }
    };
  }

  /**
   * Runs a script within the timeout, waiting for a connection under way within it too. The prefix
   * is its one key. EVAL, not EVALSHA with EVAL after a NOSCRIPT answer: that EVAL would go out
   * after commands sent meanwhile (a confirmation behind a later claim); Redis caches the
   * compiled script either way, and the text is a few hundred bytes.
   */
  private async run(source: string, args: Array<string | Buffer>): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    let onReady: (() => void) | undefined;
    const { timeoutMs, prefix } = this.options;
    const redis = this.redis;
    const call = () => redis.eval(source, 1, prefix, ...args);
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
