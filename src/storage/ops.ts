/**
 * The operator part of the storage contract: inspection reads (message listings with keyset
 * pagination, lag probes, dead letters by address, traces) and the writes of admin routes and
 * background jobs (retention, dead-letter purges, consumer-group deletion, trace events).
 *
 * Reads are callable anywhere; writes only inside {@link Store.run} (they join that unit of work
 * and its group commit). Every query here is bounded by an index range or a `limit`: nothing
 * scans every message or every partition.
 */
import type { DlqRow, MessageRow } from './store.js';

/**
 * Position of a message in listing order (newest first): `(createdAt, partitionPk, offset)`,
 * compared lexicographically. Unique and immutable, so a keyset page after it neither skips nor
 * repeats rows that existed when the listing started, however many messages arrive meanwhile.
 */
export interface MessageKey {
  createdAt: number;
  partitionPk: number;
  offset: number;
}

/** One page of messages of one queue, newest first. */
export interface MessagePageQuery {
  queuePk: number;
  /** Only this partition. */
  partitionPk?: number | undefined;
  /** createdAt ≥ from (epoch ms). */
  from?: number | undefined;
  /** createdAt ≤ to (epoch ms). */
  to?: number | undefined;
  /** Only rows strictly after this key in listing order (i.e. older). */
  after?: MessageKey | undefined;
  limit: number;
}

/** A message row plus the queue it belongs to. */
export interface ListedMessage extends MessageRow {
  queuePk: number;
}

/** A trace event on a message (docs/http-api.md#traces). */
export interface TraceRow {
  id: string;
  queuePk: number;
  queue: string;
  partition: string;
  partitionId: string;
  transactionId: string;
  messageId: string | null;
  group: string;
  eventType: string;
  /** JSON text */
  data: string;
  workerId: string | null;
  names: string[];
  /** epoch ms */
  createdAt: number;
}

export interface TraceNameRow {
  name: string;
  traceCount: number;
  messageCount: number;
  /** epoch ms */
  lastSeen: number;
}

/** Operator reads and writes; see the module comment. */
export interface OpsStore {
  /** One page of a queue's messages, newest first (see {@link MessageKey}). */
  listMessages(q: MessagePageQuery): ListedMessage[];
  /** created_at of the first retained message at or after `offset`; undefined when none. */
  createdAtFrom(partitionPk: number, offset: number): number | undefined;
  /**
   * Up to `limit` messages of a queue created before `before` (epoch ms), oldest first
   * (index on (queue, created_at): cost grows with the rows returned).
   */
  messagesOlderThan(queuePk: number, before: number, limit: number): { partitionPk: number; offset: number }[];
  /** The newest dead letter of a message address. */
  findDlqByAddress(partitionId: string, transactionId: string): DlqRow | undefined;
  /** Dead-letter rows per queue pk (boot-time seed of the in-memory depth). */
  dlqDepthByQueue(): Map<number, number>;
  /** Trace events of one message, oldest first. */
  tracesByMessage(partitionId: string, transactionId: string, limit: number): TraceRow[];
  /** Trace events of `tenant`'s queues carrying `name`, newest first. */
  tracesByName(tenant: string, name: string, limit: number, offset: number): TraceRow[];
  /** Trace names of `tenant`'s queues with counts, most recently seen first. */
  traceNames(tenant: string, limit: number, offset: number): TraceNameRow[];
  /** Trace events of `tenant`'s queues carrying `name` (the true total of {@link tracesByName}). */
  countTracesByName(tenant: string, name: string): number;
  /** Distinct trace names of `tenant`'s queues (the true total of {@link traceNames}). */
  countTraceNames(tenant: string): number;

  // ---------------------------------------------------------------- writes (inside Store.run)

  /** Deletes a partition's messages with offset < `endOffset`; returns the rows removed. */
  deleteMessagesBelow(partitionPk: number, endOffset: number): number;
  /** Records the partition's lowest retained offset. */
  setFirstOffset(partitionPk: number, firstOffset: number): void;
  /** Deletes the dead letters of a message address; returns the rows removed. */
  deleteDlqByAddress(partitionId: string, transactionId: string): number;
  /** Deletes up to `limit` dead letters of a queue (optionally one group); returns the rows removed. */
  purgeDlq(queuePk: number, group: string | undefined, limit: number): number;
  /** Deletes a consumer group's cursor rows on every partition of a queue; returns the rows removed. */
  deleteGroupCursors(queuePk: number, group: string): number;
  insertTrace(t: TraceRow): void;
}
