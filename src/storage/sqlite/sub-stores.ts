/**
 * The SQL part of the SQLite backend (docs/storage.md#operation-contract): the sub-stores of the
 * operation contract (../contract.ts: KV, locks, timers, traces, dead letters, operator reads),
 * the rider and precondition ops of a unit, and the cursor and partition reads, each on the
 * store's connection and group commit. The message operations (append, claim, cursor commits,
 * leases, admin writes) are the engine's (engine-backend.ts), which composes this part into the
 * one {@link import('../contract.js').QueueBackend} that serves every tenant.
 */
import type { Database as Db } from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import type {
  CursorKey, CursorView, PartitionKey, PartitionView, QueueKey, UnitOp,
  KvSubStore, LockSubStore, TimerSubStore, TraceSubStore, DlqSubStore, AdminSubStore, TraceEvent, QueueConfig,
  EphemeralSubStore, EphemeralDeclaration, StreamsSubStore,
} from '../contract.js';
import { DEFAULT_TENANT } from '../contract.js';
import { applyOptions, QUEUE_DEFAULTS } from '../../model/options.js';
import type { KvRow, KvStore } from '../kv.js';
import { prep } from './prepared.js';
import { countsOf, type Row } from './rows.js';
import type { SqliteStore } from './store.js';
import { UnitRefused } from '../refused.js';
import { applyStreamState, sqliteStreamsStore } from './streams.js';
import { SqliteKafkaMeta } from './kafka-meta.js';


/** The operator reads and settings this part serves (the engine adds the admin writes). */
export type SqlAdminReads = Pick<AdminSubStore, 'readQueue' | 'setSetting' | 'setting' | 'queues' | 'cursors' | 'partitionCounts' | 'retainedBytes'>;

/** KV/timer namespaces of a non-default tenant carry the tenant as a prefix (the default tenant's rows stay as they are). */
function scoped(tenant: string, name: string): string {
  return tenant === DEFAULT_TENANT ? name : `${tenant}\u0000${name}`;
}

/** Messages summed per statement by `retainedBytes` before it yields to the event loop. */
const RETAINED_CHUNK = 5_000;

/**
 * The SQL condition selecting a tenant's scoped KV namespaces or timer queues in `column`, with its
 * parameters: a prefix range for a tenant, rows without a NUL for the default tenant.
 */
function tenantRows(column: string, tenant: string): { where: string; params: string[] } {
  if (tenant === DEFAULT_TENANT) return { where: `instr(${column}, char(0)) = 0`, params: [] };
  return { where: `${column} >= ? AND ${column} < ?`, params: [`${tenant}\u0000`, `${tenant}\u0001`] };
}

/** The inverse of {@link scoped}: a stored KV/timer namespace → its tenant and name (names never hold NUL). */
function unscoped(stored: string): { tenant: string; name: string } {
  const at = stored.indexOf('\u0000');
  return at < 0 ? { tenant: DEFAULT_TENANT, name: stored } : { tenant: stored.slice(0, at), name: stored.slice(at + 1) };
}

function cursorView(r: Row): CursorView {
  return {
    committedOffset: r.next_offset as number, leaseId: (r.lease_id as string | null) ?? null,
    leaseExpiresAt: (r.lease_expires_at as number | null) ?? null, deliveredUpTo: (r.lease_end_offset as number | null) ?? null,
    retryCount: r.retry_count as number, ...countsOf(r),
  };
}

/** The SQL sub-stores, riders and reads over a {@link SqliteStore}'s connection and group commit (see the module comment). */
export class SqliteSubStores {
  constructor(private readonly store: SqliteStore) {
    this.kafka = new SqliteKafkaMeta(store);
  }

  /** Runs `fn` as one unit of the store's group commit (resolves once durable). */
  private atomic<T>(fn: (db: Db) => T): Promise<T> {
    return this.store.runOnDb(fn);
  }

  private queuePk(db: Db, q: QueueKey): number | undefined {
    const r = prep(db, 'SELECT pk FROM queues WHERE tenant_id = ? AND name = ?').get(q.tenant, q.queue) as Row | undefined;
    return r ? r.pk as number : undefined;
  }

  private queueConfig(db: Db, q: QueueKey): QueueConfig | undefined {
    const r = prep(db, 'SELECT id, namespace, task, options FROM queues WHERE tenant_id = ? AND name = ?').get(q.tenant, q.queue) as Row | undefined;
    if (!r) return undefined;
    const options = applyOptions({ ...QUEUE_DEFAULTS }, JSON.parse(r.options as string) as Record<string, unknown>);
    return { queueId: r.id as string, namespace: r.namespace as string, task: r.task as string, options };
  }

  private partitionRow(db: Db, k: PartitionKey): Row | undefined {
    return prep(db, `SELECT p.* FROM partitions p JOIN queues q ON q.pk = p.queue_pk
                       WHERE q.tenant_id = ? AND q.name = ? AND p.name = ?`).get(k.tenant, k.queue, k.partition) as Row | undefined;
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
        const cur = prep(db, 'SELECT version FROM kv WHERE ns = ? AND key = ?').get(ns, o.row.key) as Row | undefined;
        if (o.row.version <= Math.max((cur?.version as number | undefined) ?? 0, this.store.kv.floor())) throw new UnitRefused(index);
        putKv(db, { ...o.row, ns });
        return { done: true };
      }
      case 'kvDelete': return { done: deleteKv(db, scoped(o.tenant, o.ns), o.key) };
      case 'kvExpect': {
        const cur = prep(db, 'SELECT version FROM kv WHERE ns = ? AND key = ?').get(scoped(o.tenant, o.ns), o.key) as Row | undefined;
        if (((cur?.version as number | undefined) ?? null) !== o.version) throw new UnitRefused(index);
        return { done: true };
      }
      case 'timerPut': putTimerRow(db, { ...o.row, queue: scoped(o.tenant, o.row.queue) }); return { done: true };
      case 'timerDelete': return { done: prep(db, 'DELETE FROM timers WHERE queue = ? AND timer_key = ?').run(scoped(o.tenant, o.queue), o.timerKey).changes > 0 };
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
        const held = prep(db, 'SELECT 1 FROM cursors WHERE lease_id = ? AND lease_expires_at > ? LIMIT 1').get(o.leaseId, o.now);
        if (!held) throw new UnitRefused(index);
        return { done: true };
      }
      case 'dlqDelete':
        if (!this.deleteDlqNow(o.id)) throw new UnitRefused(index);
        return { done: true };
      case 'streamState': return applyStreamState(db, o, index);
      default: throw new Error(`${o.op} is not a rider`);
    }
  }

  readCursor(key: CursorKey): Promise<CursorView | undefined> {
    const db = this.db();
    const p = this.partitionRow(db, key);
    const r = p ? prep(db, 'SELECT * FROM cursors WHERE partition_pk = ? AND consumer_group = ?').get(p.pk, key.group) as Row | undefined : undefined;
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
    purgeTenant: (tenant) => this.atomic((db) => {
      const { where, params } = tenantRows('ns', tenant);
      const removed = prep(db, `DELETE FROM kv WHERE ${where} RETURNING version`).all(...params) as Row[];
      if (removed.length > 0) prep(db, 'UPDATE kv_meta SET floor = max(floor, ?) WHERE id = 0').run(Math.max(...removed.map((r) => r.version as number)));
      return removed.length;
    }),
  };

  /** Removes up to `limit` KV rows expired at `now` inside the running store unit; returns how many. */
  pruneKvNow(now: number, limit: number): number {
    return this.store.kv.pruneExpired(now, limit);
  }

  /** Streaming queries and their state (streams.ts). */
  get streams(): StreamsSubStore {
    return (this.streamsStore ??= sqliteStreamsStore(this.db(), (fn) => this.atomic(fn)));
  }

  private streamsStore: StreamsSubStore | undefined;

  /** The Kafka port's side tables (kafka-meta.ts). */
  readonly kafka: SqliteKafkaMeta;

  readonly ephemeral: EphemeralSubStore = {
    put: (row) => this.atomic((db) => {
      prep(db, `INSERT INTO ephemeral_queues (tenant_id, name, options, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (tenant_id, name) DO UPDATE SET options = excluded.options, updated_at = excluded.updated_at`)
        .run(row.tenant, row.queue, row.options, row.updatedAt);
    }),
    delete: (tenant, queue) => this.atomic((db) => prep(db, 'DELETE FROM ephemeral_queues WHERE tenant_id = ? AND name = ?').run(tenant, queue).changes > 0),
    list: (limitPerTenant) => {
      const rows = prep(this.db(), 'SELECT tenant_id, name, options, updated_at FROM ephemeral_queues ORDER BY tenant_id, name').all() as Row[];
      const out: EphemeralDeclaration[] = [];
      const perTenant = new Map<string, number>();
      for (const r of rows) {
        const t = r.tenant_id as string;
        const n = perTenant.get(t) ?? 0;
        if (n >= limitPerTenant) continue;
        perTenant.set(t, n + 1);
        out.push({ tenant: t, queue: r.name as string, options: r.options as string, updatedAt: r.updated_at as number });
      }
      return Promise.resolve(out);
    },
  };

  readonly locks: LockSubStore = {
    tryAcquire: (tenant, name, slot, owner, untilMs, now) => this.atomic((db) => {
      const ns = scoped(tenant, 'queen-locks');
      const key = `${name}#${slot}`;
      const row = prep(db, 'SELECT version, expires_at FROM kv WHERE ns = ? AND key = ?').get(ns, key) as Row | undefined;
      if (row && (row.expires_at === null || (row.expires_at as number) > now)) return undefined;
      const floor = (prep(db, 'SELECT floor FROM kv_meta WHERE id = 0').get() as Row).floor as number;
      const token = Math.max(floor, (row?.version as number | undefined) ?? 0) + 1;
      putKv(db, { ns, key, value: JSON.stringify({ owner, since: now, renewedAt: now }), version: token, expiresAt: untilMs, updatedAt: now });
      return token;
    }),
    release: (tenant, name, slot, token) => this.atomic((db) => {
      const ns = scoped(tenant, 'queen-locks');
      const row = prep(db, 'SELECT version FROM kv WHERE ns = ? AND key = ?').get(ns, `${name}#${slot}`) as Row | undefined;
      return row?.version === token ? deleteKv(db, ns, `${name}#${slot}`) : false;
    }),
  };

  readonly timers: TimerSubStore = {
    put: (tenant, row) => this.atomic((db) => putTimerRow(db, { ...row, queue: scoped(tenant, row.queue) })),
    get: (tenant, queue, timerKey) => {
      const t = this.store.timers.getTimer(scoped(tenant, queue), timerKey);
      return Promise.resolve(t && { ...t, queue });
    },
    delete: (tenant, queue, timerKey) => this.atomic((db) =>
      prep(db, 'DELETE FROM timers WHERE queue = ? AND timer_key = ?').run(scoped(tenant, queue), timerKey).changes > 0),
    due: (now, limit) => Promise.resolve(this.store.timers.dueTimers(now, limit).map((k) => {
      const { tenant, name } = unscoped(k.queue);
      return { tenant, queue: name, timerKey: k.timerKey };
    })),
    nextDueAt: () => Promise.resolve(this.store.timers.nextDueAt()),
    list: (tenant, queue, after, limit) => Promise.resolve(this.store.timers.listTimers(scoped(tenant, queue), after, limit)
      .map((t) => ({ ...t, queue }))),
    purgeTenant: (tenant) => this.atomic((db) => {
      const { where, params } = tenantRows('queue', tenant);
      return prep(db, `DELETE FROM timers WHERE ${where}`).run(...params).changes;
    }),
  };

  /** Records a trace event inside the running store unit; returns its id, undefined when the queue does not exist. */
  addTraceNow(queue: QueueKey, e: TraceEvent): string | undefined {
    const queuePk = this.queuePk(this.db(), queue);
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
    const pk = this.queuePk(this.db(), queue);
    return pk === undefined ? 0 : this.store.ops.purgeDlq(pk, group, limit);
  }

  /** Deletes one dead letter inside the running store unit. */
  deleteDlqNow(id: string): boolean {
    return prep(this.db(), 'DELETE FROM dlq WHERE id = ?').run(id).changes > 0;
  }

  readonly traces: TraceSubStore = {
    add: (queue: QueueKey, e: TraceEvent) => this.atomic(() => this.addTraceNow(queue, e)),
    byMessage: (partitionId, transactionId, limit) => Promise.resolve(this.store.ops.tracesByMessage(partitionId, transactionId, limit)),
    byName: (tenant, name, limit, offset) =>
      Promise.resolve({ rows: this.store.ops.tracesByName(tenant, name, limit, offset), total: this.store.ops.countTracesByName(tenant, name) }),
    names: (tenant, limit, offset) => Promise.resolve({ rows: this.store.ops.traceNames(tenant, limit, offset), total: this.store.ops.countTraceNames(tenant) }),
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

  readonly admin: SqlAdminReads = {
    readQueue: (queue) => Promise.resolve(this.queueConfig(this.db(), queue)),
    setSetting: (key, value) => this.atomic((db) => {
      prep(db, 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
    }),
    setting: (key) => Promise.resolve((prep(this.db(), 'SELECT value FROM settings WHERE key = ?').get(key) as Row | undefined)?.value as string | undefined),
    queues: (tenant) => Promise.resolve((prep(this.db(), `
      SELECT q.name AS queue, (SELECT count(*) FROM partitions p WHERE p.queue_pk = q.pk) AS partitions,
             (SELECT count(*) FROM messages m WHERE m.queue_pk = q.pk) AS messages
        FROM queues q WHERE q.tenant_id = ? ORDER BY q.name`).all(tenant) as Row[])
      .map((r) => ({ queue: r.queue as string, partitions: r.partitions as number, messages: r.messages as number }))),
    partitionCounts: (tenant) => Promise.resolve(new Map((prep(this.db(), `
      SELECT q.name AS queue, count(p.pk) AS n FROM queues q LEFT JOIN partitions p ON p.queue_pk = q.pk
       WHERE q.tenant_id = ? GROUP BY q.pk`).all(tenant) as Row[]).map((r) => [r.queue as string, r.n as number]))),
    // SQLite answers on this thread: the sum runs in offset ranges of RETAINED_CHUNK rows per
    // partition, giving the event loop back between ranges, so a large tenant never stalls the broker.
    retainedBytes: async (tenant) => {
      const db = this.db();
      const parts = prep(db, 'SELECT p.pk FROM partitions p JOIN queues q ON q.pk = p.queue_pk WHERE q.tenant_id = ?').all(tenant) as Row[];
      let total = 0;
      for (const { pk } of parts) {
        const span = prep(db, 'SELECT min(offset) AS lo, max(offset) AS hi FROM messages WHERE partition_pk = ?').get(pk) as Row;
        if (span.lo === null) continue;
        for (let from = span.lo as number; from <= (span.hi as number); from += RETAINED_CHUNK) {
          total += (prep(db, 'SELECT coalesce(sum(length(payload)), 0) AS n FROM messages WHERE partition_pk = ? AND offset >= ? AND offset < ?')
            .get(pk, from, from + RETAINED_CHUNK) as Row).n as number;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      return total;
    },
    cursors: (queue, group) => Promise.resolve((prep(this.db(), `
      SELECT p.name AS partition, c.* FROM cursors c JOIN partitions p ON p.pk = c.partition_pk JOIN queues q ON q.pk = p.queue_pk
       WHERE q.tenant_id = ? AND q.name = ? AND c.consumer_group = ? ORDER BY p.name`).all(queue.tenant, queue.queue, group) as Row[])
      .map((r) => ({ partition: r.partition as string, cursor: cursorView(r) }))),
  };

  /** Closes the store. */
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
  prep(db, `INSERT INTO kv (ns, key, value, version, expires_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = excluded.version,
              expires_at = excluded.expires_at, updated_at = excluded.updated_at`).run(r.ns, r.key, r.value, r.version, r.expiresAt, r.updatedAt);
}

function deleteKv(db: Db, ns: string, key: string): boolean {
  const row = prep(db, 'SELECT version FROM kv WHERE ns = ? AND key = ?').get(ns, key) as Row | undefined;
  if (!row) return false;
  prep(db, 'DELETE FROM kv WHERE ns = ? AND key = ?').run(ns, key);
  prep(db, 'UPDATE kv_meta SET floor = max(floor, ?) WHERE id = 0').run(row.version);
  return true;
}

function putTimerRow(db: Db, t: import('../timers.js').TimerRow): void {
  prep(db, `INSERT OR REPLACE INTO timers (queue, timer_key, partition, deliver_at, txn, message_id, payload, encrypted, producer_sub, attempts, last_error, created_at, updated_at)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .run(t.queue, t.timerKey, t.partition, t.deliverAt, t.txn, t.messageId, t.payload, t.encrypted ? 1 : 0, t.producerSub, t.attempts, t.lastError, t.createdAt, t.updatedAt);
}
