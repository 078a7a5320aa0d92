/**
 * The hot paths of the PostgreSQL backend in as few round trips as their guarantees allow
 * (docs/storage.md#postgresql-backend): the common pop is two statements and the common ack one,
 * each statement its own transaction (autocommit), where the general code of log-ops.ts takes ten
 * or more round trips in one explicit transaction. Anything outside the common case (first touch
 * of a cursor, conflation, delayed processing, window buffer, dead-lettering, a condition that did
 * not hold) goes to the general code, which decides it exactly as before.
 *
 * Guarantees kept:
 * - a lease is granted only on a cursor row locked with `FOR UPDATE SKIP LOCKED` (a row another
 *   claim holds is skipped, never waited on) and by an `UPDATE … WHERE` the lease is free, in the
 *   same statement: two claims never hold overlapping leases;
 * - an ack applies only while its lease holds the cursor and is live (and, when asked, while the
 *   cursor is where the decision saw it), with the lease release in the same `UPDATE`;
 * - the wake-up hint of an ack that leaves a rest is NOTIFYed after the statement's COMMIT (or, in
 *   notify mode `commit`, by `pg_notify` inside it, delivered after COMMIT); a statement's answer
 *   follows its COMMIT (`synchronous_commit` holds).
 *
 * Statements are named (prepared once per connection: no parse or plan per call).
 */
import type { ClaimRequest, ClaimedBatch, CommitResult, CursorCommit } from '../contract.js';
import type { MessageRow } from '../store.js';
import { attemptOf, batchAttempts } from '../attempts.js';
import { payloadOf, tsToMs, type PgDb, type Row } from './db.js';
import { cursorView, WATERMARK_MARGIN_MS } from './log-ops.js';
import { encodeHints, WAKE_CHANNEL } from './wake.js';

/** SQL: the operation's time in epoch ms: the caller's (`$n`), or the database's `now()` when `$n` is null. */
const nowMs = (param: string) => `COALESCE(${param}::bigint, ${tsToMs('now()')})`;

/** The lowest activity floor: below every activity time. */
const MIN = Number.MIN_SAFE_INTEGER;

/** The largest `bigint`: a position before every pk of one activity time. */
const PK_MAX = '9223372036854775807';

/**
 * The claim's first statement: the queue, the group's subscription, watermark and claim floor, and the
 * candidates: partitions with something beyond the group's cursor and no live lease, walked in
 * (activity, pk) order from a start position (`partitions_scan`, stopping at `$5` found: the cost
 * is the rows skipped, not the partitions of the queue), never below the floor (the watermark less
 * its margin, or the claim floor, whichever is higher: see {@link FLOOR}),
 * plus the group's expired leases on the queue (`consumers_expiry`); pinned, the one partition.
 * One row with a null `id` when there is no candidate; no row when the queue or the group's
 * subscription is missing. Candidates come in scan order, then the expired leases (`src` 1).
 * Params: $1 tenant, $2 group, $3 queue, $4 now (ms, or null: database clock), $5 limit, $6 pinned
 * partition (or null), $7 and $8 the start position (activity ms, pk; exclusive).
 */
const CANDIDATES = `
  WITH h AS (
    SELECT q.id AS queue_id, CASE WHEN s.mode = 'from' THEN s.from_time_ms END AS from_time,
           GREATEST(COALESCE(${tsToMs('w.last_empty_scan_at')} - ${WATERMARK_MARGIN_MS}, ${MIN}), COALESCE(f.floor_ms, ${MIN})) AS floor,
           f.gen AS floor_gen, ${nowMs('$4')} AS now_ms
      FROM queen.queues q
      JOIN queen.subscriptions s ON s.queue_id = q.id AND s.consumer_group = $2
      LEFT JOIN queen.consumer_watermarks w ON w.queue_id = q.id AND w.consumer_group = $2
      LEFT JOIN queen.claim_floors f ON f.queue_id = q.id AND f.consumer_group = $2
     WHERE q.tenant_id = $1 AND q.name = $3)
  SELECT h.queue_id, h.now_ms, h.from_time, h.floor, h.floor_gen, k.*
    FROM h LEFT JOIN LATERAL (
      (SELECT 0 AS src, p.id, p.pk, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, p.last_activity_ms, c.partition_id IS NOT NULL AS has_cursor
         FROM queen.partitions p
         LEFT JOIN queen.consumers c ON c.partition_id = p.id AND c.consumer_group = $2
        WHERE p.queue_id = h.queue_id AND $6::text IS NULL
          AND (p.last_activity_ms, p.pk) > (GREATEST($7::bigint, h.floor - 1), CASE WHEN $7::bigint >= h.floor THEN $8::bigint ELSE ${PK_MAX} END)
          AND p.next_offset > GREATEST(COALESCE(c.next_offset, p.first_offset), p.first_offset)
          AND (c.partition_id IS NOT NULL OR h.from_time IS NULL OR p.last_message_at_ms > h.from_time)
          AND (c.lease_expires_at_ms IS NULL OR c.lease_expires_at_ms <= h.now_ms)
        ORDER BY p.last_activity_ms, p.pk
        LIMIT $5)
      UNION ALL
      (SELECT 1, p.id, p.pk, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, p.last_activity_ms, true
         FROM queen.consumers c JOIN queen.partitions p ON p.id = c.partition_id
        WHERE $6::text IS NULL AND c.consumer_group = $2 AND c.lease_id IS NOT NULL AND c.lease_expires_at_ms <= h.now_ms
          AND p.queue_id = h.queue_id AND p.next_offset > GREATEST(c.next_offset, p.first_offset)
        LIMIT $5)
      UNION ALL
      (SELECT 0, p.id, p.pk, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, p.last_activity_ms, c.partition_id IS NOT NULL
         FROM queen.partitions p
         LEFT JOIN queen.consumers c ON c.partition_id = p.id AND c.consumer_group = $2
        WHERE p.queue_id = h.queue_id AND p.name = $6::text
          AND p.next_offset > GREATEST(COALESCE(c.next_offset, p.first_offset), p.first_offset)
          AND (c.partition_id IS NOT NULL OR h.from_time IS NULL OR p.last_message_at_ms > h.from_time)
          AND (c.lease_expires_at_ms IS NULL OR c.lease_expires_at_ms <= h.now_ms))) k ON true`;

/**
 * The claim's second statement: locks up to `$4` of the candidate cursors (in candidate order,
 * `SKIP LOCKED`, lease free, still behind their partition's head), reads up to `$5` messages across them from each cursor on, and
 * grants the lease (or, for auto-ack, moves the cursor) where the lease is still free, counting the
 * delivery (`queen.count_delivery`, schema.ts). One row per message granted, in candidate then offset
 * order, with its partition's first offset taken (`lo`) and delivery counts before the claim.
 * Params: $1 candidate partition ids (uuid[], in order), $2 group, $3 now (ms, or null), $4 most
 * partitions, $5 batch, $6 lease id (null: auto-ack), $7 lease ms.
 */
const GRANT = `
  WITH t AS (SELECT ${nowMs('$3')} AS now_ms),
  cand AS (SELECT x.id, x.ord FROM unnest($1::uuid[]) WITH ORDINALITY AS x(id, ord)),
  locked AS MATERIALIZED (
    SELECT c.partition_id, c.next_offset, cand.ord, c.delivery_count, c.attempt_split, c.delivery_count_from_split, c.delivered_max
      FROM queen.consumers c JOIN cand ON c.partition_id = cand.id JOIN queen.partitions p ON p.id = c.partition_id
     WHERE c.consumer_group = $2 AND (c.lease_expires_at_ms IS NULL OR c.lease_expires_at_ms <= (SELECT now_ms FROM t))
       AND p.next_offset > GREATEST(c.next_offset, p.first_offset)
     ORDER BY cand.ord
     FOR UPDATE OF c SKIP LOCKED
     LIMIT $4),
  msgs AS (
    SELECT l.partition_id, l.ord, m."offset", m.id, m.transaction_id, m.trace_id, m.producer_sub, m.payload, m.encrypted,
           ${tsToMs('m.created_at')} AS created_ms, row_number() OVER (ORDER BY l.ord, m."offset") AS n
      FROM locked l
      JOIN queen.partitions p ON p.id = l.partition_id
      CROSS JOIN LATERAL (
        SELECT * FROM queen.messages mm
         WHERE mm.partition_id = l.partition_id AND mm."offset" >= GREATEST(l.next_offset, p.first_offset)
         ORDER BY mm."offset" LIMIT $5) m),
  took AS (SELECT * FROM msgs WHERE n <= $5),
  span AS (SELECT partition_id, min("offset") AS lo, max("offset") + 1 AS hi FROM took GROUP BY partition_id),
  counted AS (
    SELECT sp.partition_id, sp.lo, sp.hi, l.delivery_count AS a, l.attempt_split AS s, l.delivery_count_from_split AS b, l.delivered_max AS h,
           nc.delivery_count, nc.attempt_split, nc.delivery_count_from_split, nc.delivered_max
      FROM span sp JOIN locked l ON l.partition_id = sp.partition_id
      CROSS JOIN LATERAL queen.count_delivery(sp.lo, sp.hi, l.delivery_count, l.attempt_split, l.delivery_count_from_split, l.delivered_max) nc),
  granted AS (
    UPDATE queen.consumers c
       SET next_offset = CASE WHEN $6::text IS NULL THEN s.hi ELSE c.next_offset END,
           lease_id = $6::text,
           lease_expires_at_ms = CASE WHEN $6::text IS NULL THEN NULL ELSE (SELECT now_ms FROM t) + $7::bigint END,
           delivered_up_to = s.hi,
           retry_count = CASE WHEN $6::text IS NULL THEN 0 ELSE c.retry_count END,
           delivery_count = s.delivery_count, attempt_split = s.attempt_split,
           delivery_count_from_split = s.delivery_count_from_split, delivered_max = s.delivered_max
      FROM counted s
     WHERE c.partition_id = s.partition_id AND c.consumer_group = $2
       AND (c.lease_expires_at_ms IS NULL OR c.lease_expires_at_ms <= (SELECT now_ms FROM t))
    RETURNING c.partition_id)
  SELECT took.*, k.lo, k.a, k.s, k.b, k.h FROM took JOIN granted g ON g.partition_id = took.partition_id JOIN counted k ON k.partition_id = took.partition_id
   ORDER BY took.ord, took."offset"`;

/**
 * Moves a group's claim floor on a queue up (migration 9): after a walk from the floor found its
 * first candidate at activity A, every partition below A had nothing to claim for the group at the
 * walk's snapshot but those leased (found again by their lease's expiry or, at ack, by the
 * activity bump of a rest), and whatever makes one pending later moves its activity to at least
 * its writer's `now` (log-ops.ts, hot-path.ts {@link COMMIT}). So the floor is min(A, now less the
 * watermark's margin, which covers commits in flight and clocks), as an empty scan's watermark is
 * now less the margin. Written only while the row is the generation the walk read (a seek or a
 * group's deletion resets it to the lowest floor and the next generation), or inserted when the
 * walk saw none, never lowered.
 * Params: $1 queue id, $2 group, $3 new floor (ms), $4 the generation the walk read (null: no row).
 */
const FLOOR = `
  WITH up AS (
    UPDATE queen.claim_floors SET floor_ms = $3
     WHERE $4::bigint IS NOT NULL AND queue_id = $1 AND consumer_group = $2 AND gen = $4::bigint AND floor_ms < $3
    RETURNING 1)
  INSERT INTO queen.claim_floors (queue_id, consumer_group, floor_ms)
  SELECT $1, $2, $3 WHERE $4::bigint IS NULL
  ON CONFLICT (queue_id, consumer_group) DO NOTHING`;

/** How far a claim floor must move before it is written, ms: at most one write per this much time per (queue, group). */
const FLOOR_STEP_MS = 5_000;

/** Where a walk over a queue's partitions in (activity, pk) order stands. */
export interface ScanPosition {
  activity: number;
  pk: number;
}

const START: ScanPosition = { activity: Number.MIN_SAFE_INTEGER, pk: 0 };

/** Per (tenant, queue, group), where this node's last claim stopped its walk; bounded in size. */
export class ScanPositions {
  private readonly map = new Map<string, ScanPosition>();

  constructor(private readonly max = 10_000) {}

  get(key: string): ScanPosition | undefined {
    return this.map.get(key);
  }

  set(key: string, pos: ScanPosition): void {
    this.map.delete(key);
    this.map.set(key, pos);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  private readonly inFlight = new Map<string, number>();

  /** Claims of `key` running now. */
  running(key: string): number {
    return this.inFlight.get(key) ?? 0;
  }

  /** Counts `fn` as a running claim of `key` while it runs. */
  async during<T>(key: string, fn: () => Promise<T>): Promise<T> {
    this.inFlight.set(key, this.running(key) + 1);
    try {
      return await fn();
    } finally {
      const n = this.running(key) - 1;
      if (n > 0) this.inFlight.set(key, n);
      else this.inFlight.delete(key);
    }
  }
}

/**
 * The common claim in two statements, three on a cursor's first touch, one more when the walk
 * from this node's position wraps around (see the module comment);
 * undefined when the general code must take it: conflation, delay or window options, no
 * registered subscription, or a first touch under a timed subscription.
 * @param onEmptyScan called (before returning) when an unpinned scan found no candidate, to move the watermark
 * @param again this is the second look of a claim whose candidates were all taken meanwhile
 */
export async function claimFast(db: PgDb, req: ClaimRequest, positions: ScanPositions,
  onEmptyScan: (queueId: string, now: number) => Promise<void>, again = false): Promise<ClaimedBatch[] | undefined> {
  if (req.conflation || req.delayMs > 0 || req.windowMs > 0) return undefined;
  const callerNow = db.clock === 'database' ? null : req.now;
  const pinned = req.partition ?? null;
  const posKey = JSON.stringify([req.queue.tenant, req.queue.queue, req.group]);
  const limit = req.maxPartitions + 16;
  const scan = async (from: ScanPosition) => db.named({
    name: 'queen_claim_candidates', text: CANDIDATES,
    values: [req.queue.tenant, req.group, req.queue.queue, callerNow, limit, pinned, from.activity, from.pk],
  });
  const from = pinned === null ? positions.get(posKey) ?? START : START;
  let head = await scan(from);
  let firstHead = head;
  let first = head.rows[0] as Row | undefined;
  if (!first) {
    // First contact of the group with the queue: its subscription registered from the request's start point (no
    // cursor rows: they are materialised on first touch), then the walk as usual.
    const s = req.seed;
    await db.named({
      name: 'queen_claim_subscribe',
      text: `INSERT INTO queen.subscriptions (queue_id, consumer_group, mode, from_time_ms, label, conflation, created_at_ms)
             SELECT id, $3, $4, $5, $6, $7, $8 FROM queen.queues WHERE tenant_id = $1 AND name = $2 ON CONFLICT DO NOTHING`,
      values: [req.queue.tenant, req.queue.queue, req.group, s.mode, s.mode === 'from' ? s.fromTime : null,
        s.mode === 'from' ? s.label ?? 'timestamp' : 'all', req.conflation, req.now],
    });
    head = await scan(from);
    firstHead = head;
    first = head.rows[0] as Row | undefined;
    if (!first) return undefined; // no such queue: the general code answers
  }
  const found = (rows: Row[]) => rows.filter((r) => r.id !== null);
  if (from !== START && found(head.rows as Row[]).filter((r) => r.src === 0).length < req.maxPartitions) {
    // The walk reached the end of the queue before it found enough: the rest is before where it started.
    head = await scan(START);
    first = head.rows[0] as Row | undefined;
    if (!first) return undefined;
  }
  const seen = new Set<string>();
  const rows = found(head.rows as Row[]).filter((r) => !seen.has(r.id as string) && seen.add(r.id as string));
  const queueId = first.queue_id as string;
  const walked = rows.find((r) => r.src === 0);
  if (pinned === null && walked && (from === START || head !== firstHead)) {
    // A walk from the floor: nothing below its first candidate to claim (see FLOOR).
    const floor = Math.min(walked.last_activity_ms as number, (first.now_ms as number) - WATERMARK_MARGIN_MS);
    if (floor >= (first.floor as number) + FLOOR_STEP_MS) {
      await db.named({ name: 'queen_claim_floor', text: FLOOR, values: [queueId, req.group, floor, first.floor_gen ?? null] });
    }
  }
  if (rows.length === 0) {
    positions.delete(posKey);
    if (pinned === null) await onEmptyScan(queueId, first.now_ms as number);
    return [];
  }
  // Cursors materialised on first touch for the partitions this claim is about to take: at the
  // log start when the group reads everything (a timed start point is the general code's).
  // On a second look (concurrent first touches took the first ones), at random among the
  // candidates, so that concurrent claims spread over the queue instead of meeting again.
  // Claims of this (queue, group) running on this node at once each get their own: as many first
  // touches as there are claimers, so they do not all meet on the first candidate.
  const share = req.maxPartitions * Math.max(1, positions.running(posKey));
  const fresh = again
    ? rows.filter((r) => !(r.has_cursor as boolean)).map((r) => ({ r, k: Math.random() })).sort((x, y) => x.k - y.k).slice(0, req.maxPartitions).map((x) => x.r)
    : rows.slice(0, share).filter((r) => !(r.has_cursor as boolean));
  if (fresh.length > 0) {
    if (first.from_time !== null) return undefined;
    await db.named({
      name: 'queen_claim_cursors',
      text: `INSERT INTO queen.consumers (partition_id, consumer_group, next_offset)
             SELECT x.id, $2, x.o FROM unnest($1::uuid[], $3::bigint[]) AS x(id, o) ON CONFLICT DO NOTHING`,
      values: [fresh.map((r) => r.id as string), req.group, fresh.map((r) => r.first_offset as number)],
    });
  }
  const got = await db.named({
    name: 'queen_claim_grant', text: GRANT,
    values: [rows.map((r) => r.id as string), req.group, callerNow, req.maxPartitions, req.batch, req.leaseId, req.leaseMs],
  });
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  const out: ClaimedBatch[] = [];
  for (const m of got.rows as Row[]) {
    const pid = m.partition_id as string;
    let batch = out[out.length - 1];
    if (batch?.partitionId !== pid) {
      // the attempts from the counts the row had before this claim (src/storage/attempts.ts)
      const attempts = batchAttempts({ deliveryCount: m.a as number, attemptSplit: m.s as number, deliveryCountFromSplit: m.b as number, deliveredMax: m.h as number }, m.lo as number);
      batch = { partition: byId.get(pid)!.name as string, partitionId: pid, leaseId: req.leaseId, deliveryAttempt: attemptOf(attempts, m.lo as number), attempts, messages: [] };
      out.push(batch);
    }
    const pk = byId.get(pid)!.pk as number;
    batch.messages.push(messageOf(pk, m));
  }
  if (out.length === 0 && !again) {
    // Every candidate was taken by concurrent claims since the scan: look once more, over the whole queue.
    positions.delete(posKey);
    return claimFast(db, req, positions, onEmptyScan, true);
  }
  const taken = new Set(out.map((b) => b.partitionId));
  if (pinned === null) {
    // The next claim of this node walks on from before the first candidate left here (a position
    // is only where to look first: a partition behind it is found when the walk wraps around).
    const scanned = rows.filter((r) => r.src === 0);
    const left = scanned.findIndex((r) => !taken.has(r.id as string));
    const stop = left === -1 ? scanned[scanned.length - 1] : left > 0 ? scanned[left - 1] : undefined;
    if (stop) positions.set(posKey, { activity: stop.last_activity_ms as number, pk: stop.pk as number });
  }
  // More work than this claim took: the next waiter is told (a hint, after the commit).
  const rest = rows.find((r) => !taken.has(r.id as string));
  if (rest && (out.length >= req.maxPartitions || got.rows.length >= req.batch)) {
    db.announce([{ tenant: req.queue.tenant, queue: req.queue.queue, partitions: [rest.name as string], visibleAt: null }]);
  }
  return out;
}

function messageOf(partitionPk: number, r: Row): MessageRow {
  return {
    partitionPk, offset: r.offset as number, id: r.id as string, transactionId: r.transaction_id as string,
    payload: payloadOf(r.payload as Buffer, r.encrypted as boolean), encrypted: r.encrypted as boolean,
    traceId: (r.trace_id as string | null) ?? null, producerSub: (r.producer_sub as string | null) ?? null, createdAt: r.created_ms as number,
  };
}

/**
 * The ack's statement: the cursor moved (and the lease released) only while the lease holds it and
 * is live, the cursor is where the decision saw it, and the group is registered on the queue;
 * when that leaves messages beyond an unleased cursor, the partition's activity is bumped (at most
 * once a second: the claim's watermark margin is two minutes) and the hint NOTIFYed.
 * Params: $1 tenant, $2 queue, $3 partition, $4 group, $5 lease id, $6 now (ms, or null), $7 if
 * committed offset (or null), $8 committed offset, $9 retry count, $10 release, $11 NOTIFY payload.
 */
const COMMIT = `
  WITH t AS (SELECT ${nowMs('$6')} AS now_ms),
  c AS (
    UPDATE queen.consumers c
       SET next_offset = $8, retry_count = $9,
           lease_id = CASE WHEN $10 THEN NULL ELSE c.lease_id END,
           lease_expires_at_ms = CASE WHEN $10 THEN NULL ELSE c.lease_expires_at_ms END
      FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 AND c.partition_id = p.id AND c.consumer_group = $4
       AND c.lease_id = $5 AND c.lease_expires_at_ms > (SELECT now_ms FROM t)
       AND ($7::bigint IS NULL OR GREATEST(c.next_offset, p.first_offset) = $7::bigint)
       AND EXISTS (SELECT 1 FROM queen.subscriptions s WHERE s.queue_id = q.id AND s.consumer_group = $4)
    RETURNING c.*, p.next_offset AS head,
              (c.lease_id IS NULL OR c.lease_expires_at_ms <= (SELECT now_ms FROM t)) AND c.next_offset < p.next_offset AS pending),
  touched AS (
    UPDATE queen.partitions p SET last_activity_ms = (SELECT now_ms FROM t)
      FROM c WHERE p.id = c.partition_id AND c.pending AND p.last_activity_ms < (SELECT now_ms FROM t) - 1000
    RETURNING 1),
  told AS (SELECT pg_notify('${WAKE_CHANNEL}', $11) FROM c WHERE c.pending AND $11::text IS NOT NULL)
  SELECT c.*, (SELECT count(*) FROM touched) AS touched, (SELECT count(*) FROM told)::int AS told FROM c`;

/**
 * The common ack in one statement (see {@link COMMIT}); undefined when the general code must
 * decide it (no lease named, a dead-letter copy, a hint too long for one NOTIFY, or a condition
 * that did not hold: the general code then refuses or applies it exactly).
 */
export async function commitFast(db: PgDb, c: CursorCommit): Promise<CommitResult | undefined> {
  if (c.leaseId === null || c.deadLetter !== undefined) return undefined;
  const { tenant, queue, partition, group } = c.key;
  const hint = { tenant, queue, partitions: [partition], visibleAt: null };
  const payloads = db.notifyMode === 'commit' ? encodeHints(db.serverId, [hint]) : [null];
  if (payloads.length !== 1) return undefined;
  const r = await db.named({
    name: 'queen_ack_commit', text: COMMIT,
    values: [tenant, queue, partition, group, c.leaseId, db.clock === 'database' ? null : c.now, c.ifCommittedOffset ?? null,
      c.committedOffset, c.retryCount, c.release, payloads[0]],
  });
  const row = r.rows[0] as Row | undefined;
  if (!row) return undefined;
  if ((row.told as number) > 0) {
    db.notifySent++;
    db.emit(tenant, queue, [partition], null);
  } else if (row.pending as boolean) {
    db.announce([hint]);
  }
  return { applied: true, cursor: cursorView(row) };
}
