/**
 * SQLite implementation of {@link OpsStore}. Shares the connection of {@link SqliteStore}: writes
 * run inside the callback of `store.run`, so they join its transaction and group commit.
 * One prepared statement per operation; every read is an index range with a limit.
 */
import type { Database as Db, Statement } from 'better-sqlite3';
import type { ListedMessage, MessagePageQuery, OpsStore, TraceNameRow, TraceRow } from '../ops.js';
import type { DlqRow } from '../store.js';
import { toDlq, toMessage, type Row } from './rows.js';

function toListed(r: Row): ListedMessage {
  return { ...toMessage(r), queuePk: r.queue_pk as number };
}

function toTrace(r: Row): TraceRow {
  const names = r.names as string | null;
  return {
    id: r.id as string,
    queuePk: r.queue_pk as number,
    queue: r.queue_name as string,
    partition: r.partition_name as string,
    partitionId: r.partition_id as string,
    transactionId: r.transaction_id as string,
    messageId: (r.message_id as string | null) ?? null,
    group: r.consumer_group as string,
    eventType: r.event_type as string,
    data: r.data as string,
    workerId: (r.worker_id as string | null) ?? null,
    names: names ? (JSON.parse(names) as string[]) : [],
    createdAt: r.created_at as number,
  };
}

/** The order and keyset of a message listing: newest first by (created_at, partition_pk, offset). */
const KEYSET = `(created_at < @t OR (created_at = @t AND (partition_pk < @p OR (partition_pk = @p AND offset < @o))))`;

/** Operator queries and writes (messages browser, traces, DLQ admin) on the SQLite connection. */
export class SqliteOps implements OpsStore {
  private readonly s: Record<string, Statement>;
  private readonly pages = new Map<string, Statement>();

  constructor(private readonly db: Db) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      createdAtFrom: p('SELECT created_at FROM messages WHERE partition_pk = ? AND offset >= ? ORDER BY offset LIMIT 1'),
      olderThan: p(`SELECT partition_pk, offset FROM messages INDEXED BY messages_by_queue_time
                    WHERE queue_pk = ? AND created_at < ? ORDER BY created_at LIMIT ?`),
      dlqByAddress: p('SELECT * FROM dlq WHERE partition_id = ? AND transaction_id = ? ORDER BY failed_at DESC, id DESC LIMIT 1'),
      dlqDepth: p('SELECT queue_pk, count(*) AS n FROM dlq GROUP BY queue_pk'),
      deleteBelow: p('DELETE FROM messages WHERE partition_pk = ? AND offset < ?'),
      setFirst: p('UPDATE partitions SET first_offset = ? WHERE pk = ? AND first_offset < ?'),
      deleteDlqAddress: p('DELETE FROM dlq WHERE partition_id = ? AND transaction_id = ?'),
      purgeQueue: p('DELETE FROM dlq WHERE id IN (SELECT id FROM dlq WHERE queue_pk = ? LIMIT ?)'),
      purgeQueueGroup: p('DELETE FROM dlq WHERE id IN (SELECT id FROM dlq WHERE queue_pk = ? AND consumer_group = ? LIMIT ?)'),
      deleteGroupCursors: p(`DELETE FROM cursors WHERE consumer_group = ?
                             AND partition_pk IN (SELECT pk FROM partitions WHERE queue_pk = ?)`),
      insertTrace: p(`INSERT INTO traces (id, queue_pk, queue_name, partition_name, partition_id, transaction_id, message_id,
                        consumer_group, event_type, data, worker_id, names, created_at)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      insertTraceName: p('INSERT OR IGNORE INTO trace_names (name, trace_pk, created_at) VALUES (?, ?, ?)'),
      tracesByMessage: p('SELECT * FROM traces WHERE partition_id = ? AND transaction_id = ? ORDER BY pk LIMIT ?'),
      tracesByName: p(`SELECT t.* FROM trace_names n JOIN traces t ON t.pk = n.trace_pk JOIN queues q ON q.pk = t.queue_pk
                       WHERE n.name = ? AND q.tenant_id = ? ORDER BY n.trace_pk DESC LIMIT ? OFFSET ?`),
      countTracesByName: p(`SELECT count(*) AS n FROM trace_names n JOIN traces t ON t.pk = n.trace_pk JOIN queues q ON q.pk = t.queue_pk
                            WHERE n.name = ? AND q.tenant_id = ?`),
      countTraceNames: p(`SELECT count(DISTINCT n.name) AS n FROM trace_names n JOIN traces t ON t.pk = n.trace_pk
                          JOIN queues q ON q.pk = t.queue_pk WHERE q.tenant_id = ?`),
      traceNames: p(`SELECT n.name AS name, count(*) AS trace_count,
                       count(DISTINCT t.partition_id || char(0) || t.transaction_id) AS message_count, max(n.created_at) AS last_seen
                     FROM trace_names n JOIN traces t ON t.pk = n.trace_pk JOIN queues q ON q.pk = t.queue_pk
                     WHERE q.tenant_id = ?
                     GROUP BY n.name ORDER BY last_seen DESC, n.name LIMIT ? OFFSET ?`),
    };
  }

  private pageStatement(q: MessagePageQuery): Statement {
    const where: string[] = [q.partitionPk !== undefined ? 'partition_pk = @pk' : 'queue_pk = @q'];
    if (q.from !== undefined) where.push('created_at >= @from');
    if (q.to !== undefined) where.push('created_at <= @to');
    if (q.after) where.push('created_at <= @t', KEYSET);
    const order = q.partitionPk !== undefined ? 'offset DESC' : 'created_at DESC, partition_pk DESC, offset DESC';
    const index = q.partitionPk !== undefined ? '' : 'INDEXED BY messages_by_queue_time';
    const sql = `SELECT * FROM messages ${index} WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT @limit`;
    let st = this.pages.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.pages.set(sql, st);
    }
    return st;
  }

  listMessages(q: MessagePageQuery): ListedMessage[] {
    const args: Record<string, number> = { limit: q.limit };
    if (q.partitionPk !== undefined) args.pk = q.partitionPk;
    else args.q = q.queuePk;
    if (q.from !== undefined) args.from = q.from;
    if (q.to !== undefined) args.to = q.to;
    if (q.after) {
      args.t = q.after.createdAt;
      args.p = q.after.partitionPk;
      args.o = q.after.offset;
    }
    return (this.pageStatement(q).all(args) as Row[]).map(toListed);
  }

  createdAtFrom(partitionPk: number, offset: number): number | undefined {
    const r = this.s.createdAtFrom!.get(partitionPk, offset) as Row | undefined;
    return r ? (r.created_at as number) : undefined;
  }

  messagesOlderThan(queuePk: number, before: number, limit: number): { partitionPk: number; offset: number }[] {
    return (this.s.olderThan!.all(queuePk, before, limit) as Row[]).map((r) => ({ partitionPk: r.partition_pk as number, offset: r.offset as number }));
  }

  findDlqByAddress(partitionId: string, transactionId: string): DlqRow | undefined {
    const r = this.s.dlqByAddress!.get(partitionId, transactionId) as Row | undefined;
    return r ? toDlq(r) : undefined;
  }

  dlqDepthByQueue(): Map<number, number> {
    const out = new Map<number, number>();
    for (const r of this.s.dlqDepth!.all() as Row[]) out.set(r.queue_pk as number, r.n as number);
    return out;
  }

  tracesByMessage(partitionId: string, transactionId: string, limit: number): TraceRow[] {
    return (this.s.tracesByMessage!.all(partitionId, transactionId, limit) as Row[]).map(toTrace);
  }

  tracesByName(tenant: string, name: string, limit: number, offset: number): TraceRow[] {
    return (this.s.tracesByName!.all(name, tenant, limit, offset) as Row[]).map(toTrace);
  }

  traceNames(tenant: string, limit: number, offset: number): TraceNameRow[] {
    return (this.s.traceNames!.all(tenant, limit, offset) as Row[]).map((r) => ({
      name: r.name as string, traceCount: r.trace_count as number, messageCount: r.message_count as number, lastSeen: r.last_seen as number,
    }));
  }

  countTracesByName(tenant: string, name: string): number {
    return (this.s.countTracesByName!.get(name, tenant) as Row).n as number;
  }

  countTraceNames(tenant: string): number {
    return (this.s.countTraceNames!.get(tenant) as Row).n as number;
  }

  deleteMessagesBelow(partitionPk: number, endOffset: number): number {
    return this.s.deleteBelow!.run(partitionPk, endOffset).changes;
  }

  setFirstOffset(partitionPk: number, firstOffset: number): void {
    this.s.setFirst!.run(firstOffset, partitionPk, firstOffset);
  }

  deleteDlqByAddress(partitionId: string, transactionId: string): number {
    return this.s.deleteDlqAddress!.run(partitionId, transactionId).changes;
  }

  purgeDlq(queuePk: number, group: string | undefined, limit: number): number {
    const st = group === undefined ? this.s.purgeQueue! : this.s.purgeQueueGroup!;
    return (group === undefined ? st.run(queuePk, limit) : st.run(queuePk, group, limit)).changes;
  }

  deleteGroupCursors(queuePk: number, group: string): number {
    return this.s.deleteGroupCursors!.run(group, queuePk).changes;
  }

  insertTrace(t: TraceRow): void {
    const pk = Number(this.s.insertTrace!.run(t.id, t.queuePk, t.queue, t.partition, t.partitionId, t.transactionId, t.messageId,
      t.group, t.eventType, t.data, t.workerId, JSON.stringify(t.names), t.createdAt).lastInsertRowid);
    for (const n of t.names) this.s.insertTraceName!.run(n, pk, t.createdAt);
  }
}
