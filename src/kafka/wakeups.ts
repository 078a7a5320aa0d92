/**
 * Long-poll Fetch wake-ups (docs/kafka.md#fetch): a parked Fetch waits on the queues it reads and
 * is woken by the broker's append hint for any of them (the same in-process hint that wakes parked
 * pops), or by its deadline.
 */
import type { PartitionLogs } from '../broker/messaging/log-read.js';

export class FetchWakeups {
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(logs: PartitionLogs) {
    logs.onAppended((queue) => {
      const set = this.waiting.get(queue);
      if (!set) return;
      this.waiting.delete(queue);
      for (const wake of set) wake();
    });
  }

  /** Resolves when one of `queues` is appended to, or after `ms`; never rejects. */
  wait(queues: readonly string[], ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
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

  /** Wakes every parked fetch (shutdown). */
  wakeAll(): void {
    const all = [...this.waiting.values()];
    this.waiting.clear();
    for (const set of all) for (const wake of set) wake();
  }
}
