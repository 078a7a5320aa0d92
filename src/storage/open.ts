/**
 * The one place a storage backend is chosen and built (docs/storage.md#operation-contract): from
 * the configuration (`QUEEN_STORAGE`, src/config/storage.ts) it opens SQLite (the data directory)
 * or PostgreSQL (pool, migrations under the advisory lock, LISTEN), and turns it into the
 * {@link StorageRuntime} the broker's services receive. Two steps, because boot checks the payload
 * encryption keys against the opened store before the codec exists (src/crypto/boot.ts).
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { QueenError } from '../errors.js';
import type { PayloadCodec } from '../model/codec.js';
import type { Clock } from '../util/clock.js';
import type { StorageRuntime } from './runtime.js';
import type { StoreSnapshot } from './store.js';
import type { PgBackend } from './postgres/backend.js';
import { SqliteRuntime } from './sqlite/runtime.js';
import { SqliteStore } from './sqlite/store.js';
import { OffsetClock } from '../util/offset-clock.js';

/** A store opened but not yet serving: SQLite with its boot snapshot, or PostgreSQL. */
export type OpenedStore =
  | { kind: 'sqlite'; store: SqliteStore; snapshot: StoreSnapshot }
  | { kind: 'postgres'; backend: PgBackend };

/**
 * Opens the configured store.
 * @throws Error with a message naming where the store is when it cannot be opened (the password never appears)
 */
export async function openStore(config: Config, log: Logger): Promise<OpenedStore> {
  if (config.storage.kind === 'postgres') {
    const pg = config.storage.pg;
    const where = pg.connectionString !== undefined ? 'DATABASE_URL' : `${pg.host}:${pg.port}/${pg.database}`;
    try {
      // Loaded only here: a SQLite broker never holds the pg driver in memory (idle RSS, README).
      const { PgBackend } = await import('./postgres/backend.js');
      const backend = await PgBackend.open({
        pool: {
          host: pg.host, port: pg.port, user: pg.user, database: pg.database, ssl: pg.ssl, max: pg.max, connectionString: pg.connectionString, password: pg.password,
          // A frozen node's open transaction is ended by the server, releasing its locks (docs/cluster.md#failures).
          ...(pg.idleInTransactionTimeoutMs > 0 ? { idle_in_transaction_session_timeout: pg.idleInTransactionTimeoutMs } : {}),
        },
        listenUrl: pg.listenUrl,
        // Leases, visibility and message times follow PostgreSQL's clock (docs/storage.md#time): a node with a skewed clock changes nothing.
        clock: 'database',
        standby: config.cluster.standby,
        notifyMode: pg.notifyMode,
        onListenError: (e) => log.warn({ err: e }, 'LISTEN connection lost; reconnecting'),
      });
      return { kind: 'postgres', backend };
    } catch (e) {
      // A db_unavailable refusal carries the driver's error (ECONNREFUSED …) as its cause: that is what an operator needs here.
      const why = e instanceof QueenError && e.cause instanceof Error ? e.cause.message : (e as Error).message;
      throw new Error(`cannot reach PostgreSQL at ${where}: ${why}`, { cause: e });
    }
  }
  const store = SqliteStore.open({
    dataDir: config.dataDir,
    sync: config.sync,
    syncThread: config.syncThread,
    walLimitBytes: config.walLimitBytes,
    onCommitFailure: (e) => log.error({ err: e }, 'commit failed'),
  });
  return { kind: 'sqlite', store, snapshot: store.loadSnapshot() };
}

/**
 * Builds the runtime the services receive over an opened store. On PostgreSQL the node joins the
 * membership table (docs/cluster.md#membership) under `QUEEN_SERVER_ID`, or under
 * `<host name>-<pid>` when that is unset; an {@link OffsetClock} `clock` is kept aimed at the database's clock.
 * @throws DuplicateServerId (src/storage/postgres/membership.ts) when a live node has the same `QUEEN_SERVER_ID`
 */
export async function openRuntime(opened: OpenedStore, config: Config, codec: PayloadCodec, log: Logger, clock: Clock): Promise<StorageRuntime> {
  if (opened.kind === 'postgres') {
    const c = config.cluster;
    const { PgRuntime } = await import('./postgres/runtime.js');
    return PgRuntime.open(opened.backend, codec, clock, log, config.storage.kind === 'postgres' ? config.storage.pg.recheckMs : undefined, {
      serverId: c.serverIdSet ? c.serverId : `${hostname()}-${process.pid}`, exclusive: c.serverIdSet,
      address: `${hostname()}:${config.port}`, heartbeatMs: c.heartbeatMs, nodeTtlMs: c.nodeTtlMs,
      follow: clock instanceof OffsetClock ? clock : undefined,
    });
  }
  return new SqliteRuntime(opened.store, config, codec, log, clock, opened.snapshot);
}

/** Closes an opened store that never became a runtime (boot failed in between). */
export async function closeStore(opened: OpenedStore): Promise<void> {
  if (opened.kind === 'postgres') await opened.backend.close();
  else await opened.store.close();
}
