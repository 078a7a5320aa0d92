/**
 * Environment → typed, validated configuration. Read once at boot; never reloaded.
 * Every problem is a {@link ConfigError} thrown before the listener binds.
 *
 * Names follow Queen MQ's own variables (docs/configuration.md)
 * (`QUEEN_RAFT_DIR`, Queen's name for the data directory, is accepted as an alias).
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { isNewMode } from '../model/subscription.js';
import { loadEncryptionConfig, type EncryptionConfig } from './encryption.js';
import { loadEphemeralConfig, type EphemeralConfig } from './ephemeral.js';
import { bool, ConfigError, int, oneOf, str, type Env } from './env.js';
import { loadJwtConfig, type JwtConfig } from './jwt.js';
import { loadKafkaConfig, type KafkaConfig } from './kafka.js';
import { loadClusterConfig, type ClusterConfig } from './cluster.js';
import { loadProxyConfig, loadTenancyConfig, type ProxyConfig, type TenancyConfig } from './proxy.js';
import { loadStorageConfig, type StorageConfig } from './storage.js';

export { ConfigError } from './env.js';

export type SubscriptionDefault = 'new' | 'all';
export type SyncMode = 'full' | 'normal' | 'off';

/** Hard limits; each has a clear 4xx and an env variable (README "Limits"). */
export interface Limits {
  /** Request body cap in bytes (`QUEEN_MAX_BODY_BYTES`, default 64 MiB). */
  maxBodyBytes: number;
  /** Items per push request and per transaction (`QUEEN_MAX_PUSH_ITEMS`, 10000). */
  maxPushItems: number;
  /** Largest `batch` a pop may ask for (`QUEEN_MAX_POP_BATCH`, 10000). */
  maxPopBatch: number;
  /** Largest `partitions` a pop may ask for (`QUEEN_MAX_POP_PARTITIONS`, 1000). */
  maxPopPartitions: number;
  /** Longest long-poll `timeout` in ms (`QUEEN_MAX_POP_TIMEOUT_MS`, 600000). */
  maxPopTimeoutMs: number;
  /** Parked long-polls per queue (`QUEEN_MAX_WAITERS_PER_QUEUE`, 10000). */
  maxWaitersPerQueue: number;
  /** Longest queue, partition or group name in bytes (`QUEEN_MAX_NAME_BYTES`, 512). */
  maxNameBytes: number;
  /** Largest single payload as JSON bytes (`QUEEN_MAX_PAYLOAD_BYTES`, 16 MiB). */
  maxPayloadBytes: number;
  /** Largest request header section in bytes (`QUEEN_MAX_HEADER_BYTES`, 16 KiB). */
  maxHeaderBytes: number;
  /** Deepest nesting of objects/arrays in a JSON body (`QUEEN_MAX_JSON_DEPTH`, 512). */
  maxJsonDepth: number;
}

export interface Config {
  port: number;
  bindAddr: string;
  dataDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `LOG_FORMAT`: `auto` (human-readable on a terminal, JSON lines otherwise), `json`, `pretty`. */
  logFormat: 'auto' | 'json' | 'pretty';
  /** `QUEEN_LOG_BUFFER_BYTES`: bytes of log lines held while stdout is not writable; more are dropped (docs/operations.md#logs). */
  logBufferBytes: number;
  /**
   * Mode applied on a named group's first contact when the pop sends none (docs/http-api.md#subscription-modes). Default
   * `all`, as the reference's current repository: the official JS client's own test suite pops
   * with a group and no mode and expects the backlog.
   */
  defaultSubscriptionMode: SubscriptionDefault;
  /** Default pop long-poll timeout in ms (`DEFAULT_TIMEOUT`, alias `POP_DEFAULT_TIMEOUT_MS`). */
  popDefaultTimeoutMs: number;
  /** Default pop batch (`DEFAULT_BATCH_SIZE`, 200 as in the newest reference). */
  popDefaultBatch: number;
  /** SQLite `synchronous` (`QUEEN_SYNC`): `full` survives power loss; `normal` may lose the last commits on power loss (not on a process crash). */
  sync: SyncMode;
  /**
   * With `sync: 'full'`, where the WAL fsync runs (`QUEEN_SYNC_THREAD`): `'auto'` (default) after
   * COMMIT on the event loop while syncs take at most 3 ms and on the libuv thread pool otherwise;
   * `true` always on the thread pool; `false` inside COMMIT (SQLite at FULL). All answer only after
   * the fsync (docs/storage.md#durability).
   */
  syncThread: boolean | 'auto';
  /** Retention / eviction sweep cadence in ms (`RETENTION_INTERVAL`). */
  retentionIntervalMs: number;
  /** Rows removed per sweep step (`RETENTION_BATCH_SIZE`). */
  retentionBatchSize: number;
  /** How long SIGTERM waits for in-flight work, ms (`QUEEN_SHUTDOWN_GRACE_MS`). */
  shutdownGraceMs: number;
  /** WAL size kept after checkpoints, bytes (`QUEEN_WAL_LIMIT_BYTES`, 16 MiB); idle checkpoints truncate it to 0. */
  walLimitBytes: number;
  /** Queues that get their own `queue` label in Prometheus; the rest sum under `__other__` (`QUEEN_METRICS_MAX_QUEUES`). */
  metricsMaxQueues: number;
  limits: Limits;
  /** Broker JWT (docs/security.md#jwt), see src/config/jwt.ts. */
  jwt: JwtConfig;
  /** Encryption at rest (docs/security.md#encryption-at-rest), see src/config/encryption.ts. */
  encryption: EncryptionConfig;
  /** The Kafka port (docs/kafka.md#configuration), undefined when off; see src/config/kafka.ts. */
  kafka: KafkaConfig | undefined;
  /** The node port (`QUEEN_RAFT_LISTEN`, docs/cluster.md#the-node-port), see src/config/cluster.ts. */
  cluster: ClusterConfig;
  /** The storage backend (`QUEEN_STORAGE`) and the PostgreSQL connection (docs/storage.md#postgresql-backend), see src/config/storage.ts. */
  storage: StorageConfig;
  /** Ephemeral (RAM-only) queues (docs/ephemeral.md#settings), see src/config/ephemeral.ts. */
  ephemeral: EphemeralConfig;
  /** Tenancy on the broker router (docs/proxy.md#tenancy), see src/config/proxy.ts. */
  tenancy: TenancyConfig;
  /** The embedded proxy (docs/proxy.md), undefined unless `QUEEN_PROXY_EMBEDDED=true`. */
  proxy: ProxyConfig | undefined;
}

/**
 * `QUEEN_SYNC_THREAD`: `auto` (the default, also when unset or empty) or a boolean as {@link bool} reads it.
 * @throws ConfigError on any other value
 */
function syncThreadOf(env: Env): boolean | 'auto' {
  const v = env.QUEEN_SYNC_THREAD?.trim().toLowerCase();
  if (v === undefined || v === '' || v === 'auto') return 'auto';
  try {
    return bool(env, 'QUEEN_SYNC_THREAD', true);
  } catch (e) {
    throw new ConfigError(`${(e as Error).message}, nor auto`);
  }
}

/**
 * Reads and validates the broker configuration.
 * @throws ConfigError naming the variable and the expected format.
 */
export function loadConfig(env: Env = process.env): Config {
  const bindRaw = env.QUEEN_BIND_ADDR;
  if (bindRaw === '') {
    throw new ConfigError('QUEEN_BIND_ADDR is set to the empty string — give it a host or IP, or unset it for 0.0.0.0');
  }
  const bindAddr = bindRaw ?? '0.0.0.0';
  if (isIP(bindAddr) === 0 && bindAddr.includes(':')) {
    throw new ConfigError(`QUEEN_BIND_ADDR=${bindAddr} carries a port — set the host or IP only, the port comes from PORT`);
  }

  const dataDirRaw = env.QUEEN_DATA_DIR || env.QUEEN_RAFT_DIR || './data';
  const popTimeoutName = env.DEFAULT_TIMEOUT !== undefined ? 'DEFAULT_TIMEOUT' : 'POP_DEFAULT_TIMEOUT_MS';
  const maxPopTimeoutMs = int(env, 'QUEEN_MAX_POP_TIMEOUT_MS', 600_000, 1, 86_400_000);
  const limits: Limits = {
    maxBodyBytes: int(env, 'QUEEN_MAX_BODY_BYTES', 64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxPushItems: int(env, 'QUEEN_MAX_PUSH_ITEMS', 10_000, 1, 1_000_000),
    maxPopBatch: int(env, 'QUEEN_MAX_POP_BATCH', 10_000, 1, 1_000_000),
    maxPopPartitions: int(env, 'QUEEN_MAX_POP_PARTITIONS', 1000, 1, 100_000),
    maxPopTimeoutMs,
    maxWaitersPerQueue: int(env, 'QUEEN_MAX_WAITERS_PER_QUEUE', 10_000, 1, 1_000_000),
    maxNameBytes: int(env, 'QUEEN_MAX_NAME_BYTES', 512, 16, 65_536),
    maxPayloadBytes: int(env, 'QUEEN_MAX_PAYLOAD_BYTES', 16 * 1024 * 1024, 16, 1024 * 1024 * 1024),
    maxHeaderBytes: int(env, 'QUEEN_MAX_HEADER_BYTES', 16 * 1024, 1024, 1024 * 1024),
    maxJsonDepth: int(env, 'QUEEN_MAX_JSON_DEPTH', 512, 8, 2048),
  };
  const subRaw = str(env, 'DEFAULT_SUBSCRIPTION_MODE', 'all').trim().toLowerCase();
  let defaultSubscriptionMode: SubscriptionDefault;
  if (isNewMode(subRaw)) defaultSubscriptionMode = 'new';
  else if (subRaw === 'all' || subRaw === '') defaultSubscriptionMode = 'all';
  else throw new ConfigError(`DEFAULT_SUBSCRIPTION_MODE=${JSON.stringify(env.DEFAULT_SUBSCRIPTION_MODE)} is not one of new, new-only, all`);

  const port = int(env, 'PORT', 6632, 0, 65_535);
  return {
    port,
    bindAddr,
    dataDir: path.resolve(dataDirRaw),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'] as const, 'auto'),
    logBufferBytes: int(env, 'QUEEN_LOG_BUFFER_BYTES', 8 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024),
    defaultSubscriptionMode,
    popDefaultTimeoutMs: int(env, popTimeoutName, 30_000, 0, maxPopTimeoutMs),
    popDefaultBatch: int(env, 'DEFAULT_BATCH_SIZE', 200, 1, limits.maxPopBatch),
    sync: oneOf(env, 'QUEEN_SYNC', ['full', 'normal', 'off'] as const, 'full'),
    syncThread: syncThreadOf(env),
    retentionIntervalMs: int(env, 'RETENTION_INTERVAL', 5000, 100, 86_400_000),
    retentionBatchSize: int(env, 'RETENTION_BATCH_SIZE', 1000, 1, 1_000_000),
    shutdownGraceMs: int(env, 'QUEEN_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    walLimitBytes: int(env, 'QUEEN_WAL_LIMIT_BYTES', 16 * 1024 * 1024, 64 * 1024, 2 ** 40),
    metricsMaxQueues: int(env, 'QUEEN_METRICS_MAX_QUEUES', 100, 0, 10_000),
    limits,
    jwt: loadJwtConfig(env),
    encryption: loadEncryptionConfig(env),
    kafka: loadKafkaConfig(env),
    cluster: loadClusterConfig(env),
    storage: loadStorageConfig(env),
    ephemeral: loadEphemeralConfig(env),
    tenancy: loadTenancyConfig(env),
    proxy: loadProxyConfig(env, port),
  };
}
