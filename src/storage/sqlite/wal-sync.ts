/**
 * Where the store's WAL fsync runs (docs/storage.md#durability): on the event loop while it is cheap,
 * on the libuv thread pool once it would stall request handling.
 *
 * Handing a sync to the thread pool costs CPU of its own (a pool thread woken, the completion posted
 * back to the event loop) and, because the event loop keeps committing meanwhile, smaller group
 * commits. Measured on a disk whose `fdatasync` takes about 0.3 ms: 12–15 µs more broker CPU per
 * push of one message than the same sync made inline, and on one taking about 1 ms a lower rate
 * too. On a disk whose sync takes several milliseconds the thread pool wins instead, since an
 * inline sync holds every other request for that long (README, Benchmarks). {@link SyncCost}
 * decides per commit from the syncs it has seen.
 */

/**
 * A sync estimated at or below this is made inline, ms. Measured on this machine's disk with
 * syncs of 0.4–1.6 ms (2026-12-02, alternating runs): a bound of 1 ms sent about a third of the
 * syncs to the thread pool, and both push 1/request (5,089–8,618 vs 8,217–9,948 req/s) and
 * pop+ack batch 1 (1,444–1,637 vs 1,253–1,435 µs per message) came out below the same build
 * syncing inside COMMIT; with 3 ms the syncs stay inline there and auto matched or beat it. The
 * thread pool's gain was measured on a disk taking about 5 ms per sync (README, Benchmarks).
 */
export const INLINE_SYNC_MAX_MS = 3;

/** Weight of the newest sample in the estimate (an exponentially weighted moving average). */
const WEIGHT = 0.2;

/**
 * A running estimate of how long one WAL fsync takes, in ms, and the choice it implies.
 *
 * The estimate starts above {@link INLINE_SYNC_MAX_MS}, so the first syncs of a process run on the
 * thread pool and measure the disk before any sync holds the event loop. One slow sample (say
 * 50 ms) lifts the estimate over the bound at once, so the next sync is off the event loop; a run of
 * fast samples brings it back (from 10 ms, about ten 0.3 ms syncs). A thread-pool sample is timed
 * from submission to completion, so a busy pool reads as a slow disk: the error is on the side of
 * keeping the event loop free.
 */
export class SyncCost {
  private estimateMs: number;

  /** @param initialMs the estimate before any sample, ms (default: 2 × {@link INLINE_SYNC_MAX_MS}) */
  constructor(initialMs = 2 * INLINE_SYNC_MAX_MS) {
    this.estimateMs = initialMs;
  }

  /** Records one sync that took `ms`. A sample above the estimate replaces it (no lag toward slow). */
  note(ms: number): void {
    this.estimateMs = ms > this.estimateMs ? ms : this.estimateMs + WEIGHT * (ms - this.estimateMs);
  }

  /** True when the next sync should be made inline (on the event loop). */
  inline(): boolean {
    return this.estimateMs <= INLINE_SYNC_MAX_MS;
  }

  /** The current estimate, ms. */
  get ms(): number {
    return this.estimateMs;
  }
}
