/**
 * The storage contract stated in operations (docs/storage.md#operation-contract): what a backend
 * must do atomically so that several broker processes could share it. Every call is async and
 * atomic in its backend; every key carries the tenant. Modelled on bullmq's queue-backend
 * interface and pg-boss's manager/plans/db split: the domain (src/broker/) decides the rules (ack
 * statuses, the retry budget, the dead-letter decision, lease and visibility parameters) and
 * passes decisions in; a backend decides only what PostgreSQL would decide in SQL: offset
 * allocation, the dedup probe, which free leases a claim takes, visibility predicates.
 *
 * Times are epoch ms and are passed in by the caller (`now`), so one injected clock drives them.
 * A backend with its own clock (PostgreSQL `now()`) may follow the caller's test clock instead.
 */
import type { StoredPayload } from '../model/codec.js';
import type { BatchAttempts } from './attempts.js';
import type { QueueOptions } from '../model/options.js';
import type { KafkaMetaSubStore } from './kafka-meta.js';
import type { KvRow, KvScan } from './kv.js';
import type { ListedMessage, MessagePageQuery, TraceNameRow, TraceRow } from './ops.js';
import type { CursorRow, DlqFilter, DlqRow, MessageRow, PartitionRow, QueueRow, SubscriptionRow } from './store.js';
import type { DueTimer, TimerRow } from './timers.js';

/** A claimed batch's delivery attempts and the attempt of one of its messages (src/storage/attempts.ts). */
export { attemptOf, type BatchAttempts } from './attempts.js';

/** The tenant every queue belongs to unless a request names another (src/model/tenancy.ts). */
export { DEFAULT_TENANT } from '../model/tenancy.js';

/** A queue's identity: unique per tenant. */
export interface QueueKey {
  tenant: string;
  queue: string;
}

/** A partition's identity. */
export interface PartitionKey extends QueueKey {
  partition: string;
}

/** A consumer group's cursor on one partition. */
export interface CursorKey extends PartitionKey {
  group: string;
}

/** One message to append; the backend assigns its offset. */
export interface AppendItem {
  messageId: string;
  transactionId: string;
  payload: StoredPayload;
  encrypted: boolean;
  traceId: string | null;
  producerSub: string | null;
}

/** Append to one partition, creating the queue and partition when missing. */
export interface AppendRequest {
  key: PartitionKey;
  items: AppendItem[];
  /**
   * Dedup window, ms: an item whose transactionId was appended to this partition within the window
   * (or earlier in `items`) is a duplicate, takes no offset and is answered with the original. 0 = off.
   */
  dedupWindowMs: number;
  /**
   * Inside a unit: a duplicate (stored or earlier in `items`) refuses the whole unit instead of
   * being answered (transactions, docs/http-api.md#transaction); the refusal names the item.
   */
  refuseDuplicates?: boolean | undefined;
  now: number;
}

/** Per item, in request order. */
export type AppendOutcome =
  | { status: 'queued'; offset: number; messageId: string }
  | { status: 'duplicate'; offset: number; messageId: string };

export interface AppendResult {
  /** Public id of the partition. */
  partitionId: string;
  outcomes: AppendOutcome[];
  /** Exclusive end of the log after the append. */
  headOffset: number;
}

/** Where a group starts on a partition it has no cursor on yet (cursor materialised on first touch). */
export type CursorSeed =
  | { mode: 'all' }
  /** Messages created after `fromTime` (epoch ms); `label` is how the subscriber asked (`new`, `timestamp`), echoed by listings. */
  | { mode: 'from'; fromTime: number; label?: string | undefined };

/** Claim partitions of one queue for one consumer group. */
export interface ClaimRequest {
  queue: QueueKey;
  group: string;
  /** Only this partition. */
  partition?: string | undefined;
  /** Most partitions to claim. The backend chooses which of the group's claimable partitions it serves. */
  maxPartitions: number;
  /** Most messages across claimed partitions. */
  batch: number;
  /** The lease to grant; null = auto-ack (the cursor moves past what is returned, no lease). */
  leaseId: string | null;
  /** Lease length, ms. */
  leaseMs: number;
  /** A message is visible once `createdAt + delayMs <= now`. */
  delayMs: number;
  /** A partition is claimable once its newest message is `windowMs` old. */
  windowMs: number;
  /** Return only the newest message of each partition. */
  conflation: boolean;
  seed: CursorSeed;
  now: number;
}

/** Messages leased from one partition. */
export interface ClaimedBatch {
  partition: string;
  partitionId: string;
  leaseId: string | null;
  /** Delivery attempt of the batch's first message for the group (1-based), the highest of the batch. */
  deliveryAttempt: number;
  /** Delivery attempt of each message, this delivery included (`attemptOf(attempts, offset)`, src/storage/attempts.ts). */
  attempts: BatchAttempts;
  messages: MessageRow[];
}

/** A cursor as the contract shows it: the stored cursor row without its key. */
export type CursorView = Omit<CursorRow, 'partitionPk' | 'group'>;

/** A decided cursor move: ack (forward), nack or retry (rewind), DLQ hand-off. */
export interface CursorCommit {
  key: CursorKey;
  /** Applied only while this lease holds the cursor and is live at `now`; null = unconditional. */
  leaseId: string | null;
  /** Applied only while the cursor is still at this offset (the one the decision was made on); undefined = any. */
  ifCommittedOffset?: number | undefined;
  /** The new committed offset; below the current one (a position set back) it also clears the delivery counts. */
  committedOffset: number;
  retryCount: number;
  /** End the lease (the delivery counts stay). */
  release: boolean;
  /** Copy the message at `offset` to the dead-letter store first. */
  deadLetter?: { id: string; offset: number; error: string | null; retryCount: number } | undefined;
  now: number;
}

export interface CommitResult {
  /** False when the lease or offset condition failed: nothing was written. */
  applied: boolean;
  cursor: CursorView | undefined;
}

/** What a `timerExpect` op requires of a stored timer: the fields a decision was made on. */
export interface TimerExpectation {
  deliverAt: number;
  messageId: string;
  attempts: number;
  updatedAt: number;
}

/**
 * One operation of a transaction unit. Writes and preconditions: a domain decision made on rows
 * read before the unit (KV rows, timers, leases) carries the state it read as an `…Expect` /
 * `leaseHeld` op, so a unit whose reads went stale is refused and decided again
 * (docs/storage.md#operation-contract).
 */
export type UnitOp =
  | { op: 'append'; request: AppendRequest }
  | { op: 'commit'; request: CursorCommit }
  /** Refused unless `row.version` is above both the key's stored version and the version floor (fencing, src/storage/kv.ts). */
  | { op: 'kvPut'; tenant: string; row: KvRow }
  /** Removes the row (raising the floor to its version); `done` false when there was none. */
  | { op: 'kvDelete'; tenant: string; ns: string; key: string }
  /** Refused unless the key's stored row (expired or not) has this version; null = no row. */
  | { op: 'kvExpect'; tenant: string; ns: string; key: string; version: number | null }
  | { op: 'timerPut'; tenant: string; row: TimerRow }
  | { op: 'timerDelete'; tenant: string; queue: string; timerKey: string }
  /** Refused unless the stored timer matches `expect`; null = no timer. */
  | { op: 'timerExpect'; tenant: string; queue: string; timerKey: string; expect: TimerExpectation | null }
  /** Records a failed firing (attempts + 1, `error`, next attempt at `retryAt`); `done` false when the timer is gone. */
  | { op: 'timerFailed'; tenant: string; queue: string; timerKey: string; error: string; retryAt: number; now: number }
  /** Refused unless `leaseId` holds at least one cursor whose lease is live at `now`. */
  | { op: 'leaseHeld'; leaseId: string; now: number }
  /** Deletes a dead letter; refused when it is gone (another replay moved it). */
  | { op: 'dlqDelete'; id: string }
  | StreamStateUnitOp;

export type UnitOpResult = AppendResult | CommitResult | { done: boolean };

/**
 * All or nothing: `committed` false (and nothing written) when a commit op's lease or offset
 * condition, a precondition op, or a `refuseDuplicates` append failed; `failedItem` is the
 * duplicate item's index in that append.
 */
export type UnitResult =
  | { committed: true; results: UnitOpResult[] }
  | { committed: false; failedIndex: number; failedItem?: number };

/** A partition's log bounds. */
export interface PartitionView {
  partitionId: string;
  headOffset: number;
  firstOffset: number;
  lastMessageAt: number | null;
}

/**
 * Partitions that became claimable (a push, a rewind, a released or expired lease), after the
 * change is durable; `visibleAt` (epoch ms) when they become claimable only later (delay, window).
 * The same shape a LISTEN/NOTIFY hint has between nodes: a hint, never the only path to a message.
 */
export type ReadyListener = (queue: QueueKey, partitions: string[], visibleAt: number | null) => void;

/** KV rows per tenant (docs/http-api.md#kv). */
export interface KvSubStore {
  get(tenant: string, ns: string, key: string): Promise<KvRow | undefined>;
  put(tenant: string, row: KvRow): Promise<void>;
  delete(tenant: string, ns: string, key: string): Promise<boolean>;
  scan(tenant: string, q: KvScan): Promise<KvRow[]>;
  /** Removes up to `limit` rows expired at `now`; returns how many. */
  pruneExpired(now: number, limit: number): Promise<number>;
  /** The version floor: the highest version any removed row had (src/storage/kv.ts). */
  floor(): Promise<number>;
  /** Earliest expiry of any stored row (every tenant); undefined when none expires. */
  nextExpiry(): Promise<number | undefined>;
  /** A tenant's namespaces with their row counts, ascending, after `after`, at most `limit`. */
  namespaces(tenant: string, after: string, limit: number): Promise<{ ns: string; keys: number }[]>;
  /**
   * Removes every KV row of `tenant` (lock permits included: they are rows of namespace
   * `queen-locks`), raising the version floor over them; returns how many (docs/proxy.md#control-plane, the purge).
   */
  purgeTenant(tenant: string): Promise<number>;
}

/** Lock permits: one row per (name, slot), free when missing or expired; the token only grows. */
export interface LockSubStore {
  /** Takes the permit when free at `now` until `untilMs`; returns its fencing token, undefined when held. */
  tryAcquire(tenant: string, name: string, slot: number, owner: string | null, untilMs: number, now: number): Promise<number | undefined>;
  /** Frees the permit when `token` still holds it; returns whether it did. */
  release(tenant: string, name: string, slot: number, token: number): Promise<boolean>;
}

/** Scheduled messages (docs/http-api.md#timers). */
export interface TimerSubStore {
  put(tenant: string, row: TimerRow): Promise<void>;
  get(tenant: string, queue: string, timerKey: string): Promise<TimerRow | undefined>;
  delete(tenant: string, queue: string, timerKey: string): Promise<boolean>;
  /** Timers due at `now`, earliest first, across tenants, each with its tenant (firing pushes into that tenant's queue). */
  due(now: number, limit: number): Promise<DueTimer[]>;
  /** The earliest deliverAt of any timer; undefined when there is none. */
  nextDueAt(): Promise<number | undefined>;
  /** A queue's timers with key > `after` (all when undefined), ascending by key, at most `limit`. */
  list(tenant: string, queue: string, after: string | undefined, limit: number): Promise<TimerRow[]>;
  /** Removes every timer of `tenant`, on any queue; returns how many (docs/proxy.md#control-plane, the purge). */
  purgeTenant(tenant: string): Promise<number>;
}

/** A trace event to record; the backend resolves the queue and assigns the id. */
export type TraceEvent = Omit<TraceRow, 'id' | 'queuePk' | 'queue'>;

/** Trace events on messages (docs/http-api.md#traces). */
export interface TraceSubStore {
  /** Records the event; returns its id, or undefined when the queue does not exist. */
  add(queue: QueueKey, e: TraceEvent): Promise<string | undefined>;
  /** Events of one message, oldest first. */
  byMessage(partitionId: string, transactionId: string, limit: number): Promise<TraceRow[]>;
  /** Events of `tenant`'s queues carrying `name`, newest first, with the true total. */
  byName(tenant: string, name: string, limit: number, offset: number): Promise<{ rows: TraceRow[]; total: number }>;
  /** Trace names of `tenant`'s queues with their event and message counts, by name, with the true total of names. */
  names(tenant: string, limit: number, offset: number): Promise<{ rows: TraceNameRow[]; total: number }>;
}

/** Dead letters, listed with the true total. */
export interface DlqSubStore {
  list(filter: DlqFilter): Promise<{ rows: DlqRow[]; total: number }>;
  get(id: string): Promise<DlqRow | undefined>;
  delete(id: string): Promise<boolean>;
  /** The newest dead letter of a message address; undefined when none. */
  findByAddress(partitionId: string, transactionId: string): Promise<DlqRow | undefined>;
  /** Deletes every dead letter of a message address; returns how many and their queue's name. */
  deleteByAddress(partitionId: string, transactionId: string): Promise<{ queue: string | undefined; deleted: number }>;
  /** Deletes up to `limit` dead letters of a queue (of one group when given); returns how many. */
  purge(queue: QueueKey, group: string | undefined, limit: number): Promise<number>;
}

/** A queue's configuration as stored (options with their defaults applied). */
export interface QueueConfig {
  /** Public id of the queue. */
  queueId: string;
  namespace: string;
  task: string;
  options: QueueOptions;
}

/** Where a seek moves a group's cursor: the log's end, or the first message created at or after `timestamp` (epoch ms). */
export type SeekTarget = { toEnd: true } | { timestamp: number };

/** A partition's prefix to remove: every offset below `end` (capped at the head). */
export interface PruneCut {
  partition: string;
  end: number;
}

/** A partition's retention inputs (docs/http-api.md#retention). */
export interface RetentionPartition {
  queue: QueueKey;
  partition: string;
  /** Public id of the partition. */
  partitionId: string;
  firstOffset: number;
  headOffset: number;
  /**
   * The lowest position over the queue's registered groups (each group's committed offset, or
   * where its subscription starts on a partition it has no cursor on): what every group consumed.
   * Undefined when no group is registered.
   */
  consumedUpTo: number | undefined;
}

/** Operator views and writes. */
export interface AdminSubStore {
  /** A queue's configuration; undefined when the queue does not exist. */
  readQueue(queue: QueueKey): Promise<QueueConfig | undefined>;
  /** Creates the queue when missing and sets its namespace, task and options (as given: the domain merges); returns it as stored. */
  configureQueue(queue: QueueKey, config: Omit<QueueConfig, 'queueId'>, now: number): Promise<QueueConfig>;
  /** Sets a broker-wide setting (maintenance flags; docs/operations.md#maintenance-mode). */
  setSetting(key: string, value: string): Promise<void>;
  /** A broker-wide setting; undefined when never set. */
  setting(key: string): Promise<string | undefined>;
  /** Queues of a tenant, by name. */
  queues(tenant: string): Promise<{ queue: string; partitions: number; messages: number }[]>;
  /** Partitions per queue of a tenant (queue name → count; a queue without partitions counts 0). Reads no message. */
  partitionCounts(tenant: string): Promise<Map<string, number>>;
  /**
   * Bytes of stored payloads of a tenant's messages still in its partitions (not yet removed by
   * retention or a queue deletion), in bytes as stored. A scan of the tenant's messages: callers
   * sample it (docs/proxy.md#quotas-and-limits, `max_retained_bytes`).
   */
  retainedBytes(tenant: string): Promise<number>;
  /** Cursors of a group on a queue, by partition name. */
  cursors(queue: QueueKey, group: string): Promise<{ partition: string; cursor: CursorView }[]>;
  /** Deletes a queue and everything under it; returns whether it existed. */
  deleteQueue(queue: QueueKey): Promise<boolean>;
  /**
   * Deletes a group's cursors (dropping its leases) on one queue of `tenant`, or on every queue
   * when `queue` is undefined, and its subscription when `deleteMetadata`; a group kept registered
   * starts again from its subscription.
   * @returns cursors deleted, and the partitions of the queues it was registered on (their consumption point moved)
   */
  deleteGroup(tenant: string, group: string, queue: string | undefined, deleteMetadata: boolean, now: number):
    Promise<{ cursorsDeleted: number; partitions: PartitionKey[] }>;
  /**
   * Moves a group's cursor on every partition of a queue (or one) to `target`, dropping its leases
   * there; registers the group when new (subscribed from the target).
   * @returns the partitions moved with the offset each cursor now has; undefined when the queue or the partition does not exist
   */
  seekGroup(queue: QueueKey, group: string, partition: string | undefined, target: SeekTarget, now: number):
    Promise<{ partition: string; committedOffset: number }[] | undefined>;
  /**
   * Sets the subscription start (`from` `fromTime`, epoch ms) of a group on every queue of `tenant`
   * it is registered on; partitions it has no cursor on yet start there.
   * @returns how many queues' subscriptions changed
   */
  setSubscriptionFrom(tenant: string, group: string, fromTime: number, now: number): Promise<number>;
  /**
   * Removes the given prefixes of a queue's partitions (retention): messages below each `end`,
   * the partition's first offset raised to it. A cut at or below the first offset does nothing.
   * @returns per partition cut, the messages removed and the first offset before the cut
   */
  prune(queue: QueueKey, cuts: PruneCut[]): Promise<{ partition: string; removed: number; firstOffsetBefore: number }[]>;
  /** Every queue of every tenant with its options (the retention sweep's rules). */
  queueOptions(): Promise<{ queue: QueueKey; options: QueueOptions }[]>;
  /**
   * Retention candidates by age: over the oldest `limit` messages of `queue` created before
   * `cutoff` (epoch ms), the prefix of each partition they are in (`end`: one past the newest of
   * them); `rows` is how many messages were counted (below `limit`: there are no more).
   */
  agedPrefixes(queue: QueueKey, cutoff: number, limit: number): Promise<{ prefixes: { partition: RetentionPartition; end: number }[]; rows: number }>;
  /**
   * Retention inputs of the partitions with these public ids (unknown ids left out), or of the
   * partitions of `consumedOn` where some group's stored cursor is past the first offset.
   */
  retentionPartitions(selector: { partitionIds: string[] } | { consumedOn: QueueKey }): Promise<RetentionPartition[]>;
  /** The first message of a partition at or after `fromOffset` created after `time` (epoch ms): its offset and creation time; undefined when none. */
  firstAfter(key: PartitionKey, fromOffset: number, time: number): Promise<{ offset: number; createdAt: number } | undefined>;
}

/** A stored ephemeral queue declaration (docs/ephemeral.md#declarations): options only, never contents. */
export interface EphemeralDeclaration {
  tenant: string;
  queue: string;
  /** The options object as the client sent it (JSON text). */
  options: string;
  /** Epoch ms of the last write. */
  updatedAt: number;
}

/** Ephemeral queue declarations (table `ephemeral_queues`); contents never touch the store. */
export interface EphemeralSubStore {
  /** Inserts or replaces a declaration. */
  put(row: EphemeralDeclaration): Promise<void>;
  /** Removes a declaration; returns whether a row existed. */
  delete(tenant: string, queue: string): Promise<boolean>;
  /** Every declaration, by tenant then queue, at most `limitPerTenant` per tenant. */
  list(limitPerTenant: number): Promise<EphemeralDeclaration[]>;
}

// ---------------------------------------------------------------- streams (docs/streams.md)

/** A registered streaming query (table `streams_queries`, docs/streams.md#storage). Times epoch ms. */
export interface StreamQueryRow {
  /** Public id (UUID). */
  id: string;
  tenant: string;
  name: string;
  sourceQueue: string;
  /** Null when the query has no sink queue. */
  sinkQueue: string | null;
  configHash: string;
  createdAt: number;
  updatedAt: number;
}

/** One state row of a query on one source partition (table `streams_state`). */
export interface StreamStateRow {
  key: string;
  /** The client's JSON value, as text (returned byte for byte). */
  value: string;
  /** epoch ms of the last write. */
  updatedAt: number;
}

/** A state operation of a cycle, applied in order. */
export type StreamStateOp =
  /** `windowEnd`: the value's top-level `windowEnd` when it is a JSON number (what `ripeAtOrBefore` filters on), else null. */
  | { type: 'upsert'; key: string; value: string; windowEnd: number | null }
  | { type: 'delete'; key: string };

/** Filters of a state read, ANDed; absent = no filter. */
export interface StreamStateFilter {
  /** Exact keys. */
  keys?: string[] | undefined;
  /** Literal prefix (no wildcard characters). */
  keyPrefix?: string | undefined;
  /** Only rows whose value's `windowEnd` is a JSON number at most this. */
  ripeAtOrBefore?: number | undefined;
}

/** What a registration did: `created`, `updated` (same hash), `reset` (new hash, state wiped) or `mismatch` (new hash refused, nothing written). */
export interface StreamRegistration {
  outcome: 'created' | 'updated' | 'reset' | 'mismatch';
  /** The query as stored after the call (before it, on `mismatch`). */
  row: StreamQueryRow;
}

/**
 * The cycle's state rider (docs/streams.md#cycle): refused unless the query `queryId` exists for
 * `tenant`; with `requireRows`, also refused when a `delete` finds no row (a cycle closing a
 * window another cycle already emitted). `done` is true when applied.
 */
export interface StreamStateUnitOp {
  op: 'streamState';
  tenant: string;
  queryId: string;
  partitionId: string;
  ops: StreamStateOp[];
  requireRows: boolean;
  now: number;
}

/** Streaming-query registry and operator state (docs/streams.md#storage); state writes go through the `streamState` unit op. */
export interface StreamsSubStore {
  /**
   * Registers `name` for `tenant` (one id per name, concurrent calls included): inserts a new
   * query with id `newId`, updates the queues of one with the same hash, or with another hash
   * wipes its state and stores the new hash when `reset`, else answers `mismatch` without writing.
   */
  register(req: { tenant: string; name: string; sourceQueue: string; sinkQueue: string | null; configHash: string; reset: boolean; newId: string; now: number }):
    Promise<StreamRegistration>;
  /** A query of `tenant` by id; undefined when unknown or another tenant's. */
  query(tenant: string, id: string): Promise<StreamQueryRow | undefined>;
  /** The tenant's queries, by name, at most `limit`. */
  queries(tenant: string, limit: number): Promise<StreamQueryRow[]>;
  /** State rows of a query on one partition, by key; none for an unknown query or another tenant's. */
  readState(tenant: string, queryId: string, partitionId: string, filter: StreamStateFilter): Promise<StreamStateRow[]>;
  /** State rows per partition of a query (public partition ids), by partition id. */
  stateCounts(tenant: string, queryId: string): Promise<{ partitionId: string; rows: number }[]>;
}

// ---------------------------------------------------------------- operator-view reads (docs/http-api.md#operator-routes)

/**
 * A queue as the operator views read it: its stored row, its partitions by name and its consumer
 * groups by name. Plain data the views must not change; a backend may hand out its own
 * accelerator's objects (SQLite) or build them per read (PostgreSQL).
 */
export interface ViewQueue extends QueueRow {
  partitions: ReadonlyMap<string, ViewPartition>;
  groups: ReadonlyMap<string, ViewGroup>;
}

/** A partition in a {@link ViewQueue} (`pk` keys a group's cursors and the point reads). */
export interface ViewPartition extends Omit<PartitionRow, 'queuePk'> {
  queue: ViewQueue;
}

/** A cursor in a {@link ViewGroup}; `materialized` is false for one not written yet. */
export interface ViewCursor extends CursorRow {
  materialized: boolean;
}

/** A consumer group of a {@link ViewQueue}: its subscription and its cursors by partition pk. */
export interface ViewGroup {
  name: string;
  queue: ViewQueue;
  subscription: SubscriptionRow;
  cursors: ReadonlyMap<number, ViewCursor>;
}

/** One tenant's queues, partitions and groups as read at one moment (the operator views' input). */
export interface ViewModel {
  /** The tenant's queue named `name`. */
  queue(name: string): ViewQueue | undefined;
  /** Every queue of the tenant, in creation order. */
  queues(): Iterable<ViewQueue>;
  /** A partition of the tenant by its public id. */
  partitionById(id: string): ViewPartition | undefined;
  /** A partition of the tenant by its pk. */
  partitionByPk(pk: number): ViewPartition | undefined;
  /**
   * Where `g` starts on `p` when it has no cursor there and subscribed from a time: the first offset
   * created after the subscription's `fromTime`, or the head when none (docs/storage.md#log-model).
   */
  subscriptionStart(g: ViewGroup, p: ViewPartition): number;
}

/** Reads of the operator views (docs/http-api.md#operator-routes); every read names the tenant. */
export interface ViewsSubStore {
  /** The tenant's queues, partitions, groups and cursors. */
  model(tenant: string): Promise<ViewModel>;
  /** created_at (epoch ms) of the first retained message at or after `offset` of partition `partitionPk`; undefined when none. */
  createdAtFrom(tenant: string, partitionPk: number, offset: number): Promise<number | undefined>;
  /** One page of messages of one queue (or partition), newest first. */
  listMessages(tenant: string, q: MessagePageQuery): Promise<ListedMessage[]>;
  /** The newest message of the partition with public id `partitionId` with `transactionId`, created at or after `since` (epoch ms); undefined when none. */
  findMessage(tenant: string, partitionId: string, transactionId: string, since: number): Promise<MessageRow | undefined>;
  /** The queue and partition names of the tenant's partition with public id `partitionId`; undefined when none. */
  locate(tenant: string, partitionId: string): Promise<PartitionKey | undefined>;
  /** Dead letters stored per queue name. */
  dlqDepth(tenant: string): Promise<Map<string, number>>;
  /** Every broker-wide setting (maintenance flags, recorded key-check values), by key. */
  settings(): Promise<Map<string, string>>;
  /**
   * The distinct first `bytes` bytes of every stored payload flagged encrypted (messages, dead
   * letters, timers): a full scan, for the boot key check (src/crypto/boot.ts) when a recorded key is missing.
   */
  payloadHeads(bytes: number): Promise<Buffer[]>;
}

/** Named differences between backends. */
export interface BackendCapabilities {
  /** Wake-ups travel between processes through the store (PostgreSQL LISTEN/NOTIFY). */
  listenNotify: boolean;
  /** Only one process may use the data. */
  singleWriter: boolean;
}

/** What ack planning reads for one (partition, consumer group) (src/broker/messaging/ack.ts decides on it). */
export interface AckLookup {
  /** Public id of the partition. */
  partitionId: string;
  group: string;
  /** The messages acknowledged, by transactionId. */
  transactionIds: string[];
}

/** The committed state an ack of one (partition, group) is decided on. */
export interface AckTarget {
  queue: QueueKey;
  partition: string;
  /** The queue's options (retry limit, dead-letter queue). */
  options: QueueOptions;
  /**
   * The group's cursor on the partition; at the group's start position (subscription, first
   * retained offset) when it has none yet. Undefined when the group never consumed the queue.
   */
  cursor: CursorView | undefined;
  /** Per transactionId, in lookup order: the offset of its newest message in the partition; undefined when none. */
  offsets: (number | undefined)[];
}

/** A consumer group's subscription on a queue as registered (fixed at its first claim there). */
export interface GroupSubscription {
  /** Where it starts on partitions it has no cursor on. */
  seed: CursorSeed;
  conflation: boolean;
}

/** A queue a pop targets, with the popping group's subscription there. */
export interface PopTarget {
  queue: string;
  config: QueueConfig;
  /** Undefined when the group has not claimed on this queue yet (the domain resolves one from the request). */
  subscription: GroupSubscription | undefined;
}

/** What a pop targets: one queue by name, or (discovery) the queues whose namespace and/or task match. */
export type PopSelector = { queue: string } | { namespace: string | undefined; task: string | undefined };

/** The operation contract a storage backend implements (see the module comment). */
export interface QueueBackend {
  readonly capabilities: BackendCapabilities;
  /** Appends with dedup; offsets are dense, assigned in request order. */
  append(req: AppendRequest): Promise<AppendResult>;
  /** Claims free partitions (ready, visible, not leased) and returns their next messages. */
  claim(req: ClaimRequest): Promise<ClaimedBatch[]>;
  /** Applies a decided cursor move if its lease condition holds. */
  commitCursor(req: CursorCommit): Promise<CommitResult>;
  /**
   * Moves every live lease `leaseId` holds on the queues of `tenant` to max(expiry, untilMs);
   * returns the new expiries. A lease on another tenant's queue is neither extended nor counted:
   * a lease id says nothing about who may extend it (docs/proxy.md#tenancy).
   */
  extendLease(leaseId: string, untilMs: number, now: number, tenant: string): Promise<number[]>;
  /**
   * Ends every lease `leaseId` holds (cursors stay); returns how many. With `takeBackAttempt` the
   * claim is handed back as never delivered (its client was gone before the answer): the delivery
   * attempt it counted is taken back, so the next claim counts the same attempt again.
   */
  releaseLease(leaseId: string, now: number, takeBackAttempt?: boolean): Promise<number>;
  /** Runs `ops` in order as one atomic unit. */
  unit(ops: UnitOp[]): Promise<UnitResult>;
  readCursor(key: CursorKey): Promise<CursorView | undefined>;
  /**
   * The queues a pop of `group` looks at, unordered: the named queue (none when it does not
   * exist), or every queue of `tenant` whose namespace equals the selector's and whose task equals
   * the selector's (each only when given; a selector naming neither matches nothing).
   */
  readPopTargets(tenant: string, group: string, selector: PopSelector): Promise<PopTarget[]>;
  /** Ack planning reads, one per lookup, in order; undefined for an unknown partitionId. */
  readAckTargets(lookups: AckLookup[]): Promise<(AckTarget | undefined)[]>;
  /** True when `leaseId` holds at least one cursor whose lease is live at `now`. */
  leaseHeld(leaseId: string, now: number): Promise<boolean>;
  readPartition(key: PartitionKey): Promise<PartitionView | undefined>;
  /** Registers a wake-up listener (see {@link ReadyListener}). */
  onPartitionsReady(listener: ReadyListener): void;
  readonly kv: KvSubStore;
  readonly locks: LockSubStore;
  readonly timers: TimerSubStore;
  readonly traces: TraceSubStore;
  readonly dlq: DlqSubStore;
  readonly admin: AdminSubStore;
  readonly ephemeral: EphemeralSubStore;
  /** Streaming queries and their state (docs/streams.md). */
  readonly streams: StreamsSubStore;
  /** The Kafka port's side tables (kafka-meta.ts). */
  readonly kafka: KafkaMetaSubStore;
  readonly views: ViewsSubStore;
  close(): Promise<void>;
}
