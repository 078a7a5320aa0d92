/**
 * The PostgreSQL backend of the operation contract (src/storage/contract.ts `QueueBackend`,
 * docs/storage.md#postgresql-backend): several broker processes may share one database. Each
 * operation is one transaction on a pooled connection (db.ts); the message operations are in
 * log-ops.ts, the sub-stores in sub-stores.ts and admin.ts; wake-up hints travel between processes
 * by LISTEN/NOTIFY (wake.ts) and reach this process's listeners directly after COMMIT.
 */
import type { PoolConfig } from 'pg';
import { randomUUID } from 'node:crypto';
import type {
  AckLookup, AckTarget, AdminSubStore, AppendRequest, AppendResult, BackendCapabilities, ClaimRequest, ClaimedBatch, CommitResult, CursorCommit, CursorKey,
  CursorView, DlqSubStore, EphemeralSubStore, StreamsSubStore, KvSubStore, LockSubStore, PartitionKey, PartitionView, PopSelector, PopTarget, QueueBackend, ReadyListener, TimerSubStore,
  TraceSubStore, UnitOp, UnitOpResult, UnitResult, ViewsSubStore,
} from '../contract.js';
import { viewsStore } from './views.js';
import { PgLogReads } from './log-read.js';
import type { LogReadStore } from '../log-read.js';
import type { PayloadCodec } from '../../model/codec.js';
import { UnitRefused } from '../refused.js';
import { adminStore } from './admin.js';
import { clockOf, commitOutcomeUnknown, exec, PgDb, q, type ClockSource, type NotifyMode } from './db.js';
import { appendIn, claimIn, commitIn, countsOf, cursorView, EMPTY_SCAN_SQL, touchPartition } from './log-ops.js';
import { takeBackDelivery } from '../attempts.js';
import { claimFast, commitFast, ScanPositions } from './hot-path.js';
import { appendBatch } from './append-batch.js';
import { migrate } from './migrate.js';
import { leaseHeld, readAckTargets, readPopTargets } from './reads.js';
import { pgStreamsStore } from './streams.js';
import { pgKafkaMeta } from './kafka-meta.js';
import type { KafkaMetaSubStore } from '../kafka-meta.js';
import { applyRider, dlqStore, ephemeralStore, kvStore, lockStore, timerStore, traceStore } from './sub-stores.js';
import { WakeListener } from './wake.js';

/** How the backend connects (node-postgres pool options: `connectionString` or host/port/user/password/database/ssl, `max`). */
export interface PgBackendOptions {
  pool: PoolConfig;
  /** Names this process in NOTIFY payloads (its own hints are not delivered twice); default a random id. */
  serverId?: string | undefined;
  /** Listen for other processes' hints (default true). */
  listen?: boolean | undefined;
  /**
   * Where the LISTEN connection goes when not where the pool goes (`QUEEN_PG_LISTEN_URL`): LISTEN
   * needs a direct connection, so with the pool behind a transaction pooler name the server itself.
   */
  listenUrl?: string | undefined;
  /**
   * Whose clock lease and visibility times follow (design B7, docs/storage.md#postgresql-backend):
   * `caller` (default: the contract's `now`, so a test clock drives them) or `database` (`now()` of
   * each transaction, so processes with skewed clocks cannot overlap leases).
   */
  clock?: ClockSource | undefined;
  /**
   * `QUEEN_STANDBY` (docs/cluster.md#standby): `auto` follows `pg_is_in_recovery()`; `true` opens
   * every pooled session read-only and answers writes as a standby; `false` refuses a hot standby.
   */
  standby?: 'auto' | 'true' | 'false' | undefined;
  /** When wake-up hints are NOTIFYed (db.ts `NotifyMode`; default `after`). */
  notifyMode?: NotifyMode | undefined;
  /** How often the node compares its tables' sizes to plan its named statements again when one doubled, ms (db.ts `PgDb.planGeneration`; default 1000, 0: at every statement). */
  planCheckMs?: number | undefined;
  /** Called with errors of the LISTEN connection (it reconnects by itself). */
  onListenError?: ((e: Error) => void) | undefined;
}

/** Most appends gathered into one transaction. */
export const MAX_GROUP = 500;

/** Appends that commit together (one request's, or a unit made only of appends), answered in order. */
interface PendingAppend {
  reqs: AppendRequest[];
  resolve(r: AppendResult[]): void;
  reject(e: unknown): void;
}

/** {@link QueueBackend} on PostgreSQL (see the module comment). */
export class PgBackend implements QueueBackend {
  readonly capabilities: BackendCapabilities = { listenNotify: true, singleWriter: false };
  readonly kv: KvSubStore;
  readonly locks: LockSubStore;
  readonly timers: TimerSubStore;
  readonly traces: TraceSubStore;
  readonly dlq: DlqSubStore;
  readonly admin: AdminSubStore;
  readonly ephemeral: EphemeralSubStore;
  readonly streams: StreamsSubStore;
  readonly kafka: KafkaMetaSubStore;
  readonly views: ViewsSubStore;
  /** Appends gathered into transactions so far (group commit). */
  readonly groupStats = { batches: 0, appends: 0 };
  /** Claims and cursor commits taken by the hot path (hot-path.ts) and by the general code, so far. */
  readonly hotStats = { claimFast: 0, claimGeneral: 0, commitFast: 0, commitGeneral: 0 };
  private readonly pendingAppends: PendingAppend[] = [];
  /** Where this node's claims stopped walking each (queue, group) (hot-path.ts). */
  private readonly positions = new ScanPositions();
  private committing = false;

  private constructor(/** The pool and its transactions (membership.ts shares them). */ readonly db: PgDb, private readonly listener: WakeListener | undefined) {
    this.kv = kvStore(db);
    this.locks = lockStore(db);
    this.timers = timerStore(db);
    this.traces = traceStore(db);
    this.dlq = dlqStore(db);
    this.admin = adminStore(db);
    this.ephemeral = ephemeralStore(db);
    this.streams = pgStreamsStore(db);
    this.kafka = pgKafkaMeta(db);
    this.views = viewsStore(db);
  }

  /**
   * Connects, applies the schema migrations (under the advisory lock) and starts listening.
   * @throws the connection or migration error (the pool is closed again)
   */
  static async open(opts: PgBackendOptions): Promise<PgBackend> {
    const forced = opts.standby === 'true';
    const db = new PgDb(forced ? { ...opts.pool, options: `${opts.pool.options ?? ''} -c default_transaction_read_only=on`.trim() } : opts.pool, opts.serverId ?? randomUUID(), opts.clock, opts.notifyMode);
    db.forcedStandby = forced;
    if (opts.planCheckMs !== undefined) db.planCheckMs = opts.planCheckMs;
    let listener: WakeListener | undefined;
    try {
      // A hot standby (docs/cluster.md#standby) takes no migration and no LISTEN until promoted.
      const inRecovery = (await db.rows('SELECT pg_is_in_recovery() AS r'))[0]!.r as boolean;
      if (inRecovery && opts.standby === 'false') throw new Error('the database is a hot standby (pg_is_in_recovery) and QUEEN_STANDBY=false: point the broker at the primary, or set QUEEN_STANDBY=auto');
      db.standby = forced || inRecovery;
      await migrate(db.pool, undefined, db.standby);
      if (opts.listenUrl !== undefined) db.sessionConfig = { connectionString: opts.listenUrl, ssl: opts.pool.ssl };
      if (opts.listen !== false) {
        const { max: _max, ...poolClient } = opts.pool;
        const client = opts.listenUrl !== undefined ? { connectionString: opts.listenUrl, ssl: opts.pool.ssl } : poolClient;
        listener = new WakeListener(client, db.serverId, (q, parts, at) => db.emit(q.tenant, q.queue, parts, at), opts.onListenError);
        if (inRecovery) listener.startLater();
        else await listener.start();
      }
    } catch (e) {
      await listener?.stop();
      await db.close();
      throw e;
    }
    return new PgBackend(db, listener);
  }

  /** True while the LISTEN connection is up (false on a standby until promoted, or while reconnecting). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  /** NOTIFYs sent, notifications received from other processes, and LISTEN reconnections so far (for `queen_notify_*` metrics). */
  get notifyStats(): { sent: number; received: number; reconnects: number } {
    return { sent: this.db.notifySent, received: this.listener?.received ?? 0, reconnects: this.listener?.reconnects ?? 0 };
  }

  onPartitionsReady(listener: ReadyListener): void {
    this.db.onReady(listener);
  }

  /**
   * Group commit across requests (design B4): appends that arrive while a batch is committing are
   * gathered into the next transaction (at most {@link MAX_GROUP} per batch), ordered by partition
   * key (stable, so one partition keeps arrival order), and written in a fixed number of statements
   * (append-batch.ts: every partition row locked in one statement, in ascending id order, so batches
   * of several processes lock in one order). A batch that fails is retried one append per
   * transaction, so one bad request fails alone.
   */
  append(req: AppendRequest): Promise<AppendResult> {
    return this.appendTogether([req]).then((r) => r[0]!);
  }

  /** Appends `reqs` in one transaction of the group commit (all or none), answered in order. */
  private appendTogether(reqs: AppendRequest[]): Promise<AppendResult[]> {
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.pendingAppends.push({ reqs: reqs.map((r) => ({ ...r, refuseDuplicates: false })), resolve, reject });
      this.pumpAppends();
    });
  }

  private pumpAppends(): void {
    if (this.committing || this.pendingAppends.length === 0) return;
    let n = 0;
    let take = 0;
    while (take < this.pendingAppends.length && (take === 0 || n + this.pendingAppends[take]!.reqs.length <= MAX_GROUP)) n += this.pendingAppends[take++]!.reqs.length;
    const batch = this.pendingAppends.splice(0, take);
    this.committing = true;
    void this.commitAppends(batch).finally(() => {
      this.committing = false;
      this.pumpAppends();
    });
  }

  private async commitAppends(batch: PendingAppend[]): Promise<void> {
    const keyOf = (r: AppendRequest) => JSON.stringify([r.key.tenant, r.key.queue, r.key.partition]);
    const entries = batch.flatMap((b, bi) => b.reqs.map((req, ri) => ({ bi, ri, req, k: keyOf(req) })));
    const ordered = entries.map((e, i) => ({ e, i })).sort((x, y) => (x.e.k < y.e.k ? -1 : x.e.k > y.e.k ? 1 : x.i - y.i)).map((x) => x.e);
    this.groupStats.batches++;
    this.groupStats.appends += entries.length;
    try {
      // Consecutive appends to one partition with one dedup window run as one append (one lock, one
      // INSERT); each gets its own items' outcomes back and the head after its own last item.
      const runs: (typeof ordered)[] = [];
      for (const p of ordered) {
        const last = runs[runs.length - 1]?.[0];
        if (last && last.k === p.k && last.req.dedupWindowMs === p.req.dedupWindowMs) runs[runs.length - 1]!.push(p);
        else runs.push([p]);
      }
      const answers = batch.map((b) => new Array<AppendResult>(b.reqs.length));
      await this.db.tx(async (t) => {
        const results = await appendBatch(t, runs.map((run) => ({ ...run[0]!.req, items: run.flatMap((p) => p.req.items), now: Math.max(...run.map((p) => p.req.now)) })));
        for (const [ri, run] of runs.entries()) {
          const merged = results[ri]!;
          let k = 0;
          for (const p of run) {
            const outcomes = merged.outcomes.slice(k, k + p.req.items.length);
            k += p.req.items.length;
            const own = outcomes.filter((o) => o.status === 'queued').map((o) => o.offset);
            answers[p.bi]![p.ri] = { partitionId: merged.partitionId, outcomes, headOffset: own.length > 0 ? Math.max(...own) + 1 : merged.headOffset };
          }
        }
      });
      batch.forEach((b, i) => b.resolve(answers[i]!));
    } catch (e) {
      // A COMMIT that failed may have committed: every request of the batch gets the error, none is
      // appended again (that would store its messages twice, behind a success).
      if (batch.length === 1 || commitOutcomeUnknown(e)) {
        for (const b of batch) b.reject(e);
        return;
      }
      // One failing request fails alone: each group again in a transaction of its own.
      for (const b of batch) {
        await this.db.tx(async (t) => {
          const out: AppendResult[] = [];
          for (const req of b.reqs) out.push(await appendIn(t, req, 0));
          return out;
        }).then((r) => b.resolve(r), (err: unknown) => b.reject(err));
      }
    }
  }

  /** The common claim takes the hot path (hot-path.ts); the rest, and what it leaves, the general one. */
  async claim(req: ClaimRequest): Promise<ClaimedBatch[]> {
    const key = JSON.stringify([req.queue.tenant, req.queue.queue, req.group]);
    const fast = await this.positions.during(key, () => claimFast(this.db, req, this.positions, async (queueId, now) => {
      await this.db.named({ name: 'queen_empty_scan', text: EMPTY_SCAN_SQL, values: [queueId, req.queue.queue, req.group, now] });
    }));
    if (fast) {
      this.hotStats.claimFast++;
      return fast;
    }
    this.hotStats.claimGeneral++;
    return this.db.tx((t) => claimIn(t, req));
  }

  async commitCursor(req: CursorCommit): Promise<CommitResult> {
    const fast = await commitFast(this.db, req);
    this.hotStats[fast ? 'commitFast' : 'commitGeneral']++;
    if (fast) return fast;
    try {
      return await this.db.tx((t) => commitIn(t, req, 0));
    } catch (e) {
      if (e instanceof UnitRefused) return { applied: false, cursor: await this.readCursor(req.key) };
      throw e;
    }
  }

  /** On the database clock, `untilMs` keeps its distance from the caller's `now`. */
  async extendLease(leaseId: string, untilMs: number, now: number, tenant: string): Promise<number[]> {
    const rows = await this.db.tx((t) => q(t, `
      UPDATE queen.consumers c SET lease_expires_at_ms = GREATEST(c.lease_expires_at_ms, $2)
        FROM queen.partitions p JOIN queen.queues qu ON qu.id = p.queue_id
       WHERE c.lease_id = $1 AND c.lease_expires_at_ms > $3 AND p.id = c.partition_id AND qu.tenant_id = $4
       RETURNING c.lease_expires_at_ms`, [leaseId, untilMs - now + clockOf(t, now), clockOf(t, now), tenant]));
    return rows.map((r) => r.lease_expires_at_ms as number).sort((a, b) => a - b);
  }

  releaseLease(leaseId: string, now: number, takeBackAttempt = false): Promise<number> {
    return this.db.tx(async (t) => {
      if (takeBackAttempt) {
        // The claim is handed back as never delivered: its delivery of [from, delivered_up_to) is
        // taken back from the counts (src/storage/attempts.ts), on the rows locked here.
        const held = await q(t, `SELECT c.*, GREATEST(c.next_offset, p.first_offset) AS lo FROM queen.consumers c JOIN queen.partitions p ON p.id = c.partition_id
                                  WHERE c.lease_id = $1 FOR UPDATE OF c`, [leaseId]);
        for (const r of held) {
          if (r.delivered_up_to === null) continue;
          const counts = countsOf(r);
          takeBackDelivery(counts, r.lo as number, r.delivered_up_to as number);
          await exec(t, `UPDATE queen.consumers SET delivery_count = $3, attempt_split = $4, delivery_count_from_split = $5, delivered_max = $6
                          WHERE partition_id = $1 AND consumer_group = $2`,
          [r.partition_id, r.consumer_group, counts.deliveryCount, counts.attemptSplit, counts.deliveryCountFromSplit, counts.deliveredMax]);
        }
      }
      const rows = await q(t, `
        WITH r AS (UPDATE queen.consumers SET lease_id = NULL, lease_expires_at_ms = NULL
                    WHERE lease_id = $1 RETURNING partition_id, next_offset)
        SELECT q.tenant_id, q.name AS queue, p.id, p.name AS partition, p.next_offset AS head, p.first_offset, r.next_offset
          FROM r JOIN queen.partitions p ON p.id = r.partition_id JOIN queen.queues q ON q.id = p.queue_id`, [leaseId]);
      for (const r of rows) {
        if (Math.max(r.next_offset as number, r.first_offset as number) < (r.head as number)) {
          await touchPartition(t, r.id as string, clockOf(t, now));
          t.hints.push({ tenant: r.tenant_id as string, queue: r.queue as string, partitions: [r.partition as string], visibleAt: null });
        }
      }
      return rows.length;
    });
  }

  async unit(ops: UnitOp[]): Promise<UnitResult> {
    if (ops.length > 0 && ops.every((o) => o.op === 'append' && o.request.refuseDuplicates !== true)) {
      // A plain push: its appends join the group commit, still all in one transaction.
      return { committed: true, results: await this.appendTogether(ops.map((o) => (o as Extract<UnitOp, { op: 'append' }>).request)) };
    }
    if (ops.length === 1 && ops[0]!.op === 'commit') {
      // One cursor move (the common ack): one statement when it holds, else the general unit below.
      const fast = await commitFast(this.db, ops[0]!.request);
      this.hotStats[fast ? 'commitFast' : 'commitGeneral']++;
      if (fast) return { committed: true, results: [fast] };
    }
    try {
      const results = await this.db.tx(async (t) => {
        const out: UnitOpResult[] = [];
        for (const [i, o] of ops.entries()) {
          if (o.op === 'append') out.push(await appendIn(t, o.request, i));
          else if (o.op === 'commit') out.push(await commitIn(t, o.request, i));
          else out.push(await applyRider(t, o, i));
        }
        return out;
      });
      return { committed: true, results };
    } catch (e) {
      if (e instanceof UnitRefused) return e.result();
      throw e;
    }
  }

  async readCursor(key: CursorKey): Promise<CursorView | undefined> {
    const r = await this.db.rows(`
      SELECT c.* FROM queen.consumers c JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
       WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3 AND c.consumer_group = $4`, [key.tenant, key.queue, key.partition, key.group]);
    return r[0] ? cursorView(r[0]) : undefined;
  }

  async readPartition(key: PartitionKey): Promise<PartitionView | undefined> {
    const r = (await this.db.rows(`
      SELECT p.id, p.next_offset, p.first_offset, p.last_message_at_ms FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
       WHERE q.tenant_id = $1 AND q.name = $2 AND p.name = $3`, [key.tenant, key.queue, key.partition]))[0];
    return r ? {
      partitionId: r.id as string, headOffset: r.next_offset as number, firstOffset: r.first_offset as number,
      lastMessageAt: (r.last_message_at_ms as number | null) ?? null,
    } : undefined;
  }

  readPopTargets(tenant: string, group: string, selector: PopSelector): Promise<PopTarget[]> {
    return readPopTargets(this.db, tenant, group, selector);
  }

  readAckTargets(lookups: AckLookup[]): Promise<(AckTarget | undefined)[]> {
    return readAckTargets(this.db, lookups);
  }

  /** On the database clock, `now` is the transaction's. */
  leaseHeld(leaseId: string, now: number): Promise<boolean> {
    return leaseHeld(this.db, leaseId, now);
  }

  /** Stops listening and closes the pool. */
  /** The offset-addressed log reads (src/storage/log-read.ts) on this backend's pool; payloads decoded with `codec`. */
  logReads(codec: PayloadCodec): LogReadStore {
    return new PgLogReads(this.db, codec);
  }

  /** The generation of the named statements' plans (db.ts `PgDb.planGeneration`): moves when a table they read doubled in size. */
  get planGeneration(): number {
    return this.db.planGeneration;
  }

  /** Connections checked out of the pool right now (operations in flight). */
  get busyConnections(): number {
    return this.db.pool.totalCount - this.db.pool.idleCount;
  }

  async close(): Promise<void> {
    while (this.committing || this.pendingAppends.length > 0) await new Promise((r) => setTimeout(r, 5));
    await this.listener?.stop();
    await this.db.close();
  }
}
