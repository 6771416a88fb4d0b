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
