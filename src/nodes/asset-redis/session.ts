/**
 * The shared session's store in Redis (api/shared-session.ts), on an asset-redis node's
 * connection. Two keys per server user, with one cluster hash tag:
 * - `<prefix>session:{<tag>}` holds the Cookie header and nothing else (a secret: protect Redis
 *   with its password and TLS); it lives for a day after the last login, then the next 401 logs in;
 * - `<prefix>session:{<tag>}:lock`, a random token with the login's lease.
 * `<tag>` is a SHA-256 of the base URL and the user name (the password is never in Redis), so every
 * asset-server node of every copy that logs in as that user on that server shares one session.
 * Each step is one script: Redis runs it atomically, so two copies never both take the lock.
 */
import { createHash, randomBytes } from 'crypto';
import type { LockStep, SharedSessionStore } from '../../api/shared-session';
import type { RedisLike } from '../../events';

/** How long a published cookie stays in Redis without a newer login (ms). */
const COOKIE_TTL_MS = 24 * 3600 * 1000;

/** KEYS[1] cookie, KEYS[2] lock; ARGV[1] the stale header ('' for none), ARGV[2] token, ARGV[3] lease ms. */
const LOCK_OR_NEWER = `local c = redis.call('GET', KEYS[1])
if c and c ~= ARGV[1] then return {'newer', c} end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {'locked'} end
return {'busy'}`;
/** KEYS[1] cookie, KEYS[2] lock; ARGV[1] token, ARGV[2] header, ARGV[3] ttl ms. Only the lock's holder publishes. */
const PUBLISH = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1`;
/** KEYS[1] lock; ARGV[1] token. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

export const SESSION_SCRIPTS = { lockOrNewer: LOCK_OR_NEWER, publish: PUBLISH, release: RELEASE };

/** The cookie key for a server user (the lock is this and `:lock`). */
export function sessionKey(prefix: string, baseUrl: string, username: string): string {
  const tag = createHash('sha256').update(`${baseUrl.replace(/\/+$/, '')}\n${username}`).digest('hex').slice(0, 32);
  return `${prefix}session:{${tag}}`;
}

/** Thrown when Redis did not answer in time or answered with an error (never holds a cookie). */
export class SessionStoreError extends Error {}

export class RedisSessionStore implements SharedSessionStore {
  private readonly lockKey: string;

  constructor(private readonly redis: RedisLike, private readonly cookieKey: string, private readonly timeoutMs: number) {
    this.lockKey = `${cookieKey}:lock`;
  }

  async lockOrNewer(stale: string | undefined, leaseMs: number): Promise<LockStep> {
    const token = randomBytes(12).toString('hex');
    const reply = await this.run(LOCK_OR_NEWER, [this.cookieKey, this.lockKey], [stale ?? '', token, String(Math.max(1, Math.round(leaseMs)))]);
    const [kind, value] = Array.isArray(reply) ? reply.map((part) => (Buffer.isBuffer(part) ? part.toString('latin1') : String(part))) : [];
    if (kind === 'newer' && value) return { kind: 'newer', header: value };
    if (kind === 'locked') return { kind: 'locked', token };
    if (kind === 'busy') return { kind: 'busy' };
    throw new SessionStoreError('Redis: unexpected answer to the session lock');
  }

  async publish(token: string, header: string): Promise<boolean> {
    return Number(await this.run(PUBLISH, [this.cookieKey, this.lockKey], [token, header, String(COOKIE_TTL_MS)])) === 1;
  }

  async release(token: string): Promise<void> {
    await this.run(RELEASE, [this.lockKey], [token]);
  }

  /** One script within the timeout, waiting within it for a connection under way. */
  private async run(script: string, keys: string[], args: string[]): Promise<unknown> {
    const redis = this.redis;
    let timer: NodeJS.Timeout | undefined;
    let onReady: (() => void) | undefined;
    try {
      const connecting = redis.status !== undefined && redis.status !== 'ready' && redis.status !== 'end' && redis.once;
      const ready = connecting ? new Promise<void>((resolve) => { onReady = resolve; redis.once!('ready', resolve); }) : Promise.resolve();
      return await Promise.race([
        ready.then(() => redis.eval(script, keys.length, ...keys, ...args)),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new SessionStoreError(`Redis did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
        })
      ]);
    } catch (err) {
      if (err instanceof SessionStoreError) throw err;
      throw new SessionStoreError(`Redis: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      if (timer) clearTimeout(timer);
      if (onReady && redis.removeListener) redis.removeListener('ready', onReady);
    }
  }
}
