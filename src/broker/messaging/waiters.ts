/**
 * Parked long-poll consumers (docs/storage.md#parked-pops): kept in memory, keyed by what they wait for
 * (the queue's tenant and name, the group), woken from the backend's `onPartitionsReady` hints after
 * the commit that makes messages visible. Never by polling the store.
 */
import { QueenError } from '../../errors.js';
import { DEFAULT_TENANT, type QueueKey } from '../../storage/contract.js';
import { queueSlot } from '../../model/tenancy.js';

/** A queue's discovery labels. */
export interface QueueLabels {
  namespace: string;
  task: string;
}

/** A parked pop. `wake` is called at most once; the waiter is removed before it runs. */
export interface Waiter {
  /** The tenant of the queue or of the discovery. */
  tenant: string;
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
  /** queue (tenant, name) → group → parked waiters (so a push looks only at its own queue's waiters). */
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

  /** Parked consumers per queue slot (`queueSlot`: tenant and name; for metrics). */
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
    const slot = queueSlot(w.tenant, w.queue);
    const n = this.perQueue.get(slot) ?? 0;
    if (n >= this.maxPerQueue) throw this.full();
    let groups = this.byQueue.get(slot);
    if (!groups) this.byQueue.set(slot, (groups = new Map<string, Set<Waiter>>()));
    let set = groups.get(w.group);
    if (!set) groups.set(w.group, (set = new Set()));
    set.add(w);
    this.perQueue.set(slot, n + 1);
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
    const slot = queueSlot(w.tenant, w.queue);
    const groups = this.byQueue.get(slot);
    const set = groups?.get(w.group);
    if (!groups || !set || !set.delete(w)) return false;
    if (set.size === 0) groups.delete(w.group);
    if (groups.size === 0) this.byQueue.delete(slot);
    const n = (this.perQueue.get(slot) ?? 1) - 1;
    if (n <= 0) this.perQueue.delete(slot);
    else this.perQueue.set(slot, n);
    return true;
  }

  private fire(w: Waiter): void {
    if (this.remove(w)) w.wake();
  }

  /** True while some discovery pop is parked (a hint then needs the queue's labels: {@link labelsReady}). */
  get discoveryParked(): boolean {
    return this.discoveryCount > 0;
  }

  /**
   * Partition `partition` of queue `q` became claimable for some group (a wake-up hint, after
   * commit): wakes, per group parked on `q`, every waiter on that partition and the oldest wildcard
   * waiter (one claim per hint; a woken waiter that finds more work left has it announced again).
   * A group with nothing to claim re-parks after one empty claim. Discovery waiters are woken by
   * {@link labelsReady}.
   */
  partitionReady(q: QueueKey, partition: string): void {
    const groups = this.byQueue.get(queueSlot(q.tenant, q.queue));
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
  }

  /** A queue of `tenant` with these labels has a claimable partition: wakes the discovery waiters interested in it. */
  labelsReady(tenant: string, labels: QueueLabels): void {
    for (const w of this.discoveryCandidates(tenant, labels)) this.fire(w);
  }

  /** Discovery waiters interested in a queue with `q`'s labels: keyed lookups, never a walk over every waiter. */
  private discoveryCandidates(tenant: string, q: QueueLabels): Waiter[] {
    if (this.discoveryCount === 0) return [];
    const out: Waiter[] = [];
    const keys = new Set([discoveryKey(q.namespace, q.task), discoveryKey(q.namespace, ''), discoveryKey('', q.task)]);
    for (const k of keys) {
      const set = this.discovery.get(k);
      if (set) for (const w of set) if (w.tenant === tenant && matches(w, q)) out.push(w);
    }
    return out;
  }

  /** Wakes every waiter of queue `queueName` of `tenant` (any group): used when a wake-worthy change has no single partition. */
  wakeQueue(queueName: string, tenant: string = DEFAULT_TENANT): void {
    const groups = this.byQueue.get(queueSlot(tenant, queueName));
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
export function matches(w: { namespace: string | undefined; task: string | undefined }, q: QueueLabels): boolean {
  if (w.namespace && q.namespace !== w.namespace) return false;
  if (w.task && q.task !== w.task) return false;
  return Boolean(w.namespace || w.task);
}
