/**
 * Lease expiry (DESIGN.md §2): a min-heap keyed by expiry with a single timer for the earliest,
 * never a periodic scan. An expired lease makes its partition ready again; expiry charges no
 * retry (spec §2.2).
 */
import { MinHeap } from '../util/heap.js';
import type { GroupState, PartitionState } from './state.js';

interface Entry {
  group: GroupState;
  partition: PartitionState;
  leaseId: string;
}

/** Fires a callback when each scheduled lease expiry (epoch ms) is reached; one timer for the earliest. */
export class LeaseClock {
  private readonly heap = new MinHeap<Entry>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(private readonly onExpire: (g: GroupState, p: PartitionState, leaseId: string) => void) {}

  /** Calls `onExpire` at `at` (epoch ms) unless the lease has moved on by then (checked by the callback). */
  schedule(at: number, group: GroupState, partition: PartitionState, leaseId: string): void {
    this.heap.push(at, { group, partition, leaseId });
    this.arm();
  }

  /** Number of scheduled expiries (stale ones included until they fire). */
  get size(): number {
    return this.heap.size;
  }

  clear(): void {
    this.heap.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private arm(): void {
    const next = this.heap.peekAt();
    if (next === undefined) return;
    if (this.timer && this.timerAt <= next) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(() => this.fire(), Math.max(0, next - Date.now()) + 1);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    for (const e of this.heap.popDue(Date.now())) this.onExpire(e.group, e.partition, e.leaseId);
    this.arm();
  }
}
