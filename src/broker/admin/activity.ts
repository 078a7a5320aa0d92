/**
 * Activity counters maintained as work happens: per-queue one-minute buckets (pushes, pops, acks,
 * dead letters, pop lag) and the dead-letter depth per queue. The status, analytics and
 * Prometheus views read these; none of them scans the messages.
 *
 * Every per-queue map is keyed by the queue's slot (`queueSlot` of src/model/tenancy.ts): the bare
 * name for the default tenant, tenant-qualified for another, so two tenants' queues of one name
 * never share a counter (docs/proxy.md#metrics).
 *
 * Bounded: a queue keeps its last {@link QUEUE_MINUTES} minutes, the broker-wide series
 * {@link TOTAL_MINUTES}; buckets exist only for minutes with activity. Counters live in memory
 * and restart from zero with the process (the dead-letter depth is re-counted from the store).
 */
import type { AckInput, AckOutcome } from '../messaging/ack.js';
import { normalizeStatus } from '../messaging/ack.js';
import type { BrokerObserver } from '../messaging/observer.js';
import type { ClaimedPartition, PopRequest } from '../messaging/pop.js';
import type { PushResult } from '../messaging/push.js';
import type { TransactionRequest, TransactionResult } from '../messaging/transaction.js';
import { DEFAULT_TENANT, queueSlot } from '../../model/tenancy.js';

/** Minutes of history per queue. */
export const QUEUE_MINUTES = 60;
/** Minutes of broker-wide history. */
export const TOTAL_MINUTES = 24 * 60;

/** One minute of activity. `minute` is epoch ms floored to the minute. */
export interface Bucket {
  minute: number;
  pushRequests: number;
  pushMessages: number;
  popRequests: number;
  popMessages: number;
  popEmpty: number;
  ackCompleted: number;
  ackFailed: number;
  dlq: number;
  transactions: number;
  /** Sum, count and max of (delivery time − createdAt) in ms over delivered messages. */
  lagSum: number;
  lagCount: number;
  lagMax: number;
  /** Messages removed by retention or eviction. */
  removed: number;
}

export type Counter = Exclude<keyof Bucket, 'minute' | 'lagMax'>;

/** Start (epoch ms) of the minute holding `ms`. */
export const minuteOf = (ms: number): number => Math.floor(ms / 60_000) * 60_000;

function emptyBucket(minute: number): Bucket {
  return {
    minute, pushRequests: 0, pushMessages: 0, popRequests: 0, popMessages: 0, popEmpty: 0, ackCompleted: 0, ackFailed: 0,
    dlq: 0, transactions: 0, lagSum: 0, lagCount: 0, lagMax: 0, removed: 0,
  };
}

/** A bounded series of minute buckets, oldest first. */
export class Series {
  readonly buckets: Bucket[] = [];
  constructor(private readonly minutes: number) {}

  /** The bucket of `now`'s minute (created when missing; old ones pruned). */
  at(now: number): Bucket {
    const m = minuteOf(now);
    const last = this.buckets[this.buckets.length - 1];
    if (last && last.minute === m) return last;
    if (last && last.minute > m) return last; // clock stepped back: keep counting in the newest bucket
    const b = emptyBucket(m);
    this.buckets.push(b);
    const oldest = m - (this.minutes - 1) * 60_000;
    while (this.buckets.length > 0 && this.buckets[0]!.minute < oldest) this.buckets.shift();
    return b;
  }

  /** Buckets with from ≤ minute ≤ to. */
  range(from: number, to: number): Bucket[] {
    return this.buckets.filter((b) => b.minute >= minuteOf(from) && b.minute <= to);
  }

  /** The bucket of the last complete minute before `now` (zeros when idle). */
  lastComplete(now: number): Bucket {
    const m = minuteOf(now) - 60_000;
    for (let i = this.buckets.length - 1; i >= 0; i--) {
      const b = this.buckets[i]!;
      if (b.minute === m) return b;
      if (b.minute < m) break;
    }
    return emptyBucket(m);
  }
}

/** Sums buckets per minute (for namespace/task aggregates). */
export function mergeSeries(series: readonly Series[], from: number, to: number): Bucket[] {
  const byMinute = new Map<number, Bucket>();
  for (const s of series) {
    for (const b of s.range(from, to)) {
      let m = byMinute.get(b.minute);
      if (!m) byMinute.set(b.minute, (m = emptyBucket(b.minute)));
      for (const k of Object.keys(b) as (keyof Bucket)[]) {
        if (k === 'minute') continue;
        if (k === 'lagMax') m.lagMax = Math.max(m.lagMax, b.lagMax);
        else m[k] += b[k];
      }
    }
  }
  return [...byMinute.values()].sort((a, b) => a.minute - b.minute);
}

/** Per-queue per-minute counters and DLQ depth, updated as work happens (observer of the broker). */
export class Activity implements BrokerObserver {
  /** Per queue slot. */
  readonly queues = new Map<string, Series>();
  readonly total = new Series(TOTAL_MINUTES);
  /** Dead letters stored per queue slot. */
  readonly dlqDepth = new Map<string, number>();
  /** Messages removed by retention per (queue slot, reason, consumed) since boot. */
  readonly removed = new Map<string, { queue: string; reason: string; consumed: boolean; count: number }>();

  /** @param queueOf the queue slot of a partition id (undefined when unknown) */
  constructor(private readonly queueOf: (partitionId: string) => string | undefined = () => undefined) {}

  /** Seeds the dead-letter depth per queue name of the default tenant (= its slot) from the store (boot). */
  seedDlqDepth(byQueue: ReadonlyMap<string, number>): void {
    this.dlqDepth.clear();
    for (const [q, n] of byQueue) this.dlqDepth.set(q, n);
  }

  /** The series of the queue with slot `queue` (a default-tenant queue: its name). */
  series(queue: string): Series {
    let s = this.queues.get(queue);
    if (!s) this.queues.set(queue, (s = new Series(QUEUE_MINUTES)));
    return s;
  }

  add(queue: string | undefined, key: Counter, n: number, now: number): void {
    if (n === 0) return;
    if (queue !== undefined) this.series(queue).at(now)[key] += n;
    this.total.at(now)[key] += n;
  }

  /** Dead-letter depth change of `queue`. */
  dlqChanged(queue: string, delta: number): void {
    const n = Math.max(0, (this.dlqDepth.get(queue) ?? 0) + delta);
    if (n === 0) this.dlqDepth.delete(queue);
    else this.dlqDepth.set(queue, n);
  }

  /** Retention removed `count` messages of `queue`. */
  retentionRemoved(queue: string, reason: string, consumed: boolean, count: number, now: number): void {
    if (count <= 0) return;
    const k = `${queue}\u0000${reason}\u0000${consumed}`;
    const e = this.removed.get(k);
    if (e) e.count += count;
    else this.removed.set(k, { queue, reason, consumed, count });
    this.add(queue, 'removed', count, now);
  }

  // ---------------------------------------------------------------- BrokerObserver

  pushed(results: readonly PushResult[], now: number, tenant: string = DEFAULT_TENANT): void {
    const perQueue = new Map<string, number>(); // by queue name: the slot is built once per queue, not per message
    for (const r of results) if (r.status === 'queued') perQueue.set(r.queueName, (perQueue.get(r.queueName) ?? 0) + 1);
    for (const [name, n] of perQueue) {
      const q = queueSlot(tenant, name);
      this.add(q, 'pushMessages', n, now);
      this.add(q, 'pushRequests', 1, now);
    }
  }

  popped(req: PopRequest, claimed: readonly ClaimedPartition[], now: number): void {
    const tenant = req.tenant ?? DEFAULT_TENANT;
    if (claimed.length === 0) {
      if (req.queue !== undefined) {
        this.add(queueSlot(tenant, req.queue), 'popRequests', 1, now);
        this.add(queueSlot(tenant, req.queue), 'popEmpty', 1, now);
      } else {
        this.total.at(now).popRequests++;
        this.total.at(now).popEmpty++;
      }
      return;
    }
    const seen = new Set<string>();
    for (const c of claimed) {
      const q = queueSlot(tenant, c.queue);
      if (!seen.has(q)) {
        seen.add(q);
        this.add(q, 'popRequests', 1, now);
      }
      this.add(q, 'popMessages', c.rows.length, now);
      const qb = this.series(q).at(now);
      const tb = this.total.at(now);
      for (const r of c.rows) {
        const lag = Math.max(0, now - r.createdAt);
        qb.lagSum += lag; qb.lagCount++; qb.lagMax = Math.max(qb.lagMax, lag);
        tb.lagSum += lag; tb.lagCount++; tb.lagMax = Math.max(tb.lagMax, lag);
      }
    }
  }

  acked(inputs: readonly AckInput[], outcomes: readonly AckOutcome[], now: number): void {
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!;
      const a = inputs[i]!;
      const q = this.queueOf(a.partitionId);
      if (o.success) this.add(q, normalizeStatus(a.status) === 'completed' ? 'ackCompleted' : 'ackFailed', 1, now);
      if (o.dlq && q !== undefined) {
        this.add(q, 'dlq', 1, now);
        this.dlqChanged(q, 1);
      }
    }
  }

  transacted(req: TransactionRequest, result: TransactionResult, now: number): void {
    if (!result.success) return;
    const tenant = req.tenant ?? DEFAULT_TENANT;
    const queues = new Set<string>();
    let a = 0;
    const acks = req.operations.filter((op) => op.type === 'ack');
    for (const r of result.results) {
      if (r.type === 'push') {
        const slot = queueSlot(tenant, r.queueName);
        queues.add(slot);
        if (!r.duplicate) this.add(slot, 'pushMessages', 1, now);
        continue;
      }
      if (r.type !== 'ack') continue; // timer rider verdicts: counted when the timers fire
      const op = acks[a++];
      const q = op && op.type === 'ack' ? this.queueOf(op.ack.partitionId) : undefined;
      if (q !== undefined) queues.add(q);
      if (r.success) this.add(q, op && op.type === 'ack' && normalizeStatus(op.ack.status) !== 'completed' ? 'ackFailed' : 'ackCompleted', 1, now);
      if (r.dlq && q !== undefined) {
        this.add(q, 'dlq', 1, now);
        this.dlqChanged(q, 1);
      }
    }
    for (const q of queues) this.add(q, 'transactions', 1, now);
    if (queues.size === 0) this.total.at(now).transactions++;
  }

  queueDeleted(queue: string, tenant: string = DEFAULT_TENANT): void {
    const slot = queueSlot(tenant, queue);
    this.queues.delete(slot);
    this.dlqDepth.delete(slot);
    for (const [k, e] of this.removed) if (e.queue === slot) this.removed.delete(k);
  }
}
