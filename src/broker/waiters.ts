/**
 * Parked long-poll consumers (DESIGN.md §4): kept in memory, keyed by what they wait for, woken
 * by the commit that makes messages visible. Never by polling the store.
 */
import { QueenError } from '../errors.js';
import type { PartitionState, QueueState } from './state.js';

/** A parked pop. `wake` is called at most once; the waiter is removed before it runs. */
export interface Waiter {
  /** Queue name; undefined for a namespace/task discovery pop. */
  queue: string | undefined;
  group: string;
  /** Only this partition (partition route). */
  partition: string | undefined;
  namespace: string | undefined;
  task: string | undefined;
  wake(): void;
}

function key(queue: string, group: string): string {
  return `${queue}\u0000${group}`;
}

export class Waiters {
  private readonly byQueueGroup = new Map<string, Set<Waiter>>();
  private readonly perQueue = new Map<string, number>();
  private readonly discovery = new Set<Waiter>();

  constructor(private readonly maxPerQueue: number) {}

  /** Number of parked consumers (all queues). */
  get size(): number {
    let n = this.discovery.size;
    for (const s of this.byQueueGroup.values()) n += s.size;
    return n;
  }

  /** Parked consumers per queue name (for metrics). */
  perQueueCounts(): ReadonlyMap<string, number> {
    return this.perQueue;
  }

  /** @throws QueenError `too_many_waiters` when the queue's limit is reached. */
  add(w: Waiter): void {
    if (w.queue === undefined) {
      if (this.discovery.size >= this.maxPerQueue) throw new QueenError('too_many_waiters');
      this.discovery.add(w);
      return;
    }
    const n = this.perQueue.get(w.queue) ?? 0;
    if (n >= this.maxPerQueue) throw new QueenError('too_many_waiters');
    const k = key(w.queue, w.group);
    let set = this.byQueueGroup.get(k);
    if (!set) this.byQueueGroup.set(k, (set = new Set()));
    set.add(w);
    this.perQueue.set(w.queue, n + 1);
  }

  /** Removes `w` if still parked; returns true when it was. */
  remove(w: Waiter): boolean {
    if (w.queue === undefined) return this.discovery.delete(w);
    const k = key(w.queue, w.group);
    const set = this.byQueueGroup.get(k);
    if (!set || !set.delete(w)) return false;
    if (set.size === 0) this.byQueueGroup.delete(k);
    const n = (this.perQueue.get(w.queue) ?? 1) - 1;
    if (n <= 0) this.perQueue.delete(w.queue);
    else this.perQueue.set(w.queue, n);
    return true;
  }

  private fire(w: Waiter): void {
    if (this.remove(w)) w.wake();
  }

  /**
   * `p` became ready for `group` on `q`: wakes every waiter on that partition and the oldest
   * waiter of the whole queue (one claim per event; a woken waiter that finds more work left
   * wakes the next itself).
   */
  notify(q: QueueState, group: string, p: PartitionState): void {
    const set = this.byQueueGroup.get(key(q.name, group));
    let wildcardWoken = false;
    if (set) {
      for (const w of [...set]) {
        if (w.partition === undefined) {
          if (!wildcardWoken) { wildcardWoken = true; this.fire(w); }
        } else if (w.partition === p.name) {
          this.fire(w);
        }
      }
    }
    this.notifyDiscovery(q, group);
  }

  /**
   * A push landed on `q`: wakes waiters of groups not registered on `q` yet (their first
   * claim registers them) and matching discovery waiters.
   */
  notifyQueue(q: QueueState, p: PartitionState): void {
    const prefix = `${q.name}\u0000`;
    for (const [k, set] of this.byQueueGroup) {
      if (!k.startsWith(prefix)) continue;
      const group = k.slice(prefix.length);
      if (q.groups.has(group)) continue;
      for (const w of [...set]) if (w.partition === undefined || w.partition === p.name) this.fire(w);
    }
    for (const w of [...this.discovery]) if (matches(w, q)) this.fire(w);
  }

  private notifyDiscovery(q: QueueState, group: string): void {
    for (const w of [...this.discovery]) {
      if (w.group === group && matches(w, q)) { this.fire(w); return; }
    }
  }

  /** Wakes every waiter of `q` (any group): used when a wake-worthy change has no single partition. */
  wakeQueue(queueName: string): void {
    const prefix = `${queueName}\u0000`;
    for (const [k, set] of this.byQueueGroup) if (k.startsWith(prefix)) for (const w of [...set]) this.fire(w);
  }

  /** Wakes everybody (shutdown, pop maintenance). */
  wakeAll(): void {
    for (const set of [...this.byQueueGroup.values()]) for (const w of [...set]) this.fire(w);
    for (const w of [...this.discovery]) this.fire(w);
  }
}

/** True when discovery waiter `w` is interested in queue `q`. */
export function matches(w: { namespace: string | undefined; task: string | undefined }, q: QueueState): boolean {
  if (w.namespace && q.namespace !== w.namespace) return false;
  if (w.task && q.task !== w.task) return false;
  return Boolean(w.namespace || w.task);
}
