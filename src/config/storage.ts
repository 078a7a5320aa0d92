/**
 * Which storage backend the broker runs on (`QUEEN_STORAGE`, docs/storage.md#postgresql-backend)
 * and, for PostgreSQL, how to reach it: `DATABASE_URL`, or Queen's `PG_HOST` / `PG_PORT` /
 * `PG_USER` / `PG_PASSWORD` / `PG_DATABASE` (alias `PG_DB`) / `PG_USE_SSL` /
 * `PG_SSL_REJECT_UNAUTHORIZED`, with `DB_POOL_SIZE` connections per broker process, and
 * `QUEEN_PG_LISTEN_URL` for the LISTEN connection when the pool goes through a pooler. The password
 * (and a URL, which may carry one) never prints: they are non-enumerable, so neither `inspect`
 * nor `JSON.stringify` shows them, and no error message echoes them.
 */
import { bool, ConfigError, int, oneOf, str, type Env } from './env.js';

/** How to reach PostgreSQL; the shape node-postgres' pool takes. */
export interface PgConnectionConfig {
  /** `DATABASE_URL` when set (non-enumerable: it may carry a password). */
  connectionString?: string;
  host: string;
  port: number;
  user: string;
  /** Non-enumerable. */
  password?: string;
  database: string;
  /** `QUEEN_PG_LISTEN_URL`: a direct connection for LISTEN when the pool goes through a transaction pooler (non-enumerable). */
  listenUrl?: string;
  /** TLS: false, or on with the certificate check on or off. */
  ssl: false | { rejectUnauthorized: boolean };
  /** Pool size (`DB_POOL_SIZE`). */
  max: number;
  /**
   * `QUEEN_PG_RECHECK_MS` (default 1000): longest a parked pop waits before it claims again, ms —
   * the bound on what a lost LISTEN/NOTIFY hint costs (docs/storage.md#postgresql-backend).
   */
  recheckMs: number;
  /**
   * `QUEEN_NOTIFY_MODE` (default `after`): wake-up hints NOTIFYed right after COMMIT in a statement
   * of their own, gathered, or (`commit`) inside the transaction that made the change
   * (docs/storage.md#postgresql-backend).
   */
  notifyMode: 'after' | 'commit';
  /**
   * `QUEEN_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS` (default 10000; 0 = off): PostgreSQL ends a session of
   * this broker that sits in an open transaction without a statement for this long, ms
   * (`idle_in_transaction_session_timeout`). A node frozen mid-transaction (a VM pause, SIGSTOP, a
   * cut network) then releases its row locks instead of stalling every other node's pushes for as
   * long as it is frozen (docs/cluster.md#failures).
   */
  idleInTransactionTimeoutMs: number;
}

export type StorageConfig = { kind: 'sqlite' } | { kind: 'postgres'; pg: PgConnectionConfig };

function hidden<T extends object>(o: T, key: string, value: string | undefined): void {
  if (value !== undefined) Object.defineProperty(o, key, { value, enumerable: false, writable: false });
}

/**
 * A PostgreSQL URL variable; undefined when unset or empty.
 * @throws ConfigError when it is not a postgres:// or postgresql:// URL (the value is not echoed: it may carry a password)
 */
function pgUrl(env: Env, name: string): string | undefined {
  const url = env[name]?.trim();
  if (url === undefined || url === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`${name} is not a URL (expected postgres://user:password@host:port/database)`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ConfigError(`${name} has the scheme ${JSON.stringify(parsed.protocol)} (expected postgres: or postgresql:)`);
  }
  return url;
}

/**
 * Reads `QUEEN_STORAGE` (`sqlite`, the default, or `postgres`/`postgresql`) and the PostgreSQL
 * connection variables (validated with either backend).
 * @throws ConfigError naming the variable and the expected format (never its secret value)
 */
export function loadStorageConfig(env: Env): StorageConfig {
  const kindRaw = str(env, 'QUEEN_STORAGE', 'sqlite').trim().toLowerCase();
  if (kindRaw !== 'sqlite' && kindRaw !== 'postgres' && kindRaw !== 'postgresql') {
    throw new ConfigError(`QUEEN_STORAGE=${JSON.stringify(env.QUEEN_STORAGE)} is not one of sqlite, postgres`);
  }
  // The PostgreSQL variables are validated with either backend: a malformed one is a mistake either way.
  const useSsl = bool(env, 'PG_USE_SSL', false);
  const rejectUnauthorized = bool(env, 'PG_SSL_REJECT_UNAUTHORIZED', true);
  const pg: PgConnectionConfig = {
    host: str(env, 'PG_HOST', 'localhost'),
    port: int(env, 'PG_PORT', 5432, 1, 65_535),
    user: str(env, 'PG_USER', 'postgres'),
    database: str(env, 'PG_DATABASE', str(env, 'PG_DB', 'postgres')),
    ssl: useSsl ? { rejectUnauthorized } : false,
    max: int(env, 'DB_POOL_SIZE', 20, 1, 10_000),
    recheckMs: int(env, 'QUEEN_PG_RECHECK_MS', 1000, 10, 3_600_000),
    notifyMode: oneOf(env, 'QUEEN_NOTIFY_MODE', ['after', 'commit'] as const, 'after'),
    idleInTransactionTimeoutMs: int(env, 'QUEEN_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS', 10_000, 0, 3_600_000),
  };
  hidden(pg, 'password', env.PG_PASSWORD);
  hidden(pg, 'connectionString', pgUrl(env, 'DATABASE_URL'));
  hidden(pg, 'listenUrl', pgUrl(env, 'QUEEN_PG_LISTEN_URL'));
  return kindRaw === 'sqlite' ? { kind: 'sqlite' } : { kind: 'postgres', pg };
}
