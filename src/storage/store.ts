/**
 * The storage contract the broker domain uses. `sqlite/` implements it now; a PostgreSQL
 * backend implements the same contract later (see docs/storage.md#store-contract).
 *
 * Model (docs/storage.md#log-model): a partition is an append-only sequence with a dense offset per message;
 * a consumer group's progress on a partition is one cursor row (next offset, live lease, retry
 * counter). No per-message status rows exist.
 *
 * Writes happen inside {@link Store.run}: the store gathers every unit of work that arrives
 * while a commit is in progress and commits them together (group commit, one fsync), then
 * resolves each promise. A resolved promise means the change is durable.
 */
import type { StoredPayload } from '../model/codec.js';
import type { QueueOptions } from '../model/options.js';
import type { KvStore } from './kv.js';
import type { OpsStore } from './ops.js';
import type { TimerStore } from './timers.js';
import type { DeliveryCounts } from './attempts.js';

/** A queue as stored. `pk` is the store's internal key; `id` the public UUID. */
export interface QueueRow {
  pk: number;
  id: string;
  /** The tenant the queue belongs to (src/storage/contract.ts `DEFAULT_TENANT` until the proxy assigns others); names are unique per tenant. */
  tenant: string;
  name: string;
  namespace: string;
  task: string;
  options: QueueOptions;
  /** epoch ms */
  createdAt: number;
}

/** A partition as stored. Offsets: `firstOffset` ≤ retained offsets < `headOffset`. */
export interface PartitionRow {
  pk: number;
  id: string;
  queuePk: number;
  name: string;
  /** Exclusive end of the log: the offset the next appended message receives (SQL column `next_offset`). */
  headOffset: number;
  /** Lowest offset still stored (retention moves it up). */
  firstOffset: number;
  /** created_at (epoch ms) of the newest message, null when none was ever appended. */
  lastMessageAt: number | null;
  /** epoch ms */
  createdAt: number;
}

/**
 * A consumer group's cursor on one partition (docs/storage.md#log-model), with the delivery counts of
 * what lies beyond its committed offset (src/storage/attempts.ts).
 */
export interface CursorRow extends DeliveryCounts {
  partitionPk: number;
  group: string;
  /** First offset not yet consumed by the group: everything below it is committed (SQL column `next_offset`). */
  committedOffset: number;
  leaseId: string | null;
  /** epoch ms; a lease is live while `leaseExpiresAt > now`. */
  leaseExpiresAt: number | null;
  /**
   * Exclusive end offset of the last delivered batch (the leased batch while the lease lives; SQL
   * column `lease_end_offset`). Only meaningful under a live lease: what was ever delivered is
   * `deliveredMax`.
   */
  deliveredUpTo: number | null;
  /** Failed deliveries charged since the last completed batch. */
  retryCount: number;
}

/** How a consumer group subscribed to a queue on first contact (docs/http-api.md#subscription-modes). */
export interface SubscriptionRow {
  queuePk: number;
  group: string;
  /** `all`: from the oldest retained message; `from`: messages created after `fromTime`. */
  mode: 'all' | 'from';
  /** epoch ms, for mode `from` */
  fromTime: number | null;
  /** Original mode text the caller used, echoed by listings (`all`, `new`, `timestamp`). */
  label: string;
  /** Conflation: the group gets only the newest message of each partition (fixed at registration). */
  conflation: boolean;
  createdAt: number;
}

/** Payload bytes as stored (defined with the codec that produces them). */
export type { StoredPayload } from '../model/codec.js';

export interface MessageRow {
  partitionPk: number;
  offset: number;
  id: string;
  transactionId: string;
  payload: StoredPayload;
  encrypted: boolean;
  traceId: string | null;
  producerSub: string | null;
  /** epoch ms */
  createdAt: number;
}

export interface DlqRow {
  id: string;
  queuePk: number;
  queue: string;
  partitionPk: number;
  partition: string;
  partitionId: string;
  group: string;
  messageId: string;
  transactionId: string;
  offset: number;
  payload: StoredPayload;
  encrypted: boolean;
  traceId: string | null;
  producerSub: string | null;
  error: string | null;
  retryCount: number;
  /** epoch ms the message was pushed */
  createdAt: number;
  /** epoch ms it was dead-lettered */
  failedAt: number;
}

export interface DlqFilter {
  /** Only dead letters of this tenant's queues (docs/proxy.md#tenancy); every tenant's when undefined. */
  tenant?: string;
  queue?: string;
  group?: string;
  /** failedAt ≥ from (epoch ms) */
  from?: number;
  /** failedAt ≤ to (epoch ms) */
  to?: number;
  limit: number;
  offset: number;
}

/** Everything the broker loads at boot to rebuild its in-memory indexes. */
export interface StoreSnapshot {
  queues: QueueRow[];
  partitions: PartitionRow[];
  cursors: CursorRow[];
  subscriptions: SubscriptionRow[];
  settings: Map<string, string>;
}

/** Reads; callable inside or outside a unit of work. Synchronous for SQLite. */
export interface StoreReader {
  /** The newest message of a partition with `transactionId` created at or after `since` (epoch ms). */
  findByTransactionId(partitionPk: number, transactionId: string, since: number): MessageRow | undefined;
  /**
   * The offset of the newest message of a partition with `transactionId` (no time bound), read
   * from the index alone: what an ack needs, without the row and its payload.
   */
  offsetByTransactionId(partitionPk: number, transactionId: string): number | undefined;
  /** Up to `limit` messages with offset ≥ `fromOffset`, ascending. */
  readMessages(partitionPk: number, fromOffset: number, limit: number): MessageRow[];
  /** One message by offset. */
  readMessage(partitionPk: number, offset: number): MessageRow | undefined;
  /** Lowest offset ≥ `fromOffset` whose message was created after `timeMs`; undefined if none. */
  firstOffsetAfter(partitionPk: number, fromOffset: number, timeMs: number): number | undefined;
  listDlq(filter: DlqFilter): DlqRow[];
  /** Dead letters matching `filter` (its queue, group and failedAt range; paging ignored): the listing's true total. */
  countDlqMatching(filter: Omit<DlqFilter, 'limit' | 'offset'>): number;
  getDlq(id: string): DlqRow | undefined;
  countDlq(queuePk?: number): number;
}

/** Writes; only valid inside {@link Store.run}. */
export interface StoreTx extends StoreReader {
  insertQueue(q: Omit<QueueRow, 'pk'>): number;
  updateQueue(pk: number, namespace: string, task: string, options: QueueOptions): void;
  /** Removes the queue and everything under it (partitions, messages, cursors, subscriptions, DLQ rows, traces, pending timers). */
  deleteQueue(pk: number): void;
  insertPartition(p: Omit<PartitionRow, 'pk'>): number;
  /** Records a new head after appends. */
  updatePartitionHead(pk: number, headOffset: number, lastMessageAt: number): void;
  insertMessage(queuePk: number, m: MessageRow): void;
  upsertCursor(c: CursorRow): void;
  deleteCursor(partitionPk: number, group: string): void;
  upsertSubscription(s: SubscriptionRow): void;
  deleteSubscription(queuePk: number, group: string): void;
  insertDlq(row: DlqRow): void;
  deleteDlq(id: string): boolean;
  setSetting(key: string, value: string): void;
  /** Runs `fn` once this unit of work is durable; dropped if it fails. */
  afterCommit(fn: () => void): void;
  /**
   * Runs `fn` when this unit's writes are rolled back: at once when the unit throws (before the
   * next unit of the batch runs), or, when the group commit itself fails, for every unit of the
   * batch in reverse order. Callers undo their in-memory effects here. Hooks of one unit run
   * newest first.
   */
  onRollback(fn: () => void): void;
}

/** Named differences between backends (not dialect checks scattered in the code). */
export interface StoreCapabilities {
  /** Wake-ups between brokers travel through the store (PostgreSQL LISTEN/NOTIFY). */
  listenNotify: boolean;
  /** Only one broker process may use the data (embedded file). */
  singleWriter: boolean;
}

export interface Store extends StoreReader {
  readonly capabilities: StoreCapabilities;
  /** Operator reads and writes: inspection, retention, dead-letter admin, traces (ops.ts). */
  readonly ops: OpsStore;
  /** KV rows (docs/http-api.md#kv) and the lock permits stored as KV rows (kv.ts). */
  readonly kv: KvStore;
  /** Scheduled messages (timers.ts). */
  readonly timers: TimerStore;
  /** Loads the persistent state for boot. */
  loadSnapshot(): StoreSnapshot;
  /**
   * Runs `work` in the next group commit. `work` must validate before it writes and must not
   * await. Resolves with its result once the commit is durable; rejects with what `work` threw
   * (its writes rolled back and its `onRollback` hooks run, the rest of the batch unaffected), or
   * with a storage error when the commit itself failed (every unit's `onRollback` hooks run).
   */
  run<T>(work: (tx: StoreTx) => T): Promise<T>;
  /** Commits what is pending and closes the store. */
  close(): Promise<void>;
  /** Health probe: true when the store answers. */
  healthy(): boolean;
}
