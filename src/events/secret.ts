import { createHash, timingSafeEqual } from 'crypto';

/**
 * Constant-time comparison of a received shared secret with the expected one.
 * Both sides are hashed first so that the comparison takes the same time
 * whatever the lengths (timingSafeEqual needs equal lengths).
 */
export function secretMatches(received: string | string[] | undefined, expected: string): boolean {
  if (typeof received !== 'string') return false; // missing, or sent twice
  const a = createHash('sha256').update(received, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/**
 * Why `secret` cannot travel as typed in an HTTP header value (undefined: it can). HTTP drops spaces
 * at a value's ends and cannot carry a line break; a non-ASCII character arrives as whatever bytes
 * the sender encodes it in. A secret that cannot arrive as typed refuses every callback.
 */
export function secretValueRule(secret: string): string | undefined {
  return /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(secret) ? undefined
    : 'must be visible ASCII characters (spaces only between them): a header drops spaces at its ends, cannot carry a line break, and other characters arrive changed';
}
