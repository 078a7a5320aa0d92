/**
 * Pop: claim whole partitions for a consumer group and lease the next messages of each
 * (docs/http-api.md#pop). Candidates come from the group's ready set, never a scan of
 * all partitions (docs/storage.md#costs-scale-with-work). One live lease per (partition, group): a leased partition is
 * skipped, not waited on.
 */
import type { MessageRow, SubscriptionRow } from '../../storage/store.js';
import { newId } from '../../util/ids.js';
import type { Engine, SubscriptionRequest } from '../../storage/sqlite/engine.js';
import { matches, type Waiter, type Waiters } from './waiters.js';
import type { PartitionState, QueueState } from '../../storage/sqlite/state.js';
import { DEFAULT_TENANT, type QueueBackend } from '../../storage/contract.js';

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
  const out = [...engine.tenantQueues(DEFAULT_TENANT)].filter((q) => matches(req, q));
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
      queue: { tenant: q.tenant, queue: q.name }, group: req.group, partition: req.partition,
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
