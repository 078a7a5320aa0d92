/**
 * Lease expiry (docs/storage.md#in-memory-indexes): one entry per leased cursor in the broker's due-time scheduler,
 * never a periodic scan. Ending a lease (ack, release, nack, DLQ hand-off, seek, group delete)
 * cancels its entry at once and extending it moves the same entry, so the scheduler holds exactly
 * the live leases. An expired lease makes its partition ready again; expiry charges no retry.
 */
import type { Scheduler, SchedulerLane } from '../../util/scheduler.js';
import type { CursorState, GroupState, PartitionState } from './state.js';

/** Calls back when a cursor's lease reaches its expiry; keyed by the cursor (one live lease each). */
export class LeaseExpiry {
  private readonly lane: SchedulerLane<CursorState>;

  constructor(scheduler: Scheduler, private readonly onExpire: (g: GroupState, p: PartitionState, leaseId: string) => void) {
    this.lane = scheduler.lane<CursorState>('lease-expiry');
  }

  /**
   * Calls `onExpire(g, p, leaseId)` at `at` (epoch ms), replacing whatever `c` had scheduled (an
   * extension moves the entry; the callback re-checks that the lease is still `leaseId`).
   */
  schedule(at: number, g: GroupState, p: PartitionState, c: CursorState, leaseId: string): void {
    this.lane.schedule(c, at, () => this.onExpire(g, p, leaseId));
  }

  /** Drops `c`'s expiry (its lease ended). */
  cancel(c: CursorState): void {
    this.lane.cancel(c);
  }

  /** Scheduled expiries: the live leases, one per leased cursor. */
  get size(): number {
    return this.lane.size;
  }

  /** Drops every expiry (index rebuild, shutdown). */
  clear(): void {
    this.lane.clear();
  }
}
