/**
 * The PostgreSQL schema `queen` as versioned migrations (docs/storage.md#postgresql-backend),
 * shaped after the log/cursor model of design B3 (docs/storage.md#postgresql-backend): a dense offset per message per partition, one
 * cursor row per (partition, consumer group), no per-message status rows, the tenant in every key.
 * Table and column names follow the reference's where that costs nothing (`queen.queues`,
 * `queen.partitions`, `queen.messages` with `transaction_id` and `producer_sub`), so tools that read
 * those tables read true facts. Times the contract passes in (`now`, epoch ms) are stored as
 * `bigint` epoch ms (`…_ms` columns), except message and queue creation times, stored as
 * `timestamptz` (to the microsecond, so the ms survive the round trip).
 *
 * A migration is applied once, in version order, under a transaction-scoped advisory lock
 * (migrate.ts); an applied version is never edited, a change is a new version.
 */

/** One schema version: its number and the statements that bring the previous version to it. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'log and cursor model, sub-stores',
    sql: `
CREATE TABLE queen.queues (
  id uuid PRIMARY KEY,
  pk bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  tenant_id text NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001',
  name text COLLATE "C" NOT NULL,
  namespace text NOT NULL DEFAULT '',
  task text NOT NULL DEFAULT '',
  options jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name)
);
CREATE TABLE queen.partitions (
  id uuid PRIMARY KEY,
  pk bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  next_offset bigint NOT NULL DEFAULT 0,
  first_offset bigint NOT NULL DEFAULT 0,
  last_message_at_ms bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (queue_id, name)
) WITH (fillfactor = 70);
CREATE INDEX partitions_activity ON queen.partitions (queue_id, last_message_at_ms);
CREATE TABLE queen.messages (
  partition_id uuid NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
  "offset" bigint NOT NULL,
  id text NOT NULL,
  transaction_id text NOT NULL,
  trace_id text,
  producer_sub text,
  payload bytea NOT NULL,
  encrypted boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (partition_id, "offset")
);
CREATE INDEX messages_txn ON queen.messages (partition_id, transaction_id);
CREATE INDEX messages_time ON queen.messages (partition_id, created_at);
CREATE TABLE queen.consumers (
  partition_id uuid NOT NULL REFERENCES queen.partitions (id) ON DELETE CASCADE,
  consumer_group text COLLATE "C" NOT NULL,
  next_offset bigint NOT NULL,
  lease_id text,
  lease_expires_at_ms bigint,
  delivered_up_to bigint,
  retry_count int NOT NULL DEFAULT 0,
  delivery_count int NOT NULL DEFAULT 0,
  PRIMARY KEY (partition_id, consumer_group)
) WITH (fillfactor = 50);
CREATE INDEX consumers_lease ON queen.consumers (lease_id) WHERE lease_id IS NOT NULL;
CREATE TABLE queen.subscriptions (
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  consumer_group text COLLATE "C" NOT NULL,
  mode text NOT NULL,
  from_time_ms bigint,
  label text NOT NULL,
  conflation boolean NOT NULL DEFAULT false,
  created_at_ms bigint NOT NULL,
  PRIMARY KEY (queue_id, consumer_group)
);
CREATE TABLE queen.dlq (
  id text PRIMARY KEY,
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  queue_pk bigint NOT NULL,
  queue text NOT NULL,
  partition_pk bigint NOT NULL,
  partition_id text NOT NULL,
  partition text NOT NULL,
  consumer_group text COLLATE "C" NOT NULL,
  message_id text NOT NULL,
  transaction_id text NOT NULL,
  "offset" bigint NOT NULL,
  payload bytea NOT NULL,
  encrypted boolean NOT NULL,
  trace_id text,
  producer_sub text,
  error text,
  retry_count int NOT NULL,
  created_at_ms bigint NOT NULL,
  failed_at_ms bigint NOT NULL
);
CREATE INDEX dlq_failed ON queen.dlq (failed_at_ms DESC, id DESC);
CREATE INDEX dlq_address ON queen.dlq (partition_id, transaction_id);
CREATE TABLE queen.traces (
  id text PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  queue text NOT NULL,
  partition text NOT NULL,
  partition_id text NOT NULL,
  transaction_id text NOT NULL,
  message_id text,
  consumer_group text COLLATE "C" NOT NULL,
  event_type text NOT NULL,
  data text NOT NULL,
  worker_id text,
  names text[] NOT NULL,
  created_at_ms bigint NOT NULL
);
CREATE INDEX traces_message ON queen.traces (partition_id, transaction_id, created_at_ms);
CREATE INDEX traces_names ON queen.traces USING gin (names);
CREATE INDEX traces_created ON queen.traces (created_at_ms DESC, seq DESC);
CREATE TABLE queen.kv (
  tenant_id text NOT NULL,
  ns text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  value text NOT NULL,
  version bigint NOT NULL,
  expires_at_ms bigint,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, ns, key)
);
CREATE INDEX kv_expiry ON queen.kv (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE TABLE queen.kv_meta (id int PRIMARY KEY CHECK (id = 0), floor bigint NOT NULL);
INSERT INTO queen.kv_meta (id, floor) VALUES (0, 0);
CREATE TABLE queen.timers (
  tenant_id text NOT NULL,
  queue text COLLATE "C" NOT NULL,
  timer_key text COLLATE "C" NOT NULL,
  partition text NOT NULL,
  deliver_at_ms bigint NOT NULL,
  txn text NOT NULL,
  message_id text NOT NULL,
  payload bytea NOT NULL,
  encrypted boolean NOT NULL,
  producer_sub text,
  attempts int NOT NULL,
  last_error text,
  created_at_ms bigint NOT NULL,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, queue, timer_key)
);
CREATE INDEX timers_due ON queen.timers (deliver_at_ms);
CREATE TABLE queen.system_state (key text PRIMARY KEY, value text NOT NULL);
`,
  },
  {
    version: 2,
    name: 'activity watermark: claims cost O(recent activity)',
    sql: `
ALTER TABLE queen.partitions ADD COLUMN last_activity_ms bigint NOT NULL DEFAULT 0;
UPDATE queen.partitions SET last_activity_ms = COALESCE(last_message_at_ms, 0);
CREATE INDEX partitions_recent ON queen.partitions (queue_id, last_activity_ms);
CREATE INDEX consumers_expiry ON queen.consumers (consumer_group, lease_expires_at_ms) WHERE lease_id IS NOT NULL;
CREATE TABLE queen.consumer_watermarks (
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  queue_name text NOT NULL,
  consumer_group text COLLATE "C" NOT NULL,
  last_empty_scan_at timestamptz NOT NULL,
  PRIMARY KEY (queue_id, consumer_group)
);
`,
  },
  {
    version: 3,
    name: 'ephemeral queue declarations',
    // docs/ephemeral.md#declarations: options only, never contents (SQLite migration 8).
    sql: `
CREATE TABLE queen.ephemeral_queues (
  tenant_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  options text NOT NULL,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, name)
);
`,
  },
  {
    version: 4,
    name: 'streaming queries and their state',
    // docs/streams.md#storage (SQLite migration 9). Values are the client's JSON text (returned byte
    // for byte, as KV values); window_end is its numeric windowEnd, written by the domain.
    sql: `
CREATE TABLE queen.streams_queries (
  id uuid PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  source_queue text NOT NULL,
  sink_queue text,
  config_hash text NOT NULL,
  created_at_ms bigint NOT NULL,
  updated_at_ms bigint NOT NULL,
  UNIQUE (tenant_id, name)
);
CREATE TABLE queen.streams_state (
  query_id uuid NOT NULL REFERENCES queen.streams_queries (id) ON DELETE CASCADE,
  partition_id uuid NOT NULL,
  key text COLLATE "C" NOT NULL,
  value text NOT NULL,
  window_end double precision,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (query_id, partition_id, key)
);
`,
  },
  {
    version: 5,
    name: 'kafka side tables',
    // docs/kafka.md#storage: topic records (cascade with their queue), commit metadata, group index (SQLite migration 10).
    sql: `
CREATE TABLE queen.kafka_topics (
  tenant_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  width integer NOT NULL,
  configs jsonb NOT NULL DEFAULT '{}',
  created_at_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, name)
);
CREATE INDEX kafka_topics_queue ON queen.kafka_topics (queue_id);
CREATE TABLE queen.kafka_offsets_meta (
  tenant_id text COLLATE "C" NOT NULL,
  group_id text COLLATE "C" NOT NULL,
  topic text COLLATE "C" NOT NULL,
  partition integer NOT NULL,
  metadata text NOT NULL,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, group_id, topic, partition)
);
CREATE TABLE queen.kafka_groups (
  tenant_id text COLLATE "C" NOT NULL,
  group_id text COLLATE "C" NOT NULL,
  created_at_ms bigint NOT NULL,
  PRIMARY KEY (tenant_id, group_id)
);
`,
  },
  {
    version: 6,
    name: 'cluster membership and singleton leases',
    // docs/cluster.md#membership, docs/cluster.md#singletons: one row per node (epoch per boot,
    // heartbeat on the database clock) and one lease row per cluster-wide job.
    sql: `
CREATE TABLE queen.cluster_nodes (
  server_id text COLLATE "C" PRIMARY KEY,
  epoch bigint NOT NULL DEFAULT 1,
  address text NOT NULL DEFAULT '',
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  leaving boolean NOT NULL DEFAULT false,
  session_pid integer,
  session_started_at timestamptz
);
CREATE TABLE queen.maintenance_leases (
  task text COLLATE "C" PRIMARY KEY,
  holder text COLLATE "C",
  holder_epoch bigint,
  lease_expires_at timestamptz NOT NULL DEFAULT '-infinity',
  fencing bigint NOT NULL DEFAULT 0,
  runs bigint NOT NULL DEFAULT 0,
  last_run_at timestamptz
);
`,
  },
  {
    version: 7,
    name: 'consumer watermarks carry updated_at',
    // The reference's queen.consumer_watermarks has updated_at (lib/schema/schema.sql); the official
    // JS client's test-v2/watermark.js writes it directly, so it exists and tells when the row last moved.
    sql: `
ALTER TABLE queen.consumer_watermarks ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
UPDATE queen.consumer_watermarks SET updated_at = last_empty_scan_at;
`,
  },
  {
    version: 8,
    name: 'claim scan in activity order',
    // The hot claim (hot-path.ts) walks a queue's partitions in (activity, pk) order from where the
    // node's previous claim stopped, and stops at the first eligible ones: its cost is what it skips,
    // not the number of partitions. The index serves the activity-range reads partitions_recent did.
    sql: `
CREATE INDEX partitions_scan ON queen.partitions (queue_id, last_activity_ms, pk);
DROP INDEX queen.partitions_recent;
`,
  },
  {
    version: 9,
    name: 'claim floors: idle partitions cost a busy queue nothing',
    // The hot claim (hot-path.ts) keeps, per (queue, group), the activity below which a walk from the
    // start found nothing to claim (less the watermark's margin), so a queue that never runs empty
    // does not walk its idle partitions again on every wrap-around; \`gen\` moves when the group's
    // start points move (seek, delete), so a floor computed before that is never written after it.
    sql: `
CREATE TABLE queen.claim_floors (
  queue_id uuid NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
  consumer_group text COLLATE "C" NOT NULL,
  floor_ms bigint NOT NULL,
  gen bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (queue_id, consumer_group)
);
`,
  },
  {
    version: 10,
    name: 'embedded proxy state',
    // The proxy's tenants, clusters, users, roles, API keys (hashes), plans, revoked session tokens,
    // S3 settings and operations log (src/storage/postgres/proxy.ts), shared by every node of the
    // database; proxy_meta.version moves with every change another node must see.
    sql: `
CREATE TABLE queen.proxy_tenants (id text PRIMARY KEY, slug text NOT NULL UNIQUE, name text NOT NULL, status text NOT NULL, created_at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_clusters (id text PRIMARY KEY, slug text NOT NULL UNIQUE, tenant_id text NOT NULL, plan text NOT NULL, cell text NOT NULL,
  status text NOT NULL, overrides text NOT NULL, broker_tenant_uuid text NOT NULL, created_at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_users (id text PRIMARY KEY, email text NOT NULL UNIQUE, tenant_id text NOT NULL, password_hash text, is_operator boolean NOT NULL,
  created_at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_cluster_roles (user_id text NOT NULL, cluster_id text NOT NULL, role text NOT NULL, PRIMARY KEY (user_id, cluster_id));
CREATE TABLE queen.proxy_api_keys (id text PRIMARY KEY, cluster_id text NOT NULL, name text NOT NULL, key_hash text NOT NULL UNIQUE, scopes text NOT NULL,
  revoked_at_ms bigint, last_used_at_ms bigint, created_at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_plans (code text PRIMARY KEY, limits text NOT NULL, features text NOT NULL);
CREATE TABLE queen.proxy_revoked_tokens (jti text PRIMARY KEY, expires_at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_s3_settings (cluster_id text PRIMARY KEY, settings text NOT NULL, sealed_secret bytea, updated_at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_operations (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind text NOT NULL, detail text NOT NULL, at_ms bigint NOT NULL);
CREATE TABLE queen.proxy_meta (id int PRIMARY KEY CHECK (id = 0), version bigint NOT NULL);
INSERT INTO queen.proxy_meta VALUES (0, 0);
`,
  },
  {
    version: 11,
    name: 'delivery counts of a cursor',
    // A cursor's delivery counts (src/storage/attempts.ts, docs/storage.md#delivery-counts):
    // deliveries of [next_offset, attempt_split) in delivery_count, of [attempt_split, delivered_max)
    // in delivery_count_from_split, nothing delivered from delivered_max on. A cursor written before
    // knew only its last batch, [next_offset, delivered_up_to), delivered delivery_count times.
    // queen.count_delivery is countDelivery of attempts.ts for the hot claim's one statement
    // (hot-path.ts): the counts after delivering [lo, e) from the counts (a, s, b, h) before.
    sql: `
ALTER TABLE queen.consumers ADD COLUMN attempt_split bigint NOT NULL DEFAULT 0,
  ADD COLUMN delivery_count_from_split int NOT NULL DEFAULT 0,
  ADD COLUMN delivered_max bigint NOT NULL DEFAULT 0;
UPDATE queen.consumers SET attempt_split = delivered_up_to, delivered_max = delivered_up_to
 WHERE delivered_up_to IS NOT NULL AND delivery_count > 0;
CREATE FUNCTION queen.count_delivery(lo bigint, e bigint, a int, s bigint, b int, h bigint,
  OUT delivery_count int, OUT attempt_split bigint, OUT delivery_count_from_split int, OUT delivered_max bigint)
LANGUAGE plpgsql IMMUTABLE STRICT AS $fn$
DECLARE
  hh bigint := GREATEST(h, lo);
  ss bigint := LEAST(GREATEST(s, lo), GREATEST(h, lo));
  c1 bigint; c2 bigint; c3 bigint; w1 int; w2 int; w3 int; -- the three candidate levels: ends, counts
  e1 bigint; e2 bigint; e3 bigint; v1 int; v2 int; v3 int; -- the levels kept
  n int := 0;
BEGIN
  IF e <= ss THEN c1 := e; c2 := ss; c3 := hh; w1 := a + 1; w2 := a; w3 := b;
  ELSIF e <= hh THEN c1 := ss; c2 := e; c3 := hh; w1 := a + 1; w2 := b + 1; w3 := b;
  ELSE c1 := ss; c2 := hh; c3 := e; w1 := a + 1; w2 := b + 1; w3 := 1;
  END IF;
  -- an empty candidate is skipped, one equal to its neighbour joins it (scalars: cheaper than arrays)
  IF c1 > lo THEN n := 1; e1 := c1; v1 := w1; END IF;
  IF c2 > c1 THEN
    IF n = 0 THEN n := 1; e1 := c2; v1 := w2;
    ELSIF v1 = w2 THEN e1 := c2;
    ELSE n := 2; e2 := c2; v2 := w2;
    END IF;
  END IF;
  IF c3 > c2 THEN
    IF n = 0 THEN n := 1; e1 := c3; v1 := w3;
    ELSIF n = 1 AND v1 = w3 THEN e1 := c3;
    ELSIF n = 1 THEN n := 2; e2 := c3; v2 := w3;
    ELSIF v2 = w3 THEN e2 := c3;
    ELSE n := 3; e3 := c3; v3 := w3;
    END IF;
  END IF;
  IF n = 3 THEN
    -- merge the two adjacent levels whose merge over-counts the fewest deliveries, never this claim's first deliveries
    IF e > hh OR (v1 - v2)::numeric * (e2 - e1) <= (v2 - v3)::numeric * (e3 - e2) THEN e1 := e2; e2 := e3; v2 := v3;
    ELSE e2 := e3;
    END IF;
    n := 2;
  END IF;
  delivery_count := v1;
  attempt_split := e1;
  delivery_count_from_split := CASE WHEN n = 2 THEN v2 ELSE 0 END;
  delivered_max := CASE WHEN n = 2 THEN e2 ELSE e1 END;
END
$fn$;
`,
  },
];
