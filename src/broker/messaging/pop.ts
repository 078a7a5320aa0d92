/**
 * Pop: claim whole partitions for a consumer group and lease the next messages of each
 * (docs/http-api.md#pop). Candidates come from the group's ready set, never a scan of
 * all partitions (docs/storage.md#costs-scale-with-work). One live lease per (partition, group): a leased partition is
 * skipped, not waited on.
 */
import type { MessageRow, StoreTx, SubscriptionRow } from '../../storage/store.js';
import { DEFAULT_TENANT, type QueueBackend } from '../../storage/contract.js';
import { newId } from '../../util/ids.js';
import type { Engine, SubscriptionRequest } from './engine.js';
import { matches, type Waiter, type Waiters } from './waiters.js';
import { leaseLive, type GroupState, type PartitionState, type QueueState } from './state.js';

/** A validated pop request (the HTTP layer applies defaults and limits). */
export interface PopRequest {
  /** Queue name; undefined on the namespace/task discovery route. */
  queue: string | undefined;
  /** Only this partition (partition route). */
  partition: string | undefined;
  namespace: string | undefined;
  task: string | undefined;
  group: string;
  /** Max messages in the answer, across claimed partitions. */
  batch: number;
  /** Max partitions to claim (wildcard and discovery routes). */
  partitions: number;
  wait: boolean;
  /** Long-poll window, ms. */
  timeoutMs: number;
  autoAck: boolean;
  /** Lease override in s; default the queue's `leaseTime`. */
  leaseSeconds: number | undefined;
  /** The caller asked for conflation (it takes effect only on the group's first contact). */
  conflation?: boolean | undefined;
  subscription: SubscriptionRequest;
}

/** Messages claimed from one partition. */
export interface ClaimedPartition {
  queue: QueueState;
  partition: PartitionState;
  group: string;
  leaseId: string;
  /** 1-based delivery attempt of this batch for the group. */
  deliveryAttempt: number;
  rows: MessageRow[];
}

/** The queues a request looks at, discovery ones by priority (higher first), then name. */
function targetQueues(engine: Engine, req: PopRequest): QueueState[] {
  if (req.queue !== undefined) {
    const q = engine.queues.get(req.queue);
    return q ? [q] : [];
  }
  const out = [...engine.queues.values()].filter((q) => matches(req, q));
  out.sort((a, b) => b.options.priority - a.options.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}

/**
 * Claims for `req` through the operation contract: one claim per target queue (discovery ones by
 * priority; a queue where the group is registered and nothing is ready is skipped, a hint from the
 * indexes), with the queue's options and the group's subscription passed in as decisions.
 * @param now epoch ms on the broker's clock
 * @returns the claimed batches; empty when nothing is deliverable now
 * @throws QueenError `invalid_request` for a bad `subscriptionFrom` (before anything is claimed)
 */
export async function claimThrough(engine: Engine, backend: QueueBackend, req: PopRequest, now: number): Promise<ClaimedPartition[]> {
  const targets: { q: QueueState; sub: SubscriptionRow }[] = [];
  for (const q of targetQueues(engine, req)) {
    const g = q.groups.get(req.group);
    if (req.queue === undefined && g && g.ready.size === 0) continue;
    targets.push({ q, sub: g?.subscription ?? engine.resolveSubscription(q, req.group, req.subscription, now) });
  }
  const out: ClaimedPartition[] = [];
  const leaseId = req.autoAck ? null : newId();
  let budget = req.batch;
  const maxParts = req.partition !== undefined ? 1 : req.partitions;
  for (const { q, sub } of targets) {
    if (budget <= 0 || out.length >= maxParts) break;
    const batches = await backend.claim({
      queue: { tenant: DEFAULT_TENANT, queue: q.name }, group: req.group, partition: req.partition,
      maxPartitions: maxParts - out.length, batch: budget, leaseId,
      leaseMs: (req.leaseSeconds ?? (q.options.leaseTime > 0 ? q.options.leaseTime : 60)) * 1000,
      delayMs: q.options.delayedProcessing * 1000, windowMs: q.options.windowBuffer * 1000, conflation: sub.conflation,
      seed: sub.mode === 'all' || sub.fromTime === null ? { mode: 'all' } : { mode: 'from', fromTime: sub.fromTime, label: sub.label },
      now,
    });
    for (const b of batches) {
      const p = q.partitions.get(b.partition);
      if (!p) continue;
      out.push({ queue: q, partition: p, group: req.group, leaseId: leaseId ?? '', deliveryAttempt: b.deliveryAttempt, rows: b.messages });
      budget -= b.messages.length;
    }
  }
  return out;
}

/**
 * Claims up to `req.partitions` partitions and `req.batch` messages in `tx`.
 * @returns the claimed batches; empty when nothing is deliverable now
 * @throws QueenError `invalid_request` for a bad `subscriptionFrom`
 */
export function claim(engine: Engine, tx: StoreTx, req: PopRequest, now: number): ClaimedPartition[] {
  const out: ClaimedPartition[] = [];
  const leaseId = req.autoAck ? '' : newId();
  let budget = req.batch;
  const maxParts = req.partition !== undefined ? 1 : req.partitions;
  for (const q of targetQueues(engine, req)) {
    if (budget <= 0 || out.length >= maxParts) break;
    const g = engine.ensureGroup(tx, q, req.group, req.subscription, now);
    const params: ClaimParams = {
      leaseId: req.autoAck ? null : leaseId,
      leaseMs: (req.leaseSeconds ?? (q.options.leaseTime > 0 ? q.options.leaseTime : 60)) * 1000,
      delayMs: q.options.delayedProcessing * 1000,
      windowMs: q.options.windowBuffer * 1000,
      conflation: g.subscription.conflation,
    };
    let candidates: Iterable<PartitionState>;
    if (req.partition !== undefined) {
      const p = q.partitions.get(req.partition);
      candidates = p ? [p] : [];
    } else {
      candidates = g.ready;
    }
    for (const p of candidates) {
      if (budget <= 0 || out.length >= maxParts) break;
      const got = claimPartition(engine, tx, g, p, params, budget, now);
      if (got) {
        out.push({ queue: q, partition: p, group: g.name, leaseId, deliveryAttempt: got.deliveryAttempt, rows: got.rows });
        budget -= got.rows.length;
      }
    }
    const next = g.ready.values().next();
    if (!next.done) {
      const first = next.value;
      tx.afterCommit(() => engine.announce(q, first)); // more work left: wake the next waiter
    }
  }
  return out;
}

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
 * @returns the rows and the delivery attempt, or undefined when `p` has nothing claimable now
 */
export function claimPartition(
  engine: Engine, tx: StoreTx, g: GroupState, p: PartitionState, params: ClaimParams, budget: number, now: number,
): { deliveryAttempt: number; rows: MessageRow[] } | undefined {
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
  // deliveredUpTo survives a release as the high-water mark of what was delivered: a batch that
  // starts below it is a redelivery.
  c.deliveryCount = c.deliveredUpTo !== null && rows[0]!.offset < c.deliveredUpTo ? c.deliveryCount + 1 : 1;
  const deliveryAttempt = c.deliveryCount;
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
  return { deliveryAttempt, rows };
}

/**
 * A parked pop's handle: register it with the broker's waiters right after an empty claim (in the
 * same turn, once no wake-up arrived during the claim), then await {@link wait}.
 */
export class Parker {
  private resolveWake: (() => void) | undefined;
  private woken = false;
  readonly waiter: Waiter;

  constructor(req: PopRequest) {
    this.waiter = {
      queue: req.queue, group: req.group, partition: req.partition, namespace: req.namespace, task: req.task,
      wake: () => {
        this.woken = true;
        this.resolveWake?.();
      },
    };
  }

  /** Resolves on wake-up, at `deadline` (epoch ms, on the engine's clock), or on abort; always deregisters from `waiters`. */
  wait(engine: Engine, waiters: Waiters, deadline: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.woken) return Promise.resolve();
    const deadlines = engine.scheduler.lane<Parker>('pop-deadline');
    return new Promise<void>((resolve) => {
      const done = () => {
        deadlines.cancel(this);
        signal?.removeEventListener('abort', done);
        waiters.remove(this.waiter);
        this.resolveWake = undefined;
        resolve();
      };
      deadlines.schedule(this, deadline, done);
      signal?.addEventListener('abort', done, { once: true });
      this.resolveWake = done;
    });
  }

  /** Re-arms the handle for another round. */
  reset(): void {
    this.woken = false;
  }
}
