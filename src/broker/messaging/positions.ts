/**
 * Where a consumer group stands on a partition, computed without materialising cursors
 * (docs/storage.md#log-model: a group that never touched a partition has no cursor row and gets none here).
 * Shared by the lag views, message status, depth and retention.
 */
import { QUEUE_MODE } from '../../model/subscription.js';
import type { CursorRow } from '../../storage/store.js';
import type { ViewGroup as GroupState, ViewModel, ViewPartition as PartitionState, ViewQueue, ViewsSubStore } from '../../storage/contract.js';

/** What the operator views read: one tenant's model and the point reads beside it (src/storage/contract.ts `ViewsSubStore`). */
export interface ViewReads {
  tenant: string;
  model: ViewModel;
  store: ViewsSubStore;
}

/** True when the cursor holds a lease that has not expired at `now` (ms). */
export function leaseLive(c: CursorRow, now: number): boolean {
  return c.leaseId !== null && c.leaseExpiresAt !== null && c.leaseExpiresAt > now;
}

/**
 * First offset of `p` the group has not consumed: its cursor when it has one, else where its
 * subscription would start (one O(log n) store probe for a timestamp subscription).
 */
export function groupPosition(v: ViewReads, g: GroupState, p: PartitionState): number {
  const c = g.cursors.get(p.pk);
  if (c) return Math.min(Math.max(c.committedOffset, p.firstOffset), p.headOffset);
  return v.model.subscriptionStart(g, p);
}

/** A group's standing on one partition. */
export interface PartitionLag {
  /** Unconsumed messages (offset lag). */
  lag: number;
  /** Of those, under a live lease. */
  processing: number;
  position: number;
  leaseActive: boolean;
  leaseExpiresAt: number | null;
}

/** Offset lag of `g` on `p` at `now` (no store read unless a timestamp subscription needs one). */
export function partitionLag(v: ViewReads, g: GroupState, p: PartitionState, now: number): PartitionLag {
  const position = groupPosition(v, g, p);
  const lag = Math.max(0, p.headOffset - position);
  const c = g.cursors.get(p.pk);
  const live = c !== undefined && leaseLive(c, now);
  const processing = live && c.deliveredUpTo !== null ? Math.max(0, Math.min(c.deliveredUpTo, p.headOffset) - position) : 0;
  return { lag, processing: Math.min(processing, lag), position, leaseActive: live, leaseExpiresAt: live ? c.leaseExpiresAt : null };
}

/**
 * The groups a queue's message counts and message statuses follow: its named groups when it has
 * any, else its queue-mode group; none when nothing has read it. A pop without a group registers
 * the queue-mode group even when it finds nothing, so counting it beside named groups would keep
 * everything they consumed pending for good (docs/http-api.md#resources).
 */
export function readingGroups(q: ViewQueue): GroupState[] {
  const named: GroupState[] = [];
  for (const g of q.groups.values()) if (g.name !== QUEUE_MODE) named.push(g);
  if (named.length > 0) return named;
  const qm = q.groups.get(QUEUE_MODE);
  return qm ? [qm] : [];
}

/**
 * Where the readers of `p`'s queue ({@link readingGroups}) stand on it: the standing of the
 * slowest one (lowest position), or undefined when nothing reads the queue.
 */
export function readersLag(v: ViewReads, p: PartitionState, now: number): PartitionLag | undefined {
  let slowest: PartitionLag | undefined;
  for (const g of readingGroups(p.queue)) {
    const l = partitionLag(v, g, p, now);
    if (slowest === undefined || l.position < slowest.position) slowest = l;
  }
  return slowest;
}

/** Lowest position over every group of the queue (what all groups consumed), or undefined without groups. */
export function minGroupPosition(v: ViewReads, p: PartitionState): number | undefined {
  let min: number | undefined;
  for (const g of p.queue.groups.values()) {
    const pos = groupPosition(v, g, p);
    if (min === undefined || pos < min) min = pos;
    if (min <= p.firstOffset) break;
  }
  return min;
}

/** A consumer group's lag over a whole queue. */
export interface GroupLagSummary {
  name: string;
  subscriptionMode: string;
  subscriptionTimestamp: number | null;
  subscriptionCreatedAt: number;
  /** Unconsumed messages over all partitions. */
  totalLag: number;
  partitionsWithLag: number;
  /** Unconsumed messages under a live lease. */
  processing: number;
  /** Live leases (≈ consumers holding work). */
  activeLeases: number;
  /** Partitions the group has a cursor on. */
  cursors: number;
  /** createdAt of the oldest unconsumed message seen (null when none or not probed). */
  oldestUnconsumedAt: number | null;
  /** True when the time lag was probed on only part of the lagging partitions (read budget). */
  timeLagSampled: boolean;
}

/**
 * Lag of `g` on its queue: offsets from memory (O(partitions) arithmetic, no store scan); the age
 * of the oldest unconsumed message costs one indexed point read per lagging partition, at most
 * `timeReads` of them.
 */
export async function groupLagSummary(v: ViewReads, g: GroupState, now: number, timeReads: number): Promise<GroupLagSummary> {
  const out: GroupLagSummary = {
    name: g.name, subscriptionMode: g.subscription.label, subscriptionTimestamp: g.subscription.fromTime,
    subscriptionCreatedAt: g.subscription.createdAt, totalLag: 0, partitionsWithLag: 0, processing: 0, activeLeases: 0,
    cursors: 0, oldestUnconsumedAt: null, timeLagSampled: false,
  };
  let reads = 0;
  for (const p of g.queue.partitions.values()) {
    const l = partitionLag(v, g, p, now);
    if (l.leaseActive) out.activeLeases++;
    if (l.lag === 0) continue;
    out.totalLag += l.lag;
    out.partitionsWithLag++;
    out.processing += l.processing;
    if (reads < timeReads) {
      reads++;
      const at = await v.store.createdAtFrom(v.tenant, p.pk, l.position);
      if (at !== undefined && (out.oldestUnconsumedAt === null || at < out.oldestUnconsumedAt)) out.oldestUnconsumedAt = at;
    } else {
      out.timeLagSampled = true;
    }
  }
  for (const c of g.cursors.values()) if (c.materialized) out.cursors++;
  return out;
}
