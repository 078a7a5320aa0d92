/**
 * Acknowledgements: the one place that decides ack statuses, the implicit ack of a batch, the
 * retry budget and the dead-letter hand-off (docs/http-api.md#ack-statuses).
 *
 * Planned per (consumer group, partition) without writing, on the contract's ack reads
 * (`QueueBackend.readAckTargets`: one call per request), then applied as the operation
 * contract's cursor commits (src/storage/contract.ts), each conditional on the lease it was
 * decided under and on the cursor offset it was decided on; a transaction refuses the whole unit
 * when any ack is rejected.
 */
import type { AckLookup, AckTarget, CursorCommit, CursorKey, CursorView } from '../../storage/contract.js';
import { newId } from '../../util/ids.js';
import { dlqEnabled } from '../../model/options.js';
import { mapPacked } from '../../util/arrays.js';

export type AckStatus = 'completed' | 'failed' | 'retry' | 'dlq';

/**
 * Wire status → meaning (case-sensitive): absent, `completed`, `success`, `acked`, `ok` complete;
 * `retry` releases without charging; `dlq` dead-letters now; anything else is a failure.
 */
export function normalizeStatus(s: string | null | undefined): AckStatus {
  if (s === undefined || s === null) return 'completed';
  if (s === 'completed' || s === 'success' || s === 'acked' || s === 'ok') return 'completed';
  if (s === 'retry') return 'retry';
  if (s === 'dlq') return 'dlq';
  return 'failed';
}

const PRIORITY: Record<AckStatus, number> = { dlq: 3, failed: 2, retry: 1, completed: 0 };

export interface AckInput {
  transactionId: string;
  partitionId: string;
  status?: string | null | undefined;
  error?: string | null | undefined;
  /** Validated only when non-empty. */
  leaseId?: string | null | undefined;
  group: string;
}

/** Per-item answer (docs/http-api.md#ack). */
export interface AckOutcome {
  index: number;
  transactionId: string;
  success: boolean;
  error: string | null;
  leaseReleased: boolean;
  dlq: boolean;
  noop: boolean;
  /** The acked message's queue and partition names, null when the partition is unknown (as the reference's ack answer). */
  queueName: string | null;
  partitionName: string | null;
}

interface CursorPlan {
  key: CursorKey;
  /** The cursor the plan was decided on. */
  cursor: CursorView;
  committedOffset: number;
  release: boolean;
  retryCount: number;
  /** The live lease the acks named (the commit is conditional on it), or null. */
  leaseId: string | null;
  /** Head message to dead-letter (or drop when `dlq` is false) with this reason. */
  deadLetter?: { offset: number; error: string; toDlq: boolean };
}

export interface AckPlan {
  outcomes: AckOutcome[];
  cursors: CursorPlan[];
}

function outcome(index: number, transactionId: string, success: boolean, error: string | null, noop = false): AckOutcome {
  return { index, transactionId, success, error, leaseReleased: false, dlq: false, noop, queueName: null, partitionName: null };
}

/** Acks grouped per (consumer group, partition): the lookups to read and, per lookup, the input indexes. */
export interface AckGroups {
  lookups: AckLookup[];
  indexes: number[][];
}

/** Groups `inputs` per (consumer group, partitionId), in first-seen order. */
export function groupAcks(inputs: readonly AckInput[]): AckGroups {
  const byKey = new Map<string, number>();
  const lookups: AckLookup[] = [];
  const indexes: number[][] = [];
  inputs.forEach((a, i) => {
    const k = `${a.group}\u0000${a.partitionId}`;
    let at = byKey.get(k);
    if (at === undefined) {
      at = lookups.length;
      byKey.set(k, at);
      lookups.push({ partitionId: a.partitionId, group: a.group, transactionIds: [] });
      indexes.push([]);
    }
    lookups[at]!.transactionIds.push(a.transactionId);
    indexes[at]!.push(i);
  });
  return { lookups, indexes };
}

/**
 * Plans `inputs` (no writes) on `targets`, the contract's answer to `groups.lookups`. Every item
 * gets an outcome; rejected items never move a cursor.
 */
export function planAcks(inputs: readonly AckInput[], groups: AckGroups, targets: readonly (AckTarget | undefined)[], now: number): AckPlan {
  const outcomes: AckOutcome[] = new Array<AckOutcome>(inputs.length);
  const cursors: CursorPlan[] = [];
  groups.indexes.forEach((indexes, k) => {
    const first = inputs[indexes[0]!]!;
    const t = targets[k];
    if (!t) {
      for (const i of indexes) outcomes[i] = outcome(i, inputs[i]!.transactionId, false, `unresolvable partitionId ${first.partitionId}`);
      return;
    }
    if (!t.cursor) {
      for (const i of indexes) outcomes[i] = outcome(i, inputs[i]!.transactionId, false, `consumer group ${first.group} has not consumed this queue`);
    } else {
      const plan = planPartition(t, t.cursor, first, inputs, indexes, outcomes, now);
      if (plan) cursors.push(plan);
    }
    for (const i of indexes) {
      outcomes[i]!.queueName = t.queue.queue;
      outcomes[i]!.partitionName = t.partition;
    }
  });
  return { outcomes, cursors };
}

function leaseLive(c: CursorView, now: number): boolean {
  return c.leaseId !== null && c.leaseExpiresAt !== null && c.leaseExpiresAt > now;
}

function planPartition(
  t: AckTarget, c: CursorView, first: AckInput, inputs: readonly AckInput[], indexes: number[], outcomes: AckOutcome[], now: number,
): CursorPlan | undefined {
  const live = leaseLive(c, now);
  const pending: { i: number; offset: number; status: AckStatus }[] = [];
  let leaseId: string | null = null;
  for (let k = 0; k < indexes.length; k++) {
    const i = indexes[k]!;
    const a = inputs[i]!;
    const status = normalizeStatus(a.status);
    if (a.leaseId && !(live && c.leaseId === a.leaseId)) {
      outcomes[i] = outcome(i, a.transactionId, false, 'Invalid or expired lease');
      continue;
    }
    if (a.leaseId) leaseId = a.leaseId;
    const offset = t.offsets[k];
    if (offset === undefined) {
      outcomes[i] = outcome(i, a.transactionId, false, `unresolvable transactionId ${a.transactionId} in partition ${first.partitionId}`);
      continue;
    }
    if (offset < c.committedOffset) {
      outcomes[i] = status === 'completed'
        ? outcome(i, a.transactionId, true, null, true)
        : outcome(i, a.transactionId, false, `already committed: ${a.transactionId} is behind the group's cursor`);
      continue;
    }
    pending.push({ i, offset, status });
  }
  if (pending.length === 0) return undefined;

  const plan: CursorPlan = { key: { tenant: t.queue.tenant, queue: t.queue.queue, partition: t.partition, group: first.group }, cursor: c, committedOffset: c.committedOffset, release: false, retryCount: c.retryCount, leaseId };
  const nacks = pending.filter((x) => x.status !== 'completed');
  let dlqIndex = -1;
  if (nacks.length > 0) {
    let head = nacks[0]!;
    for (const n of nacks) {
      if (n.offset < head.offset || (n.offset === head.offset && PRIORITY[n.status] > PRIORITY[head.status])) head = n;
    }
    plan.committedOffset = head.offset;
    plan.release = c.leaseId !== null;
    const errorText = inputs[head.i]!.error ?? null;
    const limit = t.options.retryLimit;
    if (head.status === 'dlq' || (head.status === 'failed' && c.retryCount >= limit)) {
      const toDlq = head.status === 'dlq' || dlqEnabled(t.options);
      plan.deadLetter = { offset: head.offset, error: errorText ?? 'Retries exhausted', toDlq };
      plan.committedOffset = head.offset + 1;
      plan.retryCount = 0;
      if (toDlq) dlqIndex = head.i;
    } else if (head.status === 'failed') {
      plan.retryCount = c.retryCount + 1;
    }
  } else {
    let highest = pending[0]!.offset;
    for (const x of pending) if (x.offset > highest) highest = x.offset;
    plan.committedOffset = Math.max(c.committedOffset, highest + 1);
    if (live && c.deliveredUpTo !== null) {
      if (plan.committedOffset >= c.deliveredUpTo) {
        plan.release = true;
        plan.retryCount = 0;
      }
    } else {
      plan.release = c.leaseId !== null; // clear an expired lease's leftovers
      plan.retryCount = 0;
    }
  }
  for (const x of pending) {
    const o = outcome(x.i, inputs[x.i]!.transactionId, true, null);
    o.leaseReleased = plan.release;
    o.dlq = x.i === dlqIndex;
    outcomes[x.i] = o;
  }
  return plan;
}

/**
 * The cursor commits of a plan: each applies only under the lease its acks named and while the
 * cursor is still where the plan read it.
 * @param now epoch ms
 */
export function ackCommits(plan: AckPlan, now: number): CursorCommit[] {
  return mapPacked(plan.cursors, (cp) => {
    const c = cp.cursor;
    return {
      key: cp.key,
      leaseId: cp.leaseId, ifCommittedOffset: c.committedOffset, committedOffset: cp.committedOffset, retryCount: cp.retryCount,
      release: cp.release,
      deadLetter: cp.deadLetter?.toDlq ? { id: newId(), offset: cp.deadLetter.offset, error: cp.deadLetter.error, retryCount: c.retryCount } : undefined,
      now,
    };
  });
}

/**
 * The targets of `tenant` only: a partition of another tenant reads as unknown, so an ack or a
 * transaction naming another tenant's partition id is refused like an unknown one (docs/proxy.md#tenancy).
 */
export function ownTargets<T extends { queue: { tenant: string } } | undefined>(targets: T[], tenant: string): (T | undefined)[] {
  return mapPacked(targets, (t) => (t !== undefined && t.queue.tenant !== tenant ? undefined : t));
}
