/**
 * The node-to-node token check (`x-queen-raft-token`, docs/cluster.md#the-node-token): compared in
 * constant time on SHA-256 digests of equal length, so neither the content nor the length of the
 * configured token leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The request header that carries the token. */
export const RAFT_TOKEN_HEADER = 'x-queen-raft-token';

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/**
 * Builds the check for a configured token.
 * @param expected `QUEEN_RAFT_TOKEN`; undefined = unset, every caller accepted (docs/cluster.md#the-node-token)
 * @returns a function of the header value(s) as Node parsed them: true when accepted
 */
export function raftTokenCheck(expected: string | undefined): (given: string | string[] | undefined) => boolean {
  if (expected === undefined) return () => true;
  const want = digest(expected);
  return (given) => {
    if (typeof given !== 'string') return false; // missing, or sent twice
    return timingSafeEqual(digest(given), want);
  };
}
