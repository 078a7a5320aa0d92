/**
 * Long-poll Fetch wake-ups (docs/kafka.md#fetch): a parked Fetch waits on the queues it reads and
 * is woken by the broker's append hint for any of them (the same in-process hint that wakes parked
 * pops), or by its deadline.
 */
import type { PartitionLogs } from '../broker/messaging/log-read.js';

export class FetchWakeups {
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Append hints seen per queue (a fetch compares before and after its read, so no hint is missed). */
  private readonly seen = new Map<string, number>();

  constructor(logs: PartitionLogs) {
    logs.onAppended((queue) => {
      this.seen.set(queue, (this.seen.get(queue) ?? 0) + 1);
      const set = this.waiting.get(queue);
      if (!set) return;
      this.waiting.delete(queue);
      for (const wake of set) wake();
    });
  }

  /** Fetches waiting now. */
  parked = 0;

  /** A count of append hints for `queues`; pass it to {@link wait}. */
  generation(queues: readonly string[]): number {
    let n = 0;
    for (const q of queues) n += this.seen.get(q) ?? 0;
    return n;
  }

  /**
   * Resolves when one of `queues` is appended to, or after `ms`; at once when a hint arrived since
   * `since` (a {@link generation} taken before the caller's read). Never rejects.
   */
  wait(queues: readonly string[], ms: number, since: number): Promise<void> {
    if (this.stopped || this.generation(queues) !== since) return Promise.resolve();
    this.parked++;
    return new Promise((resolve) => {
      let woken = false;
      const done = () => {
        if (woken) return;
        woken = true;
        this.parked--;
        clearTimeout(timer);
        for (const q of queues) this.waiting.get(q)?.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      for (const q of queues) {
        let set = this.waiting.get(q);
        if (!set) this.waiting.set(q, (set = new Set()));
        set.add(done);
      }
    });
  }

  /** True after {@link wakeAll}: the listener is shutting down, a fetch answers what it has. */
  stopped = false;

  /** Wakes every parked fetch and parks none after (shutdown). */
  wakeAll(): void {
    this.stopped = true;
    const all = [...this.waiting.values()];
    this.waiting.clear();
    for (const set of all) for (const wake of set) wake();
  }
}
