/**
 * The operator-view reads of the contract (src/storage/contract.ts `ViewsSubStore`) on PostgreSQL
 * (docs/storage.md#postgresql-backend): a model read is five statements over the tenant's queues,
 * partitions, subscriptions, cursors and the subscription start points of groups that subscribed
 * from a time (one indexed probe per partition they have no cursor on); the views then compute on
 * that plain data. Point reads are one statement each.
 */
import type { ViewCursor, ViewGroup, ViewModel, ViewPartition, ViewQueue, ViewsSubStore } from '../contract.js';
import type { ListedMessage, MessagePageQuery } from '../ops.js';
import type { MessageRow } from '../store.js';
import { configOf } from './queue-row.js';
import { partitionIdsOf } from './reads.js';
import { countsOf } from './log-ops.js';
import { msToTs, payloadOf, tsToMs, type PgDb, type Row } from './db.js';

interface MutableQueue extends ViewQueue {
  partitions: Map<string, ViewPartition>;
  groups: Map<string, ViewGroup & { cursors: Map<number, ViewCursor> }>;
}

/** A model read once: maps built from the rows, subscription starts precomputed. */
class PgViewModel implements ViewModel {
  readonly byName = new Map<string, MutableQueue>();
  readonly byId = new Map<string, ViewPartition>();
  readonly byPk = new Map<number, ViewPartition>();
  /** `${queuePk}\0${group}\0${partitionPk}` → first offset after the subscription time. */
  readonly starts = new Map<string, number>();

  queue(name: string): ViewQueue | undefined {
    return this.byName.get(name);
  }

  queues(): Iterable<ViewQueue> {
    return this.byName.values();
  }

  partitionById(id: string): ViewPartition | undefined {
    return this.byId.get(id);
  }

  partitionByPk(pk: number): ViewPartition | undefined {
    return this.byPk.get(pk);
  }

  subscriptionStart(g: ViewGroup, p: ViewPartition): number {
    const from = g.subscription.fromTime;
    if (g.subscription.mode === 'all' || from === null) return p.firstOffset;
    if (p.lastMessageAt === null || p.lastMessageAt <= from) return p.headOffset;
    return this.starts.get(`${g.queue.pk}\u0000${g.name}\u0000${p.pk}`) ?? p.headOffset;
  }
}

function messageOf(r: Row): ListedMessage {
  return {
    queuePk: r.queue_pk as number, partitionPk: r.partition_pk as number, offset: r.offset as number, id: r.id as string,
    transactionId: r.transaction_id as string, payload: payloadOf(r.payload as Buffer, r.encrypted as boolean), encrypted: r.encrypted as boolean,
    traceId: (r.trace_id as string | null) ?? null, producerSub: (r.producer_sub as string | null) ?? null, createdAt: r.created_ms as number,
  };
}

const MSG = `m."offset", m.id, m.transaction_id, m.trace_id, m.producer_sub, m.payload, m.encrypted, ${tsToMs('m.created_at')} AS created_ms,
             p.pk AS partition_pk, q.pk AS queue_pk`;

/** {@link ViewsSubStore} over `db`. */
export function viewsStore(db: PgDb): ViewsSubStore {
  return {
    async model(tenant) {
      const m = new PgViewModel();
      const queueById = new Map<string, MutableQueue>();
      for (const r of await db.rows(`SELECT pk, id, name, namespace, task, options, ${tsToMs('created_at')} AS created_ms
                                     FROM queen.queues WHERE tenant_id = $1 ORDER BY pk`, [tenant])) {
        const c = configOf(r);
        const q: MutableQueue = {
          pk: r.pk as number, id: r.id as string, tenant, name: r.name as string, namespace: c.namespace, task: c.task, options: c.options,
          createdAt: r.created_ms as number, partitions: new Map(), groups: new Map(),
        };
        m.byName.set(q.name, q);
        queueById.set(q.id, q);
      }
      if (queueById.size === 0) return m;
      for (const r of await db.rows(`SELECT p.pk, p.id, p.queue_id, p.name, p.next_offset, p.first_offset, p.last_message_at_ms, ${tsToMs('p.created_at')} AS created_ms
                                     FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.tenant_id = $1 ORDER BY p.pk`, [tenant])) {
        const q = queueById.get(r.queue_id as string);
        if (!q) continue; // created after the queue read
        const p: ViewPartition = {
          pk: r.pk as number, id: r.id as string, name: r.name as string, headOffset: r.next_offset as number, firstOffset: r.first_offset as number,
          lastMessageAt: (r.last_message_at_ms as number | null) ?? null, createdAt: r.created_ms as number, queue: q,
        };
        q.partitions.set(p.name, p);
        m.byId.set(p.id, p);
        m.byPk.set(p.pk, p);
      }
      for (const r of await db.rows(`SELECT s.* FROM queen.subscriptions s JOIN queen.queues q ON q.id = s.queue_id
                                     WHERE q.tenant_id = $1 ORDER BY s.created_at_ms, s.consumer_group`, [tenant])) {
        const q = queueById.get(r.queue_id as string);
        if (!q) continue;
        const group = r.consumer_group as string;
        q.groups.set(group, {
          name: group, queue: q, cursors: new Map(),
          subscription: {
            queuePk: q.pk, group, mode: r.mode as 'all' | 'from', fromTime: (r.from_time_ms as number | null) ?? null, label: r.label as string,
            conflation: r.conflation as boolean, createdAt: r.created_at_ms as number,
          },
        });
      }
      for (const r of await db.rows(`SELECT c.*, p.pk AS partition_pk, p.queue_id FROM queen.consumers c
                                     JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
                                     WHERE q.tenant_id = $1`, [tenant])) {
        const g = queueById.get(r.queue_id as string)?.groups.get(r.consumer_group as string);
        if (!g) continue;
        const pk = r.partition_pk as number;
        g.cursors.set(pk, {
          partitionPk: pk, group: g.name, committedOffset: r.next_offset as number, leaseId: (r.lease_id as string | null) ?? null,
          leaseExpiresAt: (r.lease_expires_at_ms as number | null) ?? null, deliveredUpTo: (r.delivered_up_to as number | null) ?? null,
          retryCount: r.retry_count as number, ...countsOf(r), materialized: true,
        });
      }
      for (const r of await db.rows(`
        SELECT q.pk AS queue_pk, s.consumer_group, p.pk AS partition_pk,
               (SELECT min(x."offset") FROM queen.messages x
                 WHERE x.partition_id = p.id AND x."offset" >= p.first_offset AND x.created_at > ${msToTs('s.from_time_ms')}) AS o
          FROM queen.subscriptions s JOIN queen.queues q ON q.id = s.queue_id JOIN queen.partitions p ON p.queue_id = s.queue_id
         WHERE q.tenant_id = $1 AND s.mode = 'from' AND s.from_time_ms IS NOT NULL AND p.last_message_at_ms > s.from_time_ms
           AND NOT EXISTS (SELECT 1 FROM queen.consumers c WHERE c.partition_id = p.id AND c.consumer_group = s.consumer_group)`, [tenant])) {
        if (r.o !== null) m.starts.set(`${r.queue_pk as number}\u0000${r.consumer_group as string}\u0000${r.partition_pk as number}`, r.o as number);
      }
      return m;
    },

    async createdAtFrom(tenant, partitionPk, offset) {
      const r = await db.rows(`SELECT ${tsToMs('m.created_at')} AS created_ms FROM queen.messages m
                                 JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
                                WHERE p.pk = $1 AND q.tenant_id = $2 AND m."offset" >= $3 ORDER BY m."offset" LIMIT 1`, [partitionPk, tenant, offset]);
      return r[0]?.created_ms as number | undefined;
    },

    async listMessages(tenant, page: MessagePageQuery) {
      const params: unknown[] = [tenant, page.limit];
      const where = ['q.tenant_id = $1'];
      const add = (v: unknown) => `$${params.push(v)}`;
      if (page.partitionPk !== undefined) where.push(`p.pk = ${add(page.partitionPk)}`);
      else where.push(`q.pk = ${add(page.queuePk)}`);
      if (page.from !== undefined) where.push(`m.created_at >= ${msToTs(add(page.from))}`);
      if (page.to !== undefined) where.push(`m.created_at <= ${msToTs(add(page.to))}`);
      if (page.after) {
        const t = msToTs(add(page.after.createdAt));
        const pp = add(page.after.partitionPk);
        const o = add(page.after.offset);
        where.push(`(m.created_at < ${t} OR (m.created_at = ${t} AND (p.pk < ${pp} OR (p.pk = ${pp} AND m."offset" < ${o}))))`);
      }
      const order = page.partitionPk !== undefined ? 'm."offset" DESC' : 'm.created_at DESC, p.pk DESC, m."offset" DESC';
      const rows = await db.rows(`SELECT ${MSG} FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                                    JOIN queen.queues q ON q.id = p.queue_id WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT $2`, params);
      return rows.map(messageOf);
    },

    async findMessage(tenant, partitionId, transactionId, since): Promise<MessageRow | undefined> {
      if (partitionIdsOf([partitionId]).length === 0) return undefined;
      const r = await db.rows(`SELECT ${MSG} FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                                 JOIN queen.queues q ON q.id = p.queue_id
                                WHERE m.partition_id = $1 AND q.tenant_id = $2 AND m.transaction_id = $3 AND m.created_at >= ${msToTs('$4')}
                                ORDER BY m."offset" DESC LIMIT 1`, [partitionId, tenant, transactionId, since]);
      if (!r[0]) return undefined;
      const { queuePk: _q, ...row } = messageOf(r[0]);
      return row;
    },

    async locate(tenant, partitionId) {
      if (partitionIdsOf([partitionId]).length === 0) return undefined;
      const r = await db.rows(`SELECT q.name AS queue, p.name AS partition FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                                WHERE p.id = $1 AND q.tenant_id = $2`, [partitionId, tenant]);
      return r[0] ? { tenant, queue: r[0].queue as string, partition: r[0].partition as string } : undefined;
    },

    async dlqDepth(tenant) {
      const out = new Map<string, number>();
      for (const r of await db.rows(`SELECT q.name, count(*) AS n FROM queen.dlq d JOIN queen.queues q ON q.id = d.queue_id
                                      WHERE q.tenant_id = $1 GROUP BY q.name`, [tenant])) out.set(r.name as string, r.n as number);
      return out;
    },

    async payloadHeads(bytes) {
      const sql = ['messages', 'dlq', 'timers'].map((t) => `SELECT DISTINCT substring(payload from 1 for $1) AS h FROM queen.${t} WHERE encrypted`).join(' UNION ');
      return (await db.rows(sql, [bytes])).map((r) => r.h as Buffer);
    },

    async settings() {
      const out = new Map<string, string>();
      for (const r of await db.rows('SELECT key, value FROM queen.system_state')) out.set(r.key as string, r.value as string);
      return out;
    },
  };
}
