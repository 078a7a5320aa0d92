/**
 * Row → record mappers shared by the SQLite store's modules (one place per table shape).
 */
import type { DlqRow, MessageRow } from '../store.js';

/** A raw better-sqlite3 row. */
export type Row = Record<string, unknown>;

/** A `messages` row. */
export function toMessage(r: Row): MessageRow {
  return {
    partitionPk: r.partition_pk as number,
    offset: r.offset as number,
    id: r.id as string,
    transactionId: r.transaction_id as string,
    payload: r.payload as string | Buffer,
    encrypted: r.encrypted === 1,
    traceId: (r.trace_id as string | null) ?? null,
    producerSub: (r.producer_sub as string | null) ?? null,
    createdAt: r.created_at as number,
  };
}

/** A `dlq` row. */
export function toDlq(r: Row): DlqRow {
  return {
    id: r.id as string,
    queuePk: r.queue_pk as number,
    queue: r.queue as string,
    partitionPk: r.partition_pk as number,
    partition: r.partition as string,
    partitionId: r.partition_id as string,
    group: r.consumer_group as string,
    messageId: r.message_id as string,
    transactionId: r.transaction_id as string,
    offset: r.offset as number,
    payload: r.payload as string | Buffer,
    encrypted: r.encrypted === 1,
    traceId: (r.trace_id as string | null) ?? null,
    producerSub: (r.producer_sub as string | null) ?? null,
    error: (r.error as string | null) ?? null,
    retryCount: r.retry_count as number,
    createdAt: r.created_at as number,
    failedAt: r.failed_at as number,
  };
}

