/** Constant-time comparison of shared secrets (tokens), docs/proxy.md#secrets. */
import { timingSafeEqual } from 'node:crypto';

/** True when `given` equals `expected`; constant time in the content (the length may leak). */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
