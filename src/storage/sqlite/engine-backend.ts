/**
 * The operation contract (src/storage/contract.ts, docs/storage.md#operation-contract) over the
 * engine's in-memory indexes and the SQLite store: the single-writer SQLite backend with its
 * accelerator. Offsets come from the partition heads in memory, claims take candidates from the
 * ready sets and leases from the lease index, and every change is written in the same store unit
 * (group commit, one fsync), its in-memory effects undone if the unit rolls back (Engine.inUnit).
 * Wake-ups leave as the engine's `onPartitionsReady` hints after the commit.
 *
 * The default tenant's queues live in the indexes; the sub-stores (KV, locks, timers, traces, DLQ,
 * operator reads) and other tenants' queues are served by the SQL implementation
 * (src/storage/sqlite/backend.ts) on the same connection.
 */
import type {
  AckLookup, AckTarget, AdminSubStore, GroupSubscription, PopSelector, PopTarget, RetentionPartition, AppendRequest, AppendResult, BackendCapabilities, ClaimRequest, ClaimedBatch, CommitResult, CursorCommit,
  CursorKey, CursorView, PartitionKey, PartitionView, QueueBackend, ReadyListener, UnitOp, UnitOpResult, UnitResult, ViewsSubStore,
} from '../contract.js';
import { SqliteViews } from './views.js';

import type { Logger } from 'pino';
import type { Config } from '../../config/index.js';
import type { PayloadCodec } from '../../model/codec.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { SqliteSubStores } from './sub-stores.js';
import type { SqliteStore } from './store.js';
import { Engine } from './engine.js';
import { EngineUnits } from './engine-units.js';
import type { MessageRow, StoreTx, SubscriptionRow } from '../store.js';
import { UnitRefused } from '../refused.js';
import { deleteGroupOn, pruneOn, seekGroupOn, setSubscriptionFromOn } from './engine-admin.js';

export { UnitRefused } from '../refused.js';

import { attemptOf, batchAttempts, clearDeliveries, countDelivery, takeBackDelivery, type BatchAttempts } from '../attempts.js';
import { leaseLive, type CursorState, type GroupState, type PartitionState, type QueueState } from './state.js';
import { mapPacked } from '../../util/arrays.js';

/** The decisions a claim of one partition carries in (the queue's options and the group's mode, or a contract request's). */
export interface ClaimParams {
  /** The lease to grant; null = auto-ack (the cursor moves past what is returned). */
  leaseId: string | null;
  /** Lease length, ms. */
  leaseMs: number;
  /** A message is visible once `createdAt + delayMs <= now`. */
  delayMs: number;
  /** A partition is claimable once its newest message is `windowMs` old. */
  windowMs: number;
  /** Only the newest message; its ack commits everything behind it. */
  conflation: boolean;
}

/**
 * Claims up to `budget` messages of `p` for `g` in `tx`, on the in-memory indexes (cursor, lease,
 * ready set); a partition visible only later is re-marked ready at that time and announced with it.
 * @returns the rows and their delivery attempts, or undefined when `p` has nothing claimable now
 */
export function claimPartition(
  engine: Engine, tx: StoreTx, g: GroupState, p: PartitionState, params: ClaimParams, budget: number, now: number,
): { attempts: BatchAttempts; rows: MessageRow[] } | undefined {
  const c = engine.ensureCursor(g, p);
  engine.noteReady(g, p);
  const q = p.queue;
  if (leaseLive(c, now) || c.committedOffset >= p.headOffset) {
    g.ready.delete(p);
    return undefined;
  }
  const later = (at: number) => {
    g.ready.delete(p);
    engine.scheduleReady(g, p, at);
    tx.afterCommit(() => engine.announce(q, p, at));
  };
  if (params.windowMs > 0 && p.lastMessageAt !== null && p.lastMessageAt + params.windowMs > now) {
    later(p.lastMessageAt + params.windowMs);
    return undefined;
  }
  const newest = params.conflation ? tx.readMessage(p.pk, p.headOffset - 1) : undefined;
  let rows = newest ? [newest] : tx.readMessages(p.pk, c.committedOffset, budget);
  if (params.delayMs > 0) {
    const visible = rows.findIndex((r) => r.createdAt + params.delayMs > now);
    if (visible === 0) {
      later(rows[0]!.createdAt + params.delayMs);
      return undefined;
    }
    if (visible > 0) rows = rows.slice(0, visible);
  }
  if (rows.length === 0) {
    g.ready.delete(p);
    return undefined;
  }
  const end = rows[rows.length - 1]!.offset + 1;
  if (c.leaseId) engine.untrackLease(c.leaseId, g, p);
  // Each message's attempt from the counts before this delivery, then this delivery counted
  // (src/storage/attempts.ts); the batch starts at the committed offset (conflation delivers the
  // newest alone and counts as delivering everything up to it, which the group never reads).
  const attempts = batchAttempts(c, c.committedOffset);
  countDelivery(c, c.committedOffset, end);
  if (params.leaseId === null) {
    c.committedOffset = end;
    c.leaseId = null;
    c.leaseExpiresAt = null;
    c.deliveredUpTo = end;
    c.retryCount = 0;
    if (end >= p.headOffset) g.ready.delete(p);
  } else {
    c.leaseId = params.leaseId;
    c.leaseExpiresAt = now + params.leaseMs;
    c.deliveredUpTo = end;
    g.ready.delete(p);
    engine.grantLease(params.leaseId, g, p, c, c.leaseExpiresAt);
  }
  tx.upsertCursor(c);
  c.materialized = true;
  return { attempts, rows };
}

/**
 * The contract's claim (src/storage/contract.ts `QueueBackend.claim`) inside the running unit `tx`,
 * on the default tenant's indexes: candidates from the group's ready set (or the one partition
 * asked for), the group registered with `req.seed` on first contact; the next waiter is told after
 * the commit when work is left.
 * @returns the claimed batches; empty when nothing is deliverable now (or the queue is unknown)
 */
export function claimOn(e: Engine, tx: StoreTx, req: ClaimRequest): ClaimedBatch[] {
  const q = e.queue(req.queue.tenant, req.queue.queue);
  if (!q) return [];
  let g = q.groups.get(req.group);
  if (!g) {
    const sub: SubscriptionRow = req.seed.mode === 'all'
      ? { queuePk: q.pk, group: req.group, mode: 'all', fromTime: null, label: 'all', conflation: req.conflation, createdAt: req.now }
      : { queuePk: q.pk, group: req.group, mode: 'from', fromTime: req.seed.fromTime, label: req.seed.label ?? 'timestamp', conflation: req.conflation, createdAt: req.now };
    g = e.registerGroup(tx, q, sub);
  }
  const candidates: Iterable<PartitionState> = req.partition !== undefined
    ? [q.partitions.get(req.partition)].filter((p): p is PartitionState => p !== undefined)
    : g.ready;
  const params = { leaseId: req.leaseId, leaseMs: req.leaseMs, delayMs: req.delayMs, windowMs: req.windowMs, conflation: req.conflation };
  const out: ClaimedBatch[] = [];
  let budget = req.batch;
  for (const p of candidates) {
    if (budget <= 0 || out.length >= req.maxPartitions) break;
    const got = claimPartition(e, tx, g, p, params, budget, req.now);
    if (!got) continue;
    out.push({ partition: p.name, partitionId: p.id, leaseId: req.leaseId, deliveryAttempt: attemptOf(got.attempts, got.rows[0]!.offset), attempts: got.attempts, messages: got.rows });
    budget -= got.rows.length;
  }
  const next = g.ready.values().next();
  if (!next.done) {
    const first = next.value;
    tx.afterCommit(() => e.announce(q, first)); // more work left
  }
  return out;
}

/**
 * First offset of `p` the group has not consumed: its cursor when it has one, else where its
 * subscription would start (one O(log n) store probe for a timestamp subscription).
 */
function groupPosition(e: Engine, g: GroupState, p: PartitionState): number {
  const c = g.cursors.get(p.pk);
  if (c) return Math.min(Math.max(c.committedOffset, p.firstOffset), p.headOffset);
  const sub = g.subscription;
  if (sub.mode === 'all' || sub.fromTime === null) return p.firstOffset;
  if (p.lastMessageAt === null || p.lastMessageAt <= sub.fromTime) return p.headOffset;
  return e.store.firstOffsetAfter(p.pk, p.firstOffset, sub.fromTime) ?? p.headOffset;
}

/** A partition's retention inputs on the indexes (the lowest position over the queue's groups). */
function retentionView(e: Engine, p: PartitionState): RetentionPartition {
  let min: number | undefined;
  for (const g of p.queue.groups.values()) {
    const pos = groupPosition(e, g, p);
    if (min === undefined || pos < min) min = pos;
    if (min <= p.firstOffset) break;
  }
  return {
    queue: { tenant: p.queue.tenant, queue: p.queue.name }, partition: p.name, partitionId: p.id,
    firstOffset: p.firstOffset, headOffset: p.headOffset, consumedUpTo: min,
  };
}

/** Runs `work` as one unit of the store's group commit with the engine's undo log (Broker.run). */
export type UnitRunner = <T>(work: (tx: StoreTx) => T) => Promise<T>;


function view(c: CursorState): CursorView {
  return {
    committedOffset: c.committedOffset, leaseId: c.leaseId, leaseExpiresAt: c.leaseExpiresAt, deliveredUpTo: c.deliveredUpTo,
    retryCount: c.retryCount, deliveryCount: c.deliveryCount, attemptSplit: c.attemptSplit,
    deliveryCountFromSplit: c.deliveryCountFromSplit, deliveredMax: c.deliveredMax,
  };
}

/**
 * The contract's append (src/storage/contract.ts `QueueBackend.append`) inside the running unit
 * `tx` of the default tenant's queue: offsets from the partition head in memory, the dedup probe
 * on the store; parked consumers are told after the commit.
 */
export function appendOn(e: Engine, tx: StoreTx, req: AppendRequest, index = 0): AppendResult {
  const q = e.ensureQueue(tx, req.key.queue, req.now, req.key.tenant);
  const p = e.ensurePartition(tx, q, req.key.partition, req.now);
  e.notePartition(p);
  const start = p.headOffset;
  const seen = req.dedupWindowMs > 0 ? new Map<string, { offset: number; messageId: string }>() : undefined;
  const outcomes = mapPacked(req.items, (it, k) => {
    if (seen) {
      const earlier = seen.get(it.transactionId);
      if (earlier) {
        if (req.refuseDuplicates) throw new UnitRefused(index, k);
        return { status: 'duplicate' as const, ...earlier };
      }
      const hit = tx.findByTransactionId(p.pk, it.transactionId, req.now - req.dedupWindowMs);
      if (hit) {
        if (req.refuseDuplicates) throw new UnitRefused(index, k);
        return { status: 'duplicate' as const, offset: hit.offset, messageId: hit.id };
      }
    }
    const offset = p.headOffset;
    const createdAt = Math.max(req.now, p.lastMessageAt ?? 0);
    tx.insertMessage(q.pk, {
      partitionPk: p.pk, offset, id: it.messageId, transactionId: it.transactionId, payload: it.payload,
      encrypted: it.encrypted, traceId: it.traceId, producerSub: it.producerSub, createdAt,
    });
    p.headOffset = offset + 1;
    p.lastMessageAt = createdAt;
    seen?.set(it.transactionId, { offset, messageId: it.messageId });
    return { status: 'queued' as const, offset, messageId: it.messageId };
  });
  if (p.headOffset !== start) {
    tx.updatePartitionHead(p.pk, p.headOffset, p.lastMessageAt!);
    tx.afterCommit(() => e.partitionGrew(p));
  }
  return { partitionId: p.id, outcomes, headOffset: p.headOffset };
}

/**
 * The contract's cursor commit (src/storage/contract.ts `QueueBackend.commitCursor`) inside the
 * running unit `tx`, on the default tenant's indexes; parked consumers are told after the commit
 * when the partition has work again.
 * @param index the op's position in its unit (reported when refused)
 * @throws UnitRefused when the lease or offset condition fails (the caller rolls the unit back)
 */
export function commitOn(e: Engine, tx: StoreTx, c: CursorCommit, index: number): CommitResult {
  const q = e.queue(c.key.tenant, c.key.queue);
  const p = q?.partitions.get(c.key.partition);
  const g = q?.groups.get(c.key.group);
  const held = p && g ? g.cursors.get(p.pk) : undefined;
  if (c.leaseId !== null && !(held && held.leaseId === c.leaseId && leaseLive(held, c.now))) throw new UnitRefused(index);
  if (!p || !g) return { applied: false, cursor: undefined };
  const cur = e.ensureCursor(g, p);
  if (c.ifCommittedOffset !== undefined && cur.committedOffset !== c.ifCommittedOffset) throw new UnitRefused(index);
  if (c.deadLetter) {
    const m = tx.readMessage(p.pk, c.deadLetter.offset);
    if (m) {
      tx.insertDlq({
        id: c.deadLetter.id, queuePk: p.queue.pk, queue: p.queue.name, partitionPk: p.pk, partition: p.name, partitionId: p.id,
        group: g.name, messageId: m.id, transactionId: m.transactionId, offset: m.offset, payload: m.payload, encrypted: m.encrypted,
        traceId: m.traceId, producerSub: m.producerSub, error: c.deadLetter.error, retryCount: c.deadLetter.retryCount,
        createdAt: m.createdAt, failedAt: c.now,
      });
    }
  }
  if (c.committedOffset < cur.committedOffset) clearDeliveries(cur); // a position set back counts afresh, as a seek does
  cur.committedOffset = c.committedOffset;
  cur.retryCount = c.retryCount;
  if (c.release && cur.leaseId !== null) {
    e.untrackLease(cur.leaseId, g, p);
    cur.leaseId = null;
    cur.leaseExpiresAt = null; // the delivery counts stay: a later claim below deliveredMax is a redelivery
  }
  tx.upsertCursor(cur);
  cur.materialized = true;
  if (!leaseLive(cur, c.now) && cur.committedOffset < p.headOffset) tx.afterCommit(() => e.markReady(g, p));
  return { applied: true, cursor: view(cur) };
}

/** {@link QueueBackend} on the engine's indexes and the SQLite store (see the module comment). */
export class EngineBackend implements QueueBackend {
  readonly capabilities: BackendCapabilities = { listenNotify: false, singleWriter: true };

  /**
   * @param engine the in-memory indexes (loaded from the store)
   * @param sql the SQL part on the same store: sub-stores, riders, reads
   * @param run runs a unit of work in the store with the engine's undo log
   */
  constructor(private readonly engine: Engine, private readonly sql: SqliteSubStores, private readonly run: UnitRunner, readonly views: ViewsSubStore) {}

  /**
   * The SQLite backend over `store`: the engine (not loaded yet: call `engine.load()`), its unit
   * runner, and the backend serving every tenant. The store's idle checkpoint joins the engine's scheduler.
   * @param clock the source of time of the engine's rules and scheduler (default: wall clock)
   */
  static open(store: SqliteStore, config: Config, codec: PayloadCodec, log: Logger, clock: Clock = systemClock):
    { engine: Engine; units: EngineUnits; backend: EngineBackend } {
    const engine = new Engine(store, config, codec, log, clock);
    store.useScheduler(engine.scheduler);
    const units = new EngineUnits(store, engine, log);
    return { engine, units, backend: new EngineBackend(engine, new SqliteSubStores(store), (work) => units.run(work), new SqliteViews(engine, store)) };
  }

  onPartitionsReady(listener: ReadyListener): void {
    this.engine.onPartitionsReady(listener);
  }

  // ---------------------------------------------------------------- append

  append(req: AppendRequest): Promise<AppendResult> {
    return this.run((tx) => appendOn(this.engine, tx, { ...req, refuseDuplicates: false }));
  }

  // ---------------------------------------------------------------- claim

  /** Nothing ready for a registered group (and no partition named): answered from the ready set, without a unit. */
  claim(req: ClaimRequest): Promise<ClaimedBatch[]> {
    if (req.partition === undefined && this.engine.queue(req.queue.tenant, req.queue.queue)?.groups.get(req.group)?.ready.size === 0) {
      return Promise.resolve([]);
    }
    return this.run((tx) => claimOn(this.engine, tx, req));
  }

  // ---------------------------------------------------------------- cursors and leases

  async commitCursor(req: CursorCommit): Promise<CommitResult> {
    try {
      return await this.run((tx) => commitOn(this.engine, tx, req, 0));
    } catch (e) {
      if (e instanceof UnitRefused) return { applied: false, cursor: await this.readCursor(req.key) };
      throw e;
    }
  }

  extendLease(leaseId: string, untilMs: number, now: number, tenant: string): Promise<number[]> {
    return this.run((tx) => {
      const e = this.engine;
      const expiries: number[] = [];
      for (const { cursor: c, group, partition } of e.liveLeases(leaseId, now)) {
        if (group.queue.tenant !== tenant) continue;
        const next = Math.max(c.leaseExpiresAt!, untilMs);
        if (next !== c.leaseExpiresAt) {
          e.noteCursor(group, partition, c);
          c.leaseExpiresAt = next;
          tx.upsertCursor(c);
          e.extendLease(group, partition, c, next);
        }
        expiries.push(next);
      }
      return expiries.sort((a, b) => a - b);
    });
  }

  releaseLease(leaseId: string, _now: number, takeBackAttempt = false): Promise<number> {
    return this.run((tx) => {
      const e = this.engine;
      const held = [...(e.leases.get(leaseId) ?? [])];
      let n = 0;
      for (const { group: g, partition: p } of held) {
        const c = g.cursors.get(p.pk);
        if (!c || c.leaseId !== leaseId) continue;
        e.noteCursor(g, p, c);
        e.untrackLease(leaseId, g, p);
        c.leaseId = null;
        c.leaseExpiresAt = null;
        if (takeBackAttempt && c.deliveredUpTo !== null) takeBackDelivery(c, c.committedOffset, c.deliveredUpTo);
        tx.upsertCursor(c);
        n++;
        if (Math.max(c.committedOffset, p.firstOffset) < p.headOffset) tx.afterCommit(() => e.markReady(g, p));
      }
      return n;
    });
  }

  // ---------------------------------------------------------------- units

  async unit(ops: UnitOp[]): Promise<UnitResult> {
    try {
      const results = await this.run((tx) => mapPacked(ops, (o, i): UnitOpResult => {
        switch (o.op) {
          case 'append': return appendOn(this.engine, tx, o.request, i);
          case 'commit': return commitOn(this.engine, tx, o.request, i);
          case 'leaseHeld':
            if (this.engine.liveLeases(o.leaseId, o.now).length === 0) throw new UnitRefused(i);
            return { done: true };
          default: return this.sql.applyRider(o, i);
        }
      }));
      return { committed: true, results };
    } catch (e) {
      if (e instanceof UnitRefused) return e.result();
      throw e;
    }
  }

  readCursor(key: CursorKey): Promise<CursorView | undefined> {
    return this.sql.readCursor(key);
  }

  readPartition(key: PartitionKey): Promise<PartitionView | undefined> {
    return this.sql.readPartition(key);
  }

  /** On the indexes (the cursor at its start position when the group has none yet) and the store's transactionId index. */
  readAckTargets(lookups: AckLookup[]): Promise<(AckTarget | undefined)[]> {
    const e = this.engine;
    return Promise.resolve(mapPacked(lookups, (l): AckTarget | undefined => {
      const p = e.partitionsById.get(l.partitionId);
      if (!p) return undefined;
      const q = p.queue;
      const g = q.groups.get(l.group);
      return {
        queue: { tenant: q.tenant, queue: q.name }, partition: p.name, options: q.options,
        cursor: g ? view(e.ensureCursor(g, p)) : undefined,
        offsets: g ? mapPacked(l.transactionIds, (t) => e.store.offsetByTransactionId(p.pk, t)) : [],
      };
    }));
  }

  /** On the indexes: the tenant's queues by name or label, with the group's registered subscription. */
  readPopTargets(tenant: string, group: string, selector: PopSelector): Promise<PopTarget[]> {
    const e = this.engine;
    const target = (q: QueueState): PopTarget => {
      const sub = q.groups.get(group)?.subscription;
      const subscription: GroupSubscription | undefined = sub && {
        seed: sub.mode === 'all' || sub.fromTime === null ? { mode: 'all' } : { mode: 'from', fromTime: sub.fromTime, label: sub.label },
        conflation: sub.conflation,
      };
      return { queue: q.name, config: { queueId: q.id, namespace: q.namespace, task: q.task, options: q.options }, subscription };
    };
    if ('queue' in selector) {
      const q = e.queue(tenant, selector.queue);
      return Promise.resolve(q ? [target(q)] : []);
    }
    const { namespace, task } = selector;
    const out: PopTarget[] = [];
    if (!namespace && !task) return Promise.resolve(out);
    for (const q of e.tenantQueues(tenant)) {
      if ((namespace && q.namespace !== namespace) || (task && q.task !== task)) continue;
      out.push(target(q));
    }
    return Promise.resolve(out);
  }

  leaseHeld(leaseId: string, now: number): Promise<boolean> {
    return Promise.resolve(this.engine.liveLeases(leaseId, now).length > 0);
  }

  // ---------------------------------------------------------------- sub-stores

  /** KV rows on the SQL implementation; the expiry sweep's writes run as this broker's units. */
  get kv(): QueueBackend['kv'] {
    return { ...this.sql.kv, pruneExpired: (now, limit) => this.run(() => this.sql.pruneKvNow(now, limit)) };
  }
  get locks(): QueueBackend['locks'] { return this.sql.locks; }
  get ephemeral(): QueueBackend['ephemeral'] { return this.sql.ephemeral; }
  get streams(): QueueBackend['streams'] { return this.sql.streams; }
  get kafka(): QueueBackend['kafka'] { return this.sql.kafka; }
  get timers(): QueueBackend['timers'] { return this.sql.timers; }
  /** Trace reads on the SQL implementation; recording runs as this broker's unit. */
  get traces(): QueueBackend['traces'] {
    return { ...this.sql.traces, add: (queue, e) => this.run(() => this.sql.addTraceNow(queue, e)) };
  }

  /** Dead-letter reads on the SQL implementation; deletions run as this broker's units. */
  get dlq(): QueueBackend['dlq'] {
    return {
      ...this.sql.dlq,
      delete: (id) => this.run(() => this.sql.deleteDlqNow(id)),
      deleteByAddress: (partitionId, transactionId) => this.run(() => this.sql.deleteDlqByAddressNow(partitionId, transactionId)),
      purge: (queue, group, limit) => this.run(() => this.sql.purgeDlqNow(queue, group, limit)),
    };
  }

  readonly admin: AdminSubStore = {
    readQueue: (queue) => {
      const q = this.engine.queue(queue.tenant, queue.queue);
      return Promise.resolve(q ? { queueId: q.id, namespace: q.namespace, task: q.task, options: q.options } : undefined);
    },
    configureQueue: (queue, config, now) => {
      return this.run((tx) => {
        const q = this.engine.ensureQueue(tx, queue.queue, now, queue.tenant);
        tx.updateQueue(q.pk, config.namespace, config.task, config.options);
        this.engine.noteQueue(q);
        q.options = config.options;
        q.namespace = config.namespace;
        q.task = config.task;
        return { queueId: q.id, namespace: q.namespace, task: q.task, options: q.options };
      });
    },
    setSetting: (key, value) => this.run((tx) => tx.setSetting(key, value)),
    setting: (key) => this.sql.admin.setting(key),
    deleteGroup: (tenant, group, queue, deleteMetadata, now) => this.run((tx) => deleteGroupOn(this.engine, tx, tenant, group, queue, deleteMetadata, now)),
    seekGroup: (queue, group, partition, target, now) => this.run((tx) => seekGroupOn(this.engine, tx, queue, group, partition, target, now)),
    setSubscriptionFrom: (tenant, group, fromTime, now) => this.run((tx) => setSubscriptionFromOn(this.engine, tx, tenant, group, fromTime, now)),
    prune: (queue, cuts) => this.run(() => pruneOn(this.engine, queue, cuts)),
    queues: (tenant) => this.sql.admin.queues(tenant),
    partitionCounts: (tenant) => this.sql.admin.partitionCounts(tenant),
    retainedBytes: (tenant) => this.sql.admin.retainedBytes(tenant),
    cursors: (queue, group) => this.sql.admin.cursors(queue, group),
    queueOptions: () => Promise.resolve([...this.engine.queues.values()].map((q) => ({ queue: { tenant: q.tenant, queue: q.name }, options: q.options }))),
    agedPrefixes: (queue, cutoff, limit) => {
      const e = this.engine;
      const q = e.queue(queue.tenant, queue.queue);
      if (!q) return Promise.resolve({ prefixes: [], rows: 0 });
      const rows = e.store.ops.messagesOlderThan(q.pk, cutoff, limit);
      const ends = new Map<PartitionState, number>();
      for (const r of rows) {
        const p = e.partitionsByPk.get(r.partitionPk);
        if (p) ends.set(p, Math.max(ends.get(p) ?? 0, r.offset + 1)); // created_at is monotone per partition: a prefix
      }
      return Promise.resolve({ prefixes: [...ends].map(([p, end]) => ({ partition: retentionView(e, p), end })), rows: rows.length });
    },
    retentionPartitions: (selector) => {
      const e = this.engine;
      const out: RetentionPartition[] = [];
      if ('partitionIds' in selector) {
        for (const id of selector.partitionIds) {
          const p = e.partitionsById.get(id);
          if (p) out.push(retentionView(e, p));
        }
        return Promise.resolve(out);
      }
      const q = e.queue(selector.consumedOn.tenant, selector.consumedOn.queue);
      const seen = new Set<PartitionState>();
      for (const g of q?.groups.values() ?? []) {
        for (const [pk, c] of g.cursors) {
          const p = e.partitionsByPk.get(pk);
          if (p && !seen.has(p) && c.materialized && c.committedOffset > p.firstOffset) {
            seen.add(p);
            out.push(retentionView(e, p));
          }
        }
      }
      return Promise.resolve(out);
    },
    firstAfter: (key, fromOffset, time) => {
      const e = this.engine;
      const p = e.queue(key.tenant, key.queue)?.partitions.get(key.partition);
      const offset = p ? e.store.firstOffsetAfter(p.pk, fromOffset, time) : undefined;
      const createdAt = p && offset !== undefined ? e.store.ops.createdAtFrom(p.pk, offset) : undefined;
      return Promise.resolve(offset !== undefined && createdAt !== undefined ? { offset, createdAt } : undefined);
    },
    deleteQueue: (queue) => {
      return this.run((tx) => {
        const q = this.engine.queue(queue.tenant, queue.queue);
        if (!q) return false;
        tx.deleteQueue(q.pk);
        this.engine.forgetQueue(q);
        return true;
      });
    },
  };

  /** Closes the store under both implementations. */
  close(): Promise<void> {
    return this.sql.close();
  }
}
