/**
 * The retention reads of the admin sub-store (src/storage/contract.ts `AdminSubStore`:
 * `queueOptions`, `agedPrefixes`, `retentionPartitions`, `firstAfter`; docs/http-api.md#retention)
 * on PostgreSQL (docs/storage.md#postgresql-backend). The sweep decides on them and cuts with
 * `prune`, which caps each cut at the head again.
 */
import type { AdminSubStore, PartitionKey, QueueKey, RetentionPartition } from '../contract.js';
import { configOf } from './queue-row.js';
import { msToTs, q, tsToMs, type PgDb, type Row, type Tx } from './db.js';
import { startOffset } from './log-ops.js';
import { partitionIdsOf } from './reads.js';

const PARTITION_COLS = `p.id, p.pk, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, p.queue_id, q.tenant_id, q.name AS queue`;

/**
 * Retention views of partitions rows (`PARTITION_COLS`): `consumedUpTo` is the lowest position over
 * the queue's registered groups (a cursor clamped into [first, head], else the group's start
 * position), undefined when no group is registered.
 */
async function retentionViews(t: Tx, parts: Row[]): Promise<RetentionPartition[]> {
  if (parts.length === 0) return [];
  const queueIds = [...new Set(parts.map((p) => p.queue_id as string))];
  const subs = await q(t, 'SELECT queue_id, consumer_group, mode, from_time_ms FROM queen.subscriptions WHERE queue_id = ANY($1::uuid[])', [queueIds]);
  const cursors = await q(t, 'SELECT partition_id, consumer_group, next_offset FROM queen.consumers WHERE partition_id = ANY($1::uuid[])',
    [parts.map((p) => p.id as string)]);
  const cursorAt = new Map(cursors.map((c) => [JSON.stringify([c.partition_id, c.consumer_group]), c.next_offset as number]));
  const out: RetentionPartition[] = [];
  for (const p of parts) {
    const first = p.first_offset as number;
    const head = p.next_offset as number;
    let min: number | undefined;
    for (const s of subs) {
      if (s.queue_id !== p.queue_id) continue;
      const at = cursorAt.get(JSON.stringify([p.id, s.consumer_group]));
      const pos = at !== undefined ? Math.min(Math.max(at, first), head)
        : await startOffset(t, { mode: s.mode as string, fromTime: (s.from_time_ms as number | null) ?? null },
          { id: p.id as string, first, head, last: (p.last_message_at_ms as number | null) ?? null });
      if (min === undefined || pos < min) min = pos;
      if (min <= first) break;
    }
    out.push({
      queue: { tenant: p.tenant_id as string, queue: p.queue as string }, partition: p.name as string, partitionId: p.id as string,
      firstOffset: first, headOffset: head, consumedUpTo: min,
    });
  }
  return out;
}

/** The retention reads of the admin sub-store over `db` (see the module comment). */
export function retentionReads(db: PgDb): Pick<AdminSubStore, 'queueOptions' | 'agedPrefixes' | 'retentionPartitions' | 'firstAfter'> {
  return {
    queueOptions: async () => (await db.rows('SELECT id, tenant_id, name, namespace, task, options FROM queen.queues ORDER BY tenant_id, name'))
      .map((r) => ({ queue: { tenant: r.tenant_id as string, queue: r.name as string }, options: configOf(r).options })),

    /**
     * The oldest `limit` messages created before `cutoff` (epoch ms), read per partition on
     * `messages_time` (at most `limit` each) and merged; created_at is monotone per partition, so
     * each partition's are a prefix.
     */
    agedPrefixes: (queue: QueueKey, cutoff: number, limit: number) => db.tx(async (t) => {
      const ends = await q(t, `
        SELECT o.partition_id, max(o."offset") + 1 AS end_offset, count(*)::int AS n
          FROM (SELECT a.partition_id, a."offset" FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                 CROSS JOIN LATERAL (SELECT m.partition_id, m."offset", m.created_at FROM queen.messages m
                                      WHERE m.partition_id = p.id AND m.created_at < ${msToTs('$3')}
                                      ORDER BY m.created_at LIMIT $4) a
                 WHERE q.tenant_id = $1 AND q.name = $2
                 ORDER BY a.created_at, a.partition_id, a."offset" LIMIT $4) o
         GROUP BY o.partition_id`, [queue.tenant, queue.queue, cutoff, limit]);
      if (ends.length === 0) return { prefixes: [], rows: 0 };
      const parts = await q(t, `SELECT ${PARTITION_COLS} FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                                 WHERE p.id = ANY($1::uuid[]) ORDER BY p.pk`, [ends.map((e) => e.partition_id as string)]);
      const endOf = new Map(ends.map((e) => [e.partition_id as string, e.end_offset as number]));
      const views = await retentionViews(t, parts);
      return {
        prefixes: views.map((partition) => ({ partition, end: endOf.get(partition.partitionId)! })),
        rows: ends.reduce((n, e) => n + (e.n as number), 0),
      };
    }),

    retentionPartitions: (selector) => db.tx(async (t) => {
      const parts = 'partitionIds' in selector
        ? await q(t, `SELECT ${PARTITION_COLS} FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                       WHERE p.id = ANY($1::uuid[])`, [partitionIdsOf(selector.partitionIds)])
        : await q(t, `SELECT ${PARTITION_COLS} FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                       WHERE q.tenant_id = $1 AND q.name = $2
                         AND EXISTS (SELECT 1 FROM queen.consumers c WHERE c.partition_id = p.id AND c.next_offset > p.first_offset)
                       ORDER BY p.pk`, [selector.consumedOn.tenant, selector.consumedOn.queue]);
      if ('partitionIds' in selector) {
        const byId = new Map<string, Row>(parts.map((p) => [p.id as string, p]));
        return retentionViews(t, selector.partitionIds.flatMap((id): Row[] => { const p = byId.get(id); return p ? [p] : []; }));
      }
      return retentionViews(t, parts);
    }),

    firstAfter: async (key: PartitionKey, fromOffset: number, time: number) => {
      const r = (await db.rows(`
        SELECT m."offset", ${tsToMs('m.created_at')} AS created_ms FROM queen.messages m
          JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
         WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 AND m."offset" >= $4 AND m.created_at > ${msToTs('$5')}
         ORDER BY m."offset" LIMIT 1`, [key.tenant, key.queue, key.partition, fromOffset, time]))[0];
      return r ? { offset: r.offset as number, createdAt: r.created_ms as number } : undefined;
    },
  };
}
