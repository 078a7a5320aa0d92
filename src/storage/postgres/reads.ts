/**
 * The planning reads of the contract (src/storage/contract.ts `QueueBackend.readPopTargets`,
 * `readAckTargets`, `leaseHeld`) on PostgreSQL (docs/storage.md#postgresql-backend): what the
 * domain decides a pop or an ack on, read in one transaction each (READ COMMITTED, db.ts). The
 * decision comes back as a unit or a conditional write that checks again what it relied on
 * (docs/storage.md#operation-contract).
 */
import type { AckLookup, AckTarget, GroupSubscription, PopSelector, PopTarget } from '../contract.js';
import { configOf } from './queue-row.js';
import { clockOf, q, type PgDb, type Row, type Tx } from './db.js';
import { cursorView, startOffset } from './log-ops.js';

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
  return db.tx(async (t) => (await q(t, `
    SELECT q.id, q.name, q.namespace, q.task, q.options, s.mode, s.from_time_ms, s.label, s.conflation, s.queue_id IS NOT NULL AS subscribed
      FROM queen.queues q LEFT JOIN queen.subscriptions s ON s.queue_id = q.id AND s.consumer_group = $2
     WHERE q.tenant_id = $1 AND ${where}`, params))
    .map((r): PopTarget => ({ queue: r.name as string, config: configOf(r), subscription: r.subscribed ? subscriptionOf(r) : undefined })));
}

/** One ack lookup inside `t` (see {@link readAckTargets}). */
async function ackTarget(t: Tx, l: AckLookup): Promise<AckTarget | undefined> {
  if (partitionIdsOf([l.partitionId]).length === 0) return undefined;
  const p = (await q(t, `
    SELECT p.id, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, q.id AS queue_id, q.tenant_id, q.name AS queue, q.namespace, q.task, q.options
      FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.id = $1`, [l.partitionId]))[0];
  if (!p) return undefined;
  const base = {
    queue: { tenant: p.tenant_id as string, queue: p.queue as string }, partition: p.name as string,
    options: configOf(p).options,
  };
  const sub = (await q(t, 'SELECT mode, from_time_ms FROM queen.subscriptions WHERE queue_id = $1 AND consumer_group = $2', [p.queue_id, l.group]))[0];
  if (!sub) return { ...base, cursor: undefined, offsets: [] };
  const first = p.first_offset as number;
  const row = (await q(t, 'SELECT * FROM queen.consumers WHERE partition_id = $1 AND consumer_group = $2', [p.id, l.group]))[0];
  const cursor = row
    ? { ...cursorView(row), committedOffset: Math.max(row.next_offset as number, first) } // retention removed what it pointed at
    : {
      committedOffset: await startOffset(t, { mode: sub.mode as string, fromTime: (sub.from_time_ms as number | null) ?? null },
        { id: p.id as string, first, head: p.next_offset as number, last: (p.last_message_at_ms as number | null) ?? null }),
      leaseId: null, leaseExpiresAt: null, deliveredUpTo: null, retryCount: 0, deliveryCount: 0,
    };
  const found = new Map((await q(t, `SELECT transaction_id, max("offset") AS o FROM queen.messages
                                       WHERE partition_id = $1 AND transaction_id = ANY($2::text[]) GROUP BY transaction_id`, [p.id, l.transactionIds]))
    .map((r) => [r.transaction_id as string, r.o as number]));
  return { ...base, cursor, offsets: l.transactionIds.map((id) => found.get(id)) };
}

/**
 * Ack planning reads (contract `readAckTargets`), one per lookup, in order, in one transaction:
 * undefined for an unknown partition id; no cursor and no offsets for a group not registered on
 * the queue; the cursor at the group's start position when it has none on the partition yet.
 */
export function readAckTargets(db: PgDb, lookups: AckLookup[]): Promise<(AckTarget | undefined)[]> {
  return db.tx(async (t) => {
    const out: (AckTarget | undefined)[] = [];
    for (const l of lookups) out.push(await ackTarget(t, l));
    return out;
  });
}

/** True when `leaseId` holds a cursor whose lease is live at `now` (epoch ms; the database clock when the backend follows it). */
export function leaseHeld(db: PgDb, leaseId: string, now: number): Promise<boolean> {
  return db.tx(async (t) =>
    (await q(t, 'SELECT 1 FROM queen.consumers WHERE lease_id = $1 AND lease_expires_at_ms > $2 LIMIT 1', [leaseId, clockOf(t, now)])).length > 0);
}
