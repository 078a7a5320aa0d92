/**
 * {@link LogReadStore} (src/storage/log-read.ts) on PostgreSQL (docs/storage.md#postgresql-backend):
 * one statement per read; the two writes (register a group, clear a position) are one transaction
 * each and announce the partition when its consumption point moved back.
 */
import type { PayloadCodec } from '../../model/codec.js';
import type { CursorKey, PartitionKey, QueueKey } from '../contract.js';
import type { GroupPosition, LogEntry, LogReadStore, PartitionBounds } from '../log-read.js';
import { QUEUE_MODE } from '../../model/subscription.js';
import { clockOf, exec, msToTs, payloadOf, q, tsToMs, type PgDb } from './db.js';
import { touchPartition } from './log-ops.js';

/** Log reads over `db`; payloads decoded with `codec` (null when one fails authentication). */
export class PgLogReads implements LogReadStore {
  constructor(private readonly db: PgDb, private readonly codec: PayloadCodec) {}

  async queueNames(tenant: string): Promise<string[]> {
    return (await this.db.rows('SELECT name FROM queen.queues WHERE tenant_id = $1 ORDER BY pk', [tenant])).map((r) => r.name as string);
  }

  async partitions(queue: QueueKey): Promise<PartitionBounds[] | undefined> {
    const qs = await this.db.rows('SELECT id FROM queen.queues WHERE tenant_id = $1 AND name = $2', [queue.tenant, queue.queue]);
    if (!qs[0]) return undefined;
    return (await this.db.rows('SELECT name, next_offset, first_offset FROM queen.partitions WHERE queue_id = $1 ORDER BY pk', [qs[0].id]))
      .map((r) => ({ name: r.name as string, headOffset: r.next_offset as number, firstOffset: r.first_offset as number }));
  }

  async read(key: PartitionKey, fromOffset: number, limit: number, maxBytes: number): Promise<LogEntry[]> {
    const rows = await this.db.rows(`
      SELECT m."offset", m.payload, m.encrypted, ${tsToMs('m.created_at')} AS created_ms
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
       WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 AND m."offset" >= $4
       ORDER BY m."offset" LIMIT $5`, [key.tenant, key.queue, key.partition, fromOffset, limit]);
    const out: LogEntry[] = [];
    let bytes = 0;
    for (const r of rows) {
      let json: string | null;
      try {
        json = this.codec.decode(payloadOf(r.payload as Buffer, r.encrypted as boolean), r.encrypted as boolean);
      } catch {
        json = null;
      }
      const size = json?.length ?? 0;
      if (out.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      out.push({ offset: r.offset as number, createdAt: r.created_ms as number, json });
    }
    return out;
  }

  async firstAtOrAfter(key: PartitionKey, timeMs: number): Promise<{ offset: number; createdAt: number } | undefined> {
    const r = await this.db.rows(`
      SELECT m."offset", ${tsToMs('m.created_at')} AS created_ms
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
       WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 AND m."offset" >= p.first_offset AND m.created_at >= ${msToTs('$4')}
       ORDER BY m."offset" LIMIT 1`, [key.tenant, key.queue, key.partition, timeMs]);
    return r[0] ? { offset: r[0].offset as number, createdAt: r[0].created_ms as number } : undefined;
  }

  async groupPositions(tenant: string, group: string): Promise<GroupPosition[]> {
    return (await this.db.rows(`
      SELECT q.name AS queue, p.name AS partition, c.next_offset
        FROM queen.consumers c JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
       WHERE q.tenant_id = $1 AND c.consumer_group = $2 ORDER BY q.pk, p.pk`, [tenant, group]))
      .map((r) => ({ queue: r.queue as string, partition: r.partition as string, committedOffset: r.next_offset as number }));
  }

  async groupNames(tenant: string): Promise<string[]> {
    return (await this.db.rows(`SELECT DISTINCT s.consumer_group FROM queen.subscriptions s JOIN queen.queues q ON q.id = s.queue_id
                                 WHERE q.tenant_id = $1 AND s.consumer_group <> $2`, [tenant, QUEUE_MODE])).map((r) => r.consumer_group as string);
  }

  async ensureGroup(key: CursorKey, now: number): Promise<void> {
    await this.db.tx(async (t) => {
      await exec(t, `INSERT INTO queen.subscriptions (queue_id, consumer_group, mode, from_time_ms, label, conflation, created_at_ms)
                     SELECT id, $3, 'all', NULL, 'all', false, $4 FROM queen.queues WHERE tenant_id = $1 AND name = $2
                     ON CONFLICT DO NOTHING`, [key.tenant, key.queue, key.group, now]);
    });
  }

  async clearPosition(key: CursorKey, now: number): Promise<void> {
    await this.db.tx(async (t) => {
      const r = await q(t, `DELETE FROM queen.consumers c USING queen.partitions p, queen.queues q
                             WHERE c.partition_id = p.id AND p.queue_id = q.id AND q.tenant_id = $1 AND q.name = $2 AND p.name = $3
                               AND c.consumer_group = $4 RETURNING p.id`, [key.tenant, key.queue, key.partition, key.group]);
      // Pending again without a push: the partition's activity moves, so watermarks and claim floors do not hide it.
      for (const row of r) await touchPartition(t, row.id as string, clockOf(t, now));
      if (r.length > 0) t.hints.push({ tenant: key.tenant, queue: key.queue, partitions: [key.partition], visibleAt: null });
    });
  }
}

