/**
 * The atomic commit of one stream cycle (docs/streams.md#cycle): state operations, sink pushes
 * through the normal push path (dedup, encryption of an `encryptionEnabled` sink, wake-ups) and the
 * source ack, as ONE unit of the operation contract (src/storage/contract.ts). Decided first on
 * committed state; the unit's cursor commit is conditional on the lease and the cursor offset it
 * was decided on, so a unit refused because they changed is decided again (and then answers
 * `Invalid or expired lease`). A replayed cycle after a lost answer therefore never emits twice:
 * a full ack released the lease; a gate ack names the last message it acks (`ack.transactionId`),
 * already behind the cursor on a replay. A window is emitted once: the deletes of a cycle that
 * pushes must still find their rows (the SDK deletes only rows it read, so a missing one means
 * another cycle, an idle flush or the main loop, closed that window first), and an idle-flush
 * cycle's sink messages carry deterministic transaction ids (flush-ids.ts).
 */
import { QueenError } from '../../errors.js';
import type { AckTarget, AppendResult, QueueBackend, StreamStateOp, StreamStateRow, UnitOp } from '../../storage/contract.js';
import { stringifyClientJson, RawJson } from '../../util/json.js';
import { normalizeStatus } from '../messaging/ack.js';
import { planPush, pushAppends, queueOptionsOf, type PushContext, type PushItem } from '../messaging/push.js';
import { flushTransactionIds } from './flush-ids.js';

/** One state operation as the client sent it; `type` is checked here (any other fails the cycle). */
export interface CycleStateOp {
  type: string;
  key: string;
  /** The upsert's value (default `{}`). */
  value?: unknown;
}

/** One sink item, validated: a non-empty queue, the partition (`Default` when absent). */
export interface CyclePushItem {
  queue: string;
  partition: string;
  payload: unknown;
  transactionId?: string | undefined;
}

/** The source ack of a cycle; `status` ok when absent/completed/success/acked/ok. */
export interface CycleAck {
  transactionId?: string | undefined;
  leaseId?: string | undefined;
  status?: string | undefined;
  /** Messages acked (a gate acks exactly this many). */
  count: number;
}

export interface CycleRequest {
  tenant: string;
  queryId: string;
  partitionId: string;
  consumerGroup: string;
  stateOps: CycleStateOp[];
  pushItems: CyclePushItem[];
  /** null = idle-flush cycle (no cursor work). */
  ack: CycleAck | null;
  releaseLease: boolean;
  producerSub: string | null;
}

export interface CyclePushResult {
  queue: string;
  partition: string;
  status: 'queued' | 'duplicate';
  /** First offset written (queued only). */
  baseOffset?: number;
}

export interface CycleAckResult {
  success: boolean;
  count: number;
  lease_released: boolean;
  dlq: false;
}

/** The answer (HTTP 200 whenever the procedure ran); `success:false` means nothing was committed. */
export interface CycleResult {
  success: boolean;
  query_id: string;
  partition_id: string;
  queueName: string | null;
  state_ops_applied: number;
  push_results: CyclePushResult[];
  ack_result: CycleAckResult | null;
  error?: string;
  /** An idle flush deferred (nothing written, `success` true): the partition still has messages in flight. */
  deferred?: string;
}

/** What running a cycle needs from the broker. */
export interface CycleContext extends PushContext {
  readonly backend: QueueBackend;
  now(): number;
  /** True while push maintenance diverts pushes (a cycle that pushes is refused: it cannot be half spooled). */
  pushesDiverted(): boolean;
  /** When the state of (query, partition) was last read on this broker (epoch ms); undefined when not since boot. */
  lastStateRead(queryId: string, partitionId: string): number | undefined;
}

/** Decisions made on a partition at most this many times when the cursor keeps moving under them. */
const ATTEMPTS = 8;

/** The top-level `windowEnd` of a state value when it is a JSON number (docs/streams.md#state-get). */
export function windowEndOf(value: unknown): number | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof RawJson) return null;
  const w = (value as Record<string, unknown>).windowEnd;
  if (typeof w === 'number') return w;
  if (w instanceof RawJson) {
    const n = Number(w.text);
    return /^-?\d/.test(w.text) && Number.isFinite(n) ? n : null;
  }
  return null;
}

function liveLease(t: AckTarget, now: number): boolean {
  const c = t.cursor;
  return !!c && c.leaseId !== null && c.leaseExpiresAt !== null && c.leaseExpiresAt > now;
}

type Decision =
  | { fail: string; queueName: string | null; stateOpsApplied: number }
  | { fail?: undefined; deferred: string; queueName: string }
  | { fail?: undefined; ops: UnitOp[]; appendsAt: number; groups: { queue: string; partition: string; ops: number[] }[]; ack: CycleAckResult | null; queueName: string };

/**
 * Runs one cycle (see the module comment).
 * @returns the answer; `success:false` with `error` when the cycle was refused (nothing written)
 * @throws QueenError `not_found` (the partition is another tenant's), `maintenance_mode`,
 *   `payload_too_large`, `name_too_long`, `invalid_name`, `encryption_unavailable`, `storage_error`
 */
export async function runCycle(ctx: CycleContext, req: CycleRequest): Promise<CycleResult> {
  const base = { query_id: req.queryId, partition_id: req.partitionId };
  if (req.pushItems.length > 0 && ctx.pushesDiverted()) {
    throw new QueenError('maintenance_mode', 'push maintenance is on: stream cycles that push are refused until it is off');
  }
  for (let attempt = 1; ; attempt++) {
    const now = ctx.now();
    const d = await decide(ctx, req, now);
    if (d.fail !== undefined) {
      return { success: false, ...base, queueName: d.queueName, state_ops_applied: d.stateOpsApplied, push_results: [], ack_result: null, error: d.fail };
    }
    if ('deferred' in d) {
      return { success: true, ...base, queueName: d.queueName, state_ops_applied: 0, push_results: [], ack_result: null, deferred: d.deferred };
    }
    const unit = await ctx.backend.unit(d.ops);
    if (unit.committed) {
      const push_results = d.groups.map((g): CyclePushResult => {
        let first: number | undefined;
        for (const i of g.ops) {
          for (const o of (unit.results[d.appendsAt + i] as AppendResult).outcomes) if (o.status === 'queued' && first === undefined) first = o.offset;
        }
        return first === undefined ? { queue: g.queue, partition: g.partition, status: 'duplicate' } : { queue: g.queue, partition: g.partition, status: 'queued', baseOffset: first };
      });
      return { success: true, ...base, queueName: d.queueName, state_ops_applied: req.stateOps.length, push_results, ack_result: d.ack };
    }
    if (unit.failedIndex === 0) {
      // the state rider: the query went away, or an idle-flush delete found its row gone
      const gone = !await ctx.backend.streams.query(req.tenant, req.queryId);
      const error = gone ? 'query not found' : 'window already emitted: a state row this cycle deletes no longer exists';
      return { success: false, ...base, queueName: d.queueName, state_ops_applied: 0, push_results: [], ack_result: null, error };
    }
    if (attempt >= ATTEMPTS) throw new QueenError('storage_error', `stream cycle kept racing other commits (${ATTEMPTS} attempts)`);
  }
}

/**
 * The windows an idle-flush cycle closes: per deleted key, the key and the stored row's
 * `windowStart` / `sessionStart` (the SDK's session key is the same for every session of a key;
 * its start tells them apart).
 */
function windowIdentities(rows: readonly StreamStateRow[], deleted: string[]): string[] {
  const start = new Map<string, string>();
  for (const r of rows) {
    try {
      const v = JSON.parse(r.value) as unknown; // only hashed: a number's precision does not matter here
      const o = v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {};
      start.set(r.key, JSON.stringify([o.windowStart ?? null, o.sessionStart ?? null]));
    } catch {
      // stored values are valid JSON; an unreadable one identifies by key alone
    }
  }
  return deleted.map((k) => `${k}\u001e${start.get(k) ?? ''}`);
}

/** Decides a cycle on committed state (no writes): the unit to run, or the refusal. */
async function decide(ctx: CycleContext, req: CycleRequest, now: number): Promise<Decision> {
  const b = ctx.backend;
  const [target] = await b.readAckTargets([{ partitionId: req.partitionId, group: req.consumerGroup, transactionIds: req.ack?.transactionId ? [req.ack.transactionId] : [] }]);
  if (target && target.queue.tenant !== req.tenant) throw new QueenError('streams_not_found', 'not found');
  if (!target) return { fail: 'partition not found', queueName: null, stateOpsApplied: 0 };
  const queueName = target.queue.queue;
  if (!await b.streams.query(req.tenant, req.queryId)) return { fail: 'query not found', queueName, stateOpsApplied: 0 };

  // state operations
  const stateOps: StreamStateOp[] = [];
  for (const [i, s] of req.stateOps.entries()) {
    if (s.type === 'upsert') {
      const value = s.value === undefined ? {} : s.value;
      stateOps.push({ type: 'upsert', key: s.key, value: stringifyClientJson(value), windowEnd: windowEndOf(value) });
    } else if (s.type === 'delete') {
      stateOps.push({ type: 'delete', key: s.key });
    } else {
      return { fail: `Unknown state_op type: ${s.type}`, queueName, stateOpsApplied: i };
    }
  }

  // an idle flush that emits waits until the partition is idle for the group (docs/streams.md#idle-flush)
  const idleFlush = req.ack === null;
  if (idleFlush && req.pushItems.length > 0) {
    const view = await b.readPartition({ tenant: target.queue.tenant, queue: target.queue.queue, partition: target.partition });
    const head = view?.headOffset ?? 0;
    const done = Math.max(target.cursor?.committedOffset ?? 0, view?.firstOffset ?? 0);
    if (done < head) return { deferred: `partition not idle: ${head - done} message(s) not yet committed by ${req.consumerGroup}`, queueName };
  }

  // sink pushes, grouped by (queue, partition) in first-appearance order
  const deleted = stateOps.flatMap((s) => (s.type === 'delete' ? [s.key] : []));
  let derived: string[] = [];
  if (idleFlush && deleted.length > 0 && req.pushItems.length > 0) {
    // the flush emits what it read: refuse to emit it when a row it closes changed since the last state read
    const rows = await b.streams.readState(req.tenant, req.queryId, req.partitionId, { keys: deleted });
    const readAt = ctx.lastStateRead(req.queryId, req.partitionId);
    if (readAt === undefined || rows.some((r) => r.updatedAt >= readAt)) {
      return { deferred: 'state changed since it was read: flush again', queueName };
    }
    derived = flushTransactionIds(req.queryId, req.partitionId, windowIdentities(rows, deleted), req.pushItems.length);
  }
  const order = new Map<string, PushItem[]>();
  req.pushItems.forEach((it, i) => {
    const k = `${it.queue}\u0000${it.partition}`;
    let list = order.get(k);
    if (!list) order.set(k, (list = []));
    list.push({ queue: it.queue, partition: it.partition, payload: it.payload, transactionId: it.transactionId ?? derived[i] });
  });
  const items = [...order.values()].flat();
  const plan = planPush(ctx, await queueOptionsOf(b, items, req.tenant), items, req.producerSub, req.tenant);
  const appends = pushAppends(plan, now);
  for (const a of appends.ops) a.request.key.tenant = req.tenant;
  const groups: { queue: string; partition: string; ops: number[] }[] = [];
  appends.ops.forEach((a, i) => {
    const last = groups[groups.length - 1];
    if (last && last.queue === a.request.key.queue && last.partition === a.request.key.partition) last.ops.push(i);
    else groups.push({ queue: a.request.key.queue, partition: a.request.key.partition, ops: [i] });
  });

  // the source ack
  const commits: UnitOp[] = [];
  let ack: CycleAckResult | null = null;
  if (req.ack) {
    const c = target.cursor;
    if (!c || !liveLease(target, now) || c.leaseId !== req.ack.leaseId) return { fail: 'Invalid or expired lease', queueName, stateOpsApplied: req.stateOps.length };
    const key = { ...target.queue, partition: target.partition, group: req.consumerGroup };
    const commit = { key, leaseId: c.leaseId, ifCommittedOffset: c.committedOffset, now, deadLetter: undefined };
    if (normalizeStatus(req.ack.status) !== 'completed') {
      commits.push({ op: 'commit', request: { ...commit, committedOffset: c.committedOffset, retryCount: c.retryCount, release: true } });
      ack = { success: true, count: 0, lease_released: true, dlq: false };
    } else if (req.releaseLease) {
      if (c.deliveredUpTo === null || c.deliveredUpTo <= c.committedOffset) return { fail: 'no leased batch', queueName, stateOpsApplied: req.stateOps.length };
      commits.push({ op: 'commit', request: { ...commit, committedOffset: c.deliveredUpTo, retryCount: 0, release: true } });
      ack = { success: true, count: req.ack.count, lease_released: true, dlq: false };
    } else {
      const view = await b.readPartition({ tenant: target.queue.tenant, queue: target.queue.queue, partition: target.partition });
      const start = Math.max(c.committedOffset, view?.firstOffset ?? 0);
      const end = Math.min(start + req.ack.count, c.deliveredUpTo ?? view?.headOffset ?? start);
      const named = target.offsets[0];
      if (req.ack.transactionId && named !== undefined && named < c.committedOffset) {
        return { fail: `already committed: ${req.ack.transactionId} is behind the group's cursor`, queueName, stateOpsApplied: req.stateOps.length };
      }
      commits.push({ op: 'commit', request: { ...commit, committedOffset: end, retryCount: c.retryCount, release: false } });
      ack = { success: true, count: end - start, lease_released: false, dlq: false };
    }
  }
  const stateOp: UnitOp = {
    op: 'streamState', tenant: req.tenant, queryId: req.queryId, partitionId: req.partitionId, ops: stateOps,
    requireRows: req.pushItems.length > 0, now,
  };
  return { ops: [stateOp, ...appends.ops, ...commits], appendsAt: 1, groups, ack, queueName };
}
