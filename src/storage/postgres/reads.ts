/**
 * The planning reads of the contract (src/storage/contract.ts `QueueBackend.readPopTargets`,
 * `readAckTargets`, `leaseHeld`) on PostgreSQL (docs/storage.md#postgresql-backend): what the
 * domain decides a pop or an ack on, read in one transaction each (READ COMMITTED, db.ts). The
 * decision comes back as a unit or a conditional write that checks again what it relied on
 * (docs/storage.md#operation-contract).
 */
import type { AckLookup, AckTarget, GroupSubscription, PopSelector, PopTarget } from '../contract.js';
import { configOf } from './queue-row.js';
import { tsToMs, type PgDb, type Row } from './db.js';
import { cursorView, startOffset } from './log-ops.js';
import { NO_DELIVERIES } from '../attempts.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The public ids among `ids` that can name a partition (partition ids are lowercase UUIDs; any
 * other string names none, and must not reach a `uuid` parameter, where it would be an error).
 */
export function partitionIdsOf(ids: readonly string[]): string[] {
  return ids.filter((id) => UUID.test(id));
}

/** A stored subscription row as the contract shows it. */
function subscriptionOf(r: Row): GroupSubscription {
  const fromTime = (r.from_time_ms as number | null) ?? null;
  return {
    seed: r.mode === 'all' || fromTime === null ? { mode: 'all' } : { mode: 'from', fromTime, label: r.label as string },
    conflation: r.conflation as boolean,
  };
}

/**
 * The queues of `tenant` a pop of `group` looks at (contract `readPopTargets`): the named queue, or
 * those whose namespace and/or task equal the selector's (a selector naming neither matches nothing).
 */
export function readPopTargets(db: PgDb, tenant: string, group: string, selector: PopSelector): Promise<PopTarget[]> {
  let where: string;
  let params: unknown[];
  if ('queue' in selector) {
    where = 'q.name = $3';
    params = [tenant, group, selector.queue];
  } else {
    const { namespace, task } = selector;
    if (!namespace && !task) return Promise.resolve([]);
    where = '($3::text IS NULL OR q.namespace = $3::text) AND ($4::text IS NULL OR q.task = $4::text)';
    params = [tenant, group, namespace || null, task || null];
  }
  return db.rows(`
    SELECT q.id, q.name, q.namespace, q.task, q.options, s.mode, s.from_time_ms, s.label, s.conflation, s.queue_id IS NOT NULL AS subscribed
      FROM queen.queues q LEFT JOIN queen.subscriptions s ON s.queue_id = q.id AND s.consumer_group = $2
     WHERE q.tenant_id = $1 AND ${where}`, params)
    .then((rows) => rows.map((r): PopTarget => ({ queue: r.name as string, config: configOf(r), subscription: r.subscribed ? subscriptionOf(r) : undefined })));
}

/**
 * One ack lookup in one statement (one snapshot): the partition with its queue, the group's
 * subscription and cursor, and the newest offset of each transaction id asked for.
 */
const ACK_TARGET = `
  SELECT p.id, p.name, p.next_offset AS head, p.first_offset, p.last_message_at_ms, q.id AS queue_id, q.tenant_id, q.name AS queue,
         q.namespace, q.task, q.options, s.queue_id IS NOT NULL AS subscribed, s.mode, s.from_time_ms,
         c.partition_id IS NOT NULL AS has_cursor, c.next_offset, c.lease_id, c.lease_expires_at_ms, c.delivered_up_to, c.retry_count, c.delivery_count,
         c.attempt_split, c.delivery_count_from_split, c.delivered_max,
         (SELECT COALESCE(json_agg(json_build_array(x.transaction_id, x.o)), '[]'::json)
            FROM (SELECT transaction_id, max("offset") AS o FROM queen.messages
                   WHERE partition_id = p.id AND transaction_id = ANY($3::text[]) GROUP BY transaction_id) x) AS found
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    LEFT JOIN queen.subscriptions s ON s.queue_id = q.id AND s.consumer_group = $2
    LEFT JOIN queen.consumers c ON c.partition_id = p.id AND c.consumer_group = $2
   WHERE p.id = $1`;

/** One ack lookup (see {@link readAckTargets}). */
async function ackTarget(db: PgDb, l: AckLookup): Promise<AckTarget | undefined> {
  if (partitionIdsOf([l.partitionId]).length === 0) return undefined;
  const p = (await db.named({ name: 'queen_ack_target', text: ACK_TARGET, values: [l.partitionId, l.group, l.transactionIds] })).rows[0] as Row | undefined;
  if (!p) return undefined;
  const base = {
    queue: { tenant: p.tenant_id as string, queue: p.queue as string }, partition: p.name as string,
    options: configOf(p).options,
  };
  if (!(p.subscribed as boolean)) return { ...base, cursor: undefined, offsets: [] };
  const first = p.first_offset as number;
  const cursor = p.has_cursor
    ? { ...cursorView(p), committedOffset: Math.max(p.next_offset as number, first) } // retention removed what it pointed at
    : {
      committedOffset: await db.tx((t) => startOffset(t, { mode: p.mode as string, fromTime: (p.from_time_ms as number | null) ?? null },
        { id: p.id as string, first, head: p.head as number, last: (p.last_message_at_ms as number | null) ?? null })),
      leaseId: null, leaseExpiresAt: null, deliveredUpTo: null, retryCount: 0, ...NO_DELIVERIES,
    };
  const found = new Map((p.found as [string, number][]).map(([id, o]) => [id, o]));
  return { ...base, cursor, offsets: l.transactionIds.map((id) => found.get(id)) };
}

/**
 * Ack planning reads (contract `readAckTargets`), one per lookup, in order, one statement each
 * (each a consistent snapshot; the commit re-checks what the plan relied on):
 * undefined for an unknown partition id; no cursor and no offsets for a group not registered on
 * the queue; the cursor at the group's start position when it has none on the partition yet.
 */
export async function readAckTargets(db: PgDb, lookups: AckLookup[]): Promise<(AckTarget | undefined)[]> {
  const out: (AckTarget | undefined)[] = [];
  for (const l of lookups) out.push(await ackTarget(db, l));
  return out;
}

/** True when `leaseId` holds a cursor whose lease is live at `now` (epoch ms; the database clock when the backend follows it). */
export function leaseHeld(db: PgDb, leaseId: string, now: number): Promise<boolean> {
  return db.rows(`SELECT 1 FROM queen.consumers WHERE lease_id = $1 AND lease_expires_at_ms > COALESCE($2::bigint, ${tsToMs('now()')}) LIMIT 1`,
    [leaseId, db.clock === 'database' ? null : now]).then((r) => r.length > 0);
}
