/**
 * Pop: claim whole partitions for a consumer group and lease the next messages of each
 * (docs/http-api.md#pop). The queues come from the contract's `readPopTargets`; which partitions
 * are served is the backend's choice inside `claim` (the SQLite one takes them from the group's
 * ready set, never a scan of all partitions: docs/storage.md#costs-scale-with-work). One live lease
 * per (partition, group): a leased partition is skipped, not waited on.
 */
import type { MessageRow } from '../../storage/store.js';
import { newId } from '../../util/ids.js';
import { resolveSubscription, type SubscriptionRequest } from '../../model/subscription.js';
import type { Scheduler } from '../../util/scheduler.js';
import type { Waiter, Waiters } from './waiters.js';
import { DEFAULT_TENANT, type BatchAttempts, type GroupSubscription, type PopTarget, type QueueBackend } from '../../storage/contract.js';
import { mapPacked } from '../../util/arrays.js';

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
  /** The tenant whose queues are popped (default: the default tenant). */
  tenant?: string | undefined;
}

/** Messages claimed from one partition. */
export interface ClaimedPartition {
  /** Queue name (the request's tenant). */
  queue: string;
  partition: string;
  /** Public id of the partition. */
  partitionId: string;
  group: string;
  leaseId: string;
  /** Delivery attempt of each message for the group, this delivery included (`attemptOf`, src/storage/attempts.ts). */
  attempts: BatchAttempts;
  rows: MessageRow[];
}

/** Discovery targets by priority (higher first), then name. */
function byPriority(targets: PopTarget[]): PopTarget[] {
  return targets.sort((a, b) => b.config.options.priority - a.config.options.priority || (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}

/** The subscription a claim of `req` carries on a queue: the group's registered one, else resolved from the request. */
function subscriptionFor(t: PopTarget, req: PopRequest, defaultNew: boolean, now: number): GroupSubscription {
  if (t.subscription) return t.subscription;
  const r = resolveSubscription(req.group, req.subscription, defaultNew, now);
  return { seed: r.mode === 'all' || r.fromTime === null ? { mode: 'all' } : { mode: 'from', fromTime: r.fromTime, label: r.label }, conflation: r.conflation };
}

/** What a pop claimed, and the group's stored conflation on the named queue (for the echo; undefined when not registered there). */
export interface PopClaim {
  claimed: ClaimedPartition[];
  storedConflation: boolean | undefined;
}

/**
 * Claims for `req` through the operation contract: the target queues read once, then one claim
 * per target queue (discovery ones by priority), with the queue's options and the group's
 * subscription passed in as decisions; the backend chooses the partitions.
 * @param defaultNew the broker's default subscription mode is `new`
 * @param now epoch ms on the broker's clock
 * @returns the claimed batches (empty when nothing is deliverable now)
 * @throws QueenError `invalid_request` for a bad `subscriptionFrom` (before anything is claimed)
 */
export async function claimThrough(backend: QueueBackend, req: PopRequest, defaultNew: boolean, now: number): Promise<PopClaim> {
  const tenant = req.tenant ?? DEFAULT_TENANT;
  const found = await backend.readPopTargets(tenant, req.group,
    req.queue !== undefined ? { queue: req.queue } : { namespace: req.namespace, task: req.task });
  const targets = mapPacked(req.queue !== undefined ? found : byPriority(found), (t) => ({ t, sub: subscriptionFor(t, req, defaultNew, now) }));
  const storedConflation = req.queue !== undefined ? found[0]?.subscription?.conflation : undefined;
  const out: ClaimedPartition[] = [];
  const leaseId = req.autoAck ? null : newId();
  let budget = req.batch;
  const maxParts = req.partition !== undefined ? 1 : req.partitions;
  for (const { t, sub } of targets) {
    if (budget <= 0 || out.length >= maxParts) break;
    const o = t.config.options;
    const batches = await backend.claim({
      queue: { tenant, queue: t.queue }, group: req.group, partition: req.partition,
      maxPartitions: maxParts - out.length, batch: budget, leaseId,
      leaseMs: (req.leaseSeconds ?? (o.leaseTime > 0 ? o.leaseTime : 60)) * 1000,
      delayMs: o.delayedProcessing * 1000, windowMs: o.windowBuffer * 1000, conflation: sub.conflation, seed: sub.seed, now,
    });
    for (const b of batches) {
      out.push({
        queue: t.queue, partition: b.partition, partitionId: b.partitionId, group: req.group, leaseId: leaseId ?? '',
        attempts: b.attempts, rows: b.messages,
      });
      budget -= b.messages.length;
    }
  }
  return { claimed: out, storedConflation };
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
      tenant: req.tenant ?? DEFAULT_TENANT, queue: req.queue, group: req.group, partition: req.partition, namespace: req.namespace, task: req.task,
      wake: () => {
        this.woken = true;
        this.resolveWake?.();
      },
    };
  }

  /** True once a wake-up reached this handle since the last {@link reset} (the waiters set no longer holds it). */
  get wokenSinceReset(): boolean {
    return this.woken;
  }

  /**
   * Resolves on wake-up, at `deadline` (epoch ms, on the scheduler's clock), or on abort, and says
   * which. Deregisters from `waiters`, except at a deadline with `keepSlot` (a re-check round of a
   * pop that parks again: its place among the waiters is kept, so no other pop takes it meanwhile).
   */
  wait(scheduler: Scheduler, waiters: Waiters, deadline: number, signal: AbortSignal | undefined, keepSlot = false): Promise<'woken' | 'deadline' | 'aborted'> {
    if (this.woken) return Promise.resolve('woken');
    const deadlines = scheduler.lane<Parker>('pop-deadline');
    return new Promise((resolve) => {
      const done = (why: 'woken' | 'deadline' | 'aborted') => {
        deadlines.cancel(this);
        signal?.removeEventListener('abort', aborted);
        if (!(why === 'deadline' && keepSlot)) waiters.remove(this.waiter);
        this.resolveWake = undefined;
        resolve(why);
      };
      const aborted = () => done('aborted');
      deadlines.schedule(this, deadline, () => done('deadline'));
      signal?.addEventListener('abort', aborted, { once: true });
      this.resolveWake = () => done('woken');
    });
  }

  /** Re-arms the handle for another round. */
  reset(): void {
    this.woken = false;
  }
}
