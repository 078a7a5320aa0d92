/**
 * Lease expiry (DESIGN.md §2): a min-heap keyed by expiry with a single timer for the earliest,
 * never a periodic scan. An expired lease makes its partition ready again; expiry charges no
 * retry (spec §2.2).
 */
import type { GroupState, PartitionState } from './state.js';

interface Entry {
  at: number;
  group: GroupState;
  partition: PartitionState;
  leaseId: string;
}

export class LeaseClock {
  private heap: Entry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(private readonly onExpire: (g: GroupState, p: PartitionState, leaseId: string) => void) {}

  /** Calls `onExpire` at `at` (epoch ms) unless the lease has moved on by then (checked by the callback). */
  schedule(at: number, group: GroupState, partition: PartitionState, leaseId: string): void {
    const h = this.heap;
    h.push({ at, group, partition, leaseId });
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.at <= h[i]!.at) break;
      [h[parent], h[i]] = [h[i]!, h[parent]!];
      i = parent;
    }
    this.arm();
  }

  /** Number of scheduled expiries (stale ones included until they fire). */
  get size(): number {
    return this.heap.length;
  }

  clear(): void {
    this.heap = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private pop(): Entry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && h[l]!.at < h[m]!.at) m = l;
        if (r < h.length && h[r]!.at < h[m]!.at) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
    return top;
  }

  private arm(): void {
    const next = this.heap[0];
    if (!next) return;
    if (this.timer && this.timerAt <= next.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next.at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, next.at - Date.now()) + 1);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    while (this.heap.length > 0 && this.heap[0]!.at <= now) {
      const e = this.pop()!;
      this.onExpire(e.group, e.partition, e.leaseId);
    }
    this.arm();
  }
}
