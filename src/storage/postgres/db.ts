/**
 * The PostgreSQL connection pool of the backend and its transactions (docs/storage.md#postgresql-backend):
 * every operation of the contract runs as one transaction on one pooled connection; wake-up hints
 * collected during it are sent with NOTIFY inside it (wake.ts) and given to this process's ready
 * listeners after COMMIT. `bigint` columns are read as JS numbers (offsets and epoch ms stay below
 * 2^53).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { PoolClient, PoolConfig, QueryResultRow } from 'pg';
import type { ReadyListener } from '../contract.js';
import { QueenError } from '../../errors.js';
import { encodeHints, mergeHints, notifyHints, WAKE_CHANNEL, type Hint } from './wake.js';

/** SQLSTATE of a write refused by a read-only transaction (a read-only primary, or a hot standby). */
const READ_ONLY_SQL_TRANSACTION = '25006';

/**
 * SQLSTATEs of a database that cannot serve this session now: connection exceptions (class 08),
 * the server shutting down or starting (57P01–57P03), too many connections (53300).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;
/** Node socket error codes of a database that cannot be reached. */
const UNREACHABLE_ERRNO: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * True when `e` says the database could not be reached or ended the session (a restart, a
 * terminated backend, a refused or lost connection), as opposed to refusing one statement.
 */
export function connectionLost(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNREACHABLE_ERRNO.has(code))) return true;
  const message = (e as { message?: unknown }).message;
  return typeof message === 'string' && /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection ended)/.test(message);
}

/**
 * SQLSTATE `character_not_in_repertoire`: a text parameter held a NUL byte ("invalid byte sequence
 * for encoding UTF8: 0x00"). The HTTP routes refuse NUL in names first (src/util/names.ts); this
 * keeps any other way in (the Kafka port, a field a route does not check) at a 400, not a 500.
 */
const NUL_IN_TEXT = '22021';

/**
 * A write the database refused as read-only becomes `standby` (the database is a replica) or
 * `db_read_only`; a text parameter holding a NUL becomes `invalid_name`; a database that cannot be
 * reached or ended the session becomes `db_unavailable` (docs/cluster.md#failures); other errors
 * pass unchanged. A COMMIT whose outcome is unknown stays
 * so ({@link commitOutcomeUnknown}).
 */
export function refusalOf(e: unknown, standby: boolean): unknown {
  let out: unknown = e;
  const code = (e as { code?: unknown } | null)?.code;
  if (code === READ_ONLY_SQL_TRANSACTION) out = new QueenError(standby ? 'standby' : 'db_read_only', undefined, undefined);
  else if (code === NUL_IN_TEXT) out = new QueenError('invalid_name', 'a name or key contains a NUL character, which PostgreSQL text cannot hold', undefined);
  else if (connectionLost(e)) out = Object.assign(new QueenError('db_unavailable', undefined, undefined), { cause: e }); // the driver's error stays for logs and the boot message, never the answer
  if (out !== e && commitOutcomeUnknown(e)) AT_COMMIT.add(out as object);
  return out;
}

/** How many times {@link PgDb.tx} runs a transaction that keeps being chosen as a deadlock's victim. */
export const TX_ATTEMPTS = 5;

/**
 * True when `e` is PostgreSQL rolling a transaction back so that another can go on (deadlock
 * detected, serialization failure) before its COMMIT: running it again is safe and expected.
 */
function victim(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return (code === '40P01' || code === '40001') && !commitOutcomeUnknown(e);
}

/** Errors {@link PgDb.tx} met on its COMMIT statement: see {@link commitOutcomeUnknown}. */
const AT_COMMIT = new WeakSet<object>();

/**
 * True when `e` came from a transaction's COMMIT statement (the reply lost with the connection, the
 * server gone during a failover, a deferred check): the transaction may have committed, so its work
 * must not be run again as if it had not (a second append would store every message twice). The
 * caller gets the error; a producer that retries with its `transactionId` is deduplicated.
 */
export function commitOutcomeUnknown(e: unknown): boolean {
  return typeof e === 'object' && e !== null && AT_COMMIT.has(e);
}

const INT8_OID = 20;

/** Type parsers of this backend's connections: int8 as number, the rest as pg's defaults. */
export const pgTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID ? (v: string) => Number(v) : (pg.types.getTypeParser as (o: number, f?: string) => unknown)(oid, format)) as never,
};

/** A transaction in progress: its connection and the hints it will announce. */
export interface Tx {
  client: PoolClient;
  hints: Hint[];
  /** The database clock at the start of the transaction (epoch ms), when the backend follows it. */
  now: number | undefined;
}

/** Whose clock lease and visibility times follow: the caller's `now` (the contract's default) or the database's `now()`. */
export type ClockSource = 'caller' | 'database';

/** The time an operation uses: the database clock when the backend follows it, else the caller's `now`. */
export function clockOf(t: Tx, callerNow: number): number {
  return t.now ?? callerNow;
}

/**
 * When wake-up hints are NOTIFYed (`QUEEN_NOTIFY_MODE`): `after` (default) in a statement of their
 * own right after COMMIT, gathered across transactions (one NOTIFY statement per batch); `commit`
 * inside the transaction that made the change. PostgreSQL serialises the commits of NOTIFYing
 * transactions on one lock held through their WAL flush, so `commit` caps every writer at one fsync
 * at a time; `after` holds that lock only for the short NOTIFY statement, and a crash between the two
 * loses only the hint (waiters re-check within a second). Both deliver a hint only after the change
 * is durable.
 */
export type NotifyMode = 'after' | 'commit';

/** The tables the named statements read (hot-path.ts, reads.ts): their sizes decide when those are planned again (see `PgDb.planGeneration`). */
const PLANNED_TABLES = ['queues', 'partitions', 'messages', 'consumers', 'subscriptions', 'consumer_watermarks', 'claim_floors'];

/** A table smaller than this (bytes: one page) counts as this size when sizes are compared. */
const PLAN_MIN_BYTES = 8192;

/** The main-fork sizes (bytes) of the tables of schema `queen` named in $1. */
const PLANNED_TABLE_SIZES = `SELECT c.relname, pg_relation_size(c.oid) AS bytes FROM pg_class c
  WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind = 'r' AND c.relname = ANY($1::text[])`;

/** A row as returned by the driver. */
export type Row = QueryResultRow;

/** The pool, the server id NOTIFY payloads carry, and the local ready listeners. */
export class PgDb {
  readonly pool: pg.Pool;
  private readonly listeners: ReadyListener[] = [];
  /** Where a dedicated session connects (membership.ts): the pool's server, or `QUEEN_PG_LISTEN_URL`'s when set (a direct connection). */
  sessionConfig: pg.ClientConfig;
  /** `QUEEN_STANDBY=true`: serve as a standby whatever the database is (sessions are read-only). */
  forcedStandby = false;
  /** True while the database is a hot standby (`pg_is_in_recovery()`, polled by membership.ts). */
  standby = false;
  /** NOTIFYs sent in committed or rolled-back transactions (only committed ones are delivered). */
  notifySent = 0;

  /**
   * @param config node-postgres pool options
   * @param serverId names this process in NOTIFY payloads
   * @param clock `database`: every transaction reads `now()` once and lease and visibility times follow it
   * @param notifyMode when hints are NOTIFYed (see {@link NotifyMode})
   */
  /** Hints committed but not NOTIFYed yet (mode `after`). */
  private outbox: Hint[] = [];
  private sending: Promise<void> | undefined;

  constructor(config: PoolConfig, readonly serverId: string, readonly clock: ClockSource = 'caller', readonly notifyMode: NotifyMode = 'after') {
    this.pool = new pg.Pool({ ...config, types: pgTypes });
    const { max: _max, ...client } = config;
    this.sessionConfig = client;
    this.pool.on('error', () => undefined); // an idle connection lost: the pool replaces it
    // A connection lost while checked out (a terminated backend, a server restart) emits 'error' on
    // its client, where the pool listens only while the client is idle: unheard, that event ended
    // the process. The query in flight rejects on its own, and tx() discards the client.
    this.pool.on('connect', (client) => { client.on('error', () => undefined); });
  }

  /**
   * One named (prepared) statement on any pooled connection, outside a transaction: the hot paths'
   * single statements (hot-path.ts). A read-only refusal becomes `standby` or `db_read_only` as in
   * {@link PgDb.tx}.
   */
  async named<T extends Row = Row>(query: { name: string; text: string; values: unknown[] }): Promise<pg.QueryResult<T>> {
    this.checkPlans();
    try {
      return await this.again(() => this.pool.query<T>(this.planGeneration === 0 ? query : { ...query, name: `${query.name}.${this.planGeneration}` }));
    } catch (e) {
      throw refusalOf(e, this.standby);
    }
  }

  /**
   * `run` (one statement in its own transaction, or a whole transaction), run again while
   * PostgreSQL rolls it back as a deadlock's or a serialization failure's victim, at most
   * {@link TX_ATTEMPTS} times in all, after a short random pause (see {@link tx}).
   */
  private async again<T>(run: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (e) {
        if (attempt >= TX_ATTEMPTS || !victim(e)) throw e;
        this.txRetries++;
        await sleep(Math.random() * 5 * attempt);
      }
    }
  }

  /**
   * The generation of the named statements' plans: it moves when a table they read has doubled in
   * size since the generation began, and each connection then prepares them again under new names.
   * PostgreSQL keeps a named statement's generic plan, made from the table sizes and statistics of
   * its fifth run, until something invalidates it (an ANALYZE: autovacuum's, once a minute at
   * most and only past its thresholds); a plan made on tiny tables (a sequential scan of
   * `queen.partitions` hashed against a claim's candidates: 20,000 partition rows read per claim
   * on 20,000 partitions, test/storage/query-plans.test.ts) would stay O(table) as the tables
   * grow. Planned afresh at each doubling, a plan's idea of a table is never off by more than 2×.
   * Each generation leaves its predecessors' prepared statements on the connections: at most one
   * set per doubling of a table from 8 kB (about 20 sets up to 8 GB).
   */
  planGeneration = 0;
  /** How often the table sizes are compared, ms (0: at every named statement); `PgBackendOptions.planCheckMs`. */
  planCheckMs = 1_000;
  private planSizes: Map<string, number> | undefined;
  private planCheckedAt = -Infinity;
  private planChecking = false;

  /** Starts a comparison of the table sizes when one is due (see {@link planGeneration}); never awaited, errors ignored. */
  private checkPlans(): void {
    const now = Date.now();
    if (this.planChecking || now - this.planCheckedAt < this.planCheckMs) return;
    this.planChecking = true;
    this.planCheckedAt = now;
    this.pool.query(PLANNED_TABLE_SIZES, [PLANNED_TABLES]).then((r) => {
      const sizes = new Map(r.rows.map((x: Row) => [x.relname as string, Math.max(Number(x.bytes), PLAN_MIN_BYTES)]));
      if (this.planSizes === undefined) this.planSizes = sizes;
      else if ([...sizes].some(([t, bytes]) => bytes >= 2 * (this.planSizes!.get(t) ?? PLAN_MIN_BYTES))) {
        this.planSizes = sizes;
        this.planGeneration++;
      }
    }, () => undefined).finally(() => { this.planChecking = false; });
  }

  /** One statement on any pooled connection. */
  async rows<T extends Row = Row>(sql: string, params: unknown[] = []): Promise<T[]> {
    try {
      return (await this.again(() => this.pool.query<T>(sql, params))).rows;
    } catch (e) {
      throw refusalOf(e, this.standby);
    }
  }

  /** Transactions run again after PostgreSQL chose them as a deadlock's or a serialization failure's victim (see {@link tx}). */
  txRetries = 0;

  /**
   * Runs `fn` in one transaction (READ COMMITTED); NOTIFYs its hints before COMMIT and hands them
   * to the local listeners after it. A transaction PostgreSQL rolled back as the victim of a
   * deadlock (SQLSTATE 40P01: two writers locking the same partition rows in different orders, such
   * as a push of many partitions and a batch ack of several) or of a serialization failure (40001)
   * is run again from the start, up to {@link TX_ATTEMPTS} times after a short random pause: it
   * changed nothing, and `fn` keeps its effects in `t` and its own variables. Any other error rolls
   * everything back and is rethrown, as is the last victim's.
   */
  async tx<T>(fn: (t: Tx) => Promise<T>): Promise<T> {
    return this.again(() => this.txOnce(fn));
  }

  private async txOnce<T>(fn: (t: Tx) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw refusalOf(e, this.standby);
    }
    const t: Tx = { client, hints: [], now: undefined };
    let result: T;
    try {
      if (this.clock === 'database') {
        const r = (await client.query(`BEGIN; SELECT ${tsToMs('now()')} AS now`)) as unknown as { rows: Row[] }[];
        t.now = r[1]!.rows[0]!.now as number;
      } else {
        await client.query('BEGIN');
      }
      result = await fn(t);
      const hints = mergeHints(t.hints);
      if (hints.length > 0 && this.notifyMode === 'commit') this.notifySent += await notifyHints(client, this.serverId, hints);
      try {
        await client.query('COMMIT');
      } catch (e) {
        if (typeof e === 'object' && e !== null) AT_COMMIT.add(e);
        throw e;
      }
      t.hints = hints;
    } catch (e) {
      if (connectionLost(e)) {
        client.release(true); // the session is gone: the pool drops this client
      } else {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
      throw refusalOf(e, this.standby);
    }
    client.release();
    if (this.notifyMode === 'commit') for (const h of t.hints) this.emit(h.tenant, h.queue, h.partitions, h.visibleAt);
    else this.announce(t.hints);
    return result;
  }

  /**
   * Announces hints about changes already committed: to the local listeners now, and to other
   * processes by NOTIFY, not awaited: hints that arrive while one NOTIFY statement is in flight go
   * out together in the next (a lost hint costs a waiter its re-check, never a message).
   */
  announce(hints: Hint[]): void {
    if (hints.length === 0) return;
    for (const h of hints) this.emit(h.tenant, h.queue, h.partitions, h.visibleAt);
    this.outbox.push(...hints);
    this.pumpNotify();
  }

  private pumpNotify(): void {
    if (this.sending || this.outbox.length === 0) return;
    const payloads = encodeHints(this.serverId, mergeHints(this.outbox.splice(0)));
    this.sending = this.pool.query({ name: 'queen_notify', text: 'SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', values: [WAKE_CHANNEL, payloads] })
      .then(() => { this.notifySent += payloads.length; }, () => undefined)
      .finally(() => {
        this.sending = undefined;
        this.pumpNotify();
      });
  }

  /** Registers a local ready listener. */
  onReady(l: ReadyListener): void {
    this.listeners.push(l);
  }

  /** Tells the local listeners (hints of this process after commit, or of other nodes from LISTEN). */
  emit(tenant: string, queue: string, partitions: string[], visibleAt: number | null): void {
    for (const l of this.listeners) {
      try {
        l({ tenant, queue }, partitions, visibleAt);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** Closes every pooled connection. */
  async close(): Promise<void> {
    while (this.sending) await this.sending;
    await this.pool.end();
  }
}

/** Query on the transaction's connection. */
export async function q<T extends Row = Row>(t: Tx, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await t.client.query<T>(sql, params)).rows;
}

/** Rows changed by a statement on the transaction's connection. */
export async function exec(t: Tx, sql: string, params: unknown[] = []): Promise<number> {
  return (await t.client.query(sql, params)).rowCount ?? 0;
}

/** SQL expression: epoch ms (a bigint parameter) as timestamptz. */
export const msToTs = (param: string) => `to_timestamp(${param}::float8 / 1000)`;
/** SQL expression: a timestamptz column as epoch ms (bigint, exact to the ms). */
export const tsToMs = (col: string) => `(extract(epoch from ${col}) * 1000)::bigint`;

/** Payload bytes as stored: clear payloads come back as text, envelopes as bytes (src/model/codec.ts). */
export function payloadOf(bytes: Buffer, encrypted: boolean): string | Buffer {
  return encrypted ? bytes : bytes.toString('utf8');
}

/** Payload to bytea. */
export function payloadBytes(p: string | Buffer): Buffer {
  return typeof p === 'string' ? Buffer.from(p, 'utf8') : p;
}
