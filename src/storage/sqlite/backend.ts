/**
 * The operation contract (../contract.ts) on SQLite: each operation is one unit of the store's
 * group commit, decided in SQL the way the PostgreSQL backend decides it (docs/storage.md#operation-contract):
 * offsets from the partition's head under the writer lock, the dedup probe on
 * `(partition, transaction_id)`, a claim that takes only free leases, visibility predicates on
 * `created_at`. Wake-ups leave through {@link SqliteBackend.onPartitionsReady} after the commit.
 */
import type { Database as Db } from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import type {
  AppendRequest, AppendResult, BackendCapabilities, ClaimRequest, ClaimedBatch, CommitResult, CursorCommit, CursorKey,
  CursorView, PartitionKey, PartitionView, QueueBackend, QueueKey, ReadyListener, UnitOp, UnitOpResult, UnitResult,
  KvSubStore, LockSubStore, TimerSubStore, TraceSubStore, DlqSubStore, AdminSubStore, TraceEvent, QueueConfig,
} from '../contract.js';
import { DEFAULT_TENANT } from '../contract.js';
import { applyOptions, QUEUE_DEFAULTS } from '../../model/options.js';
import type { KvRow, KvStore } from '../kv.js';
import { toMessage, type Row } from './rows.js';
import type { SqliteStore } from './store.js';
import { UnitRefused } from './refused.js';

type Ready = { queue: QueueKey; partitions: string[]; visibleAt: number | null };

/** KV/timer namespaces of a non-default tenant carry the tenant as a prefix (the default tenant's rows stay as they are). */
function scoped(tenant: string, name: string): string {
  return tenant === DEFAULT_TENANT ? name : `${tenant}\u0000${name}`;
}

function cursorView(r: Row): CursorView {
  return {
    committedOffset: r.next_offset as number, leaseId: (r.lease_id as string | null) ?? null,
    leaseExpiresAt: (r.lease_expires_at as number | null) ?? null, deliveredUpTo: (r.lease_end_offset as number | null) ?? null,
    retryCount: r.retry_count as number, deliveryCount: r.delivery_count as number,
  };
}

/** SQLite implementation of {@link QueueBackend}, over a {@link SqliteStore}'s connection and group commit. */
export class SqliteBackend implements QueueBackend {
  readonly capabilities: BackendCapabilities = { listenNotify: false, singleWriter: true };
  private readonly listeners: ReadyListener[] = [];

  constructor(private readonly store: SqliteStore) {}

  /** Runs `fn` as one atomic unit; its wake-ups are emitted once it is durable. */
  private async atomic<T>(fn: (db: Db, ready: Ready[]) => T): Promise<T> {
    const ready: Ready[] = [];
    const out = await this.store.runOnDb((db) => fn(db, ready));
    for (const r of ready) for (const l of this.listeners) l(r.queue, r.partitions, r.visibleAt);
    return out;
  }

  onPartitionsReady(listener: ReadyListener): void {
    this.listeners.push(listener);
  }

  private queuePk(db: Db, q: QueueKey, create: number | undefined): number | undefined {
    const r = db.prepare('SELECT pk FROM queues WHERE tenant_id = ? AND name = ?').get(q.tenant, q.queue) as Row | undefined;
    if (r) return r.pk as number;
    if (create === undefined) return undefined;
    return Number(db.prepare('INSERT INTO queues (id, tenant_id, name, namespace, task, options, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(randomUUID(), q.tenant, q.queue, '', '', JSON.stringify(QUEUE_DEFAULTS), create).lastInsertRowid);
  }

  private queueConfig(db: Db, q: QueueKey): QueueConfig | undefined {
    const r = db.prepare('SELECT id, namespace, task, options FROM queues WHERE tenant_id = ? AND name = ?').get(q.tenant, q.queue) as Row | undefined;
    if (!r) return undefined;
    const options = applyOptions({ ...QUEUE_DEFAULTS }, JSON.parse(r.options as string) as Record<string, unknown>);
    return { queueId: r.id as string, namespace: r.namespace as string, task: r.task as string, options };
  }

  private partitionRow(db: Db, k: PartitionKey): Row | undefined {
    return db.prepare(`SELECT p.* FROM partitions p JOIN queues q ON q.pk = p.queue_pk
                       WHERE q.tenant_id = ? AND q.name = ? AND p.name = ?`).get(k.tenant, k.queue, k.partition) as Row | undefined;
  }

  private appendOn(db: Db, req: AppendRequest, ready: Ready[], index = 0): AppendResult {
    const queuePk = this.queuePk(db, req.key, req.now)!;
    let p = this.partitionRow(db, req.key);
    if (!p) {
      db.prepare('INSERT INTO partitions (id, queue_pk, name, next_offset, first_offset, last_message_at, created_at) VALUES (?, ?, ?, 0, 0, NULL, ?)')
        .run(randomUUID(), queuePk, req.key.partition, req.now);
      p = this.partitionRow(db, req.key)!;
    }
    const pk = p.pk as number;
    let head = p.next_offset as number;
    let last = (p.last_message_at as number | null) ?? 0;
    const seen = new Map<string, { offset: number; messageId: string }>();
    const probe = db.prepare('SELECT id, offset FROM messages WHERE partition_pk = ? AND transaction_id = ? AND created_at >= ? ORDER BY offset DESC LIMIT 1');
    const insert = db.prepare(`INSERT INTO messages (partition_pk, offset, queue_pk, id, transaction_id, payload, encrypted, trace_id, producer_sub, created_at)
                               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const outcomes = req.items.map((it, k) => {
      if (req.dedupWindowMs > 0) {
        const earlier = seen.get(it.transactionId);
        if (earlier) {
          if (req.refuseDuplicates) throw new UnitRefused(index, k);
          return { status: 'duplicate' as const, ...earlier };
        }
        const hit = probe.get(pk, it.transactionId, req.now - req.dedupWindowMs) as Row | undefined;
        if (hit) {
          if (req.refuseDuplicates) throw new UnitRefused(index, k);
          return { status: 'duplicate' as const, offset: hit.offset as number, messageId: hit.id as string };
        }
      }
      const offset = head++;
      last = Math.max(req.now, last);
      insert.run(pk, offset, queuePk, it.messageId, it.transactionId, it.payload, it.encrypted ? 1 : 0, it.traceId, it.producerSub, last);
      seen.set(it.transactionId, { offset, messageId: it.messageId });
      return { status: 'queued' as const, offset, messageId: it.messageId };
    });
    if (head !== p.next_offset) {
      db.prepare('UPDATE partitions SET next_offset = ?, last_message_at = ? WHERE pk = ?').run(head, last, pk);
      ready.push({ queue: { tenant: req.key.tenant, queue: req.key.queue }, partitions: [req.key.partition], visibleAt: null });
    }
    return { partitionId: p.id as string, outcomes, headOffset: head };
  }

  append(req: AppendRequest): Promise<AppendResult> {
    return this.atomic((db, ready) => this.appendOn(db, { ...req, refuseDuplicates: false }, ready));
  }

  claim(req: ClaimRequest): Promise<ClaimedBatch[]> {
    return this.atomic((db, ready) => {
      const queuePk = this.queuePk(db, req.queue, undefined);
      if (queuePk === undefined) return [];
      // The group's start: its stored subscription, registered from `req.seed` on first contact.
      let sub = db.prepare('SELECT mode, from_time FROM subscriptions WHERE queue_pk = ? AND consumer_group = ?').get(queuePk, req.group) as Row | undefined;
      if (!sub) {
        const fromTime = req.seed.mode === 'from' ? req.seed.fromTime : null;
        const label = req.seed.mode === 'from' ? req.seed.label ?? 'timestamp' : 'all';
        db.prepare(`INSERT INTO subscriptions (queue_pk, consumer_group, mode, from_time, label, created_at, conflation) VALUES (?, ?, ?, ?, ?, ?, ?)`)
          .run(queuePk, req.group, req.seed.mode, fromTime, label, req.now, req.conflation ? 1 : 0);
        sub = { mode: req.seed.mode, from_time: fromTime };
      }
      const seedFrom = sub.mode === 'from' && sub.from_time !== null ? sub.from_time as number : undefined;
      // Candidates: something beyond the cursor (or the subscription starting point), lease free at `now`, oldest activity first.
      const rows = db.prepare(`
        SELECT p.pk, p.id, p.name, p.next_offset, p.first_offset, p.last_message_at,
               c.next_offset AS committed, c.lease_end_offset, c.delivery_count, c.retry_count
          FROM partitions p LEFT JOIN cursors c ON c.partition_pk = p.pk AND c.consumer_group = ?
         WHERE p.queue_pk = ? AND (? IS NULL OR p.name = ?)
           AND p.next_offset > max(p.first_offset, COALESCE(c.next_offset, p.first_offset))
           AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= ? OR c.lease_id IS NULL)
         ORDER BY p.last_message_at, p.pk`).all(req.group, queuePk, req.partition ?? null, req.partition ?? null, req.now) as Row[];
      const out: ClaimedBatch[] = [];
      let budget = req.batch;
      const later: string[] = [];
      let visibleAt: number | null = null;
      const upsert = db.prepare(`INSERT INTO cursors (partition_pk, consumer_group, next_offset, lease_id, lease_expires_at, lease_end_offset, retry_count, delivery_count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partition_pk, consumer_group) DO UPDATE SET next_offset = excluded.next_offset,
        lease_id = excluded.lease_id, lease_expires_at = excluded.lease_expires_at, lease_end_offset = excluded.lease_end_offset,
        retry_count = excluded.retry_count, delivery_count = excluded.delivery_count`);
      for (const r of rows) {
        if (budget <= 0 || out.length >= req.maxPartitions) break;
        const pk = r.pk as number;
        const head = r.next_offset as number;
        let from = r.committed as number | null;
        if (from === null) {
          from = seedFrom === undefined ? r.first_offset as number
            : ((db.prepare('SELECT min(offset) AS o FROM messages WHERE partition_pk = ? AND created_at > ?').get(pk, seedFrom) as Row).o as number | null) ?? head;
        }
        from = Math.max(from, r.first_offset as number);
        if (from >= head) continue;
        const lastAt = r.last_message_at as number | null;
        if (req.windowMs > 0 && lastAt !== null && lastAt + req.windowMs > req.now) {
          later.push(r.name as string);
          visibleAt = Math.min(visibleAt ?? Infinity, lastAt + req.windowMs);
          continue;
        }
        let msgs = (req.conflation
          ? db.prepare('SELECT * FROM messages WHERE partition_pk = ? AND offset = ?').all(pk, head - 1)
          : db.prepare('SELECT * FROM messages WHERE partition_pk = ? AND offset >= ? ORDER BY offset LIMIT ?').all(pk, from, budget)) as Row[];
        if (req.delayMs > 0) {
          const cut = msgs.findIndex((m) => (m.created_at as number) + req.delayMs > req.now);
          if (cut === 0) {
            later.push(r.name as string);
            visibleAt = Math.min(visibleAt ?? Infinity, (msgs[0]!.created_at as number) + req.delayMs);
            continue;
          }
          if (cut > 0) msgs = msgs.slice(0, cut);
        }
        if (msgs.length === 0) continue;
        const first = msgs[0]!.offset as number;
        const end = (msgs[msgs.length - 1]!.offset as number) + 1;
        const delivered = r.lease_end_offset as number | null;
        const deliveryCount = delivered !== null && first < delivered ? ((r.delivery_count as number | null) ?? 0) + 1 : 1;
        const retry = (r.retry_count as number | null) ?? 0;
        if (req.leaseId === null) upsert.run(pk, req.group, end, null, null, end, 0, deliveryCount);
        else upsert.run(pk, req.group, from, req.leaseId, req.now + req.leaseMs, end, retry, deliveryCount);
        out.push({ partition: r.name as string, partitionId: r.id as string, leaseId: req.leaseId, deliveryAttempt: deliveryCount, messages: msgs.map(toMessage) });
        budget -= msgs.length;
      }
      if (later.length > 0) ready.push({ queue: req.queue, partitions: later, visibleAt });
      return out;
    });
  }

  private commitOn(db: Db, c: CursorCommit, ready: Ready[], index: number): CommitResult {
    const p = this.partitionRow(db, c.key);
    const row = p ? db.prepare('SELECT * FROM cursors WHERE partition_pk = ? AND consumer_group = ?').get(p.pk, c.key.group) as Row | undefined : undefined;
    if (c.leaseId !== null && (!row || row.lease_id !== c.leaseId || (row.lease_expires_at as number) <= c.now)) {
      throw new UnitRefused(index);
    }
    if (c.ifCommittedOffset !== undefined && ((row?.next_offset as number | undefined) ?? (p?.first_offset as number | undefined) ?? 0) !== c.ifCommittedOffset) {
      throw new UnitRefused(index);
    }
    if (!p) return { applied: false, cursor: undefined };
    const pk = p.pk as number;
    if (c.deadLetter) {
      const m = db.prepare('SELECT * FROM messages WHERE partition_pk = ? AND offset = ?').get(pk, c.deadLetter.offset) as Row | undefined;
      if (m) {
        db.prepare(`INSERT INTO dlq (id, queue_pk, queue, partition_pk, partition, partition_id, consumer_group, message_id, transaction_id,
                      offset, payload, encrypted, trace_id, producer_sub, error, retry_count, created_at, failed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
          .run(c.deadLetter.id, p.queue_pk, c.key.queue, pk, c.key.partition, p.id, c.key.group, m.id, m.transaction_id, m.offset, m.payload,
            m.encrypted, m.trace_id, m.producer_sub, c.deadLetter.error, c.deadLetter.retryCount, m.created_at, c.now);
      }
    }
    const keep = c.release ? { id: null, at: null } : { id: (row?.lease_id as string | null) ?? null, at: (row?.lease_expires_at as number | null) ?? null };
    db.prepare(`INSERT INTO cursors (partition_pk, consumer_group, next_offset, lease_id, lease_expires_at, lease_end_offset, retry_count, delivery_count)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partition_pk, consumer_group) DO UPDATE SET next_offset = excluded.next_offset,
      lease_id = excluded.lease_id, lease_expires_at = excluded.lease_expires_at, retry_count = excluded.retry_count`)
      .run(pk, c.key.group, c.committedOffset, keep.id, keep.at, (row?.lease_end_offset as number | null) ?? null, c.retryCount, (row?.delivery_count as number | null) ?? 0);
    if (keep.id === null && c.committedOffset < (p.next_offset as number)) {
      ready.push({ queue: { tenant: c.key.tenant, queue: c.key.queue }, partitions: [c.key.partition], visibleAt: null });
    }
    const after = db.prepare('SELECT * FROM cursors WHERE partition_pk = ? AND consumer_group = ?').get(pk, c.key.group) as Row;
    return { applied: true, cursor: cursorView(after) };
  }

  async commitCursor(req: CursorCommit): Promise<CommitResult> {
    try {
      return await this.atomic((db, ready) => this.commitOn(db, req, ready, 0));
    } catch (e) {
      if (e instanceof UnitRefused) return { applied: false, cursor: await this.readCursor(req.key) };
      throw e;
    }
  }

  extendLease(leaseId: string, untilMs: number, now: number): Promise<number[]> {
    return this.atomic((db) => {
      db.prepare('UPDATE cursors SET lease_expires_at = max(lease_expires_at, ?) WHERE lease_id = ? AND lease_expires_at > ?').run(untilMs, leaseId, now);
      return (db.prepare('SELECT lease_expires_at AS at FROM cursors WHERE lease_id = ? AND lease_expires_at > ? ORDER BY at').all(leaseId, now) as Row[])
        .map((r) => r.at as number);
    });
  }

  releaseLease(leaseId: string, _now: number): Promise<number> {
    return this.atomic((db, ready) => {
      const held = db.prepare(`SELECT q.tenant_id, q.name AS queue, p.name AS partition, p.next_offset AS head, c.next_offset AS committed
                                 FROM cursors c JOIN partitions p ON p.pk = c.partition_pk JOIN queues q ON q.pk = p.queue_pk
                                WHERE c.lease_id = ?`).all(leaseId) as Row[];
      db.prepare('UPDATE cursors SET lease_id = NULL, lease_expires_at = NULL WHERE lease_id = ?').run(leaseId);
      for (const r of held) {
        if ((r.committed as number) < (r.head as number)) {
          ready.push({ queue: { tenant: r.tenant_id as string, queue: r.queue as string }, partitions: [r.partition as string], visibleAt: null });
        }
      }
      return held.length;
    });
  }

  async unit(ops: UnitOp[]): Promise<UnitResult> {
    try {
      const results = await this.atomic((db, ready) => ops.map((o, i): UnitOpResult => {
        switch (o.op) {
          case 'append': return this.appendOn(db, o.request, ready, i);
          case 'commit': return this.commitOn(db, o.request, ready, i);
          default: return this.applyRider(o, i);
        }
      }));
      return { committed: true, results };
    } catch (e) {
      if (e instanceof UnitRefused) return e.result();
      throw e;
    }
  }

  /**
   * Applies a rider or precondition op of a unit (everything but appends and commits)
   * synchronously, inside the store unit that is running now (another implementation's `unit`
   * composes its own ops with these).
   * @param index the op's position in its unit (named by a refusal)
   * @throws UnitRefused when a precondition or the KV fencing rule fails; Error for an append or commit
   */
  applyRider(o: UnitOp, index: number): { done: boolean } {
    const db = this.db();
    switch (o.op) {
      case 'kvPut': {
        const ns = scoped(o.tenant, o.row.ns);
        const cur = db.prepare('SELECT version FROM kv WHERE ns = ? AND key = ?').get(ns, o.row.key) as Row | undefined;
        if (o.row.version <= Math.max((cur?.version as number | undefined) ?? 0, this.store.kv.floor())) throw new UnitRefused(index);
        putKv(db, { ...o.row, ns });
        return { done: true };
      }
      case 'kvDelete': return { done: deleteKv(db, scoped(o.tenant, o.ns), o.key) };
      case 'kvExpect': {
        const cur = db.prepare('SELECT version FROM kv WHERE ns = ? AND key = ?').get(scoped(o.tenant, o.ns), o.key) as Row | undefined;
        if (((cur?.version as number | undefined) ?? null) !== o.version) throw new UnitRefused(index);
        return { done: true };
      }
      case 'timerPut': putTimerRow(db, { ...o.row, queue: scoped(o.tenant, o.row.queue) }); return { done: true };
      case 'timerDelete': return { done: db.prepare('DELETE FROM timers WHERE queue = ? AND timer_key = ?').run(scoped(o.tenant, o.queue), o.timerKey).changes > 0 };
      case 'timerExpect': {
        const t = this.store.timers.getTimer(scoped(o.tenant, o.queue), o.timerKey);
        const e = o.expect;
        const same = t === undefined ? e === null
          : e !== null && t.deliverAt === e.deliverAt && t.messageId === e.messageId && t.attempts === e.attempts && t.updatedAt === e.updatedAt;
        if (!same) throw new UnitRefused(index);
        return { done: true };
      }
      case 'timerFailed': {
        const q = scoped(o.tenant, o.queue);
        if (!this.store.timers.getTimer(q, o.timerKey)) return { done: false };
        this.store.timers.timerFailed(q, o.timerKey, o.error, o.retryAt, o.now);
        return { done: true };
      }
      case 'leaseHeld': {
        const held = db.prepare('SELECT 1 FROM cursors WHERE lease_id = ? AND lease_expires_at > ? LIMIT 1').get(o.leaseId, o.now);
        if (!held) throw new UnitRefused(index);
        return { done: true };
      }
      case 'dlqDelete':
        if (!this.deleteDlqNow(o.id)) throw new UnitRefused(index);
        return { done: true };
      default: throw new Error(`${o.op} is not a rider`);
    }
  }

  readCursor(key: CursorKey): Promise<CursorView | undefined> {
    const db = this.db();
    const p = this.partitionRow(db, key);
    const r = p ? db.prepare('SELECT * FROM cursors WHERE partition_pk = ? AND consumer_group = ?').get(p.pk, key.group) as Row | undefined : undefined;
    return Promise.resolve(r ? cursorView(r) : undefined);
  }

  readPartition(key: PartitionKey): Promise<PartitionView | undefined> {
    const p = this.partitionRow(this.db(), key);
    return Promise.resolve(p ? {
      partitionId: p.id as string, headOffset: p.next_offset as number, firstOffset: p.first_offset as number,
      lastMessageAt: (p.last_message_at as number | null) ?? null,
    } : undefined);
  }

  private db(): Db {
    return this.store.database;
  }

  readonly kv: KvSubStore = {
    get: (tenant, ns, key) => Promise.resolve(this.store.kv.getRow(scoped(tenant, ns), key)),
    put: (tenant, row) => this.atomic((db) => putKv(db, { ...row, ns: scoped(tenant, row.ns) })),
    delete: (tenant, ns, key) => this.atomic((db) => deleteKv(db, scoped(tenant, ns), key)),
    scan: (tenant, q) => Promise.resolve(this.store.kv.scan({ ...q, ns: scoped(tenant, q.ns) })),
    pruneExpired: (now, limit) => this.atomic(() => this.pruneKvNow(now, limit)),
    floor: () => Promise.resolve(this.store.kv.floor()),
    nextExpiry: () => Promise.resolve(this.store.kv.nextExpiry()),
    namespaces: (tenant, after, limit) => Promise.resolve(tenantNamespaces(this.store.kv, tenant, after, limit)),
  };

  /** Removes up to `limit` KV rows expired at `now` inside the running store unit; returns how many. */
  pruneKvNow(now: number, limit: number): number {
    return this.store.kv.pruneExpired(now, limit);
  }

  readonly locks: LockSubStore = {
    tryAcquire: (tenant, name, slot, owner, untilMs, now) => this.atomic((db) => {
      const ns = scoped(tenant, 'queen-locks');
      const key = `${name}#${slot}`;
      const row = db.prepare('SELECT version, expires_at FROM kv WHERE ns = ? AND key = ?').get(ns, key) as Row | undefined;
      if (row && (row.expires_at === null || (row.expires_at as number) > now)) return undefined;
      const floor = (db.prepare('SELECT floor FROM kv_meta WHERE id = 0').get() as Row).floor as number;
      const token = Math.max(floor, (row?.version as number | undefined) ?? 0) + 1;
      putKv(db, { ns, key, value: JSON.stringify({ owner, since: now, renewedAt: now }), version: token, expiresAt: untilMs, updatedAt: now });
      return token;
    }),
    release: (tenant, name, slot, token) => this.atomic((db) => {
      const ns = scoped(tenant, 'queen-locks');
      const row = db.prepare('SELECT version FROM kv WHERE ns = ? AND key = ?').get(ns, `${name}#${slot}`) as Row | undefined;
      return row?.version === token ? deleteKv(db, ns, `${name}#${slot}`) : false;
    }),
  };

  readonly timers: TimerSubStore = {
    put: (tenant, row) => this.atomic((db) => putTimerRow(db, { ...row, queue: scoped(tenant, row.queue) })),
    get: (tenant, queue, timerKey) => Promise.resolve(this.store.timers.getTimer(scoped(tenant, queue), timerKey)),
    delete: (tenant, queue, timerKey) => this.atomic((db) =>
      db.prepare('DELETE FROM timers WHERE queue = ? AND timer_key = ?').run(scoped(tenant, queue), timerKey).changes > 0),
    due: (now, limit) => Promise.resolve(this.store.timers.dueTimers(now, limit)),
    nextDueAt: () => Promise.resolve(this.store.timers.nextDueAt()),
    list: (tenant, queue, after, limit) => Promise.resolve(this.store.timers.listTimers(scoped(tenant, queue), after, limit)
      .map((t) => ({ ...t, queue }))),
  };

  /** Records a trace event inside the running store unit; returns its id, undefined when the queue does not exist. */
  addTraceNow(queue: QueueKey, e: TraceEvent): string | undefined {
    const queuePk = this.queuePk(this.db(), queue, undefined);
    if (queuePk === undefined) return undefined;
    const id = randomUUID();
    this.store.ops.insertTrace({ ...e, id, queuePk, queue: queue.queue });
    return id;
  }

  /** Deletes a message address's dead letters inside the running store unit. */
  deleteDlqByAddressNow(partitionId: string, transactionId: string): { queue: string | undefined; deleted: number } {
    const row = this.store.ops.findDlqByAddress(partitionId, transactionId);
    if (!row) return { queue: undefined, deleted: 0 };
    return { queue: row.queue, deleted: this.store.ops.deleteDlqByAddress(partitionId, transactionId) };
  }

  /** Purges up to `limit` of a queue's dead letters inside the running store unit. */
  purgeDlqNow(queue: QueueKey, group: string | undefined, limit: number): number {
    const pk = this.queuePk(this.db(), queue, undefined);
    return pk === undefined ? 0 : this.store.ops.purgeDlq(pk, group, limit);
  }

  /** Deletes one dead letter inside the running store unit. */
  deleteDlqNow(id: string): boolean {
    return this.db().prepare('DELETE FROM dlq WHERE id = ?').run(id).changes > 0;
  }

  readonly traces: TraceSubStore = {
    add: (queue: QueueKey, e: TraceEvent) => this.atomic(() => this.addTraceNow(queue, e)),
    byMessage: (partitionId, transactionId, limit) => Promise.resolve(this.store.ops.tracesByMessage(partitionId, transactionId, limit)),
    byName: (name, limit, offset) => Promise.resolve({ rows: this.store.ops.tracesByName(name, limit, offset), total: this.store.ops.countTracesByName(name) }),
  };

  readonly dlq: DlqSubStore = {
    list: (f) => {
      const { limit: _l, offset: _o, ...match } = f;
      return Promise.resolve({ rows: this.store.listDlq(f), total: this.store.countDlqMatching(match) });
    },
    get: (id) => Promise.resolve(this.store.getDlq(id)),
    delete: (id) => this.atomic(() => this.deleteDlqNow(id)),
    findByAddress: (partitionId, transactionId) => Promise.resolve(this.store.ops.findDlqByAddress(partitionId, transactionId)),
    deleteByAddress: (partitionId, transactionId) => this.atomic(() => this.deleteDlqByAddressNow(partitionId, transactionId)),
    purge: (queue, group, limit) => this.atomic(() => this.purgeDlqNow(queue, group, limit)),
  };

  readonly admin: AdminSubStore = {
    readQueue: (queue) => Promise.resolve(this.queueConfig(this.db(), queue)),
    configureQueue: (queue, config, now) => this.atomic((db) => {
      this.queuePk(db, queue, now);
      db.prepare('UPDATE queues SET namespace = ?, task = ?, options = ? WHERE tenant_id = ? AND name = ?')
        .run(config.namespace, config.task, JSON.stringify(config.options), queue.tenant, queue.queue);
      return this.queueConfig(db, queue)!;
    }),
    setSetting: (key, value) => this.atomic((db) => {
      db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
    }),
    deleteGroup: (tenant, group, queue, deleteMetadata) => this.atomic((db, ready) => {
      const queues = db.prepare(`SELECT q.pk, q.name FROM queues q WHERE q.tenant_id = ? AND (? IS NULL OR q.name = ?)
                                   AND (EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_pk = q.pk AND s.consumer_group = ?)
                                     OR EXISTS (SELECT 1 FROM cursors c JOIN partitions p ON p.pk = c.partition_pk WHERE p.queue_pk = q.pk AND c.consumer_group = ?))`)
        .all(tenant, queue ?? null, queue ?? null, group, group) as Row[];
      let cursorsDeleted = 0;
      const partitions: PartitionKey[] = [];
      for (const q of queues) {
        cursorsDeleted += this.store.ops.deleteGroupCursors(q.pk as number, group);
        if (deleteMetadata) db.prepare('DELETE FROM subscriptions WHERE queue_pk = ? AND consumer_group = ?').run(q.pk, group);
        const names = (db.prepare('SELECT name FROM partitions WHERE queue_pk = ? ORDER BY name').all(q.pk) as Row[]).map((r) => r.name as string);
        for (const partition of names) partitions.push({ tenant, queue: q.name as string, partition });
        if (!deleteMetadata && names.length > 0) ready.push({ queue: { tenant, queue: q.name as string }, partitions: names, visibleAt: null });
      }
      return { cursorsDeleted, partitions };
    }),
    seekGroup: (queue, group, partition, target, now) => this.atomic((db, ready) => {
      const queuePk = this.queuePk(db, queue, undefined);
      if (queuePk === undefined) return undefined;
      const parts = db.prepare('SELECT * FROM partitions WHERE queue_pk = ? AND (? IS NULL OR name = ?) ORDER BY name')
        .all(queuePk, partition ?? null, partition ?? null) as Row[];
      if (partition !== undefined && parts.length === 0) return undefined;
      const sub = 'toEnd' in target ? { mode: 'from', from: now - 1, label: 'new' } : { mode: 'from', from: target.timestamp - 1, label: 'timestamp' };
      db.prepare(`INSERT OR IGNORE INTO subscriptions (queue_pk, consumer_group, mode, from_time, label, created_at, conflation)
                  VALUES (?, ?, ?, ?, ?, ?, 0)`).run(queuePk, group, sub.mode, sub.from, sub.label, now);
      const out = parts.map((p) => {
        const head = p.next_offset as number;
        const to = 'toEnd' in target ? head
          : ((db.prepare('SELECT min(offset) AS o FROM messages WHERE partition_pk = ? AND offset >= ? AND created_at >= ?')
            .get(p.pk, p.first_offset, target.timestamp) as Row).o as number | null) ?? head;
        db.prepare(`INSERT INTO cursors (partition_pk, consumer_group, next_offset, lease_id, lease_expires_at, lease_end_offset, retry_count, delivery_count)
          VALUES (?, ?, ?, NULL, NULL, NULL, 0, 0) ON CONFLICT (partition_pk, consumer_group) DO UPDATE SET next_offset = excluded.next_offset,
          lease_id = NULL, lease_expires_at = NULL, lease_end_offset = NULL, retry_count = 0, delivery_count = 0`).run(p.pk, group, to);
        return { partition: p.name as string, committedOffset: to, head };
      });
      const again = out.filter((o) => o.committedOffset < o.head).map((o) => o.partition);
      if (again.length > 0) ready.push({ queue, partitions: again, visibleAt: null });
      return out.map(({ partition: name, committedOffset }) => ({ partition: name, committedOffset }));
    }),
    setSubscriptionFrom: (tenant, group, fromTime) => this.atomic((db) => db.prepare(`
      UPDATE subscriptions SET mode = 'from', from_time = ?, label = 'timestamp'
       WHERE consumer_group = ? AND queue_pk IN (SELECT pk FROM queues WHERE tenant_id = ?)`).run(fromTime, group, tenant).changes),
    prune: (queue, cuts) => this.atomic((db) => {
      const queuePk = this.queuePk(db, queue, undefined);
      if (queuePk === undefined) return [];
      const out: { partition: string; removed: number; firstOffsetBefore: number }[] = [];
      for (const cut of cuts) {
        const p = db.prepare('SELECT pk, next_offset, first_offset FROM partitions WHERE queue_pk = ? AND name = ?').get(queuePk, cut.partition) as Row | undefined;
        if (!p) continue;
        const end = Math.min(cut.end, p.next_offset as number);
        if (end <= (p.first_offset as number)) continue;
        const removed = this.store.ops.deleteMessagesBelow(p.pk as number, end);
        this.store.ops.setFirstOffset(p.pk as number, end);
        out.push({ partition: cut.partition, removed, firstOffsetBefore: p.first_offset as number });
      }
      return out;
    }),
    setting: (key) => Promise.resolve((this.db().prepare('SELECT value FROM settings WHERE key = ?').get(key) as Row | undefined)?.value as string | undefined),
    queues: (tenant) => Promise.resolve((this.db().prepare(`
      SELECT q.name AS queue, (SELECT count(*) FROM partitions p WHERE p.queue_pk = q.pk) AS partitions,
             (SELECT count(*) FROM messages m WHERE m.queue_pk = q.pk) AS messages
        FROM queues q WHERE q.tenant_id = ? ORDER BY q.name`).all(tenant) as Row[])
      .map((r) => ({ queue: r.queue as string, partitions: r.partitions as number, messages: r.messages as number }))),
    cursors: (queue, group) => Promise.resolve((this.db().prepare(`
      SELECT p.name AS partition, c.* FROM cursors c JOIN partitions p ON p.pk = c.partition_pk JOIN queues q ON q.pk = p.queue_pk
       WHERE q.tenant_id = ? AND q.name = ? AND c.consumer_group = ? ORDER BY p.name`).all(queue.tenant, queue.queue, group) as Row[])
      .map((r) => ({ partition: r.partition as string, cursor: cursorView(r) }))),
    deleteQueue: (queue) => this.atomic((db) => {
      const pk = this.queuePk(db, queue, undefined);
      if (pk === undefined) return false;
      this.store.deleteQueueRowsOn(pk);
      return true;
    }),
  };

  close(): Promise<void> {
    return this.store.close();
  }
}

/**
 * A tenant's KV namespaces (the default tenant's are stored as named, the others' carry the tenant
 * prefix, see `scoped`), with the prefix taken off.
 */
function tenantNamespaces(kv: KvStore, tenant: string, after: string, limit: number): { ns: string; keys: number }[] {
  const out: { ns: string; keys: number }[] = [];
  const prefix = tenant === DEFAULT_TENANT ? '' : `${tenant}\u0000`;
  let cur = prefix + after;
  while (out.length < limit) {
    const page = kv.namespaces(cur, limit);
    if (page.length === 0) break;
    for (const n of page) {
      if (!n.ns.startsWith(prefix)) return out;
      const own = n.ns.slice(prefix.length);
      if (tenant === DEFAULT_TENANT && own.includes('\u0000')) continue; // another tenant's
      out.push({ ns: own, keys: n.keys });
      if (out.length >= limit) break;
    }
    cur = page[page.length - 1]!.ns;
  }
  return out;
}

function putKv(db: Db, r: KvRow): void {
  db.prepare(`INSERT INTO kv (ns, key, value, version, expires_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = excluded.version,
              expires_at = excluded.expires_at, updated_at = excluded.updated_at`).run(r.ns, r.key, r.value, r.version, r.expiresAt, r.updatedAt);
}

function deleteKv(db: Db, ns: string, key: string): boolean {
  const row = db.prepare('SELECT version FROM kv WHERE ns = ? AND key = ?').get(ns, key) as Row | undefined;
  if (!row) return false;
  db.prepare('DELETE FROM kv WHERE ns = ? AND key = ?').run(ns, key);
  db.prepare('UPDATE kv_meta SET floor = max(floor, ?) WHERE id = 0').run(row.version);
  return true;
}

function putTimerRow(db: Db, t: import('../timers.js').TimerRow): void {
  db.prepare(`INSERT OR REPLACE INTO timers (queue, timer_key, partition, deliver_at, txn, message_id, payload, encrypted, producer_sub, attempts, last_error, created_at, updated_at)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .run(t.queue, t.timerKey, t.partition, t.deliverAt, t.txn, t.messageId, t.payload, t.encrypted ? 1 : 0, t.producerSub, t.attempts, t.lastError, t.createdAt, t.updatedAt);
}
