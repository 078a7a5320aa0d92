/**
 * The sub-stores of the operation contract (src/storage/contract.ts: KV, lock permits, timers,
 * traces, dead letters, ephemeral queue declarations) and the rider and precondition ops of a unit, on PostgreSQL
 * (docs/storage.md#postgresql-backend). Every key carries the tenant; a lock permit is a KV row in
 * the namespace `queen-locks` (src/storage/kv.ts fencing: versions only grow, a removed row raises
 * the floor).
 */
import { randomUUID } from 'node:crypto';
import type {
  DlqSubStore, EphemeralDeclaration, EphemeralSubStore, KvSubStore, LockSubStore, QueueKey, TimerSubStore, TraceEvent, TraceSubStore, UnitOp,
} from '../contract.js';
import type { KvRow } from '../kv.js';
import type { DlqFilter, DlqRow } from '../store.js';
import type { TraceRow } from '../ops.js';
import type { TimerRow } from '../timers.js';
import { UnitRefused } from '../refused.js';
import { applyStreamStatePg } from './streams.js';
import { clockOf, exec, payloadBytes, payloadOf, q, type PgDb, type Row, type Tx } from './db.js';

const kvOf = (r: Row): KvRow => ({
  ns: r.ns as string, key: r.key as string, value: r.value as string, version: r.version as number,
  expiresAt: (r.expires_at_ms as number | null) ?? null, updatedAt: r.updated_at_ms as number,
});

const timerOf = (r: Row): TimerRow => ({
  queue: r.queue as string, timerKey: r.timer_key as string, partition: r.partition as string, deliverAt: r.deliver_at_ms as number,
  txn: r.txn as string, messageId: r.message_id as string, payload: payloadOf(r.payload as Buffer, r.encrypted as boolean),
  encrypted: r.encrypted as boolean, producerSub: (r.producer_sub as string | null) ?? null, attempts: r.attempts as number,
  lastError: (r.last_error as string | null) ?? null, createdAt: r.created_at_ms as number, updatedAt: r.updated_at_ms as number,
});

const traceOf = (r: Row): TraceRow => ({
  id: r.id as string, queuePk: r.queue_pk as number, queue: r.queue as string, partition: r.partition as string,
  partitionId: r.partition_id as string, transactionId: r.transaction_id as string, messageId: (r.message_id as string | null) ?? null,
  group: r.consumer_group as string, eventType: r.event_type as string, data: r.data as string, workerId: (r.worker_id as string | null) ?? null,
  names: r.names as string[], createdAt: r.created_at_ms as number,
});

const dlqOf = (r: Row): DlqRow => ({
  id: r.id as string, queuePk: r.queue_pk as number, queue: r.queue as string, partitionPk: r.partition_pk as number,
  partition: r.partition as string, partitionId: r.partition_id as string, group: r.consumer_group as string,
  messageId: r.message_id as string, transactionId: r.transaction_id as string, offset: r.offset as number,
  payload: payloadOf(r.payload as Buffer, r.encrypted as boolean), encrypted: r.encrypted as boolean,
  traceId: (r.trace_id as string | null) ?? null, producerSub: (r.producer_sub as string | null) ?? null,
  error: (r.error as string | null) ?? null, retryCount: r.retry_count as number, createdAt: r.created_at_ms as number, failedAt: r.failed_at_ms as number,
});

async function putKv(t: Tx, tenant: string, r: KvRow): Promise<void> {
  await exec(t, `INSERT INTO queen.kv (tenant_id, ns, key, value, version, expires_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (tenant_id, ns, key) DO UPDATE SET value = $4, version = $5, expires_at_ms = $6, updated_at_ms = $7`,
  [tenant, r.ns, r.key, r.value, r.version, r.expiresAt, r.updatedAt]);
}

async function deleteKv(t: Tx, tenant: string, ns: string, key: string): Promise<boolean> {
  const r = await q(t, 'DELETE FROM queen.kv WHERE tenant_id = $1 AND ns = $2 AND key = $3 RETURNING version', [tenant, ns, key]);
  if (!r[0]) return false;
  await exec(t, 'UPDATE queen.kv_meta SET floor = GREATEST(floor, $1) WHERE id = 0', [r[0].version]);
  return true;
}

async function kvVersion(t: Tx, tenant: string, ns: string, key: string): Promise<number | null> {
  const r = await q(t, 'SELECT version FROM queen.kv WHERE tenant_id = $1 AND ns = $2 AND key = $3 FOR UPDATE', [tenant, ns, key]);
  return (r[0]?.version as number | undefined) ?? null;
}

async function putTimer(t: Tx, tenant: string, r: TimerRow): Promise<void> {
  await exec(t, `INSERT INTO queen.timers (tenant_id, queue, timer_key, partition, deliver_at_ms, txn, message_id, payload, encrypted, producer_sub,
                                           attempts, last_error, created_at_ms, updated_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                 ON CONFLICT (tenant_id, queue, timer_key) DO UPDATE SET partition = $4, deliver_at_ms = $5, txn = $6, message_id = $7,
                   payload = $8, encrypted = $9, producer_sub = $10, attempts = $11, last_error = $12, created_at_ms = $13, updated_at_ms = $14`,
  [tenant, r.queue, r.timerKey, r.partition, r.deliverAt, r.txn, r.messageId, payloadBytes(r.payload), r.encrypted, r.producerSub,
    r.attempts, r.lastError, r.createdAt, r.updatedAt]);
}

async function getTimer(t: Tx | PgDb, tenant: string, queue: string, key: string): Promise<TimerRow | undefined> {
  const sql = 'SELECT * FROM queen.timers WHERE tenant_id = $1 AND queue = $2 AND timer_key = $3';
  const rows = 'pool' in t ? await t.rows(sql, [tenant, queue, key]) : await q(t, sql + ' FOR UPDATE', [tenant, queue, key]);
  return rows[0] ? timerOf(rows[0]) : undefined;
}

/** Deletes one dead letter in `t`; returns whether it existed. */
export async function deleteDlq(t: Tx, id: string): Promise<boolean> {
  return (await exec(t, 'DELETE FROM queen.dlq WHERE id = $1', [id])) > 0;
}

/**
 * Applies a rider or precondition op (everything but appends and commits) in the unit's transaction.
 * @param index the op's position in its unit (named by a refusal)
 * @throws UnitRefused when a precondition or the KV fencing rule fails; Error for an append or commit
 */
export async function applyRider(t: Tx, o: UnitOp, index: number): Promise<{ done: boolean }> {
  switch (o.op) {
    case 'kvPut': {
      const cur = await kvVersion(t, o.tenant, o.row.ns, o.row.key);
      const floor = (await q(t, 'SELECT floor FROM queen.kv_meta WHERE id = 0'))[0]!.floor as number;
      if (o.row.version <= Math.max(cur ?? 0, floor)) throw new UnitRefused(index);
      await putKv(t, o.tenant, o.row);
      return { done: true };
    }
    case 'kvDelete': return { done: await deleteKv(t, o.tenant, o.ns, o.key) };
    case 'kvExpect':
      if (await kvVersion(t, o.tenant, o.ns, o.key) !== o.version) throw new UnitRefused(index);
      return { done: true };
    case 'timerPut': await putTimer(t, o.tenant, o.row); return { done: true };
    case 'timerDelete':
      return { done: (await exec(t, 'DELETE FROM queen.timers WHERE tenant_id = $1 AND queue = $2 AND timer_key = $3', [o.tenant, o.queue, o.timerKey])) > 0 };
    case 'timerExpect': {
      const cur = await getTimer(t, o.tenant, o.queue, o.timerKey);
      const e = o.expect;
      const same = cur === undefined ? e === null
        : e !== null && cur.deliverAt === e.deliverAt && cur.messageId === e.messageId && cur.attempts === e.attempts && cur.updatedAt === e.updatedAt;
      if (!same) throw new UnitRefused(index);
      return { done: true };
    }
    case 'timerFailed':
      return { done: (await exec(t, `UPDATE queen.timers SET attempts = attempts + 1, last_error = $4, deliver_at_ms = $5, updated_at_ms = $6
                                      WHERE tenant_id = $1 AND queue = $2 AND timer_key = $3`,
      [o.tenant, o.queue, o.timerKey, o.error, o.retryAt, o.now])) > 0 };
    case 'leaseHeld': {
      const held = await q(t, 'SELECT 1 FROM queen.consumers WHERE lease_id = $1 AND lease_expires_at_ms > $2 LIMIT 1 FOR SHARE', [o.leaseId, clockOf(t, o.now)]);
      if (held.length === 0) throw new UnitRefused(index);
      return { done: true };
    }
    case 'dlqDelete':
      if (!await deleteDlq(t, o.id)) throw new UnitRefused(index);
      return { done: true };
    case 'streamState': return applyStreamStatePg(t, o, index);
    default: throw new Error(`${o.op} is not a rider`);
  }
}

/** The KV sub-store. */
export function kvStore(db: PgDb): KvSubStore {
  return {
    get: async (tenant, ns, key) => {
      const r = await db.rows('SELECT * FROM queen.kv WHERE tenant_id = $1 AND ns = $2 AND key = $3', [tenant, ns, key]);
      return r[0] ? kvOf(r[0]) : undefined;
    },
    put: (tenant, row) => db.tx((t) => putKv(t, tenant, row)),
    delete: (tenant, ns, key) => db.tx((t) => deleteKv(t, tenant, ns, key)),
    scan: async (tenant, s) => (await db.rows(`
      SELECT * FROM queen.kv WHERE tenant_id = $1 AND ns = $2 AND left(key, length($3)) = $3 AND ($4::text IS NULL OR key > $4::text)
         AND (expires_at_ms IS NULL OR expires_at_ms > $5) ORDER BY key LIMIT $6`, [tenant, s.ns, s.prefix, s.after ?? null, s.now, s.limit])).map(kvOf),
    pruneExpired: (now, limit) => db.tx(async (t) => {
      const r = await q(t, `DELETE FROM queen.kv WHERE ctid IN (SELECT ctid FROM queen.kv WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2)
                            RETURNING version`, [now, limit]);
      if (r.length > 0) await exec(t, 'UPDATE queen.kv_meta SET floor = GREATEST(floor, $1) WHERE id = 0', [Math.max(...r.map((x) => x.version as number))]);
      return r.length;
    }),
    floor: async () => (await db.rows('SELECT floor FROM queen.kv_meta WHERE id = 0'))[0]!.floor as number,
    nextExpiry: async () => ((await db.rows('SELECT min(expires_at_ms) AS at FROM queen.kv'))[0]!.at as number | null) ?? undefined,
    namespaces: async (tenant, after, limit) => (await db.rows(`
      SELECT ns, count(*) AS keys FROM queen.kv WHERE tenant_id = $1 AND ns > $2 GROUP BY ns ORDER BY ns LIMIT $3`, [tenant, after, limit]))
      .map((r) => ({ ns: r.ns as string, keys: r.keys as number })),
    purgeTenant: (tenant) => db.tx(async (t) => {
      const r = await q(t, 'DELETE FROM queen.kv WHERE tenant_id = $1 RETURNING version', [tenant]);
      if (r.length > 0) await exec(t, 'UPDATE queen.kv_meta SET floor = GREATEST(floor, $1) WHERE id = 0', [Math.max(...r.map((x) => Number(x.version)))]);
      return r.length;
    }),
  };
}

/**
 * Ephemeral queue declarations (table `queen.ephemeral_queues`, docs/ephemeral.md#declarations):
 * options only, never contents; listed by tenant then queue, at most `limitPerTenant` per tenant.
 */
export function ephemeralStore(db: PgDb): EphemeralSubStore {
  return {
    put: (row) => db.tx(async (t) => {
      await exec(t, `INSERT INTO queen.ephemeral_queues (tenant_id, name, options, updated_at_ms) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant_id, name) DO UPDATE SET options = EXCLUDED.options, updated_at_ms = EXCLUDED.updated_at_ms`,
      [row.tenant, row.queue, row.options, row.updatedAt]);
    }),
    delete: (tenant, queue) => db.tx(async (t) => (await exec(t, 'DELETE FROM queen.ephemeral_queues WHERE tenant_id = $1 AND name = $2', [tenant, queue])) > 0),
    list: async (limitPerTenant) => (await db.rows(`
      SELECT tenant_id, name, options, updated_at_ms FROM (
        SELECT *, row_number() OVER (PARTITION BY tenant_id ORDER BY name) AS rank FROM queen.ephemeral_queues) e
       WHERE rank <= $1 ORDER BY tenant_id, name`, [limitPerTenant]))
      .map((r): EphemeralDeclaration => ({ tenant: r.tenant_id as string, queue: r.name as string, options: r.options as string, updatedAt: r.updated_at_ms as number })),
  };
}

/** Lock permits as KV rows (see the module comment). */
export function lockStore(db: PgDb): LockSubStore {
  const NS = 'queen-locks';
  return {
    tryAcquire: async (tenant, name, slot, owner, untilMs, now) => {
      try {
        return await db.tx(async (t) => {
          const key = `${name}#${slot}`;
          const r = (await q(t, 'SELECT version, expires_at_ms FROM queen.kv WHERE tenant_id = $1 AND ns = $2 AND key = $3 FOR UPDATE', [tenant, NS, key]))[0];
          if (r && (r.expires_at_ms === null || (r.expires_at_ms as number) > now)) return undefined;
          const floor = (await q(t, 'SELECT floor FROM queen.kv_meta WHERE id = 0'))[0]!.floor as number;
          const token = Math.max(floor, (r?.version as number | undefined) ?? 0) + 1;
          await putKv(t, tenant, { ns: NS, key, value: JSON.stringify({ owner, since: now, renewedAt: now }), version: token, expiresAt: untilMs, updatedAt: now });
          return token;
        });
      } catch (e) {
        if ((e as { code?: string }).code === '23505') return undefined; // another node created the permit at the same moment
        throw e;
      }
    },
    release: (tenant, name, slot, token) => db.tx(async (t) => {
      const key = `${name}#${slot}`;
      const v = await kvVersion(t, tenant, NS, key);
      return v === token ? deleteKv(t, tenant, NS, key) : false;
    }),
  };
}

/** Scheduled messages. */
export function timerStore(db: PgDb): TimerSubStore {
  return {
    put: (tenant, row) => db.tx((t) => putTimer(t, tenant, row)),
    get: (tenant, queue, key) => getTimer(db, tenant, queue, key),
    delete: (tenant, queue, key) => db.tx(async (t) =>
      (await exec(t, 'DELETE FROM queen.timers WHERE tenant_id = $1 AND queue = $2 AND timer_key = $3', [tenant, queue, key])) > 0),
    due: async (now, limit) => (await db.rows('SELECT tenant_id, queue, timer_key FROM queen.timers WHERE deliver_at_ms <= $1 ORDER BY deliver_at_ms, queue, timer_key LIMIT $2',
      [now, limit])).map((r) => ({ tenant: r.tenant_id as string, queue: r.queue as string, timerKey: r.timer_key as string })),
    nextDueAt: async () => ((await db.rows('SELECT min(deliver_at_ms) AS at FROM queen.timers'))[0]!.at as number | null) ?? undefined,
    list: async (tenant, queue, after, limit) => (await db.rows(`
      SELECT * FROM queen.timers WHERE tenant_id = $1 AND queue = $2 AND ($3::text IS NULL OR timer_key > $3::text) ORDER BY timer_key LIMIT $4`,
    [tenant, queue, after ?? null, limit])).map(timerOf),
    purgeTenant: (tenant) => db.tx(async (t) => exec(t, 'DELETE FROM queen.timers WHERE tenant_id = $1', [tenant])),
  };
}

const TRACE_COLS = 't.*, q.pk AS queue_pk';

/** Trace events. */
export function traceStore(db: PgDb): TraceSubStore {
  return {
    add: (queue: QueueKey, e: TraceEvent) => db.tx(async (t) => {
      const qr = (await q(t, 'SELECT id FROM queen.queues WHERE tenant_id = $1 AND name = $2', [queue.tenant, queue.queue]))[0];
      if (!qr) return undefined;
      const id = randomUUID();
      await exec(t, `INSERT INTO queen.traces (id, queue_id, queue, partition, partition_id, transaction_id, message_id, consumer_group, event_type,
                                               data, worker_id, names, created_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [id, qr.id, queue.queue, e.partition, e.partitionId, e.transactionId, e.messageId, e.group, e.eventType, e.data, e.workerId, e.names, e.createdAt]);
      return id;
    }),
    byMessage: async (partitionId, transactionId, limit) => (await db.rows(`
      SELECT ${TRACE_COLS} FROM queen.traces t JOIN queen.queues q ON q.id = t.queue_id
       WHERE t.partition_id = $1 AND t.transaction_id = $2 ORDER BY t.created_at_ms, t.seq LIMIT $3`, [partitionId, transactionId, limit])).map(traceOf),
    byName: async (tenant, name, limit, offset) => {
      const rows = (await db.rows(`SELECT ${TRACE_COLS} FROM queen.traces t JOIN queen.queues q ON q.id = t.queue_id
                                    WHERE t.names @> ARRAY[$1::text] AND q.tenant_id = $4 ORDER BY t.created_at_ms DESC, t.seq DESC LIMIT $2 OFFSET $3`,
      [name, limit, offset, tenant])).map(traceOf);
      const total = (await db.rows(`SELECT count(*) AS n FROM queen.traces t JOIN queen.queues q ON q.id = t.queue_id
                                     WHERE t.names @> ARRAY[$1::text] AND q.tenant_id = $2`, [name, tenant]))[0]!.n as number;
      return { rows, total };
    },
    names: async (tenant, limit, offset) => {
      const rows = (await db.rows(`
        SELECT n AS name, count(*) AS trace_count, count(DISTINCT (t.partition_id, t.transaction_id)) AS message_count, max(t.created_at_ms) AS last_seen
          FROM queen.traces t JOIN queen.queues q ON q.id = t.queue_id, unnest(t.names) AS n
         WHERE q.tenant_id = $3 GROUP BY n ORDER BY n LIMIT $1 OFFSET $2`, [limit, offset, tenant]))
        .map((r) => ({ name: r.name as string, traceCount: r.trace_count as number, messageCount: r.message_count as number, lastSeen: r.last_seen as number }));
      const total = (await db.rows(`SELECT count(DISTINCT n) AS n FROM queen.traces t JOIN queen.queues q ON q.id = t.queue_id, unnest(t.names) AS n
                                     WHERE q.tenant_id = $1`, [tenant]))[0]!.n as number;
      return { rows, total };
    },
  };
}

function dlqWhere(f: Omit<DlqFilter, 'limit' | 'offset'>): { where: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (sql: string, v: unknown) => { args.push(v); where.push(sql.replace('?', `$${args.length}`)); };
  if (f.tenant !== undefined) add('queue_id IN (SELECT id FROM queen.queues WHERE tenant_id = ?)', f.tenant);
  if (f.queue !== undefined) add('queue = ?', f.queue);
  if (f.group !== undefined) add('consumer_group = ?', f.group);
  if (f.from !== undefined) add('failed_at_ms >= ?', f.from);
  if (f.to !== undefined) add('failed_at_ms <= ?', f.to);
  return { where: where.length ? 'WHERE ' + where.join(' AND ') : '', args };
}

/** Dead letters. */
export function dlqStore(db: PgDb): DlqSubStore {
  return {
    list: async (f) => {
      const { where, args } = dlqWhere(f);
      const rows = (await db.rows(`SELECT * FROM queen.dlq ${where} ORDER BY failed_at_ms DESC, id DESC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
        [...args, f.limit, f.offset])).map(dlqOf);
      const total = (await db.rows(`SELECT count(*) AS n FROM queen.dlq ${where}`, args))[0]!.n as number;
      return { rows, total };
    },
    get: async (id) => { const r = await db.rows('SELECT * FROM queen.dlq WHERE id = $1', [id]); return r[0] ? dlqOf(r[0]) : undefined; },
    delete: (id) => db.tx((t) => deleteDlq(t, id)),
    findByAddress: async (partitionId, transactionId) => {
      const r = await db.rows('SELECT * FROM queen.dlq WHERE partition_id = $1 AND transaction_id = $2 ORDER BY failed_at_ms DESC, id DESC LIMIT 1',
        [partitionId, transactionId]);
      return r[0] ? dlqOf(r[0]) : undefined;
    },
    deleteByAddress: (partitionId, transactionId) => db.tx(async (t) => {
      const r = await q(t, 'DELETE FROM queen.dlq WHERE partition_id = $1 AND transaction_id = $2 RETURNING queue', [partitionId, transactionId]);
      return { queue: r[0]?.queue as string | undefined, deleted: r.length };
    }),
    purge: (queue, group, limit) => db.tx(async (t) => exec(t, `
      DELETE FROM queen.dlq WHERE id IN (
        SELECT d.id FROM queen.dlq d JOIN queen.queues q ON q.id = d.queue_id
         WHERE q.tenant_id = $1 AND q.name = $2 AND ($3::text IS NULL OR d.consumer_group = $3::text) LIMIT $4)`,
    [queue.tenant, queue.queue, group ?? null, limit])),
  };
}
