/**
 * Parked long-poll consumers (docs/storage.md#parked-pops): kept in memory, keyed by what they wait for, woken
 * by the commit that makes messages visible. Never by polling the store.
 */
import { QueenError } from '../../errors.js';
import type { QueueState } from '../../storage/sqlite/state.js';

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

/** Registry of parked long-poll pops, indexed by queue and group and by discovery label. */
export class Waiters {
  /** queue name → group → parked waiters (so a push looks only at its own queue's waiters). */
  private readonly byQueue = new Map<string, Map<string, Set<Waiter>>>();
  private readonly perQueue = new Map<string, number>();
  /** Discovery waiters by `namespace\u0000task` as they asked (either may be empty). */
  private readonly discovery = new Map<string, Set<Waiter>>();
  private discoveryCount = 0;

  constructor(private readonly maxPerQueue: number) {}

  /** Number of parked consumers (all queues). */
  get size(): number {
    let n = this.discoveryCount;
    for (const c of this.perQueue.values()) n += c;
    return n;
  }

  /** Parked consumers per queue name (for metrics). */
  perQueueCounts(): ReadonlyMap<string, number> {
    return this.perQueue;
  }

  /** @throws QueenError `too_many_waiters` when the queue's limit is reached. */
  /** The refusal of one parked pop too many, naming the limit and its variable. */
  private full(): QueenError {
    return new QueenError('too_many_waiters', `too many parked consumers on this queue (QUEEN_MAX_WAITERS_PER_QUEUE=${this.maxPerQueue})`);
  }

  add(w: Waiter): void {
    if (w.queue === undefined) {
      if (this.discoveryCount >= this.maxPerQueue) throw this.full();
      const k = discoveryKey(w.namespace ?? '', w.task ?? '');
      let set = this.discovery.get(k);
      if (!set) this.discovery.set(k, (set = new Set()));
      set.add(w);
      this.discoveryCount++;
      return;
    }
    const n = this.perQueue.get(w.queue) ?? 0;
    if (n >= this.maxPerQueue) throw this.full();
    let groups = this.byQueue.get(w.queue);
    if (!groups) this.byQueue.set(w.queue, (groups = new Map<string, Set<Waiter>>()));
    let set = groups.get(w.group);
    if (!set) groups.set(w.group, (set = new Set()));
    set.add(w);
    this.perQueue.set(w.queue, n + 1);
  }

  /** Removes `w` if still parked; returns true when it was. */
  remove(w: Waiter): boolean {
    if (w.queue === undefined) {
      const k = discoveryKey(w.namespace ?? '', w.task ?? '');
      const set = this.discovery.get(k);
      if (!set || !set.delete(w)) return false;
      if (set.size === 0) this.discovery.delete(k);
      this.discoveryCount--;
      return true;
    }
    const groups = this.byQueue.get(w.queue);
    const set = groups?.get(w.group);
    if (!groups || !set || !set.delete(w)) return false;
    if (set.size === 0) groups.delete(w.group);
    if (groups.size === 0) this.byQueue.delete(w.queue);
    const n = (this.perQueue.get(w.queue) ?? 1) - 1;
    if (n <= 0) this.perQueue.delete(w.queue);
    else this.perQueue.set(w.queue, n);
    return true;
  }

  private fire(w: Waiter): void {
    if (this.remove(w)) w.wake();
  }

  /**
   * Partition `partition` of `q` became claimable for some group (a wake-up hint, after commit):
   * wakes, per group parked on `q`, every waiter on that partition and the oldest wildcard waiter
   * (one claim per hint; a woken waiter that finds more work left has it announced again), and the
   * discovery waiters interested in `q`. A group with nothing to claim re-parks after one empty claim.
   */
  partitionReady(q: QueueState, partition: string): void {
    const groups = this.byQueue.get(q.name);
    if (groups) {
      for (const set of [...groups.values()]) {
        let wildcardWoken = false;
        // Deleting from a Set while iterating it is safe: no copy on this push hot path.
        for (const w of set) {
          if (w.partition === undefined) {
            if (!wildcardWoken) { wildcardWoken = true; this.fire(w); }
          } else if (w.partition === partition) {
            this.fire(w);
          }
        }
      }
    }
    for (const w of this.discoveryCandidates(q)) this.fire(w);
  }

  /** Discovery waiters interested in `q`: keyed lookups, never a walk over every waiter. */
  private discoveryCandidates(q: QueueState): Waiter[] {
    if (this.discoveryCount === 0) return [];
    const out: Waiter[] = [];
    const keys = new Set([discoveryKey(q.namespace, q.task), discoveryKey(q.namespace, ''), discoveryKey('', q.task)]);
    for (const k of keys) {
      const set = this.discovery.get(k);
      if (set) for (const w of set) if (matches(w, q)) out.push(w);
    }
    return out;
  }

  /** Wakes every waiter of `queueName` (any group): used when a wake-worthy change has no single partition. */
  wakeQueue(queueName: string): void {
    const groups = this.byQueue.get(queueName);
    if (groups) for (const set of [...groups.values()]) for (const w of [...set]) this.fire(w);
  }

  /** Wakes everybody (shutdown, pop maintenance). */
  wakeAll(): void {
    for (const groups of [...this.byQueue.values()]) for (const set of [...groups.values()]) for (const w of [...set]) this.fire(w);
    for (const set of [...this.discovery.values()]) for (const w of [...set]) this.fire(w);
  }
}

function discoveryKey(namespace: string, task: string): string {
  return `${namespace}\u0000${task}`;
}

/** True when discovery waiter `w` is interested in queue `q`. */
export function matches(w: { namespace: string | undefined; task: string | undefined }, q: QueueState): boolean {
  if (w.namespace && q.namespace !== w.namespace) return false;
  if (w.task && q.task !== w.task) return false;
  return Boolean(w.namespace || w.task);
}
