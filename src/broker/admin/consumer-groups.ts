/**
 * Consumer-group administration (docs/http-api.md#consumer-group-administration): listings with lag, group detail, delete
 * (cursors and, by default, subscription metadata), seek (to the end or to a time; a whole queue
 * or one partition) and subscription-timestamp changes. Every change is one operation of the
 * storage contract (src/storage/contract.ts `AdminSubStore`); parked consumers are woken by its
 * wake-up hints after the commit.
 */
import { QueenError } from '../../errors.js';
import { type SeekTarget } from '../../storage/contract.js';
import { iso, isoOrNull } from '../../util/time.js';
import type { Broker } from '../broker.js';
import { lagView, type LagView } from './resources.js';
import { groupLagSummary, partitionLag, type ViewReads } from '../messaging/positions.js';
import type { ViewGroup as GroupState } from '../../storage/contract.js';

/** Reads of the age of the oldest unconsumed message per listing (one indexed point read each). */
const TIME_LAG_READS = 10_000;
/** Rows at most in a `/lagging` answer. */
const LAGGING_ROWS = 10_000;

/** Called with the partitions whose consumption point moved (retention candidates). */
export type CursorMoved = (queue: string, partition: string) => void;

function groupsNamed(v: ViewReads, name: string): GroupState[] {
  const out: GroupState[] = [];
  for (const q of v.model.queues()) {
    const g = q.groups.get(name);
    if (g) out.push(g);
  }
  return out;
}

/** A group's health on a queue: `Lagging` past 300 s of time lag, `Dead` without any cursor. */
export type GroupHealth = 'Stable' | 'Lagging' | 'Dead';

/** One (group, queue) row of `GET /api/v1/consumer-groups`. */
export interface GroupRow extends LagView {
  topics: string[];
  queueName: string;
  /** Live leases on the queue (≈ consumers holding work). */
  members: number;
  state: GroupHealth;
}

/**
 * One row of `GET /api/v1/consumer-groups/lagging` (`timeLagSeconds` in s, `lag_hours` in hours,
 * times ISO-8601): the camelCase fields, and the same facts under the snake_case names the
 * reference answers (queen-mq/queen: lib/schema/procedures/008_consumer_groups.sql,
 * `get_lagging_partitions_v1`; its dashboard reads them).
 */
export interface LaggingRow {
  consumerGroup: string;
  queueName: string;
  partition: string;
  partitionId: string;
  offsetLag: number;
  timeLagSeconds: number;
  oldestUnconsumedAt: string;
  leaseActive: boolean;
  consumer_group: string;
  queue_name: string;
  partition_name: string;
  partition_id: string;
  /** Not kept per cursor here: null. */
  worker_id: null;
  offset_lag: number;
  time_lag_seconds: number;
  /** `time_lag_seconds` / 3600, two decimals. */
  lag_hours: number;
  oldest_unconsumed_at: string;
  /** Not kept per cursor here: null. */
  last_consumed_at: null;
}

/** A group's cursor on one partition, in a group's detail (`timeLagSeconds` in s). */
export interface GroupPartitionRow {
  partition: string;
  partitionId: string;
  /** The reference's fields this broker does not keep per cursor: always null. */
  workerId: null;
  lastConsumedAt: null;
  nextOffset: number;
  headOffset: number;
  offsetLag: number;
  timeLagSeconds: number;
  leaseActive: boolean;
  leaseExpiresAt: string | null;
  retryCount: number;
  totalConsumed: number;
}

/**
 * `GET /api/v1/consumer-groups/:group`: the group's lag and cursors, keyed by queue name at the top
 * level as the reference answers (queen-mq/queen: lib/schema/procedures/008_consumer_groups.sql,
 * `get_consumer_group_details_v1`); `{}` for a group that reads no queue.
 */
export type GroupDetail = Record<string, LagView & { state: GroupHealth; partitions: GroupPartitionRow[] }>;

/** Answer of {@link deleteGroup} (`queueName` when one queue was named). */
export interface DeleteGroupResult {
  success: true;
  consumerGroup: string;
  /** Cursor rows deleted. */
  deletedPartitions: number;
  metadataDeleted: boolean;
  queueName?: string;
}

/** Answer of {@link seek}: `partitionName`, `updated`, `cursorMovedTo` for one partition, `partitionsUpdated` for a queue. */
export interface SeekResult {
  success: true;
  consumerGroup: string;
  queueName: string;
  seekToEnd: boolean;
  /** ISO-8601, null for a seek to the end. */
  targetTimestamp: string | null;
  partitionName?: string;
  updated?: boolean;
  cursorMovedTo?: number | undefined;
  partitionsUpdated?: number;
}

/** Answer of {@link setSubscriptionTimestamp} (`newTimestamp` ISO-8601; `rowsUpdated` counts queues). */
export interface SubscriptionResult {
  success: true;
  consumerGroup: string;
  newTimestamp: string;
  rowsUpdated: number;
}

function state(maxTimeLagSeconds: number, cursors: number): GroupHealth {
  if (maxTimeLagSeconds > 300) return 'Lagging';
  return cursors > 0 ? 'Stable' : 'Dead';
}

/** `GET /api/v1/consumer-groups`: one row per (group, queue), queue mode included. */
export async function listGroups(v: ViewReads, now: number): Promise<GroupRow[]> {
  const rows: GroupRow[] = [];
  let budget = TIME_LAG_READS;
  for (const q of v.model.queues()) {
    for (const g of q.groups.values()) {
      const s = await groupLagSummary(v, g, now, budget);
      budget = Math.max(0, budget - s.partitionsWithLag);
      const lv = lagView(s, now);
      rows.push({
        ...lv, topics: [q.name], queueName: q.name, members: s.activeLeases,
        state: state(lv.maxTimeLag, s.cursors),
      });
    }
  }
  rows.sort((a, b) => a.name.localeCompare(b.name) || a.queueName.localeCompare(b.queueName));
  return rows;
}

/** `GET /api/v1/consumer-groups/lagging`: partitions whose oldest unconsumed message is older than `minLagSeconds`. */
export async function laggingPartitions(v: ViewReads, minLagSeconds: number, now: number): Promise<LaggingRow[]> {
  const rows: LaggingRow[] = [];
  const cutoff = now - minLagSeconds * 1000;
  for (const q of v.model.queues()) {
    for (const g of q.groups.values()) {
      for (const p of q.partitions.values()) {
        if (rows.length >= LAGGING_ROWS) return rows;
        const l = partitionLag(v, g, p, now);
        if (l.lag === 0) continue;
        // Cheap filter first: a partition whose newest message is younger than the cutoff may still lag.
        const at = await v.store.createdAtFrom(v.tenant, p.pk, l.position);
        if (at === undefined || at > cutoff) continue;
        const timeLagSeconds = Math.floor((now - at) / 1000);
        const oldest = iso(at);
        rows.push({
          consumerGroup: g.name, queueName: q.name, partition: p.name, partitionId: p.id, offsetLag: l.lag,
          timeLagSeconds, oldestUnconsumedAt: oldest, leaseActive: l.leaseActive,
          consumer_group: g.name, queue_name: q.name, partition_name: p.name, partition_id: p.id, worker_id: null, offset_lag: l.lag,
          time_lag_seconds: timeLagSeconds, lag_hours: Math.round(timeLagSeconds / 36) / 100, oldest_unconsumed_at: oldest, last_consumed_at: null,
        });
      }
    }
  }
  return rows;
}

/** `GET /api/v1/consumer-groups/:group`: per queue, the group's lag and its cursors (`{}`: no such group). */
export async function groupDetail(v: ViewReads, name: string, now: number): Promise<GroupDetail> {
  const groups = groupsNamed(v, name);
  const queues: GroupDetail = Object.create(null) as GroupDetail; // queue names are any text, `__proto__` included
  for (const g of groups) {
    const s = await groupLagSummary(v, g, now, TIME_LAG_READS);
    const partitions: GroupPartitionRow[] = [];
    for (const [pk, c] of g.cursors) {
      const p = v.model.partitionByPk(pk);
      if (!p || !c.materialized) continue;
      const l = partitionLag(v, g, p, now);
      const at = l.lag > 0 ? await v.store.createdAtFrom(v.tenant, p.pk, l.position) : undefined;
      partitions.push({
        partition: p.name, partitionId: p.id, workerId: null, lastConsumedAt: null, nextOffset: l.position, headOffset: p.headOffset, offsetLag: l.lag,
        timeLagSeconds: at === undefined ? 0 : Math.max(0, Math.floor((now - at) / 1000)), leaseActive: l.leaseActive,
        leaseExpiresAt: isoOrNull(l.leaseExpiresAt), retryCount: c.retryCount, totalConsumed: Math.max(0, l.position - p.firstOffset),
      });
    }
    partitions.sort((a, b) => a.partition.localeCompare(b.partition));
    const lv = lagView(s, now);
    queues[g.queue.name] = { ...lv, state: state(lv.maxTimeLag, s.cursors), partitions };
  }
  return queues;
}

/**
 * Deletes a group's cursors (and leases) on one queue or all, and its subscription metadata when
 * `deleteMetadata`; the next pop registers it afresh.
 * @throws QueenError `queue_not_found`
 */
export async function deleteGroup(
  broker: Broker, tenant: string, name: string, queue: string | undefined, deleteMetadata: boolean, moved: CursorMoved,
): Promise<DeleteGroupResult> {
  if (queue !== undefined && !await broker.backend.admin.readQueue({ tenant, queue })) throw new QueenError('queue_not_found');
  const r = await broker.backend.admin.deleteGroup(tenant, name, queue, deleteMetadata, broker.clock.now());
  for (const p of r.partitions) moved(p.queue, p.partition);
  const base: DeleteGroupResult = { success: true, consumerGroup: name, deletedPartitions: r.cursorsDeleted, metadataDeleted: deleteMetadata };
  return queue === undefined ? base : { ...base, queueName: queue };
}

/** Where to move a group's cursor. */
export type { SeekTarget } from '../../storage/contract.js';

/**
 * Moves `group`'s cursor on every partition of `queue` (or on `partition` only) to the tail or to
 * the first message created at or after the timestamp; drops its live leases there.
 * @throws QueenError `queue_not_found`, `partition_not_found`
 */
export async function seek(
  broker: Broker, tenant: string, group: string, queue: string, partition: string | undefined, target: SeekTarget, moved: CursorMoved,
): Promise<SeekResult> {
  const key = { tenant, queue };
  if (!await broker.backend.admin.readQueue(key)) throw new QueenError('queue_not_found');
  const moves = await broker.backend.admin.seekGroup(key, group, partition, target, broker.clock.now());
  if (!moves) {
    if (partition !== undefined) throw new QueenError('partition_not_found', undefined, { success: false });
    throw new QueenError('queue_not_found');
  }
  for (const m of moves) moved(queue, m.partition);
  const result = partition !== undefined ? { updated: moves.length, to: moves[0]?.committedOffset } : { updated: moves.length, to: undefined };
  const base: SeekResult = {
    success: true, consumerGroup: group, queueName: queue,
    seekToEnd: 'toEnd' in target, targetTimestamp: 'timestamp' in target ? iso(target.timestamp) : null,
  };
  if (partition !== undefined) return { ...base, partitionName: partition, updated: result.updated === 1, cursorMovedTo: result.to };
  return { ...base, partitionsUpdated: result.updated };
}

/**
 * Changes the subscription cut-off of `group` on every queue it is registered on. Applies to
 * partitions the group has no cursor on yet (existing cursors are never re-seeded, docs/http-api.md#subscription-modes).
 */
export async function setSubscriptionTimestamp(broker: Broker, tenant: string, group: string, timestamp: number): Promise<SubscriptionResult> {
  const updated = await broker.backend.admin.setSubscriptionFrom(tenant, group, timestamp, broker.clock.now());
  return { success: true, consumerGroup: group, newTimestamp: iso(timestamp), rowsUpdated: updated };
}
