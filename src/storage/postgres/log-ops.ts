/**
 * The message operations of the contract (src/storage/contract.ts: append, claim, cursor commit)
 * inside a PostgreSQL transaction (db.ts), on the log/cursor model of design B3 (docs/storage.md#postgresql-backend)
 * (docs/storage.md#postgresql-backend):
 *
 * - append: the partition row is locked (`FOR UPDATE`): it is the per-partition write serialiser
 *   between nodes; offsets are dense from `next_offset`; the dedup probe reads the messages'
 *   `(partition_id, transaction_id)` index within the window.
 * - claim: candidates are one query over the queue's partitions and the group's cursors (something
 *   beyond the cursor, lease free at `now`); each candidate's cursor row is materialised on first
 *   touch and locked with `FOR UPDATE SKIP LOCKED` (a row another node is claiming is skipped, never
 *   waited on), then the lease is granted by a conditional `UPDATE … WHERE lease free`: two nodes
 *   never hold overlapping leases (design B5, docs/storage.md#postgresql-backend).
 * - commit: applied only while the caller's lease holds the cursor and is live at `now`.
 *
 * Times are the caller's `now` (epoch ms), as the contract states; design B7 (docs/storage.md#postgresql-backend) wants the
 * database clock for leases, see docs/storage.md#postgresql-backend for what differs.
 */
import type {
  AppendOutcome, AppendRequest, AppendResult, ClaimRequest, ClaimedBatch, CommitResult, CursorCommit, CursorView,
} from '../contract.js';
import type { MessageRow } from '../store.js';
import { attemptOf, batchAttempts, countDelivery, type DeliveryCounts } from '../attempts.js';
import { randomUUID } from 'node:crypto';
import { UnitRefused } from '../refused.js';
import { namesFromQueue } from '../queue-names.js';
import { clockOf, exec, msToTs, payloadBytes, payloadOf, q, tsToMs, type Row, type Tx } from './db.js';

const MSG_COLS = `"offset", id, transaction_id, trace_id, producer_sub, payload, encrypted, ${tsToMs('created_at')} AS created_ms`;

function messageOf(partitionPk: number, r: Row): MessageRow {
  return {
    partitionPk, offset: r.offset as number, id: r.id as string, transactionId: r.transaction_id as string,
    payload: payloadOf(r.payload as Buffer, r.encrypted as boolean), encrypted: r.encrypted as boolean,
    traceId: (r.trace_id as string | null) ?? null, producerSub: (r.producer_sub as string | null) ?? null, createdAt: r.created_ms as number,
  };
}

/** The delivery counts of a `queen.consumers` row (src/storage/attempts.ts). */
export function countsOf(r: Row): DeliveryCounts {
  return {
    deliveryCount: r.delivery_count as number, attemptSplit: r.attempt_split as number,
    deliveryCountFromSplit: r.delivery_count_from_split as number, deliveredMax: r.delivered_max as number,
  };
}

/** A stored cursor row as the contract shows it. */
export function cursorView(r: Row): CursorView {
  return {
    committedOffset: r.next_offset as number, leaseId: (r.lease_id as string | null) ?? null,
    leaseExpiresAt: (r.lease_expires_at_ms as number | null) ?? null, deliveredUpTo: (r.delivered_up_to as number | null) ?? null,
    retryCount: r.retry_count as number, ...countsOf(r),
  };
}

/** The queue's id, creating the queue when missing. */
export async function ensureQueue(t: Tx, tenant: string, name: string, now: number): Promise<string> {
  const got = await q(t, 'SELECT id FROM queen.queues WHERE tenant_id = $1 AND name = $2', [tenant, name]);
  if (got[0]) return got[0].id as string;
  const names = namesFromQueue(name);
  await exec(t, `INSERT INTO queen.queues (id, tenant_id, name, namespace, task, created_at) VALUES ($1, $2, $3, $5, $6, ${msToTs('$4')})
                  ON CONFLICT (tenant_id, name) DO NOTHING`, [randomUUID(), tenant, name, now, names.namespace, names.task]);
  return (await q(t, 'SELECT id FROM queen.queues WHERE tenant_id = $1 AND name = $2', [tenant, name]))[0]!.id as string;
}

/** Where an earlier append stored a message of the same `transactionId`. */
export interface StoredDuplicate { offset: number; messageId: string }

/**
 * The messages of `partitionId` stored within `req.dedupWindowMs` (ms) before `req.now` whose
 * `transactionId` one of `req.items` repeats, by transaction id (the newest of each); empty when
 * the queue has no dedup window.
 */
export async function storedWithin(t: Tx, partitionId: string, req: Pick<AppendRequest, 'dedupWindowMs' | 'items' | 'now'>): Promise<Map<string, StoredDuplicate>> {
  const stored = new Map<string, StoredDuplicate>();
  if (req.dedupWindowMs <= 0 || req.items.length === 0) return stored;
  const hits = await q(t, `SELECT DISTINCT ON (transaction_id) transaction_id, "offset", id FROM queen.messages
                            WHERE partition_id = $1 AND transaction_id = ANY($2::text[]) AND created_at >= ${msToTs('$3')}
                            ORDER BY transaction_id, "offset" DESC`, [partitionId, req.items.map((i) => i.transactionId), req.now - req.dedupWindowMs]);
  for (const h of hits) stored.set(h.transaction_id as string, { offset: h.offset as number, messageId: h.id as string });
  return stored;
}

/** The contract's append (see the module comment). */
export async function appendIn(t: Tx, callerReq: AppendRequest, index: number): Promise<AppendResult> {
  const req = { ...callerReq, now: clockOf(t, callerReq.now) };
  const lock = `SELECT p.id, p.next_offset, p.last_message_at_ms FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                 WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 FOR UPDATE OF p`;
  const key = [req.key.tenant, req.key.queue, req.key.partition];
  let p = (await q(t, lock, key))[0];
  if (!p) {
    const queueId = await ensureQueue(t, req.key.tenant, req.key.queue, req.now);
    await exec(t, `INSERT INTO queen.partitions (id, queue_id, name, created_at) VALUES ($1, $2, $3, ${msToTs('$4')})
                    ON CONFLICT (queue_id, name) DO NOTHING`, [randomUUID(), queueId, req.key.partition, req.now]);
    p = (await q(t, lock, key))[0]!;
  }
  const partitionId = p.id as string;
  let head = p.next_offset as number;
  const start = head;
  const createdAt = Math.max(req.now, (p.last_message_at_ms as number | null) ?? 0);
  const stored = await storedWithin(t, partitionId, req);
  const seen = new Map<string, StoredDuplicate>();
  const cols = { offset: [] as number[], id: [] as string[], txn: [] as string[], trace: [] as (string | null)[], sub: [] as (string | null)[], payload: [] as Buffer[], enc: [] as boolean[] };
  const outcomes: AppendOutcome[] = req.items.map((it, k) => {
    if (req.dedupWindowMs > 0) {
      const dup = seen.get(it.transactionId) ?? stored.get(it.transactionId);
      if (dup) {
        if (req.refuseDuplicates) throw new UnitRefused(index, k);
        return { status: 'duplicate', ...dup };
      }
    }
    const offset = head++;
    cols.offset.push(offset); cols.id.push(it.messageId); cols.txn.push(it.transactionId); cols.trace.push(it.traceId);
    cols.sub.push(it.producerSub); cols.payload.push(payloadBytes(it.payload)); cols.enc.push(it.encrypted);
    seen.set(it.transactionId, { offset, messageId: it.messageId });
    return { status: 'queued', offset, messageId: it.messageId };
  });
  if (head !== start) {
    await exec(t, `INSERT INTO queen.messages (partition_id, "offset", id, transaction_id, trace_id, producer_sub, payload, encrypted, created_at)
                   SELECT $1, u.o, u.i, u.t, u.tr, u.ps, u.pl, u.e, ${msToTs('$9')}
                     FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::boolean[]) AS u(o, i, t, tr, ps, pl, e)`,
    [partitionId, cols.offset, cols.id, cols.txn, cols.trace, cols.sub, cols.payload, cols.enc, createdAt]);
    await exec(t, `UPDATE queen.partitions SET next_offset = $2, last_message_at_ms = $3, last_activity_ms = GREATEST(last_activity_ms, $3)
                    WHERE id = $1`, [partitionId, head, createdAt]);
    t.hints.push({ tenant: req.key.tenant, queue: req.key.queue, partitions: [req.key.partition], visibleAt: null });
  }
  return { partitionId, outcomes, headOffset: head };
}

interface Subscription { mode: string; fromTime: number | null }

/**
 * How far before a group's last empty scan a partition's activity must be to be looked at again,
 * ms: covers appends committing during the scan and clock differences between processes.
 */
export const WATERMARK_MARGIN_MS = 120_000;

/**
 * The claim's candidate query (design B5, docs/storage.md#postgresql-backend). Params: $1 queue id,
 * $2 group, $3 now (ms), $4 the subscription's fromTime (null for `all`), $5 limit, $6 the pinned
 * partition's name, or else the activity floor (the watermark less the margin; MIN_SAFE_INTEGER
 * before the first empty scan). Unpinned, it reads only partitions active since the floor
 * (`partitions_scan`) plus the group's expired leases (`consumers_expiry`): O(recent activity).
 */
export function candidateSql(pinned: boolean): string {
  const source = pinned
    ? 'SELECT * FROM queen.partitions WHERE queue_id = $1 AND name = $6'
    : `SELECT * FROM queen.partitions WHERE queue_id = $1 AND last_activity_ms >= $6
       UNION
       SELECT p.* FROM queen.consumers e JOIN queen.partitions p ON p.id = e.partition_id
        WHERE e.consumer_group = $2 AND e.lease_id IS NOT NULL AND e.lease_expires_at_ms <= $3 AND p.queue_id = $1`;
  return `
    SELECT p.id, p.pk, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, c.partition_id IS NOT NULL AS has_cursor
      FROM (${source}) p
      LEFT JOIN queen.consumers c ON c.partition_id = p.id AND c.consumer_group = $2
     WHERE p.next_offset > GREATEST(COALESCE(c.next_offset, p.first_offset), p.first_offset)
       AND (c.partition_id IS NOT NULL OR $4::bigint IS NULL OR p.last_message_at_ms > $4::bigint)
       AND (c.lease_expires_at_ms IS NULL OR c.lease_expires_at_ms <= $3)
     ORDER BY p.last_message_at_ms, p.pk
     LIMIT $5`;
}

/** Moves a group's watermark on a queue to an empty scan's time. Params: $1 queue id, $2 queue name, $3 group, $4 scan time (epoch ms). */
export const EMPTY_SCAN_SQL = `INSERT INTO queen.consumer_watermarks (queue_id, queue_name, consumer_group, last_empty_scan_at, updated_at) VALUES ($1, $2, $3, ${msToTs('$4')}, ${msToTs('$4')})
  ON CONFLICT (queue_id, consumer_group) DO UPDATE SET last_empty_scan_at = GREATEST(queen.consumer_watermarks.last_empty_scan_at, EXCLUDED.last_empty_scan_at),
    updated_at = EXCLUDED.updated_at`;

/** Marks a partition active at `now` (a rewind, a release with a rest): unpinned claims look at it again. */
export async function touchPartition(t: Tx, partitionId: string, now: number): Promise<void> {
  await exec(t, 'UPDATE queen.partitions SET last_activity_ms = GREATEST(last_activity_ms, $2) WHERE id = $1', [partitionId, now]);
}

/**
 * Forgets a group's watermarks and claim floors (its start points moved): its next unpinned claims
 * scan every partition once. A floor row is reset (lowest floor, next generation) rather than
 * deleted, so that a claim which read the floor before this cannot write one computed from then.
 */
export async function forgetWatermarks(t: Tx, queueIds: string[], group: string): Promise<void> {
  await exec(t, 'DELETE FROM queen.consumer_watermarks WHERE queue_id = ANY($1::uuid[]) AND consumer_group = $2', [queueIds, group]);
  await exec(t, `INSERT INTO queen.claim_floors (queue_id, consumer_group, floor_ms, gen)
                 SELECT id, $2, ${Number.MIN_SAFE_INTEGER}, 1 FROM unnest($1::uuid[]) AS x(id)
                 ON CONFLICT (queue_id, consumer_group) DO UPDATE SET floor_ms = EXCLUDED.floor_ms, gen = queen.claim_floors.gen + 1`, [queueIds, group]);
}

/** The group's stored subscription on the queue, registered from `req.seed` on first contact. */
async function subscription(t: Tx, queueId: string, req: Pick<ClaimRequest, 'group' | 'seed' | 'conflation' | 'now'>): Promise<Subscription> {
  const read = async () => (await q(t, 'SELECT mode, from_time_ms FROM queen.subscriptions WHERE queue_id = $1 AND consumer_group = $2', [queueId, req.group]))[0];
  let r = await read();
  if (!r) {
    const s = req.seed;
    await exec(t, `INSERT INTO queen.subscriptions (queue_id, consumer_group, mode, from_time_ms, label, conflation, created_at_ms)
                   VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [queueId, req.group, s.mode, s.mode === 'from' ? s.fromTime : null, s.mode === 'from' ? s.label ?? 'timestamp' : 'all', req.conflation, req.now]);
    r = await read();
  }
  return { mode: r!.mode as string, fromTime: (r!.from_time_ms as number | null) ?? null };
}

/** Where a group with no cursor on the partition starts (the subscription's seed point). */
export async function startOffset(t: Tx, sub: Subscription, p: { id: string; first: number; head: number; last: number | null }): Promise<number> {
  if (sub.mode === 'all' || sub.fromTime === null) return p.first;
  if (p.last === null || p.last <= sub.fromTime) return p.head;
  const r = await q(t, `SELECT min("offset") AS o FROM queen.messages WHERE partition_id = $1 AND "offset" >= $2 AND created_at > ${msToTs('$3')}`,
    [p.id, p.first, sub.fromTime]);
  return (r[0]?.o as number | null) ?? p.head;
}

/** The contract's claim (see the module comment). */
export async function claimIn(t: Tx, callerReq: ClaimRequest): Promise<ClaimedBatch[]> {
  const req = { ...callerReq, now: clockOf(t, callerReq.now) };
  const qr = (await q(t, 'SELECT id FROM queen.queues WHERE tenant_id = $1 AND name = $2', [req.queue.tenant, req.queue.queue]))[0];
  if (!qr) return [];
  const queueId = qr.id as string;
  const sub = await subscription(t, queueId, req);
  const fromTime = sub.mode === 'from' ? sub.fromTime : null;
  const pinned = req.partition !== undefined;
  const wm = pinned ? undefined
    : (await q(t, `SELECT ${tsToMs('last_empty_scan_at')} AS at FROM queen.consumer_watermarks WHERE queue_id = $1 AND consumer_group = $2`,
      [queueId, req.group]))[0]?.at as number | undefined;
  const params: unknown[] = [queueId, req.group, req.now, fromTime, req.maxPartitions + 16,
    pinned ? req.partition : wm === undefined ? Number.MIN_SAFE_INTEGER : wm - WATERMARK_MARGIN_MS];
  const candidates = await q(t, candidateSql(pinned), params);
  if (!pinned && candidates.length === 0) {
    await exec(t, EMPTY_SCAN_SQL, [queueId, req.queue.queue, req.group, req.now]);
  }
  const out: ClaimedBatch[] = [];
  let budget = req.batch;
  const later = (partition: string, at: number) =>
    t.hints.push({ tenant: req.queue.tenant, queue: req.queue.queue, partitions: [partition], visibleAt: at });
  for (const [k, p] of candidates.entries()) {
    if (budget <= 0 || out.length >= req.maxPartitions) {
      // more work left: the next waiter is told after the commit
      t.hints.push({ tenant: req.queue.tenant, queue: req.queue.queue, partitions: candidates.slice(k, k + 1).map((r) => r.name as string), visibleAt: null });
      break;
    }
    const id = p.id as string;
    const name = p.name as string;
    const head = p.next_offset as number;
    const first = p.first_offset as number;
    const last = (p.last_message_at_ms as number | null) ?? null;
    if (req.windowMs > 0 && last !== null && last + req.windowMs > req.now) {
      later(name, last + req.windowMs);
      continue;
    }
    let inserted = false;
    if (!(p.has_cursor as boolean)) {
      const from = await startOffset(t, sub, { id, first, head, last });
      inserted = (await exec(t, `INSERT INTO queen.consumers (partition_id, consumer_group, next_offset) VALUES ($1, $2, $3)
                                  ON CONFLICT DO NOTHING`, [id, req.group, from])) > 0;
    }
    const c = (await q(t, `SELECT * FROM queen.consumers WHERE partition_id = $1 AND consumer_group = $2
                             AND (lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $3) FOR UPDATE SKIP LOCKED`, [id, req.group, req.now]))[0];
    if (!c) continue; // another claim holds it now
    const drop = async () => { if (inserted) await exec(t, 'DELETE FROM queen.consumers WHERE partition_id = $1 AND consumer_group = $2', [id, req.group]); };
    const from = Math.max(c.next_offset as number, first);
    let rows = req.conflation
      ? (head - 1 >= from ? await q(t, `SELECT ${MSG_COLS} FROM queen.messages WHERE partition_id = $1 AND "offset" = $2`, [id, head - 1]) : [])
      : await q(t, `SELECT ${MSG_COLS} FROM queen.messages WHERE partition_id = $1 AND "offset" >= $2 ORDER BY "offset" LIMIT $3`, [id, from, budget]);
    if (req.delayMs > 0) {
      const hidden = rows.findIndex((r) => (r.created_ms as number) + req.delayMs > req.now);
      if (hidden === 0) {
        later(name, (rows[0]!.created_ms as number) + req.delayMs);
        await drop();
        continue;
      }
      if (hidden > 0) rows = rows.slice(0, hidden);
    }
    if (rows.length === 0) {
      await drop();
      continue;
    }
    const end = (rows[rows.length - 1]!.offset as number) + 1;
    // Each message's attempt from the counts before, then this delivery of [from, end) counted
    // (src/storage/attempts.ts; a conflating claim counts everything up to the newest).
    const counts = countsOf(c);
    const attempts = batchAttempts(counts, from);
    countDelivery(counts, from, end);
    const n = [counts.deliveryCount, counts.attemptSplit, counts.deliveryCountFromSplit, counts.deliveredMax];
    const granted = req.leaseId === null
      ? await exec(t, `UPDATE queen.consumers SET next_offset = $3, lease_id = NULL, lease_expires_at_ms = NULL, delivered_up_to = $3,
                              retry_count = 0, delivery_count = $4, attempt_split = $5, delivery_count_from_split = $6, delivered_max = $7
                        WHERE partition_id = $1 AND consumer_group = $2 AND (lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $8)`,
      [id, req.group, end, ...n, req.now])
      : await exec(t, `UPDATE queen.consumers SET lease_id = $3, lease_expires_at_ms = $4, delivered_up_to = $5,
                              delivery_count = $6, attempt_split = $7, delivery_count_from_split = $8, delivered_max = $9
                        WHERE partition_id = $1 AND consumer_group = $2 AND (lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $10)`,
      [id, req.group, req.leaseId, req.now + req.leaseMs, end, ...n, req.now]);
    if (granted === 0) continue;
    const pk = p.pk as number;
    out.push({ partition: name, partitionId: id, leaseId: req.leaseId, deliveryAttempt: attemptOf(attempts, rows[0]!.offset as number), attempts,
      messages: rows.map((r) => messageOf(pk, r)) });
    budget -= rows.length;
  }
  return out;
}

/** The partition (with its queue) a cursor key names; undefined when either is missing. */
export async function partitionOf(t: Tx, tenant: string, queue: string, partition: string): Promise<Row | undefined> {
  return (await q(t, `SELECT p.id, p.pk, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, q.id AS queue_id, q.pk AS queue_pk
                        FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                       WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3`, [tenant, queue, partition]))[0];
}

/**
 * The contract's cursor commit (see the module comment).
 * @throws UnitRefused when the lease or offset condition fails (the caller rolls the transaction back)
 */
export async function commitIn(t: Tx, callerCommit: CursorCommit, index: number): Promise<CommitResult> {
  const c = { ...callerCommit, now: clockOf(t, callerCommit.now) };
  const { tenant, queue, partition, group } = c.key;
  const p = await partitionOf(t, tenant, queue, partition);
  const lockCursor = async (id: unknown) => (await q(t, 'SELECT * FROM queen.consumers WHERE partition_id = $1 AND consumer_group = $2 FOR UPDATE', [id, group]))[0];
  let cur = p ? await lockCursor(p.id) : undefined;
  const live = (r: Row | undefined) => r !== undefined && r.lease_id !== null && (r.lease_expires_at_ms as number) > c.now;
  if (c.leaseId !== null && !(live(cur) && cur!.lease_id === c.leaseId)) throw new UnitRefused(index);
  if (!p) return { applied: false, cursor: undefined };
  const subRow = (await q(t, 'SELECT mode, from_time_ms FROM queen.subscriptions WHERE queue_id = $1 AND consumer_group = $2', [p.queue_id, group]))[0];
  if (!subRow) return { applied: false, cursor: undefined };
  const first = p.first_offset as number;
  const head = p.next_offset as number;
  if (!cur) {
    // No cursor yet: create it at the group's start and lock it, so that a cursor another node
    // creates meanwhile (a first claim, then its acks) is the one the conditions below are checked
    // on, instead of being overwritten from a start offset it has moved past.
    const start = await startOffset(t, { mode: subRow.mode as string, fromTime: (subRow.from_time_ms as number | null) ?? null },
      { id: p.id as string, first, head, last: (p.last_message_at_ms as number | null) ?? null });
    await exec(t, `INSERT INTO queen.consumers (partition_id, consumer_group, next_offset, retry_count) VALUES ($1, $2, $3, 0)
                   ON CONFLICT (partition_id, consumer_group) DO NOTHING`, [p.id, group, start]);
    cur = (await lockCursor(p.id))!;
  }
  const at = cur.next_offset as number;
  if (c.ifCommittedOffset !== undefined && Math.max(at, first) !== c.ifCommittedOffset) throw new UnitRefused(index);
  if (c.deadLetter) {
    await exec(t, `INSERT INTO queen.dlq (id, queue_id, queue_pk, queue, partition_pk, partition_id, partition, consumer_group, message_id, transaction_id,
                                          "offset", payload, encrypted, trace_id, producer_sub, error, retry_count, created_at_ms, failed_at_ms)
                   SELECT $1, $2, $3, $4, $5, $6::text, $7, $8, m.id, m.transaction_id, m."offset", m.payload, m.encrypted, m.trace_id, m.producer_sub,
                          $9, $10, ${tsToMs('m.created_at')}, $11
                     FROM queen.messages m WHERE m.partition_id = $6::uuid AND m."offset" = $12`,
    [c.deadLetter.id, p.queue_id, p.queue_pk, queue, p.pk, p.id, partition, group, c.deadLetter.error, c.deadLetter.retryCount, c.now, c.deadLetter.offset]);
  }
  const release = c.release;
  const row = (await q(t, `
    INSERT INTO queen.consumers (partition_id, consumer_group, next_offset, retry_count) VALUES ($1, $2, $3, $4)
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET next_offset = $3, retry_count = $4,
      lease_id = CASE WHEN $5 THEN NULL ELSE queen.consumers.lease_id END,
      lease_expires_at_ms = CASE WHEN $5 THEN NULL ELSE queen.consumers.lease_expires_at_ms END,
      -- a position set back counts afresh, as a seek does (src/storage/attempts.ts)
      delivery_count = CASE WHEN $3 < queen.consumers.next_offset THEN 0 ELSE queen.consumers.delivery_count END,
      attempt_split = CASE WHEN $3 < queen.consumers.next_offset THEN 0 ELSE queen.consumers.attempt_split END,
      delivery_count_from_split = CASE WHEN $3 < queen.consumers.next_offset THEN 0 ELSE queen.consumers.delivery_count_from_split END,
      delivered_max = CASE WHEN $3 < queen.consumers.next_offset THEN 0 ELSE queen.consumers.delivered_max END
    RETURNING *`, [p.id, group, c.committedOffset, c.retryCount, release]))[0]!;
  if (!live(row) && (row.next_offset as number) < head) {
    await touchPartition(t, p.id as string, c.now);
    t.hints.push({ tenant, queue, partitions: [partition], visibleAt: null });
  }
  return { applied: true, cursor: cursorView(row) };
}
