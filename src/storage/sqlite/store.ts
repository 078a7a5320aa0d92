/**
 * The embedded SQLite store (better-sqlite3 v12, WAL). Implements {@link Store} with group
 * commit: units of work queued while the event loop is busy run in one transaction, each inside
 * its own savepoint, and share one fsync. With `QUEEN_SYNC=full` (the default) that fsync of the
 * WAL runs on the libuv thread pool after COMMIT (SQLite at `synchronous=NORMAL`), and callers are
 * answered once it is done (docs/storage.md#durability).
 *
 * The WAL is bounded: `journal_size_limit` truncates it to `walLimitBytes` whenever SQLite resets
 * it after a checkpoint, and once no commit has happened for `walIdleMs` the store checkpoints
 * with TRUNCATE (the WAL goes back to 0 bytes). Nothing is checkpointed on the commit path.
 * That idle wait is one entry in a due-time scheduler (src/util/scheduler.ts): the broker's one
 * scheduler once it is attached ({@link SqliteStore.useScheduler}), so its clock drives it.
 */
import Database from 'better-sqlite3';
import type { Database as Db, Statement } from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import type { SyncMode } from '../../config/index.js';
import type { QueueOptions } from '../../model/options.js';
import type {
  CursorRow, DlqFilter, DlqRow, MessageRow, PartitionRow, QueueRow, Store, StoreCapabilities,
  StoreSnapshot, StoreTx, SubscriptionRow,
} from '../store.js';
import { countsOf, MESSAGE_COLUMNS, toDlq, toMessageFromArray, type Row } from './rows.js';
import { LimitedSelect } from './prepared.js';
import { migrate } from './schema.js';
import { SqliteOps } from './ops.js';
import { DEFAULT_TENANT } from '../../model/tenancy.js';
import { SqliteKv } from './kv.js';
import { SqliteTimers } from './timers.js';
import { Scheduler, type SchedulerLane } from '../../util/scheduler.js';
import { SyncCost } from './wal-sync.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { mapPacked } from '../../util/arrays.js';

interface Job {
  work: (tx: StoreTx) => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** What one unit of a commit produced: its value or error, its after-commit and rollback hooks. */
interface Outcome {
  ok: boolean;
  value: unknown;
  hooks: (() => void)[];
  undo: (() => void)[];
}

/** One commit's callers, waiting for the WAL fsync that makes it durable. */
interface Committed {
  batch: Job[];
  outcomes: Outcome[];
}

/** Answers a durable commit's callers in order, then runs its after-commit hooks. */
function settle(batch: Job[], outcomes: Outcome[]): void {
  for (let i = 0; i < batch.length; i++) {
    const o = outcomes[i]!;
    if (o.ok) batch[i]!.resolve(o.value);
    else batch[i]!.reject(o.value);
  }
  for (const o of outcomes) for (const h of o.hooks) h();
}

/**
 * Runs a unit's rollback hooks newest first; a failing hook does not stop the others, and each
 * failure is reported (the in-memory indexes may then disagree with the store: never silent).
 */
function runUndo(hooks: (() => void)[], report: ((e: unknown) => void) | undefined): void {
  for (let i = hooks.length - 1; i >= 0; i--) {
    try {
      hooks[i]!();
    } catch (e) {
      report?.(new StorageError(`an in-memory rollback step failed: ${(e as Error)?.message ?? String(e)}`, e));
    }
  }
}

/** Thrown to callers whose unit of work was lost because the commit itself failed. */
export class StorageError extends Error {
  constructor(message: string, override readonly cause?: unknown) {
    super(message);
    this.name = 'StorageError';
  }
}

/** Options for {@link SqliteStore.open}. */
export interface SqliteOptions {
  /** Directory holding `queen.db` (created with mode 0700 when missing). */
  dataDir: string;
  sync: SyncMode;
  /**
   * With `sync: 'full'`, where the WAL fsync runs (`QUEEN_SYNC_THREAD`): `'auto'` (default) the store
   * syncs after COMMIT on the event loop while syncs are cheap and on the thread pool otherwise
   * ({@link SyncCost}); `true` always on the thread pool; `false` inside COMMIT (SQLite FULL).
   */
  syncThread?: boolean | 'auto';
  /** With `syncThread: 'auto'`, the estimate that chooses inline or thread-pool syncs (default: a fresh {@link SyncCost}; tests pass their own). */
  syncCost?: SyncCost;
  /** Called when a commit fails (every unit's rollback hooks have run by then). */
  onCommitFailure?: (e: unknown) => void;
  /** WAL size kept after each checkpoint, bytes (`QUEEN_WAL_LIMIT_BYTES`; default {@link DEFAULT_WAL_LIMIT_BYTES}). */
  walLimitBytes?: number;
  /** Commit-free time after which the WAL is checkpointed and truncated, ms (default {@link WAL_IDLE_MS}). */
  walIdleMs?: number;
  /** The due-time scheduler of the idle checkpoint (default: the store's own, on the wall clock); see {@link SqliteStore.useScheduler}. */
  scheduler?: Scheduler;
}

/** Default WAL bound in bytes: 16 MiB. */
export const DEFAULT_WAL_LIMIT_BYTES = 16 * 1024 * 1024;
/** The idle checkpoint's lane and key in the scheduler. */
const WAL_LANE = 'wal-checkpoint';
const WAL_KEY = 'idle';

/** Commit-free time before the idle TRUNCATE checkpoint, ms. */
export const WAL_IDLE_MS = 1000;

/**
 * The transactionId lookups, exported so that test/storage/query-plans.test.ts explains these
 * exact statements. Push dedup: the newest message with the id created at or after a time.
 */
export const FIND_BY_TXN_SQL = `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE partition_pk = ? AND transaction_id = ? AND created_at >= ?
                    ORDER BY offset DESC LIMIT 1`;
/** Ack resolution: the newest offset with the id; covered by messages_by_txn (transaction_id, partition_pk, offset), so no table row is read. */
export const OFFSET_BY_TXN_SQL = 'SELECT offset FROM messages WHERE partition_pk = ? AND transaction_id = ? ORDER BY offset DESC LIMIT 1';

/** The embedded store: one SQLite file in the data directory, group-committed writes. */
export class SqliteStore implements Store {
  readonly capabilities: StoreCapabilities = { listenNotify: false, singleWriter: true };
  /** Operator reads and writes (inspection, retention, traces) on the same connection. */
  readonly ops: SqliteOps;
  /** KV rows and lock permits on the same connection. */
  readonly kv: SqliteKv;
  /** Scheduled messages on the same connection. */
  readonly timers: SqliteTimers;
  private readonly db: Db;
  private readonly s: Record<string, Statement>;
  /** A partition's messages from an offset on, in offset order (the pop path's read). */
  private readonly readFrom: LimitedSelect;
  private pending: Job[] = [];
  private scheduled = false;
  private closed = false;
  private hooks: (() => void)[] = [];
  private undo: (() => void)[] = [];
  private readonly tx: StoreTx;
  private readonly onCommitFailure: ((e: unknown) => void) | undefined;
  private readonly walIdleMs: number;
  private lastCommitAt = 0;
  private walDirty = false;
  /**
   * The WAL file, fsynced off the event loop after each commit when `QUEEN_SYNC=full` (SQLite then
   * runs `synchronous=NORMAL`, which writes the WAL without syncing it); undefined otherwise.
   */
  private readonly wal: { fd: number; cost: SyncCost | undefined } | undefined;
  /** Commits made since the running WAL fsync started (or with none running): the next fsync covers them. */
  private unsynced: Committed[] = [];
  /** The commits the running WAL fsync covers, or undefined when none runs. */
  private syncing: Committed[] | undefined;
  /** The idle checkpoint's entry in a due-time scheduler (its own until {@link useScheduler} names the broker's). */
  private walLane: SchedulerLane<string>;
  private clock: Clock;

  private constructor(db: Db, onCommitFailure?: (e: unknown) => void, walIdleMs = WAL_IDLE_MS, scheduler = new Scheduler(systemClock), walFd?: number, syncCost?: SyncCost) {
    this.db = db;
    this.wal = walFd === undefined ? undefined : { fd: walFd, cost: syncCost };
    this.onCommitFailure = onCommitFailure;
    this.walIdleMs = walIdleMs;
    this.walLane = scheduler.lane<string>(WAL_LANE);
    this.clock = scheduler.clock;
    this.ops = new SqliteOps(db);
    this.kv = new SqliteKv(db);
    this.timers = new SqliteTimers(db);
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      begin: p('BEGIN IMMEDIATE'),
      commit: p('COMMIT'),
      rollback: p('ROLLBACK'),
      savepoint: p('SAVEPOINT job'),
      release: p('RELEASE job'),
      rollbackTo: p('ROLLBACK TO job'),
      insertQueue: p('INSERT INTO queues (id, tenant_id, name, namespace, task, options, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      updateQueue: p('UPDATE queues SET namespace = ?, task = ?, options = ? WHERE pk = ?'),
      insertPartition: p(`INSERT INTO partitions (id, queue_pk, name, next_offset, first_offset, last_message_at, created_at)
                          VALUES (?, ?, ?, ?, ?, ?, ?)`),
      updateHead: p('UPDATE partitions SET next_offset = ?, last_message_at = ? WHERE pk = ?'),
      insertMessage: p(`INSERT INTO messages (partition_pk, offset, queue_pk, id, transaction_id, payload, encrypted, trace_id, producer_sub, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      findByTxn: p(FIND_BY_TXN_SQL).raw(true),
      offsetByTxn: p(OFFSET_BY_TXN_SQL).pluck(true),
      readMessage: p(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE partition_pk = ? AND offset = ?`).raw(true),
      createdAtOf: p('SELECT created_at FROM messages WHERE partition_pk = ? AND offset >= ? ORDER BY offset LIMIT 1'),
      upsertCursor: p(`INSERT INTO cursors (partition_pk, consumer_group, next_offset, lease_id, lease_expires_at, lease_end_offset, retry_count,
                         delivery_count, attempt_split, delivery_count_from_split, delivered_max)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT (partition_pk, consumer_group) DO UPDATE SET next_offset = excluded.next_offset,
                         lease_id = excluded.lease_id, lease_expires_at = excluded.lease_expires_at,
                         lease_end_offset = excluded.lease_end_offset, retry_count = excluded.retry_count,
                         delivery_count = excluded.delivery_count, attempt_split = excluded.attempt_split,
                         delivery_count_from_split = excluded.delivery_count_from_split, delivered_max = excluded.delivered_max`),
      deleteCursor: p('DELETE FROM cursors WHERE partition_pk = ? AND consumer_group = ?'),
      upsertSub: p(`INSERT INTO subscriptions (queue_pk, consumer_group, mode, from_time, label, created_at, conflation) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (queue_pk, consumer_group) DO UPDATE SET mode = excluded.mode, from_time = excluded.from_time,
                      label = excluded.label, conflation = excluded.conflation`),
      deleteSub: p('DELETE FROM subscriptions WHERE queue_pk = ? AND consumer_group = ?'),
      insertDlq: p(`INSERT INTO dlq (id, queue_pk, queue, partition_pk, partition, partition_id, consumer_group, message_id, transaction_id,
                      offset, payload, encrypted, trace_id, producer_sub, error, retry_count, created_at, failed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      getDlq: p('SELECT * FROM dlq WHERE id = ?'),
      deleteDlq: p('DELETE FROM dlq WHERE id = ?'),
      countDlqAll: p('SELECT count(*) AS n FROM dlq'),
      countDlqQueue: p('SELECT count(*) AS n FROM dlq WHERE queue_pk = ?'),
      setSetting: p('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
      ping: p('SELECT 1 AS ok'),
    };
    this.readFrom = new LimitedSelect(db, `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE partition_pk = ? AND offset >= ? ORDER BY offset`, true);
    const self = this;
    this.tx = {
      findByTransactionId: (a, b, c) => self.findByTransactionId(a, b, c),
      offsetByTransactionId: (a, b) => self.offsetByTransactionId(a, b),
      readMessages: (a, b, c) => self.readMessages(a, b, c),
      readMessage: (a, b) => self.readMessage(a, b),
      firstOffsetAfter: (a, b, c) => self.firstOffsetAfter(a, b, c),
      listDlq: (f) => self.listDlq(f),
      countDlqMatching: (f) => self.countDlqMatching(f),
      getDlq: (id) => self.getDlq(id),
      countDlq: (q) => self.countDlq(q),
      insertQueue: (q) =>
        Number(self.s.insertQueue!.run(q.id, q.tenant, q.name, q.namespace, q.task, JSON.stringify(q.options), q.createdAt).lastInsertRowid),
      updateQueue: (pk, ns, task, o: QueueOptions) => void self.s.updateQueue!.run(ns, task, JSON.stringify(o), pk),
      deleteQueue: (pk) => self.deleteQueueRows(pk),
      insertPartition: (p) =>
        Number(self.s.insertPartition!.run(p.id, p.queuePk, p.name, p.headOffset, p.firstOffset, p.lastMessageAt, p.createdAt).lastInsertRowid),
      updatePartitionHead: (pk, next, last) => void self.s.updateHead!.run(next, last, pk),
      insertMessage: (queuePk, m) =>
        void self.s.insertMessage!.run(m.partitionPk, m.offset, queuePk, m.id, m.transactionId, m.payload, m.encrypted ? 1 : 0,
          m.traceId, m.producerSub, m.createdAt),
      upsertCursor: (c: CursorRow) =>
        void self.s.upsertCursor!.run(c.partitionPk, c.group, c.committedOffset, c.leaseId, c.leaseExpiresAt, c.deliveredUpTo, c.retryCount, c.deliveryCount,
          c.attemptSplit, c.deliveryCountFromSplit, c.deliveredMax),
      deleteCursor: (pk, g) => void self.s.deleteCursor!.run(pk, g),
      upsertSubscription: (x: SubscriptionRow) =>
        void self.s.upsertSub!.run(x.queuePk, x.group, x.mode, x.fromTime, x.label, x.createdAt, x.conflation ? 1 : 0),
      deleteSubscription: (q, g) => void self.s.deleteSub!.run(q, g),
      insertDlq: (d: DlqRow) =>
        void self.s.insertDlq!.run(d.id, d.queuePk, d.queue, d.partitionPk, d.partition, d.partitionId, d.group, d.messageId,
          d.transactionId, d.offset, d.payload, d.encrypted ? 1 : 0, d.traceId, d.producerSub, d.error, d.retryCount, d.createdAt, d.failedAt),
      deleteDlq: (id) => self.s.deleteDlq!.run(id).changes > 0,
      setSetting: (k, v) => void self.s.setSetting!.run(k, v),
      afterCommit: (fn) => void self.hooks.push(fn),
      onRollback: (fn) => void self.undo.push(fn),
    };
  }

  /**
   * Opens (creating when missing) `<dataDir>/queen.db`, applies pragmas and migrations.
   * @throws Error when the file cannot be opened or was written by a newer schema.
   */
  static open(opts: SqliteOptions): SqliteStore {
    fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    const file = path.join(opts.dataDir, 'queen.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    // `full`: SQLite writes the WAL at COMMIT without syncing it (NORMAL) and the store fsyncs the
    // WAL itself before answering (see syncWal), on the thread pool whenever an inline sync would
    // stall HTTP work.
    const offThread = opts.sync === 'full' && opts.syncThread !== false;
    db.pragma(`synchronous = ${offThread ? 'NORMAL' : opts.sync.toUpperCase()}`);
    db.pragma('foreign_keys = OFF');
    db.pragma('busy_timeout = 5000');
    db.pragma('cache_size = -65536');
    db.pragma(`journal_size_limit = ${Math.floor(opts.walLimitBytes ?? DEFAULT_WAL_LIMIT_BYTES)}`);
    migrate(db);
    let walFd: number | undefined;
    if (offThread) {
      // The WAL exists while a connection is open in WAL mode and is only unlinked when the last one
      // closes, so this descriptor names it for the store's lifetime. The directory entry is made
      // durable once, as SQLite does on the first sync of a new WAL.
      walFd = fs.openSync(`${file}-wal`, 'r');
      fs.fsyncSync(walFd);
      const dir = fs.openSync(opts.dataDir, 'r');
      try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
    }
    const adaptive = (opts.syncThread ?? 'auto') === 'auto';
    return new SqliteStore(db, opts.onCommitFailure, opts.walIdleMs, opts.scheduler, walFd, adaptive ? opts.syncCost ?? new SyncCost() : undefined);
  }

  loadSnapshot(): StoreSnapshot {
    const queues = (this.db.prepare('SELECT * FROM queues ORDER BY pk').all() as Row[]).map((r): QueueRow => ({
      pk: r.pk as number, id: r.id as string, tenant: r.tenant_id as string, name: r.name as string, namespace: r.namespace as string,
      task: r.task as string, options: JSON.parse(r.options as string) as QueueOptions, createdAt: r.created_at as number,
    }));
    const partitions = (this.db.prepare('SELECT * FROM partitions ORDER BY pk').all() as Row[]).map((r): PartitionRow => ({
      pk: r.pk as number, id: r.id as string, queuePk: r.queue_pk as number, name: r.name as string,
      headOffset: r.next_offset as number, firstOffset: r.first_offset as number,
      lastMessageAt: (r.last_message_at as number | null) ?? null, createdAt: r.created_at as number,
    }));
    const cursors = (this.db.prepare('SELECT * FROM cursors').all() as Row[]).map((r): CursorRow => ({
      partitionPk: r.partition_pk as number, group: r.consumer_group as string, committedOffset: r.next_offset as number,
      leaseId: (r.lease_id as string | null) ?? null, leaseExpiresAt: (r.lease_expires_at as number | null) ?? null,
      deliveredUpTo: (r.lease_end_offset as number | null) ?? null, retryCount: r.retry_count as number,
      ...countsOf(r),
    }));
    const subscriptions = (this.db.prepare('SELECT * FROM subscriptions').all() as Row[]).map((r): SubscriptionRow => ({
      queuePk: r.queue_pk as number, group: r.consumer_group as string, mode: r.mode as 'all' | 'from',
      fromTime: (r.from_time as number | null) ?? null, label: r.label as string, createdAt: r.created_at as number,
      conflation: r.conflation === 1,
    }));
    const settings = new Map<string, string>();
    for (const r of this.db.prepare('SELECT key, value FROM settings').all() as Row[]) settings.set(r.key as string, r.value as string);
    return { queues, partitions, cursors, subscriptions, settings };
  }

  /** The distinct first `bytes` bytes of every encrypted payload (messages, dead letters, timers). */
  payloadHeads(bytes: number): Buffer[] {
    const sql = ['messages', 'dlq', 'timers'].map((t) => `SELECT DISTINCT substr(payload, 1, @n) AS h FROM ${t} WHERE encrypted = 1`).join(' UNION ');
    return (this.db.prepare(sql).all({ n: bytes }) as Row[]).map((r) => Buffer.from(r.h as Buffer | string));
  }

  /** Every broker-wide setting, by key. */
  loadSettings(): Map<string, string> {
    const settings = new Map<string, string>();
    for (const r of this.db.prepare('SELECT key, value FROM settings').all() as Row[]) settings.set(r.key as string, r.value as string);
    return settings;
  }

  findByTransactionId(partitionPk: number, transactionId: string, since: number): MessageRow | undefined {
    const r = this.s.findByTxn!.get(partitionPk, transactionId, since) as unknown[] | undefined;
    return r ? toMessageFromArray(r) : undefined;
  }

  offsetByTransactionId(partitionPk: number, transactionId: string): number | undefined {
    return this.s.offsetByTxn!.get(partitionPk, transactionId) as number | undefined;
  }

  readMessages(partitionPk: number, fromOffset: number, limit: number): MessageRow[] {
    return mapPacked(this.readFrom.all(limit, partitionPk, fromOffset) as unknown[][], toMessageFromArray);
  }

  readMessage(partitionPk: number, offset: number): MessageRow | undefined {
    const r = this.s.readMessage!.get(partitionPk, offset) as unknown[] | undefined;
    return r ? toMessageFromArray(r) : undefined;
  }

  /** Binary search over offsets (created_at is non-decreasing in offset order): O(log n) point reads. */
  firstOffsetAfter(partitionPk: number, fromOffset: number, timeMs: number): number | undefined {
    const last = this.db.prepare('SELECT max(offset) AS o FROM messages WHERE partition_pk = ?').get(partitionPk) as Row;
    if (last.o === null || last.o === undefined) return undefined;
    let lo = fromOffset;
    let hi = (last.o as number) + 1; // answer in [lo, hi]; hi = none
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const r = this.s.createdAtOf!.get(partitionPk, mid) as Row | undefined;
      if (r && (r.created_at as number) > timeMs) hi = mid;
      else lo = mid + 1;
    }
    return lo > (last.o as number) ? undefined : lo;
  }

  private dlqWhere(f: Omit<DlqFilter, 'limit' | 'offset'>): { where: string; args: unknown[] } {
    const where: string[] = [];
    const args: unknown[] = [];
    if (f.tenant !== undefined) { where.push('queue_pk IN (SELECT pk FROM queues WHERE tenant_id = ?)'); args.push(f.tenant); }
    if (f.queue !== undefined) { where.push('queue = ?'); args.push(f.queue); }
    if (f.group !== undefined) { where.push('consumer_group = ?'); args.push(f.group); }
    if (f.from !== undefined) { where.push('failed_at >= ?'); args.push(f.from); }
    if (f.to !== undefined) { where.push('failed_at <= ?'); args.push(f.to); }
    return { where: where.length ? 'WHERE ' + where.join(' AND ') : '', args };
  }

  listDlq(f: DlqFilter): DlqRow[] {
    const { where, args } = this.dlqWhere(f);
    const sql = `SELECT * FROM dlq ${where} ORDER BY failed_at DESC, id DESC LIMIT ? OFFSET ?`;
    return (this.db.prepare(sql).all(...args, f.limit, f.offset) as Row[]).map(toDlq);
  }

  countDlqMatching(f: Omit<DlqFilter, 'limit' | 'offset'>): number {
    const { where, args } = this.dlqWhere(f);
    return (this.db.prepare(`SELECT count(*) AS n FROM dlq ${where}`).get(...args) as Row).n as number;
  }

  getDlq(id: string): DlqRow | undefined {
    const r = this.s.getDlq!.get(id) as Row | undefined;
    return r ? toDlq(r) : undefined;
  }

  countDlq(queuePk?: number): number {
    const r = (queuePk === undefined ? this.s.countDlqAll!.get() : this.s.countDlqQueue!.get(queuePk)) as Row;
    return r.n as number;
  }

  /** The connection, for the operation backend in this directory (backend.ts); reads only outside {@link runOnDb}. */
  get database(): Db {
    return this.db;
  }

  /** Removes queue `pk` and everything under it; only inside a unit of work. */
  deleteQueueRowsOn(pk: number): void {
    this.deleteQueueRows(pk);
  }

  private deleteQueueRows(pk: number): void {
    const db = this.db;
    db.prepare('DELETE FROM cursors WHERE partition_pk IN (SELECT pk FROM partitions WHERE queue_pk = ?)').run(pk);
    db.prepare('DELETE FROM messages WHERE queue_pk = ?').run(pk);
    db.prepare('DELETE FROM partitions WHERE queue_pk = ?').run(pk);
    db.prepare('DELETE FROM subscriptions WHERE queue_pk = ?').run(pk);
    db.prepare('DELETE FROM dlq WHERE queue_pk = ?').run(pk);
    db.prepare('DELETE FROM trace_names WHERE trace_pk IN (SELECT pk FROM traces WHERE queue_pk = ?)').run(pk);
    db.prepare('DELETE FROM traces WHERE queue_pk = ?').run(pk);
    // Timers name their queue as stored: a non-default tenant's with its tenant prefix (sub-stores.ts `scoped`).
    db.prepare(`DELETE FROM timers WHERE queue = (SELECT CASE WHEN tenant_id = '${DEFAULT_TENANT}' THEN name ELSE tenant_id || char(0) || name END
                                                   FROM queues WHERE pk = ?)`).run(pk);
    db.prepare('DELETE FROM queues WHERE pk = ?').run(pk);
  }

  run<T>(work: (tx: StoreTx) => T): Promise<T> {
    if (this.closed) return Promise.reject(new StorageError('store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  /**
   * Runs `fn` on the connection as one unit of the next group commit (atomic: a throw rolls back
   * its writes alone). For the operation backend in this directory (backend.ts).
   */
  runOnDb<T>(fn: (db: Db) => T): Promise<T> {
    return this.run(() => fn(this.db));
  }

  /**
   * Arms the next group commit for the next turn of the event loop, unless one is armed or a WAL
   * fsync is running: then the units wait for it to end and go into one commit together, so each
   * fsync is paired with one commit however small the requests are (measured: committing during
   * the fsync instead made 4× as many commits under push 1/request, and more CPU per message).
   */
  private schedule(): void {
    if (this.scheduled || this.syncing !== undefined || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * One group commit: every pending unit of work in one transaction, one fsync.
   * @param force commit even while a WAL fsync runs (close)
   */
  private flush(force = false): void {
    this.scheduled = false;
    if (this.syncing !== undefined && !force) return; // the running fsync's end schedules this commit
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const outcomes: Outcome[] = [];
    try {
      this.s.begin!.run();
      for (const job of batch) {
        this.hooks = [];
        this.undo = [];
        this.s.savepoint!.run();
        try {
          const value = job.work(this.tx);
          this.s.release!.run();
          outcomes.push({ ok: true, value, hooks: this.hooks, undo: this.undo });
        } catch (e) {
          this.s.rollbackTo!.run();
          this.s.release!.run();
          runUndo(this.undo, this.onCommitFailure); // before the next unit runs on the same in-memory state
          outcomes.push({ ok: false, value: e, hooks: [], undo: [] });
        }
      }
      this.s.commit!.run();
      this.noteCommit();
    } catch (e) {
      try { if (this.db.inTransaction) this.s.rollback!.run(); } catch { /* already rolled back */ }
      for (let i = outcomes.length - 1; i >= 0; i--) runUndo(outcomes[i]!.undo, this.onCommitFailure);
      const err = new StorageError(`commit failed: ${(e as Error).message}`, e);
      for (const job of batch) job.reject(err);
      this.onCommitFailure?.(e);
      return;
    } finally {
      this.hooks = [];
      this.undo = [];
    }
    if (this.wal === undefined) {
      settle(batch, outcomes);
      return;
    }
    this.unsynced.push({ batch, outcomes });
    this.syncWal();
  }

  /**
   * Starts one fsync of the WAL for every commit not yet covered, unless one is running (the
   * commits made meanwhile wait for the next): inline while {@link SyncCost} finds syncs cheap,
   * else on the libuv thread pool. Each commit's callers are answered, and its after-commit hooks
   * run, once an fsync that started after the commit ended. A failed fsync rejects those callers
   * (`storage_error`): the rows are committed but their durability is unknown, so no caller is told
   * they are durable.
   */
  private syncWal(): void {
    if (this.syncing !== undefined || this.unsynced.length === 0 || this.wal === undefined) return;
    const covered = this.unsynced;
    this.unsynced = [];
    this.syncing = covered;
    const { fd, cost } = this.wal;
    const started = performance.now();
    const done = (e: NodeJS.ErrnoException | null): void => {
      if (this.syncing !== covered) return; // close() settled them already
      this.syncing = undefined;
      cost?.note(performance.now() - started);
      if (e) {
        const err = new StorageError(`WAL fsync failed: ${e.message}`, e);
        for (const c of covered) for (const job of c.batch) job.reject(err);
        this.onCommitFailure?.(e);
      } else {
        for (const c of covered) settle(c.batch, c.outcomes);
      }
      this.syncWal();
      this.schedule(); // the units that arrived during the fsync, on the next turn (after the answers' continuations)
    };
    // fdatasync, as SQLite syncs its WAL on Linux: the frames and the file size, not the inode times.
    if (cost?.inline()) {
      let error: NodeJS.ErrnoException | null = null;
      try {
        fs.fdatasyncSync(fd);
      } catch (e) {
        error = e as NodeJS.ErrnoException;
      }
      done(error);
    } else {
      fs.fdatasync(fd, done);
    }
  }

  /**
   * Moves the idle checkpoint onto `scheduler` (the broker's one scheduler, on its injected clock);
   * a checkpoint already armed keeps its due time.
   */
  useScheduler(scheduler: Scheduler): void {
    const due = this.walLane.dueAt(WAL_KEY);
    this.walLane.cancel(WAL_KEY);
    this.walLane = scheduler.lane<string>(WAL_LANE);
    this.clock = scheduler.clock;
    if (due !== undefined && !this.closed) this.walLane.schedule(WAL_KEY, due, () => this.idleCheckpoint());
  }

  /** Records a commit and arms the idle checkpoint (one scheduler entry, not re-armed per commit). */
  private noteCommit(): void {
    this.lastCommitAt = this.clock.now();
    this.walDirty = true;
    if (this.walLane.dueAt(WAL_KEY) === undefined) this.armIdleCheckpoint(this.walIdleMs);
  }

  private armIdleCheckpoint(ms: number): void {
    this.walLane.schedule(WAL_KEY, this.clock.now() + ms, () => this.idleCheckpoint());
  }

  /** Checkpoints and truncates the WAL once no commit happened for `walIdleMs`; else waits on. */
  private idleCheckpoint(): void {
    if (this.closed || !this.walDirty) return;
    const idleFor = this.clock.now() - this.lastCommitAt;
    if (idleFor < this.walIdleMs || this.pending.length > 0 || this.db.inTransaction) {
      this.armIdleCheckpoint(Math.max(1, this.walIdleMs - idleFor));
      return;
    }
    try {
      const [r] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      if (r?.busy === 0) this.walDirty = false;
      else this.armIdleCheckpoint(this.walIdleMs);
    } catch {
      this.armIdleCheckpoint(this.walIdleMs); // e.g. SQLITE_BUSY: try again after the next idle period
    }
  }

  healthy(): boolean {
    if (this.closed) return false;
    try {
      return (this.s.ping!.get() as Row).ok === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.pending.length > 0) this.flush(true);
    this.closed = true;
    this.walLane.cancel(WAL_KEY);
    if (this.wal !== undefined) {
      // Commits still waiting for (or covered by a running) WAL fsync: one last fsync here, then answer.
      const waiting = [...(this.syncing ?? []), ...this.unsynced];
      this.syncing = undefined;
      this.unsynced = [];
      let failure: Error | undefined;
      try { fs.fdatasyncSync(this.wal.fd); } catch (e) { failure = e as Error; }
      for (const c of waiting) {
        if (failure) for (const job of c.batch) job.reject(new StorageError(`WAL fsync failed: ${failure.message}`, failure));
        else settle(c.batch, c.outcomes);
      }
      fs.closeSync(this.wal.fd);
    }
    this.db.close();
  }
}
