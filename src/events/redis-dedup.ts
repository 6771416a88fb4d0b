/**
 * Duplicate filter kept in Redis, shared by every Node-RED copy behind a load balancer.
 *
 * Each callback's new entries form a batch with an id of its own. Two steps per callback, each ONE
 * command and so one round trip whatever the number of entries (a script; Redis runs a script
 * atomically, so no other client runs in between):
 * 1. claim, per entry key: nothing there -> the key is set to the batch id (`new`). A key that
 *    names another batch is judged by that batch's marker: `d` -> emitted within the window
 *    (`duplicate`); `c` -> claimed by a copy that has not yet handed it to its flow (`busy`);
 *    gone -> that copy died, closed or timed out before emitting: the key is taken over (`new`).
 *    The batch's marker is set to `c` with the lease as expiry, so a copy killed between claim
 *    and emit blocks nothing for longer than the lease, and the server's retry emits it.
 * 2. confirm, before the entries are handed to the flow (its reply awaited): the marker becomes `d` for the window.
 *    A confirmation without an answer may still have landed: the entries are handed on anyway
 *    (undone, they could be dropped as duplicates by the retry: lost); only a lapsed claim stops them.
 *    Undo (closed before the flow got them) and release (the claim timed out) delete the marker.
 * A long callback, handed to the flow in chunks, is claimed in groups ({@link RedisDuplicateFilter.claimGroups}):
 * still one claim script, but a batch (and marker) per group, each confirmed just before its chunk is
 * handed on. A copy killed between chunks has confirmed exactly the chunks its flow was handed; the
 * others lapse after the lease. Each confirmation checks that its marker is still `c` (a lapsed claim
 * may have been taken over: emitting it would be a second copy) and renews the later groups' leases,
 * so the lease bounds the time per chunk, not per callback.
 * One write per entry per callback (the claim) and two per callback (the marker, set and then
 * confirmed); undo and release delete one key whatever the batch size. An entry key lives for the
 * window (or the lease, if longer) from its claim, the confirmed marker for the window from the
 * confirmation: while the key lives past its marker (a lease longer than the window), the key is
 * free to be claimed again, as the window has passed.
 * A script instead of a pipeline of `SET key id NX PX ttl GET`: one command to encode and one reply
 * to parse instead of one per entry (the client's cost per command halved the entries/s of
 * 100-entry callbacks), and any Redis from 2.6.12 on. The keys go as one argument, 20-byte SHA-1
 * digests end to end (the client's cost per argument counted too); the key prefix, which carries
 * the node id as a cluster hash tag, is the script's one declared key.
 */
import * as crypto from 'crypto';
import { DIGEST_BYTES as DIGEST, entryDigest as digest } from './entry-digest';
import type { Claim, EntryFilter, Verdict } from './entry-filter';

/** The key of a batch's marker, after the prefix (entry keys are the prefix and 20 binary bytes). */
const MARKER = 'b:';

/**
 * KEYS[1] prefix, ARGV[1] packed digests, ARGV[2] batch ids (one per group, separated by spaces),
 * ARGV[3] lease ms, ARGV[4] entry key ttl ms, ARGV[5] where each group ends (digest counts separated
 * by commas; absent: one group). One char per key: 0 new (now claimed), 1 duplicate, 2 busy. Redis 7
 * does it in one call per new key (SET NX GET), older ones in two; a key that names another batch
 * costs one GET per batch.
 */
const CLAIM = `local p, blob, lease, ttl = KEYS[1], ARGV[1], ARGV[3], ARGV[4]
local setGet = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
local ids, ends = {}, {}
for id in string.gmatch(ARGV[2], '%S+') do ids[#ids + 1] = id end
for e in string.gmatch(ARGV[5] or '', '%d+') do ends[#ends + 1] = tonumber(e) end
if #ends == 0 then ends[1] = #blob / ${DIGEST} end
local markers, out, claimed, g = {}, {}, {}, 1
for i = 1, #blob / ${DIGEST} do
  while i > ends[g] do g = g + 1 end
  local batch = ids[g]
  local k = p .. string.sub(blob, (i - 1) * ${DIGEST} + 1, i * ${DIGEST})
  local owner
  if setGet then owner = redis.call('SET', k, batch, 'PX', ttl, 'NX', 'GET')
  else
    owner = redis.call('GET', k)
    if not owner then redis.call('SET', k, batch, 'PX', ttl) end
  end
  local state = false
  if owner then
    state = markers[owner]
    if state == nil then state = redis.call('GET', p .. '${MARKER}' .. owner) or false; markers[owner] = state end
  end
  if state == 'd' then out[i] = '1'
  elseif state then out[i] = '2'
  else
    if owner then redis.call('SET', k, batch, 'PX', ttl) end
    out[i] = '0'
    claimed[g] = true
  end
end
for n, id in ipairs(ids) do
  if claimed[n] then redis.call('SET', p .. '${MARKER}' .. id, 'c', 'PX', lease) end
end
return table.concat(out)`;
/**
 * KEYS[1] prefix, ARGV[1] batch id, ARGV[2] window ms, ARGV[3] lease ms, ARGV[4..] the later groups'
 * batch ids. 1: the batch was emitted, remembered for the window; the later groups' claims hold for
 * another lease. 0: the claim had lapsed (its marker gone): nothing changed, the entries must not go out.
 */
const CONFIRM = `local m = KEYS[1] .. '${MARKER}'
if redis.call('GET', m .. ARGV[1]) ~= 'c' then return 0 end
redis.call('SET', m .. ARGV[1], 'd', 'PX', ARGV[2])
for i = 4, #ARGV do redis.call('PEXPIRE', m .. ARGV[i], ARGV[3]) end
return 1`;
/** KEYS[1] prefix, ARGV[1..] batch ids: the batches were not emitted; their keys may be claimed again at once. */
const DROP = `for i = 1, #ARGV do redis.call('DEL', KEYS[1] .. '${MARKER}' .. ARGV[i]) end
return 1`;

/** Exported for the tests (the pre-7 branch of CLAIM is run by forcing the version to 0). */
export const SCRIPTS = { claim: CLAIM, confirm: CONFIRM, drop: DROP };

/** The part of an ioredis client used here. */
export interface RedisLike {
  eval(script: string, numKeys: number, ...args: Array<string | Buffer>): Promise<unknown>;
  /**
   * Optional: DEL sent at once, outside the client's automatic pipelining (asset-redis excludes it:
   * ioredis holds a pipeline until the one in flight is answered, so a deletion queued there behind
   * an unanswered claim could be lost with the connection while the claim still lands).
   */
  del?(...keys: Array<string | Buffer>): Promise<unknown>;
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

/**
 * Thrown by a confirmation that came after its claim's lease (Redis answered: nothing changed): the
 * entries may be another copy's now and must not be handed on.
 */
export class ClaimLapsedError extends FilterUnavailableError {}

const nothingToConfirm = async (): Promise<void> => undefined;

export class RedisDuplicateFilter implements EntryFilter {
  /** Tells this filter's batch ids from other copies' ones (and from this copy's before a restart). */
  private readonly token = crypto.randomBytes(6).toString('hex');
  private batches = 0;

  constructor(private readonly redis: RedisLike, private readonly options: RedisFilterOptions) {}

  /** The Redis key of an entry key: the prefix and the entry key's SHA-1 (20 bytes; entry keys can be long). */
  redisKey(key: string): Buffer {
    return Buffer.concat([Buffer.from(this.options.prefix), digest(key)]);
  }

  async claim(keys: string[]): Promise<Claim> {
    return (await this.claimGroups([keys]))[0];
  }

  /** One claim script for all groups, a batch per group (see the file comment). */
  async claimGroups(groups: string[][]): Promise<Claim[]> {
    const total = groups.reduce((n, keys) => n + keys.length, 0);
    if (this.options.windowMs <= 0 || total === 0) return groups.map((keys) => ({ verdicts: keys.map(() => 'new'), confirm: nothingToConfirm, undo: nothingToConfirm }));
    // The same entry twice in one callback: the second is a duplicate of the first (as in memory).
    const seen = new Set<string>();
    const sentFor: Array<[number, number]> = [];
    const digests: Buffer[] = [];
    const ends: number[] = [];
    groups.forEach((keys, g) => {
      keys.forEach((key, i) => {
        if (seen.has(key)) return;
        seen.add(key);
        sentFor.push([g, i]);
        digests.push(digest(key));
      });
      ends.push(digests.length);
    });
    const { leaseMs, windowMs } = this.options;
    const batches = groups.map(() => `${this.token}.${(this.batches++).toString(36)}`);
    const lease = String(Math.max(1, Math.round(leaseMs)));
    const window = String(Math.max(1, Math.round(windowMs)));
    const entryTtl = String(Math.max(1, Math.round(Math.max(windowMs, leaseMs))));
    const drop = async (ids: string[]) => { await this.run(SCRIPTS.drop, ids); };
    let reply: unknown;
    try {
      reply = await this.run(SCRIPTS.claim, [Buffer.concat(digests), batches.join(' '), lease, entryTtl, ends.join(',')]);
    } catch (err) {
      // Nothing is emitted: let a claim that may still land go, or the retry would wait for the lease.
      // Twice: queued behind the claim (should the claim not be written yet), and at once on the
      // socket (written behind a claim that is, and not held back until Redis answers it).
      this.release(batches);
      throw err;
    }
    const codes = typeof reply === 'string' ? reply : Buffer.isBuffer(reply) ? reply.toString('latin1') : '';
    if (codes.length !== sentFor.length) {
      drop(batches).catch(() => undefined);
      throw new FilterUnavailableError('Redis: unexpected answer to the claim');
    }
    const verdicts: Verdict[][] = groups.map((keys) => keys.map(() => 'duplicate'));
    const claimed = groups.map(() => false);
    sentFor.forEach(([g, i], n) => {
      const code = codes.charCodeAt(n);
      if (code === 48) { verdicts[g][i] = 'new'; claimed[g] = true; } else if (code !== 49) verdicts[g][i] = 'busy';
    });
    return groups.map((_keys, g) => {
      if (!claimed[g]) return { verdicts: verdicts[g], confirm: nothingToConfirm, undo: nothingToConfirm };
      const batch = batches[g];
      const later = batches.filter((_id, n) => n > g && claimed[n]);
      const confirm = async () => {
        // A failure (no answer in time, connection lost) leaves the outcome unknown: the
        // confirmation may have landed. Rejects with FilterUnavailableError; the caller hands the
        // entries on anyway (see entry-filter.ts). A lapsed claim is a known outcome: nothing changed.
        const answer = await this.run(SCRIPTS.confirm, [batch, window, lease, ...later]);
        if (Number(answer) !== 1) throw new ClaimLapsedError(`Redis: the claim lapsed (lease ${lease} ms) before it was confirmed`);
      };
      return { verdicts: verdicts[g], confirm, undo: () => drop([batch]) };
    });
  }

  /** Deletes batch markers twice: queued behind what is in flight, and at once outside the pipelining (see RedisLike.del). */
  private release(batches: string[]): void {
    this.run(SCRIPTS.drop, batches).catch(() => undefined);
    this.redis.del?.(...batches.map((batch) => `${this.options.prefix}${MARKER}${batch}`)).catch(() => undefined);
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
