/**
 * The operator views and writes of the contract (src/storage/contract.ts `AdminSubStore`) on
 * PostgreSQL (docs/storage.md#postgresql-backend): queue configuration, settings, listings, queue
 * and group deletion, seek, subscription start, retention prune (its reads in retention.ts). Each write is one transaction;
 * partitions whose consumption point moved are announced as wake-up hints.
 */
import type { AdminSubStore, CursorView, PartitionKey, QueueConfig, QueueKey } from '../contract.js';
import { exec, msToTs, q, type PgDb, type Row, type Tx } from './db.js';
import { configOf } from './queue-row.js';
import { cursorView, ensureQueue, forgetWatermarks } from './log-ops.js';
import { retentionReads } from './retention.js';

async function readQueue(t: Tx | PgDb, queue: QueueKey): Promise<QueueConfig | undefined> {
  const sql = 'SELECT id, namespace, task, options FROM queen.queues WHERE tenant_id = $1 AND name = $2';
  const r = 'pool' in t ? await t.rows(sql, [queue.tenant, queue.queue]) : await q(t, sql, [queue.tenant, queue.queue]);
  return r[0] ? configOf(r[0]) : undefined;
}

/** Partitions of a queue, in creation order. */
async function partitionsOf(t: Tx, queueId: string): Promise<Row[]> {
  return q(t, 'SELECT id, name, next_offset, first_offset FROM queen.partitions WHERE queue_id = $1 ORDER BY pk', [queueId]);
}

/** The admin sub-store over `db`. */
export function adminStore(db: PgDb): AdminSubStore {
  return {
    ...retentionReads(db),
    readQueue: (queue) => readQueue(db, queue),
    configureQueue: (queue, config, now) => db.tx(async (t) => {
      const id = await ensureQueue(t, queue.tenant, queue.queue, now);
      await exec(t, 'UPDATE queen.queues SET namespace = $2, task = $3, options = $4 WHERE id = $1',
        [id, config.namespace, config.task, JSON.stringify(config.options)]);
      return (await readQueue(t, queue))!;
    }),
    setSetting: (key, value) => db.tx(async (t) => {
      await exec(t, 'INSERT INTO queen.system_state (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2', [key, value]);
    }),
    setting: async (key) => (await db.rows('SELECT value FROM queen.system_state WHERE key = $1', [key]))[0]?.value as string | undefined,
    queues: async (tenant) => (await db.rows(`
      SELECT q.name AS queue, (SELECT count(*) FROM queen.partitions p WHERE p.queue_id = q.id) AS partitions,
             (SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id WHERE p.queue_id = q.id) AS messages
        FROM queen.queues q WHERE q.tenant_id = $1 ORDER BY q.name`, [tenant]))
      .map((r) => ({ queue: r.queue as string, partitions: r.partitions as number, messages: r.messages as number })),
    partitionCounts: async (tenant) => new Map((await db.rows(`
      SELECT q.name AS queue, count(p.id)::int AS n FROM queen.queues q LEFT JOIN queen.partitions p ON p.queue_id = q.id
       WHERE q.tenant_id = $1 GROUP BY q.id, q.name`, [tenant])).map((r) => [r.queue as string, Number(r.n)])),
    retainedBytes: async (tenant) => Number((await db.rows(`
      SELECT coalesce(sum(octet_length(m.payload)), 0)::bigint AS n FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
        JOIN queen.messages m ON m.partition_id = p.id WHERE q.tenant_id = $1`, [tenant]))[0]!.n),
    cursors: async (queue, group) => (await db.rows(`
      SELECT p.name AS partition, c.* FROM queen.consumers c JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
       WHERE q.tenant_id = $1 AND q.name = $2 AND c.consumer_group = $3 ORDER BY p.name`, [queue.tenant, queue.queue, group]))
      .map((r): { partition: string; cursor: CursorView } => ({ partition: r.partition as string, cursor: cursorView(r) })),
    deleteQueue: (queue) => db.tx(async (t) => {
      const r = await q(t, 'DELETE FROM queen.queues WHERE tenant_id = $1 AND name = $2 RETURNING id', [queue.tenant, queue.queue]);
      if (r.length === 0) return false;
      await exec(t, 'DELETE FROM queen.timers WHERE tenant_id = $1 AND queue = $2', [queue.tenant, queue.queue]);
      return true;
    }),
    deleteGroup: (tenant, group, queue, deleteMetadata) => db.tx(async (t) => {
      const subs = await q(t, `SELECT s.queue_id, q.name FROM queen.subscriptions s JOIN queen.queues q ON q.id = s.queue_id
                                WHERE q.tenant_id = $1 AND s.consumer_group = $2 AND ($3::text IS NULL OR q.name = $3::text) ORDER BY q.name`,
      [tenant, group, queue ?? null]);
      let cursorsDeleted = 0;
      const partitions: PartitionKey[] = [];
      for (const s of subs) {
        cursorsDeleted += await exec(t, `DELETE FROM queen.consumers c USING queen.partitions p
                                          WHERE p.id = c.partition_id AND p.queue_id = $1 AND c.consumer_group = $2`, [s.queue_id, group]);
        if (deleteMetadata) await exec(t, 'DELETE FROM queen.subscriptions WHERE queue_id = $1 AND consumer_group = $2', [s.queue_id, group]);
        await forgetWatermarks(t, [s.queue_id as string], group);
        const parts = await partitionsOf(t, s.queue_id as string);
        for (const p of parts) partitions.push({ tenant, queue: s.name as string, partition: p.name as string });
        const ready = parts.filter((p) => (p.next_offset as number) > (p.first_offset as number)).map((p) => p.name as string);
        if (!deleteMetadata && ready.length > 0) t.hints.push({ tenant, queue: s.name as string, partitions: ready, visibleAt: null });
      }
      return { cursorsDeleted, partitions };
    }),
    seekGroup: (queue, group, partition, target, now) => db.tx(async (t) => {
      const qr = (await q(t, 'SELECT id FROM queen.queues WHERE tenant_id = $1 AND name = $2', [queue.tenant, queue.queue]))[0];
      if (!qr) return undefined;
      const queueId = qr.id as string;
      let parts = await partitionsOf(t, queueId);
      if (partition !== undefined) {
        parts = parts.filter((p) => p.name === partition);
        if (parts.length === 0) return undefined;
      }
      const toEnd = 'toEnd' in target;
      await forgetWatermarks(t, [queueId], group);
      await exec(t, `INSERT INTO queen.subscriptions (queue_id, consumer_group, mode, from_time_ms, label, conflation, created_at_ms)
                     VALUES ($1, $2, 'from', $3, $4, false, $5) ON CONFLICT DO NOTHING`,
      [queueId, group, toEnd ? now : target.timestamp - 1, toEnd ? 'new' : 'timestamp', now]);
      const out: { partition: string; committedOffset: number }[] = [];
      const ready: string[] = [];
      for (const p of parts) {
        const head = p.next_offset as number;
        const to = toEnd ? head : ((await q(t, `SELECT min("offset") AS o FROM queen.messages WHERE partition_id = $1 AND "offset" >= $2
                                                  AND created_at >= ${msToTs('$3')}`, [p.id, p.first_offset, target.timestamp]))[0]?.o as number | null) ?? head;
        await exec(t, `INSERT INTO queen.consumers (partition_id, consumer_group, next_offset) VALUES ($1, $2, $3)
                       ON CONFLICT (partition_id, consumer_group) DO UPDATE SET next_offset = $3, lease_id = NULL, lease_expires_at_ms = NULL,
                         delivered_up_to = NULL, retry_count = 0, -- a seek sets the position: what it re-offers is counted afresh
                         delivery_count = 0, attempt_split = 0, delivery_count_from_split = 0, delivered_max = 0`, [p.id, group, to]);
        if (to < head) ready.push(p.name as string);
        out.push({ partition: p.name as string, committedOffset: to });
      }
      if (ready.length > 0) t.hints.push({ tenant: queue.tenant, queue: queue.queue, partitions: ready, visibleAt: null });
      return out;
    }),
    setSubscriptionFrom: (tenant, group, fromTime) => db.tx(async (t) => {
      const rows = await q(t, `
        UPDATE queen.subscriptions s SET mode = 'from', from_time_ms = $3, label = 'timestamp'
          FROM queen.queues q WHERE q.id = s.queue_id AND q.tenant_id = $1 AND s.consumer_group = $2 RETURNING s.queue_id`, [tenant, group, fromTime]);
      await forgetWatermarks(t, rows.map((r) => r.queue_id as string), group);
      return rows.length;
    }),
    prune: (queue, cuts) => db.tx(async (t) => {
      const out: { partition: string; removed: number; firstOffsetBefore: number }[] = [];
      for (const cut of cuts) {
        const p = (await q(t, `SELECT p.id, p.next_offset, p.first_offset FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                                WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 FOR UPDATE OF p`, [queue.tenant, queue.queue, cut.partition]))[0];
        if (!p) continue;
        const end = Math.min(cut.end, p.next_offset as number);
        const before = p.first_offset as number;
        if (end <= before) continue;
        const removed = await exec(t, 'DELETE FROM queen.messages WHERE partition_id = $1 AND "offset" < $2', [p.id, end]);
        await exec(t, 'UPDATE queen.partitions SET first_offset = $2 WHERE id = $1', [p.id, end]);
        out.push({ partition: cut.partition, removed, firstOffsetBefore: before });
      }
      return out;
    }),
  };
}
