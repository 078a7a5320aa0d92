/**
 * The operation contract's admin writes (src/storage/contract.ts `AdminSubStore`: group delete,
 * seek, subscription start, retention prune) on the engine's in-memory indexes, inside the running
 * store unit `tx` (EngineBackend runs each as one unit): the rows are written and the indexes
 * changed with their undo records (Engine.inUnit), and parked consumers are told after the commit.
 */
import { iso } from '../../util/time.js';
import { type PartitionKey, type PruneCut, type QueueKey, type SeekTarget } from '../contract.js';
import type { StoreTx } from '../store.js';
import { clearDeliveries } from '../attempts.js';
import type { Engine } from './engine.js';
import type { GroupState, PartitionState, QueueState } from './state.js';

function groupsNamed(e: Engine, tenant: string, name: string, queue: string | undefined): GroupState[] {
  const queues = queue === undefined ? [...e.queues.values()].filter((q) => q.tenant === tenant)
    : [e.queue(tenant, queue)].filter((q): q is QueueState => q !== undefined);
  return queues.map((q) => q.groups.get(name)).filter((g): g is GroupState => g !== undefined);
}

/** Re-fills `g`'s ready set from the subscription (cursors were dropped) and wakes consumers after commit. */
function reseed(e: Engine, tx: StoreTx, g: GroupState, now: number): void {
  const ready: PartitionState[] = [];
  for (const p of g.queue.partitions.values()) {
    if (e.maybeReady(g, p, now)) {
      g.ready.add(p);
      ready.push(p);
    }
  }
  if (ready.length > 0) tx.afterCommit(() => { for (const p of ready) e.markReady(g, p); });
}

function keysOf(q: QueueState): PartitionKey[] {
  return [...q.partitions.values()].map((p) => ({ tenant: q.tenant, queue: q.name, partition: p.name }));
}

/** `AdminSubStore.deleteGroup` (see the contract). */
export function deleteGroupOn(e: Engine, tx: StoreTx, tenant: string, group: string, queue: string | undefined, deleteMetadata: boolean, now: number):
  { cursorsDeleted: number; partitions: PartitionKey[] } {
  let n = 0;
  const partitions: PartitionKey[] = [];
  for (const g of groupsNamed(e, tenant, group, queue)) {
    const q = g.queue;
    n += e.store.ops.deleteGroupCursors(q.pk, group);
    e.forgetGroupState(g);
    if (deleteMetadata) {
      tx.deleteSubscription(q.pk, group);
      q.groups.delete(group);
    } else {
      reseed(e, tx, g, now);
    }
    partitions.push(...keysOf(q));
  }
  return { cursorsDeleted: n, partitions };
}

function seekOne(e: Engine, tx: StoreTx, g: GroupState, p: PartitionState, target: SeekTarget): number {
  const c = e.ensureCursor(g, p);
  const to = 'toEnd' in target
    ? p.headOffset
    : e.store.firstOffsetAfter(p.pk, p.firstOffset, target.timestamp - 1) ?? p.headOffset;
  if (c.leaseId) e.untrackLease(c.leaseId, g, p);
  c.leaseId = null;
  c.leaseExpiresAt = null;
  c.deliveredUpTo = null;
  c.retryCount = 0;
  clearDeliveries(c); // a seek sets the position: what it re-offers is counted afresh
  c.committedOffset = to;
  tx.upsertCursor(c);
  c.materialized = true;
  e.noteReady(g, p);
  if (to < p.headOffset) {
    g.ready.add(p);
    tx.afterCommit(() => e.markReady(g, p));
  } else {
    g.ready.delete(p);
  }
  return to;
}

/** `AdminSubStore.seekGroup` (see the contract). */
export function seekGroupOn(e: Engine, tx: StoreTx, queue: QueueKey, group: string, partition: string | undefined, target: SeekTarget, now: number):
  { partition: string; committedOffset: number }[] | undefined {
  const q = e.queue(queue.tenant, queue.queue);
  if (!q) return undefined;
  if (partition !== undefined && !q.partitions.has(partition)) return undefined;
  const sub = 'toEnd' in target ? { mode: 'new' } : { from: iso(target.timestamp) };
  const g = e.ensureGroup(tx, q, group, sub, now);
  const targets = partition !== undefined ? [q.partitions.get(partition)!] : [...q.partitions.values()];
  return targets.map((p) => ({ partition: p.name, committedOffset: seekOne(e, tx, g, p, target) }));
}

/** `AdminSubStore.setSubscriptionFrom` (see the contract). */
export function setSubscriptionFromOn(e: Engine, tx: StoreTx, tenant: string, group: string, fromTime: number, now: number): number {
  const groups = groupsNamed(e, tenant, group, undefined);
  for (const g of groups) {
    e.noteGroup(g);
    g.subscription = { ...g.subscription, mode: 'from', fromTime, label: 'timestamp' };
    tx.upsertSubscription(g.subscription);
    for (const [pk, c] of g.cursors) if (!c.materialized) g.cursors.delete(pk); // recomputed from the new start
    reseed(e, tx, g, now);
  }
  return groups.length;
}

/** `AdminSubStore.prune` (see the contract). */
export function pruneOn(e: Engine, queue: QueueKey, cuts: PruneCut[]): { partition: string; removed: number; firstOffsetBefore: number }[] {
  const q = e.queue(queue.tenant, queue.queue);
  if (!q) return [];
  const out: { partition: string; removed: number; firstOffsetBefore: number }[] = [];
  for (const cut of cuts) {
    const p = q.partitions.get(cut.partition);
    if (!p) continue;
    const end = Math.min(cut.end, p.headOffset);
    if (end <= p.firstOffset) continue;
    const before = p.firstOffset;
    const removed = e.store.ops.deleteMessagesBelow(p.pk, end);
    e.store.ops.setFirstOffset(p.pk, end);
    e.notePartition(p);
    p.firstOffset = end;
    out.push({ partition: p.name, removed, firstOffsetBefore: before });
  }
  return out;
}
