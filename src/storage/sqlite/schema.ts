/**
 * Versioned schema migrations for the SQLite store. Each entry runs once, in order, inside a
 * transaction; `PRAGMA user_version` records the last one applied. Never edit a released
 * migration: append a new one.
 */
import type { Database } from 'better-sqlite3';

const MIGRATIONS: readonly string[] = [
  // 1: the log model — queues, partitions, messages by (partition, offset), one cursor row per
  // (partition, group), subscriptions per (queue, group), dead letters, settings.
  `
  CREATE TABLE queues (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    options TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE partitions (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    queue_pk INTEGER NOT NULL,
    name TEXT NOT NULL,
    next_offset INTEGER NOT NULL DEFAULT 0,
    first_offset INTEGER NOT NULL DEFAULT 0,
    last_message_at INTEGER,
    created_at INTEGER NOT NULL,
    UNIQUE (queue_pk, name)
  );
  CREATE TABLE messages (
    partition_pk INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    queue_pk INTEGER NOT NULL,
    id TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    payload BLOB,
    encrypted INTEGER NOT NULL DEFAULT 0,
    trace_id TEXT,
    producer_sub TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (partition_pk, offset)
  );
  CREATE INDEX messages_by_txn ON messages (partition_pk, transaction_id);
  CREATE INDEX messages_by_queue_time ON messages (queue_pk, created_at);
  CREATE TABLE cursors (
    partition_pk INTEGER NOT NULL,
    consumer_group TEXT NOT NULL,
    next_offset INTEGER NOT NULL,
    lease_id TEXT,
    lease_expires_at INTEGER,
    lease_end_offset INTEGER,
    retry_count INTEGER NOT NULL DEFAULT 0,
    delivery_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_pk, consumer_group)
  ) WITHOUT ROWID;
  CREATE TABLE subscriptions (
    queue_pk INTEGER NOT NULL,
    consumer_group TEXT NOT NULL,
    mode TEXT NOT NULL,
    from_time INTEGER,
    label TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (queue_pk, consumer_group)
  ) WITHOUT ROWID;
  CREATE TABLE dlq (
    id TEXT PRIMARY KEY,
    queue_pk INTEGER NOT NULL,
    queue TEXT NOT NULL,
    partition_pk INTEGER NOT NULL,
    partition TEXT NOT NULL,
    partition_id TEXT NOT NULL,
    consumer_group TEXT NOT NULL,
    message_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    offset INTEGER NOT NULL,
    payload BLOB,
    encrypted INTEGER NOT NULL DEFAULT 0,
    trace_id TEXT,
    producer_sub TEXT,
    error TEXT,
    retry_count INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    failed_at INTEGER NOT NULL
  );
  CREATE INDEX dlq_by_queue ON dlq (queue_pk, failed_at);
  CREATE INDEX dlq_by_failed ON dlq (failed_at);
  CREATE INDEX dlq_by_address ON dlq (partition_id, transaction_id);
  CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
  // 2: trace events on messages (docs/http-api.md#traces), by message address and by trace name.
  `
  CREATE TABLE traces (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    queue_pk INTEGER NOT NULL,
    queue_name TEXT NOT NULL,
    partition_name TEXT NOT NULL,
    partition_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    message_id TEXT,
    consumer_group TEXT NOT NULL,
    event_type TEXT NOT NULL,
    data TEXT NOT NULL,
    worker_id TEXT,
    names TEXT,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX traces_by_message ON traces (partition_id, transaction_id, pk);
  CREATE INDEX traces_by_queue ON traces (queue_pk);
  CREATE TABLE trace_names (
    name TEXT NOT NULL,
    trace_pk INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (name, trace_pk)
  ) WITHOUT ROWID;
  CREATE INDEX trace_names_by_trace ON trace_names (trace_pk);
  `,
  // 3: the transactionId index carries the offset, so "newest message with this transactionId"
  // (dedup on push, ack resolution) is one index seek instead of a walk over the partition's
  // primary key.
  `
  DROP INDEX messages_by_txn;
  CREATE INDEX messages_by_txn ON messages (partition_pk, transaction_id, offset);
  `,
  // 4: timers (scheduled messages, docs/http-api.md#timers): one row per (queue, timer key); the due-time index
  // is what the firing loop reads (the next due time, and what is due now), never a scan.
  `
  CREATE TABLE timers (
    queue TEXT NOT NULL,
    timer_key TEXT NOT NULL,
    partition TEXT NOT NULL,
    deliver_at INTEGER NOT NULL,
    txn TEXT NOT NULL,
    message_id TEXT NOT NULL,
    payload BLOB,
    encrypted INTEGER NOT NULL DEFAULT 0,
    producer_sub TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (queue, timer_key)
  ) WITHOUT ROWID;
  CREATE INDEX timers_by_due ON timers (deliver_at);
  `,
  // 5: the KV store (docs/http-api.md#kv; locks are KV rows too). Versions are fencing tokens: kv_meta.floor
  // is the highest version any removed row had, so a re-created key never reuses a version.
  // kv_by_expiry (only rows that expire) lets the expiry sweep cost what is due.
  `
  CREATE TABLE kv (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    version INTEGER NOT NULL,
    expires_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (ns, key)
  ) WITHOUT ROWID;
  CREATE INDEX kv_by_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;
  CREATE TABLE kv_meta (
    id INTEGER PRIMARY KEY,
    floor INTEGER NOT NULL
  );
  INSERT INTO kv_meta (id, floor) VALUES (0, 0);
  `,
  // 6: conflation is a property of a consumer group's subscription, fixed at its first contact.
  `
  ALTER TABLE subscriptions ADD COLUMN conflation INTEGER NOT NULL DEFAULT 0;
  `,
  // 7: tenant identity: a queue name is unique per tenant (docs/storage.md#schema). Existing
  // queues belong to the default tenant.
  `
  CREATE TABLE queues_v7 (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001',
    name TEXT NOT NULL,
    namespace TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    options TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (tenant_id, name)
  );
  INSERT INTO queues_v7 (pk, id, name, namespace, task, options, created_at)
    SELECT pk, id, name, namespace, task, options, created_at FROM queues;
  DROP TABLE queues;
  ALTER TABLE queues_v7 RENAME TO queues;
  `,
  // 8: ephemeral queue declarations (docs/ephemeral.md#declarations): options only, never contents.
  `
  CREATE TABLE ephemeral_queues (
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    options TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, name)
  );
  `,
  // 9: streaming queries and their per-partition state (docs/streams.md#storage). No foreign key to
  // partitions on purpose (state outlives nothing but a reset); window_end is the value's numeric
  // windowEnd, written by the domain, so a ripeness read is a range on one column.
  `
  CREATE TABLE streams_queries (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    source_queue TEXT NOT NULL,
    sink_queue TEXT,
    config_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (tenant_id, name)
  );
  CREATE TABLE streams_state (
    query_id TEXT NOT NULL,
    partition_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    window_end REAL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (query_id, partition_id, key)
  ) WITHOUT ROWID;
  `,
  // 10: the Kafka port's side tables (docs/kafka.md#storage): topic records (the width floor and
  // configs of a topic created through Kafka, bound to the queue's public id), commit metadata and
  // the group index.
  `
  CREATE TABLE kafka_topics (
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    queue_id TEXT NOT NULL,
    width INTEGER NOT NULL,
    configs TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, name)
  ) WITHOUT ROWID;
  CREATE TABLE kafka_offsets_meta (
    tenant_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, group_id, topic, partition)
  ) WITHOUT ROWID;
  CREATE TABLE kafka_groups (
    tenant_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, group_id)
  ) WITHOUT ROWID;
  `,
  // 11: a cursor's delivery counts (docs/storage.md#delivery-counts): deliveries of [next_offset,
  // attempt_split) in delivery_count, of [attempt_split, delivered_max) in delivery_count_from_split,
  // nothing delivered from delivered_max on. A cursor written before knew only its last batch,
  // [next_offset, lease_end_offset), delivered delivery_count times.
  `
  ALTER TABLE cursors ADD COLUMN attempt_split INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE cursors ADD COLUMN delivery_count_from_split INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE cursors ADD COLUMN delivered_max INTEGER NOT NULL DEFAULT 0;
  UPDATE cursors SET attempt_split = lease_end_offset, delivered_max = lease_end_offset
   WHERE lease_end_offset IS NOT NULL AND delivery_count > 0;
  `,
  // 12: the transactionId index leads with the transaction id (docs/storage.md#indexes). Server-made
  // ids are UUIDv7, which grow with time, so a push's entries land on the index's last leaf page
  // instead of one leaf per partition it touches: a commit of 100 messages over 16 partitions
  // writes 15 fewer index pages to the WAL. Lookups name both columns, so they seek as before.
  // Rebuilds the index once on upgrade (a pass over the messages table).
  `
  DROP INDEX messages_by_txn;
  CREATE INDEX messages_by_txn ON messages (transaction_id, partition_pk, offset);
  `,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings `db` up to {@link SCHEMA_VERSION}.
 * @throws Error when the file was written by a newer build (refuse rather than corrupt).
 */
export function migrate(db: Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new Error(`data directory schema version ${current} is newer than this build supports (${SCHEMA_VERSION})`);
  }
  for (let v = current; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
