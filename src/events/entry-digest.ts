/**
 * The digest a duplicate filter keeps instead of an entry key: SHA-1, 20 bytes. An entry key holds
 * every field of the entry, so its length is the caller's choice (one 10 MB entry, one 10 MB key);
 * a filter that kept keys whole would let callers fill its memory. Used by the in-memory filter and
 * the Redis filter alike.
 */
import * as crypto from 'crypto';

export const DIGEST_BYTES = 20;

/** `crypto.hash` (Node 20.12+) is about twice as fast for short strings as createHash. */
const fastHash = (crypto as unknown as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;

/** SHA-1 of a key as 20 bytes. */
export const entryDigest: (key: string) => Buffer = fastHash
  ? (key) => fastHash('sha1', key, 'buffer')
  : (key) => crypto.createHash('sha1').update(key).digest();

/** Every this many items a loop over one callback's entries lets the event loop run (timers, other requests). */
export const YIELD_EVERY = 500;

/** Lets the event loop run I/O and timers before the rest of a long loop. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
