/**
 * Consumer-group administration (docs/http-api.md#consumer-group-administration): listings with lag, group detail, delete
 * (cursors and, by default, subscription metadata), seek (to the end or to a time; a whole queue
 * or one partition) and subscription-timestamp changes. Every change updates the store and the
 * engine's in-memory state (cursors, ready sets, leases) in the same unit of work; parked consumers
 * are woken after the commit.
 */
import { QueenError } from '../../errors.js';
import type { StoreTx } from '../../storage/store.js';
import { iso, isoOrNull } from '../../util/time.js';
import type { Broker } from '../broker.js';
import { lagView, type LagView } from './resources.js';
import type { Engine } from '../../storage/sqlite/engine.js';
import { groupLagSummary, partitionLag } from '../messaging/positions.js';
import type { GroupState, PartitionState, QueueState } from '../../storage/sqlite/state.js';

/** Reads of the age of the oldest unconsumed message per listing (one indexed point read each). */
const TIME_LAG_READS = 10_000;
/** Rows at most in a `/lagging` answer. */
const LAGGING_ROWS = 10_000;

/** Called with the partitions whose consumption point moved (retention candidates). */
export type CursorMoved = (p: PartitionState) => void;

function groupsNamed(engine: Engine, name: string): GroupState[] {
  const out: GroupState[] = [];
  for (const q of engine.queues.values()) {
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

/** One row of `GET /api/v1/consumer-groups/lagging` (`timeLagSeconds` in s, times ISO-8601). */
export interface LaggingRow {
  consumerGroup: string;
  queueName: string;
  partition: string;
  partitionId: string;
  offsetLag: number;
  timeLagSeconds: number;
  oldestUnconsumedAt: string;
  leaseActive: boolean;
}

/** A group's cursor on one partition, in a group's detail (`timeLagSeconds` in s). */
export interface GroupPartitionRow {
  partition: string;
  partitionId: string;
  nextOffset: number;
  headOffset: number;
  offsetLag: number;
  timeLagSeconds: number;
  leaseActive: boolean;
  leaseExpiresAt: string | null;
  retryCount: number;
  totalConsumed: number;
}

/** `GET /api/v1/consumer-groups/:group`: the group's lag and cursors, by queue name. */
export interface GroupDetail {
  name: string;
  queues: Record<string, LagView & { state: GroupHealth; partitions: GroupPartitionRow[] }>;
}

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
export function listGroups(engine: Engine, now: number): GroupRow[] {
  const rows: GroupRow[] = [];
  let budget = TIME_LAG_READS;
  for (const q of engine.queues.values()) {
    for (const g of q.groups.values()) {
      const s = groupLagSummary(engine, g, now, budget);
      budget = Math.max(0, budget - s.partitionsWithLag);
      const v = lagView(s, now);
      rows.push({
        ...v, topics: [q.name], queueName: q.name, members: s.activeLeases,
        state: state(v.maxTimeLag, s.cursors),
      });
    }
  }
  rows.sort((a, b) => a.name.localeCompare(b.name) || a.queueName.localeCompare(b.queueName));
  return rows;
}

/** `GET /api/v1/consumer-groups/lagging`: partitions whose oldest unconsumed message is older than `minLagSeconds`. */
export function laggingPartitions(engine: Engine, minLagSeconds: number, now: number): LaggingRow[] {
  const rows: LaggingRow[] = [];
  const cutoff = now - minLagSeconds * 1000;
  for (const q of engine.queues.values()) {
    for (const g of q.groups.values()) {
      for (const p of q.partitions.values()) {
        if (rows.length >= LAGGING_ROWS) return rows;
        const l = partitionLag(engine, g, p, now);
        if (l.lag === 0) continue;
        // Cheap filter first: a partition whose newest message is younger than the cutoff may still lag.
        const at = engine.store.ops.createdAtFrom(p.pk, l.position);
        if (at === undefined || at > cutoff) continue;
        rows.push({
          consumerGroup: g.name, queueName: q.name, partition: p.name, partitionId: p.id, offsetLag: l.lag,
          timeLagSeconds: Math.floor((now - at) / 1000), oldestUnconsumedAt: iso(at), leaseActive: l.leaseActive,
        });
      }
    }
  }
  return rows;
}

/**
 * `GET /api/v1/consumer-groups/:group`: per queue, the group's lag and its cursors.
 * @throws QueenError `group_not_found`
 */
export function groupDetail(engine: Engine, name: string, now: number): GroupDetail {
  const groups = groupsNamed(engine, name);
  if (groups.length === 0) throw new QueenError('group_not_found', `Consumer group not found: ${name}`);
  const queues: GroupDetail['queues'] = {};
  for (const g of groups) {
    const s = groupLagSummary(engine, g, now, TIME_LAG_READS);
    const partitions: GroupPartitionRow[] = [];
    for (const [pk, c] of g.cursors) {
      const p = engine.partitionsByPk.get(pk);
      if (!p || !c.materialized) continue;
      const l = partitionLag(engine, g, p, now);
      const at = l.lag > 0 ? engine.store.ops.createdAtFrom(p.pk, l.position) : undefined;
      partitions.push({
        partition: p.name, partitionId: p.id, nextOffset: l.position, headOffset: p.headOffset, offsetLag: l.lag,
        timeLagSeconds: at === undefined ? 0 : Math.max(0, Math.floor((now - at) / 1000)), leaseActive: l.leaseActive,
        leaseExpiresAt: isoOrNull(l.leaseExpiresAt), retryCount: c.retryCount, totalConsumed: Math.max(0, l.position - p.firstOffset),
      });
    }
    partitions.sort((a, b) => a.partition.localeCompare(b.partition));
    const v = lagView(s, now);
    queues[g.queue.name] = { ...v, state: state(v.maxTimeLag, s.cursors), partitions };
  }
  return { name, queues };
}

/** Drops every lease of `g` and forgets its cursors in memory (rows deleted by the caller). */
function resetGroup(engine: Engine, g: GroupState): void {
  engine.forgetGroupState(g);
}

/** Re-fills `g`'s ready set from the subscription (cursors were dropped) and wakes consumers after commit. */
function reseed(engine: Engine, tx: StoreTx, g: GroupState, now: number): void {
  const ready: PartitionState[] = [];
  for (const p of g.queue.partitions.values()) {
    if (engine.maybeReady(g, p, now)) {
      g.ready.add(p);
      ready.push(p);
    }
  }
  if (ready.length > 0) tx.afterCommit(() => { for (const p of ready) engine.markReady(g, p); });
}

/**
 * Deletes a group's cursors (and leases) on one queue or all, and its subscription metadata when
 * `deleteMetadata`; the next pop registers it afresh.
 */
export async function deleteGroup(
  broker: Broker, name: string, queue: string | undefined, deleteMetadata: boolean, moved: CursorMoved,
): Promise<DeleteGroupResult> {
  const engine = broker.engine;
  if (queue !== undefined && !engine.queues.has(queue)) throw new QueenError('queue_not_found');
  const deleted = await broker.run((tx) => {
    const now = broker.engine.clock.now();
    let n = 0;
    const targets = queue === undefined ? groupsNamed(engine, name) : [engine.queues.get(queue)!.groups.get(name)].filter((g): g is GroupState => !!g);
    for (const g of targets) {
      const q = g.queue;
      n += engine.store.ops.deleteGroupCursors(q.pk, name);
      resetGroup(engine, g);
      if (deleteMetadata) {
        tx.deleteSubscription(q.pk, name);
        q.groups.delete(name);
      } else {
        reseed(engine, tx, g, now);
      }
      tx.afterCommit(() => { for (const p of q.partitions.values()) moved(p); });
    }
    return n;
  });
  const base: DeleteGroupResult = { success: true, consumerGroup: name, deletedPartitions: deleted, metadataDeleted: deleteMetadata };
  return queue === undefined ? base : { ...base, queueName: queue };
}

/** Where to move a group's cursor. */
export type SeekTarget = { toEnd: true } | { timestamp: number };

function seekOne(engine: Engine, tx: StoreTx, g: GroupState, p: PartitionState, target: SeekTarget): number {
  const c = engine.ensureCursor(g, p);
  const to = 'toEnd' in target
    ? p.headOffset
    : engine.store.firstOffsetAfter(p.pk, p.firstOffset, target.timestamp - 1) ?? p.headOffset;
  if (c.leaseId) engine.untrackLease(c.leaseId, g, p);
  c.leaseId = null;
  c.leaseExpiresAt = null;
  c.deliveredUpTo = null;
  c.retryCount = 0;
  c.deliveryCount = 0;
  c.committedOffset = to;
  tx.upsertCursor(c);
  c.materialized = true;
  engine.noteReady(g, p);
  if (to < p.headOffset) {
    g.ready.add(p);
    tx.afterCommit(() => engine.markReady(g, p));
  } else {
    g.ready.delete(p);
  }
  return to;
}

function seekGroup(engine: Engine, tx: StoreTx, q: QueueState, name: string, target: SeekTarget, now: number): GroupState {
  const sub = 'toEnd' in target ? { mode: 'new' } : { from: iso(target.timestamp) };
  return engine.ensureGroup(tx, q, name, sub, now);
}

/**
 * Moves `group`'s cursor on every partition of `queue` (or on `partition` only) to the tail or to
 * the first message created at or after the timestamp; drops its live leases there.
 * @throws QueenError `queue_not_found`, `partition_not_found`
 */
export async function seek(
  broker: Broker, group: string, queue: string, partition: string | undefined, target: SeekTarget, moved: CursorMoved,
): Promise<SeekResult> {
  const engine = broker.engine;
  const q = engine.queues.get(queue);
  if (!q) throw new QueenError('queue_not_found');
  if (partition !== undefined && !q.partitions.has(partition)) {
    throw new QueenError('partition_not_found', undefined, { success: false });
  }
  const result = await broker.run((tx) => {
    const now = broker.engine.clock.now();
    const g = seekGroup(engine, tx, q, group, target, now);
    if (partition !== undefined) {
      const p = q.partitions.get(partition)!;
      const to = seekOne(engine, tx, g, p, target);
      tx.afterCommit(() => moved(p));
      return { updated: 1, to };
    }
    let n = 0;
    for (const p of q.partitions.values()) {
      seekOne(engine, tx, g, p, target);
      n++;
    }
    tx.afterCommit(() => { for (const p of q.partitions.values()) moved(p); });
    return { updated: n, to: undefined };
  });
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
export async function setSubscriptionTimestamp(broker: Broker, group: string, timestamp: number): Promise<SubscriptionResult> {
  const engine = broker.engine;
  const updated = await broker.run((tx) => {
    const now = broker.engine.clock.now();
    const groups = groupsNamed(engine, group);
    for (const g of groups) {
      engine.noteGroup(g);
      g.subscription = { ...g.subscription, mode: 'from', fromTime: timestamp, label: 'timestamp' };
      tx.upsertSubscription(g.subscription);
      for (const [pk, c] of g.cursors) if (!c.materialized) g.cursors.delete(pk); // recomputed from the new cut-off
      reseed(engine, tx, g, now);
    }
    return groups.length;
  });
  return { success: true, consumerGroup: group, newTimestamp: iso(timestamp), rowsUpdated: updated };
}
