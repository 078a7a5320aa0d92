/**
 * Per-tenant token buckets over messages (docs/ephemeral.md#common-rules): `rate` tokens per
 * second up to `burst`; a push takes one token per message or is refused whole.
 */

interface Bucket {
  tokens: number;
  at: number;
}

/** Token buckets by tenant. */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  /** @param rate tokens per second; @param burst bucket size */
  constructor(private readonly rate: number, private readonly burst: number) {}

  /**
   * Takes `n` tokens for `tenant` at `now` (epoch ms).
   * @returns 0 when taken, else the ms until `n` tokens would be there (nothing taken)
   */
  take(tenant: string, n: number, now: number): number {
    let b = this.buckets.get(tenant);
    if (!b) this.buckets.set(tenant, (b = { tokens: this.burst, at: now }));
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) * this.rate) / 1000);
    b.at = now;
    if (b.tokens >= n) {
      b.tokens -= n;
      return 0;
    }
    return Math.ceil(((Math.min(n, this.burst) - b.tokens) * 1000) / this.rate) || 1;
  }
}
