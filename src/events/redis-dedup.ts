/**
 * Duplicate filter kept in Redis, shared by every Node-RED copy behind a load balancer.
 *
 * Two steps per callback, each ONE pipelined round trip whatever the number of entries:
 * 1. claim: `SET <key> p<token> PX <lease> NX GET` per entry. Nothing there: the key is ours (`new`).
 *    `d`: emitted within the window (`duplicate`). `p...`: another copy claimed it and has not yet
 *    handed it to its flow (`busy`). A claim that timed out is released (a script deleting the keys
 *    still holding our token, sent behind it on the same connection, so it runs right after it). The claim expires after the lease, so a copy killed between
 *    claim and emit blocks nothing for longer than the lease, and the server's retry emits it.
 * 2. confirm, once the entries are handed to the flow: `SET <key> d PX <window>`.
 * SET with both NX and GET needs Redis 7.0 or later (or Valkey).
 */
import { createHash, randomBytes } from 'crypto';
import type { EntryFilter, Verdict } from './entry-filter';

const DONE = 'd';
/** Deletes each key in KEYS that still holds ARGV[1] (this filter's claim). */
const RELEASE = "for _, k in ipairs(KEYS) do if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k) end end return 0";

/** The part of an ioredis client used here (`redis.pipeline().set(...).exec()`). */
export interface RedisPipelineLike {
  set(...args: Array<string | number>): RedisPipelineLike;
  exec(): Promise<Array<[Error | null, unknown]> | null>;
}
export interface RedisLike {
  pipeline(): RedisPipelineLike;
  eval?(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
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
    const pipeline = this.redis.pipeline();
    const firstAt = new Map<string, number>();
    const sentFor: number[] = [];
    keys.forEach((key, i) => {
      // The same entry twice in one callback: the second is a duplicate of the first (as in memory).
      if (firstAt.has(key)) return;
      firstAt.set(key, i);
      sentFor.push(i);
      pipeline.set(this.redisKey(key), this.token, 'PX', Math.max(1, Math.round(this.options.leaseMs)), 'NX', 'GET');
    });
    let replies: Array<[Error | null, unknown]>;
    try {
      replies = await this.run(pipeline);
    } catch (err) {
      // Nothing is emitted: let the claims that may still land go, or the retry would wait for the lease.
      this.release(sentFor.map((i) => this.redisKey(keys[i])));
      throw err;
    }
    const verdicts: Verdict[] = keys.map(() => 'duplicate');
    sentFor.forEach((index, n) => {
      const [err, value] = replies[n] ?? [new Error('no reply'), undefined];
      if (err) throw new FilterUnavailableError(`Redis: ${err.message}`);
      verdicts[index] = value === null ? 'new' : value === DONE ? 'duplicate' : 'busy';
    });
    return verdicts;
  }

  async confirm(keys: string[]): Promise<void> {
    if (this.options.windowMs <= 0 || keys.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const key of new Set(keys)) pipeline.set(this.redisKey(key), DONE, 'PX', Math.max(1, Math.round(this.options.windowMs)));
    const replies = await this.run(pipeline);
    const failed = replies.find(([err]) => err);
    if (failed) throw new FilterUnavailableError(`Redis: ${(failed[0] as Error).message}`);
  }

  /** Best effort: a release that fails leaves the claims to expire after the lease. */
  private release(redisKeys: string[]): void {
    if (!this.redis.eval || redisKeys.length === 0) return;
    this.redis.eval(RELEASE, redisKeys.length, ...redisKeys, this.token).catch(() => undefined);
  }

  /** Executes a pipeline within the timeout (waiting for a connection under way within it too). */
  private async run(pipeline: RedisPipelineLike): Promise<Array<[Error | null, unknown]>> {
    let timer: NodeJS.Timeout | undefined;
    let onReady: (() => void) | undefined;
    const { timeoutMs } = this.options;
    const redis = this.redis;
    try {
      const connected = redis.status && CONNECTING.has(redis.status) && redis.once
        ? new Promise<void>((resolve) => { onReady = resolve; redis.once!('ready', resolve); })
        : undefined;
      const replies = await Promise.race([
        connected ? connected.then(() => pipeline.exec()) : pipeline.exec(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new FilterUnavailableError(`Redis did not answer within ${timeoutMs} ms`)), timeoutMs);
        })
      ]);
      if (!replies) throw new FilterUnavailableError('Redis: the pipeline was discarded');
      return replies;
    } catch (err) {
      if (err instanceof FilterUnavailableError) throw err;
      throw new FilterUnavailableError(`Redis: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      if (timer) clearTimeout(timer);
      if (onReady && redis.removeListener) redis.removeListener('ready', onReady);
    }
  }
}
