/**
 * The broker's shared core: in-memory indexes (queues, partitions, groups, cursors, ready sets),
 * lease expiry and readiness timers. The operation modules (push.ts, pop.ts, ack.ts,
 * transaction.ts, admin.ts) work through it; it holds no HTTP and no parked consumer.
 *
 * Invariant: a unit of work validates first, then writes to the store, then mutates these
 * indexes, recording each entry it changes in its undo log ({@link Engine.inUnit}, undo.ts) so a
 * rolled-back unit restores exactly what it touched. Wake-ups leave only after the commit is
 * durable (tx.afterCommit), as {@link Engine.onPartitionsReady} hints in the shape of the
 * operation contract's (src/storage/contract.ts `ReadyListener`); the broker wakes its parked
 * pops from them.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config/index.js';
import { QueenError } from '../../errors.js';
import type { Store, StoreSnapshot, StoreTx, SubscriptionRow } from '../store.js';
import { DEFAULT_TENANT, type ReadyListener } from '../contract.js';
import { newRandomId } from '../../util/ids.js';
import { checkNameText } from '../../util/names.js';
import type { PayloadCodec } from '../../model/codec.js';
import { applyOptions, QUEUE_DEFAULTS } from '../../model/options.js';
import {
  leaseLive, namesFromQueue, queueMapKey,
  type CursorState, type GroupState, type PartitionState, type QueueState,
} from './state.js';
import { resolveSubscription } from '../../model/subscription.js';
import { LeaseExpiry } from './leases.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { Scheduler, type SchedulerLane } from '../../util/scheduler.js';
import { UndoLog } from './undo.js';
import { NO_DELIVERIES } from '../attempts.js';

/**
 * Longest single wait of the broker's scheduler, ms: far due times re-check the clock at least
 * this often (a wall-clock jump delays a due time by at most this much).
 */
const SCHEDULER_MAX_DELAY_MS = 60_000;

export type { SubscriptionRequest } from '../../model/subscription.js';
import type { SubscriptionRequest } from '../../model/subscription.js';

/** In-memory indexes and wake-up machinery shared by every broker operation (see the module comment). */
export class Engine {
  readonly queues = new Map<string, QueueState>();
  readonly queuesByPk = new Map<number, QueueState>();
  readonly partitionsById = new Map<string, PartitionState>();
  readonly partitionsByPk = new Map<number, PartitionState>();
  /** lease id → the (group, partition) pairs it holds now (an ended lease leaves at once). */
  readonly leases = new Map<string, Set<{ group: GroupState; partition: PartitionState }>>();
  /** Wake-up listeners, told after a commit which partitions became claimable. */
  private readonly readyListeners: ReadyListener[] = [];
  /** Every due time of the broker (leases, readiness, timers, KV TTL, retention, long polls). */
  readonly scheduler: Scheduler;
  readonly leaseExpiry: LeaseExpiry;
  /** Partitions re-marked ready when a delay or window buffer elapses, keyed by (queue, group, partition). */
  private readonly readyAt: SchedulerLane<string>;
  /** The running unit of work's undo log (undo.ts); undefined outside a unit. */
  private undo: UndoLog | undefined;

  /** @param clock the source of time for every rule decided here (default: wall clock) */
  constructor(
    readonly store: Store,
    readonly config: Config,
    readonly codec: PayloadCodec,
    readonly log: Logger,
    readonly clock: Clock = systemClock,
  ) {
    this.scheduler = new Scheduler(clock, {
      maxDelayMs: SCHEDULER_MAX_DELAY_MS,
      onError: (err, lane) => log.error({ err, lane }, 'scheduled callback failed'),
    });
    this.leaseExpiry = new LeaseExpiry(this.scheduler, (group, partition, leaseId) => this.onLeaseExpired(group, partition, leaseId));
    this.readyAt = this.scheduler.lane<string>('ready');
  }

  /** Builds every index from the store (boot). */
  load(snap: StoreSnapshot = this.store.loadSnapshot()): void {
    this.clear();
    for (const q of snap.queues) {
      const qs: QueueState = { ...q, options: applyOptions({ ...QUEUE_DEFAULTS }, q.options as unknown as Record<string, unknown>), partitions: new Map(), groups: new Map() };
      this.queues.set(queueMapKey(qs.tenant, qs.name), qs);
      this.queuesByPk.set(qs.pk, qs);
    }
    for (const p of snap.partitions) {
      const q = this.queuesByPk.get(p.queuePk);
      if (!q) continue;
      const ps: PartitionState = { pk: p.pk, id: p.id, name: p.name, queue: q, headOffset: p.headOffset, firstOffset: p.firstOffset, lastMessageAt: p.lastMessageAt, createdAt: p.createdAt };
      q.partitions.set(ps.name, ps);
      this.partitionsById.set(ps.id, ps);
      this.partitionsByPk.set(ps.pk, ps);
    }
    for (const s of snap.subscriptions) {
      const q = this.queuesByPk.get(s.queuePk);
      if (q) q.groups.set(s.group, { name: s.group, queue: q, subscription: s, cursors: new Map(), ready: new Set() });
    }
    for (const c of snap.cursors) {
      const p = this.partitionsByPk.get(c.partitionPk);
      if (!p) continue;
      let g = p.queue.groups.get(c.group);
      if (!g) {
        // A cursor without subscription metadata (deleted metadata): treat as `all`.
        const sub: SubscriptionRow = { queuePk: p.queue.pk, group: c.group, mode: 'all', fromTime: null, label: 'all', createdAt: this.clock.now(), conflation: false };
        g = { name: c.group, queue: p.queue, subscription: sub, cursors: new Map(), ready: new Set() };
        p.queue.groups.set(c.group, g);
      }
      const cs: CursorState = { ...c, materialized: true };
      g.cursors.set(p.pk, cs);
      if (cs.leaseId !== null && cs.leaseExpiresAt !== null) {
        this.grantLease(cs.leaseId, g, p, cs, cs.leaseExpiresAt);
      }
    }
    for (const q of this.queues.values()) for (const g of q.groups.values()) this.seedReady(g);
  }

  private clear(): void {
    this.queues.clear();
    this.queuesByPk.clear();
    this.partitionsById.clear();
    this.partitionsByPk.clear();
    this.leases.clear();
    this.leaseExpiry.clear();
    this.readyAt.clear();
  }

  /** Cancels every scheduled due time and the scheduler's timer; parked consumers are answered by the caller. */
  stop(): void {
    this.scheduler.clear();
  }

  // ---------------------------------------------------------------- failure containment

  /**
   * Runs `fn` as the in-memory side of the unit of work `tx`: every index entry it changes is
   * recorded first, and restored if the store rolls `tx` back (the unit threw, or its group commit
   * failed). Only what this unit touched is restored; nothing is reloaded from the store.
   */
  inUnit<T>(tx: StoreTx, fn: () => T): T {
    const outer = this.undo;
    const log = new UndoLog();
    this.undo = log;
    tx.onRollback(() => log.rollback());
    try {
      return fn();
    } finally {
      this.undo = outer;
    }
  }

  /** Records `c` (of `g` on `p`) before the running unit changes it; `existed`: it is already in `g.cursors`. */
  noteCursor(g: GroupState, p: PartitionState, c: CursorState, existed = true): void {
    const u = this.undo;
    if (!u) return;
    const saved: CursorState = { ...c };
    u.once(c, () => {
      if (c.leaseId !== null) this.untrackLease(c.leaseId, g, p);
      this.leaseExpiry.cancel(c);
      Object.assign(c, saved);
      if (!existed) {
        if (g.cursors.get(p.pk) === c) g.cursors.delete(p.pk);
        return;
      }
      g.cursors.set(p.pk, c);
      if (c.leaseId !== null && c.leaseExpiresAt !== null) this.grantLease(c.leaseId, g, p, c, c.leaseExpiresAt);
    });
  }

  /** Records whether `p` is in `g`'s ready set before the running unit adds or removes it. */
  noteReady(g: GroupState, p: PartitionState): void {
    const u = this.undo;
    if (!u) return;
    const had = g.ready.has(p);
    u.onceReady(g, p, () => { if (had) g.ready.add(p); else g.ready.delete(p); });
  }

  /** Records a partition's head, first offset and newest-message time before the running unit changes them. */
  notePartition(p: PartitionState): void {
    const u = this.undo;
    if (!u) return;
    const { headOffset, firstOffset, lastMessageAt } = p;
    u.once(p, () => { p.headOffset = headOffset; p.firstOffset = firstOffset; p.lastMessageAt = lastMessageAt; });
  }

  /** Records a queue's options, namespace and task before the running unit reconfigures it. */
  noteQueue(q: QueueState): void {
    const u = this.undo;
    if (!u) return;
    const { options, namespace, task } = q;
    u.once(q, () => { q.options = options; q.namespace = namespace; q.task = task; });
  }

  /**
   * Records a whole group (subscription, cursors, ready set, registration on its queue) before the
   * running unit resets, re-seeds or deletes it. Costs O(cursors of the group): admin operations only.
   */
  noteGroup(g: GroupState): void {
    const u = this.undo;
    if (!u) return;
    const registered = g.queue.groups.get(g.name) === g;
    const subscription = g.subscription;
    const cursors = [...g.cursors].map(([pk, c]) => ({ pk, c, saved: { ...c } }));
    const ready = [...g.ready];
    u.once(g, () => {
      for (const [pk, c] of g.cursors) {
        if (c.leaseId !== null) this.untrackLease(c.leaseId, g, this.partitionsByPk.get(pk));
        this.leaseExpiry.cancel(c);
      }
      g.cursors.clear();
      g.ready.clear();
      g.subscription = subscription;
      for (const { pk, c, saved } of cursors) {
        Object.assign(c, saved);
        g.cursors.set(pk, c);
        const p = this.partitionsByPk.get(pk);
        if (p && c.leaseId !== null && c.leaseExpiresAt !== null) this.grantLease(c.leaseId, g, p, c, c.leaseExpiresAt);
      }
      for (const p of ready) g.ready.add(p);
      if (registered) g.queue.groups.set(g.name, g);
      else if (g.queue.groups.get(g.name) === g) g.queue.groups.delete(g.name);
    });
  }

  // ---------------------------------------------------------------- names and limits

  /**
   * Names (queue, partition, group, transaction id, namespace, task, trace id) must fit the byte
   * limit and be text a URL can carry back: no NUL and no lone UTF-16 surrogate (such a name could
   * be stored but never popped, inspected or deleted).
   * @throws QueenError `name_too_long`, `invalid_name`
   */
  checkName(kind: string, name: string): void {
    if (name.length > this.config.limits.maxNameBytes || Buffer.byteLength(name, 'utf8') > this.config.limits.maxNameBytes) {
      throw new QueenError('name_too_long', `${kind} exceeds ${this.config.limits.maxNameBytes} bytes (QUEEN_MAX_NAME_BYTES)`);
    }
    checkNameText(kind, name);
  }

  // ---------------------------------------------------------------- queues and partitions

  /** The queues of `tenant` (every queue is the default tenant's until the proxy assigns others). */
  *tenantQueues(tenant: string): IterableIterator<QueueState> {
    for (const q of this.queues.values()) if (q.tenant === tenant) yield q;
  }

  /** The queue `name` of `tenant`, or undefined. */
  queue(tenant: string, name: string): QueueState | undefined {
    return this.queues.get(queueMapKey(tenant, name));
  }

  /** Creates the queue of `tenant` in `tx` when missing (namespace/task from a dotted name, docs/http-api.md#model). */
  ensureQueue(tx: StoreTx, name: string, now: number, tenant: string = DEFAULT_TENANT): QueueState {
    const mapKey = queueMapKey(tenant, name);
    const existing = this.queues.get(mapKey);
    if (existing) return existing;
    const { namespace, task } = namesFromQueue(name);
    const options = { ...QUEUE_DEFAULTS };
    const id = newRandomId();
    const pk = tx.insertQueue({ id, tenant, name, namespace, task, options, createdAt: now });
    const q: QueueState = { pk, id, tenant, name, namespace, task, options, createdAt: now, partitions: new Map(), groups: new Map() };
    this.queues.set(mapKey, q);
    this.queuesByPk.set(pk, q);
    this.undo?.push(() => {
      if (this.queues.get(mapKey) === q) this.queues.delete(mapKey);
      if (this.queuesByPk.get(pk) === q) this.queuesByPk.delete(pk);
    });
    return q;
  }

  /** Creates the partition in `tx` when missing. */
  ensurePartition(tx: StoreTx, q: QueueState, name: string, now: number): PartitionState {
    const existing = q.partitions.get(name);
    if (existing) return existing;
    const id = newRandomId();
    const pk = tx.insertPartition({ id, queuePk: q.pk, name, headOffset: 0, firstOffset: 0, lastMessageAt: null, createdAt: now });
    const p: PartitionState = { pk, id, name, queue: q, headOffset: 0, firstOffset: 0, lastMessageAt: null, createdAt: now };
    q.partitions.set(name, p);
    this.partitionsById.set(id, p);
    this.partitionsByPk.set(pk, p);
    this.undo?.push(() => {
      if (q.partitions.get(name) === p) q.partitions.delete(name);
      this.partitionsById.delete(id);
      this.partitionsByPk.delete(pk);
      for (const g of q.groups.values()) g.ready.delete(p);
    });
    return p;
  }

  /** Forgets a deleted queue and everything under it; parked consumers stay parked (a push may recreate it). */
  forgetQueue(q: QueueState): void {
    for (const g of q.groups.values()) this.forgetGroupState(g);
    for (const p of q.partitions.values()) {
      this.partitionsById.delete(p.id);
      this.partitionsByPk.delete(p.pk);
    }
    this.queues.delete(queueMapKey(q.tenant, q.name));
    this.queuesByPk.delete(q.pk);
    this.undo?.push(() => {
      // Runs before the groups' restores (newest first): they look partitions up by pk.
      this.queues.set(queueMapKey(q.tenant, q.name), q);
      this.queuesByPk.set(q.pk, q);
      for (const p of q.partitions.values()) {
        this.partitionsById.set(p.id, p);
        this.partitionsByPk.set(p.pk, p);
      }
    });
  }

  // ---------------------------------------------------------------- groups and cursors

  /**
   * The group on `q`, registering it on first contact (writes its subscription in `tx`).
   * Queue mode always subscribes `all`; a named group uses the request's mode or the default.
   * @throws QueenError `invalid_request` for an unparseable `subscriptionFrom`.
   */
  ensureGroup(tx: StoreTx, q: QueueState, name: string, req: SubscriptionRequest, now: number): GroupState {
    const existing = q.groups.get(name);
    if (existing) return existing;
    return this.registerGroup(tx, q, this.resolveSubscription(q, name, req, now));
  }

  /** Registers a group on `q` with a resolved subscription (writes it in `tx`); the caller checked it is new. */
  registerGroup(tx: StoreTx, q: QueueState, subscription: SubscriptionRow): GroupState {
    const name = subscription.group;
    tx.upsertSubscription(subscription);
    const g: GroupState = { name, queue: q, subscription, cursors: new Map(), ready: new Set() };
    q.groups.set(name, g);
    this.seedReady(g);
    this.undo?.push(() => {
      if (q.groups.get(name) !== g) return;
      this.forgetGroupState(g);
      q.groups.delete(name);
    });
    return g;
  }

  /**
   * The subscription a group registering on `q` at `now` (epoch ms) gets from `req` (no write).
   * @throws QueenError `invalid_request` for an unparseable `subscriptionFrom`
   */
  resolveSubscription(q: QueueState, name: string, req: SubscriptionRequest, now: number): SubscriptionRow {
    const r = resolveSubscription(name, req, this.config.defaultSubscriptionMode === 'new', now);
    return { queuePk: q.pk, group: name, createdAt: now, ...r };
  }


  /** The group's cursor on `p`, computing its starting offset on first touch (not yet written). */
  ensureCursor(g: GroupState, p: PartitionState): CursorState {
    let c = g.cursors.get(p.pk);
    if (!c) {
      c = {
        partitionPk: p.pk, group: g.name, committedOffset: this.startOffset(g, p), leaseId: null,
        leaseExpiresAt: null, deliveredUpTo: null, retryCount: 0, ...NO_DELIVERIES, materialized: false,
      };
      g.cursors.set(p.pk, c);
      this.noteCursor(g, p, c, false);
    } else {
      this.noteCursor(g, p, c);
    }
    if (c.committedOffset < p.firstOffset) c.committedOffset = p.firstOffset; // retention removed what it pointed at
    return c;
  }

  private startOffset(g: GroupState, p: PartitionState): number {
    const sub = g.subscription;
    if (sub.mode === 'all' || sub.fromTime === null) return p.firstOffset;
    if (p.lastMessageAt === null || p.lastMessageAt <= sub.fromTime) return p.headOffset;
    return this.store.firstOffsetAfter(p.pk, p.firstOffset, sub.fromTime) ?? p.headOffset;
  }

  /** True when `p` may have something for `g` that is not leased (cheap, no store read for materialized cursors). */
  maybeReady(g: GroupState, p: PartitionState, now: number): boolean {
    const c = g.cursors.get(p.pk);
    if (!c) {
      if (p.headOffset <= p.firstOffset) return false;
      if (g.subscription.mode === 'from' && g.subscription.fromTime !== null) {
        return p.lastMessageAt !== null && p.lastMessageAt > g.subscription.fromTime;
      }
      return true;
    }
    return !leaseLive(c, now) && Math.max(c.committedOffset, p.firstOffset) < p.headOffset;
  }

  private seedReady(g: GroupState): void {
    const now = this.clock.now();
    for (const p of g.queue.partitions.values()) if (this.maybeReady(g, p, now)) g.ready.add(p);
  }

  /** Deletes a group's cursors and subscription from memory (the caller deletes the rows). */
  forgetGroupState(g: GroupState): void {
    this.noteGroup(g);
    for (const [pk, c] of g.cursors) {
      if (c.leaseId) this.untrackLease(c.leaseId, g, this.partitionsByPk.get(pk));
      this.leaseExpiry.cancel(c);
    }
    g.cursors.clear();
    g.ready.clear();
  }

  // ---------------------------------------------------------------- readiness and wake-ups

  /**
   * Registers a wake-up listener: called after a commit (or a due lease expiry, delay or window)
   * with the partitions of a queue that became claimable for some group. A hint: the listener
   * re-claims through the indexes, so an extra call costs one empty claim, never a message.
   */
  onPartitionsReady(listener: ReadyListener): void {
    this.readyListeners.push(listener);
  }

  /** Tells the listeners that `p` of `q` is claimable now, or from `visibleAt` (epoch ms) on (call after commit). */
  announce(q: QueueState, p: PartitionState, visibleAt: number | null = null): void {
    const key = { tenant: q.tenant, queue: q.name };
    for (const l of this.readyListeners) l(key, [p.name], visibleAt);
  }

  /** Puts `p` in `g`'s ready set and announces it (call after commit). */
  markReady(g: GroupState, p: PartitionState): void {
    if (this.queues.get(queueMapKey(g.queue.tenant, g.queue.name)) !== g.queue || g.queue.groups.get(g.name) !== g) return;
    g.ready.add(p);
    this.announce(g.queue, p);
  }

  /** After a push to `p` commits: every group of its queue may now have work (one announcement). */
  partitionGrew(p: PartitionState): void {
    for (const g of p.queue.groups.values()) g.ready.add(p);
    // Groups not registered yet find the partition when they register.
    this.announce(p.queue, p);
  }

  /** Re-marks `p` ready for `g` at `at` (epoch ms): delayed processing and window buffers. */
  scheduleReady(g: GroupState, p: PartitionState, at: number): void {
    const key = `${g.queue.pk}\u0000${g.name}\u0000${p.pk}`;
    const existing = this.readyAt.dueAt(key);
    if (existing !== undefined && existing <= at) return;
    this.readyAt.schedule(key, at, () => this.markReady(g, p));
  }

  // ---------------------------------------------------------------- leases

  /**
   * Records that `leaseId` holds `c` (of `g` on `p`) until `expiresAt` (epoch ms) and schedules its
   * expiry; a cursor's earlier expiry entry is replaced (one entry per cursor).
   */
  grantLease(leaseId: string, g: GroupState, p: PartitionState, c: CursorState, expiresAt: number): void {
    this.trackLease(leaseId, g, p);
    this.leaseExpiry.schedule(expiresAt, g, p, c, leaseId);
  }

  /** Moves the expiry of `c`'s live lease to `expiresAt` (epoch ms): the same entry, no duplicate. */
  extendLease(g: GroupState, p: PartitionState, c: CursorState, expiresAt: number): void {
    if (c.leaseId === null) return;
    this.leaseExpiry.schedule(expiresAt, g, p, c, c.leaseId);
  }

  trackLease(leaseId: string, g: GroupState, p: PartitionState): void {
    let set = this.leases.get(leaseId);
    if (!set) this.leases.set(leaseId, (set = new Set()));
    set.add({ group: g, partition: p });
  }

  /**
   * Forgets that `leaseId` holds `g`'s cursor on `p` (every partition of `g` when `p` is undefined)
   * and cancels that cursor's expiry entry: call it wherever a lease ends.
   */
  untrackLease(leaseId: string, g: GroupState, p: PartitionState | undefined): void {
    if (p !== undefined) {
      const c = g.cursors.get(p.pk);
      if (c) this.leaseExpiry.cancel(c);
    }
    const set = this.leases.get(leaseId);
    if (!set) return;
    for (const e of set) if (e.group === g && (p === undefined || e.partition === p)) set.delete(e);
    if (set.size === 0) this.leases.delete(leaseId);
  }

  /** The live (group, partition, cursor) triples held by `leaseId` at `now`. */
  liveLeases(leaseId: string, now: number): { group: GroupState; partition: PartitionState; cursor: CursorState }[] {
    const out: { group: GroupState; partition: PartitionState; cursor: CursorState }[] = [];
    const set = this.leases.get(leaseId);
    if (!set) return out;
    for (const e of set) {
      const c = e.group.cursors.get(e.partition.pk);
      if (c && c.leaseId === leaseId && leaseLive(c, now)) out.push({ ...e, cursor: c });
    }
    return out;
  }

  private onLeaseExpired(g: GroupState, p: PartitionState, leaseId: string): void {
    const c = g.cursors.get(p.pk);
    if (!c || c.leaseId !== leaseId) return;
    if (c.leaseExpiresAt !== null && c.leaseExpiresAt > this.clock.now()) {
      this.leaseExpiry.schedule(c.leaseExpiresAt, g, p, c, leaseId); // woke early (clock moved back)
      return;
    }
    this.untrackLease(leaseId, g, p);
    if (Math.max(c.committedOffset, p.firstOffset) < p.headOffset) this.markReady(g, p);
  }
}
