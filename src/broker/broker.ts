/**
 * The broker facade the HTTP layer calls: every operation of the Queen API as a method taking
 * validated input and returning the answer's data. No HTTP here; semantics live in the operation
 * modules (push, pop, ack, transaction) and the engine.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { QueenError } from '../errors.js';
import type { AckLookup, AckTarget, QueueBackend } from '../storage/contract.js';
import type { StorageRuntime } from '../storage/runtime.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Scheduler } from '../util/scheduler.js';
import { iso } from '../util/time.js';
import { ackCommits, groupAcks, ownTargets, planAcks, type AckInput, type AckOutcome } from './messaging/ack.js';
import type { PayloadCodec } from '../model/codec.js';
import { Waiters } from './messaging/waiters.js';
import { applyOptions, type QueueOptions } from '../model/options.js';
import { decodeForDelivery } from '../crypto/delivery.js';
import { claimThrough, Parker, type PopRequest } from './messaging/pop.js';
import { conflationEcho, emptyConflation, renderPop, type EmptyConflationResponse, type PopResponse } from './messaging/pop-answer.js';
import { appendPush, planPush, queueOptionsOf, type PushContext, type PushItem, type PushResult } from './messaging/push.js';
import type { BrokerObserver, PushGate } from './messaging/observer.js';
import { optionsView } from './admin/resources.js';
import { decideTransaction, type TransactionRequest, type TransactionResult } from './messaging/transaction.js';
import { kvWriteKeys, KvView } from './coordination/kv.js';
import { KeyedLock } from '../util/keyed-lock.js';
import { DEFAULT_TENANT, type QueueKey } from '../storage/contract.js';
import { queueSlot } from '../model/tenancy.js';
import { newId } from '../util/ids.js';
import { checkNameText } from '../util/names.js';
import { mapPacked } from '../util/arrays.js';

export { QUEUE_MODE } from '../model/subscription.js';
export type { EmptyConflationResponse, PoppedMessage, PopResponse } from './messaging/pop-answer.js';

/** Plans an ack is decided on at most (a refused commit means the cursor moved or the lease ended meanwhile). */
const ACK_ATTEMPTS = 8;

/** Entries at most in the partition → queue map (cleared when full). */
const PARTITION_QUEUES_MAX = 100_000;

/** Lifetime counters (JSON `/metrics`; Prometheus families read the same numbers). */
export interface BrokerCounters {
  pushRequests: number;
  pushMessages: number;
  popRequests: number;
  popMessages: number;
  popEmpty: number;
  ackRequests: number;
  ackMessages: number;
  ackFailed: number;
  transactions: number;
  dlqMessages: number;
  /** Stored payloads that failed authentication when read (docs/security.md#integrity-failures). */
  payloadIntegrityFailures: number;
}

export interface ConfigureRequest {
  queue: string;
  namespace?: string | null | undefined;
  task?: string | null | undefined;
  options: Record<string, unknown>;
  mode: 'merge' | 'replace';
  /** The queue's tenant (default: the default tenant). */
  tenant?: string | undefined;
}

/** Answer of {@link Broker.configure}: the queue as configured (`partitionId` always null). */
export interface ConfigureResult {
  configured: true;
  queueId: string;
  partitionId: null;
  queue: string;
  namespace: string;
  task: string;
  storage: StorageRuntime['kind'];
  options: QueueOptions;
}

/**
 * Answer of {@link Broker.extendLease}: `renewed` counts the partitions whose lease is live;
 * `newExpiresAt`, `expiresAt` and `lease_expires_at` are the same ISO-8601 expiry (the earliest
 * of them), null when nothing was renewed; then `error` says why, as the reference's renewal does
 * (queen-mq/queen: lib/schema/procedures/005_renew_lease.sql).
 */
export interface LeaseExtension {
  leaseId: string;
  success: boolean;
  renewed: number;
  newExpiresAt: string | null;
  expiresAt: string | null;
  lease_expires_at: string | null;
  error?: string;
}

/** Answer of {@link Broker.deleteQueue}. */
export interface QueueDeletion {
  deleted: boolean;
  queue: string;
  existed: boolean;
  message?: string;
}

/** One dead letter as listed (times ISO-8601; `data` the client's JSON, null when it failed authentication). */
export interface DeadLetterView {
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  consumerGroup: string;
  errorMessage: string | null;
  retryCount: number;
  data: unknown;
  messageId: string;
  traceId: string | null;
  producerSub: string | null;
  createdAt: string;
  failedAt: string;
}

/** A page of dead letters with the true total of matching rows (also at the top level). */
export interface DeadLetterPage {
  messages: DeadLetterView[];
  pagination: { limit: number; offset: number; total: number };
  total: number;
}

/** The broker: one instance per process, over one storage runtime. Methods map 1:1 to API operations. */
export class Broker implements PushContext {
  /** The operation contract (src/storage/contract.ts): every read and write of the domain runs through it. */
  readonly backend: QueueBackend;
  /** The source of time of every rule. */
  readonly clock: Clock;
  /** The one due-time scheduler (the storage runtime's). */
  readonly scheduler: Scheduler;
  /** Parked long-poll pops, woken from the backend's `onPartitionsReady` hints. */
  readonly waiters: Waiters;
  /**
   * The KV rows being written in this process, by key (src/broker/coordination/kv.ts `kvWriteKeys`):
   * a KV call, a lock call or a transaction's KV rider holds the rows it writes or checks while it
   * decides and commits, so writers of one row apply in turn instead of racing to the commit.
   */
  readonly kvWrites = new KeyedLock();
  readonly counters: BrokerCounters = {
    pushRequests: 0, pushMessages: 0, popRequests: 0, popMessages: 0, popEmpty: 0,
    ackRequests: 0, ackMessages: 0, ackFailed: 0, transactions: 0, dlqMessages: 0, payloadIntegrityFailures: 0,
  };
  /** When this broker was built, epoch ms on its clock. */
  readonly startedAt: number;
  private stopping = false;
  private popMaintenance = false;
  /** Wake-up hints seen, in all and per queue name: a pop parks only when none arrived during its claim. */
  private hintsSeen = 0;
  private readonly hintsByQueue = new Map<string, number>();
  /** Told about every committed unit of work (activity, retention, metrics): observer.ts. */
  readonly observers: BrokerObserver[] = [];
  /** Queue slot (`queueSlot`: tenant and name) per partition id, as ack planning and claims read them (activity counters; bounded). */
  private readonly partitionQueues = new Map<string, string>();
  /** {@link backend} for transactions: their ack-planning reads note partition queues too. */
  private readonly txBackend: QueueBackend;
  /**
   * Slots (`queueSlot`: the name for the default tenant, tenant-qualified otherwise) of the queues
   * this broker knows (metrics labels): the default tenant's read at boot, every tenant's kept by
   * pushes, transactions, configure and delete.
   */
  readonly knownQueues = new Set<string>();
  /** Set while push maintenance diverts pushes to the spool (maintenance.ts). */
  pushGate: PushGate | undefined;
  /** True while pushes are diverted (push maintenance, or its spool still draining). */
  pushesDiverted: (() => boolean) | undefined;

  /**
   * @param storage the opened backend (src/storage/open.ts)
   * @param clock the source of time for leases, delays, timers, retention and KV TTL (default: wall clock)
   */
  constructor(readonly storage: StorageRuntime, readonly config: Config, readonly codec: PayloadCodec, readonly log: Logger, clock: Clock = systemClock) {
    this.backend = storage.backend;
    // Transactions plan their acks on this view of the backend: it notes the queue of each partition read.
    this.txBackend = Object.assign(Object.create(this.backend) as QueueBackend, {
      readAckTargets: async (lookups: AckLookup[]) => this.notedTargets(lookups, await this.backend.readAckTargets(lookups)),
    });
    this.clock = clock;
    this.scheduler = storage.scheduler;
    this.waiters = new Waiters(config.limits.maxWaitersPerQueue);
    this.backend.onPartitionsReady((key, partitions, visibleAt) => {
      if (visibleAt !== null) return; // the backend re-announces it when it is due
      this.hintsSeen++;
      this.hintsByQueue.set(key.queue, (this.hintsByQueue.get(key.queue) ?? 0) + 1);
      for (const p of partitions) this.waiters.partitionReady(key, p);
      if (this.waiters.discoveryParked) this.wakeDiscovery(key);
    });
    this.startedAt = clock.now();
    const known = this.knownQueues;
    this.observers.push({
      pushed(results, _now, tenant) { for (const r of results) known.add(queueSlot(tenant, r.queueName)); },
      transacted(req, result) { if (result.success) for (const r of result.results) if (r.type === 'push') known.add(queueSlot(req.tenant ?? DEFAULT_TENANT, r.queueName)); },
      queueDeleted(queue, tenant) { known.delete(queueSlot(tenant, queue)); },
    });
  }

  /** Reads the pop maintenance flag from the boot state. Call once before serving. */
  start(): void {
    this.popMaintenance = this.storage.boot.settings.get('maintenance.pop') === 'true';
    for (const q of this.storage.boot.queueNames) this.knownQueues.add(q);
  }

  /**
   * Checks a queue, partition, group, namespace or task name the way every operation does.
   * @param kind what the name is, for the message (`queue`, `partition`, `consumerGroup`, …)
   * @throws QueenError `name_too_long`, `invalid_name`
   */
  checkName(kind: string, name: string): void {
    const max = this.config.limits.maxNameBytes;
    if (name.length > max || Buffer.byteLength(name, 'utf8') > max) {
      throw new QueenError('name_too_long', `${kind} exceeds ${max} bytes (QUEEN_MAX_NAME_BYTES)`);
    }
    checkNameText(kind, name);
  }

  /** QUEEN_MAX_PAYLOAD_BYTES: the largest payload a push or a timer accepts. */
  get maxPayloadBytes(): number {
    return this.config.limits.maxPayloadBytes;
  }

  /** Wakes the discovery pops interested in queue `key` (its labels read through the contract). */
  private wakeDiscovery(key: QueueKey): void {
    this.backend.admin.readQueue(key).then(
      (q) => { if (q) this.waiters.labelsReady(key.tenant, q); },
      (e: unknown) => this.log.error({ err: e, queue: key.queue }, 'reading a queue to wake discovery pops failed'),
    );
  }

  /** Notes the queue slot of a partition id (bounded: cleared when full). */
  private notePartition(partitionId: string, queue: string): void {
    if (this.partitionQueues.size >= PARTITION_QUEUES_MAX && !this.partitionQueues.has(partitionId)) this.partitionQueues.clear();
    this.partitionQueues.set(partitionId, queue);
  }

  /** Notes the queue of each looked-up partition that has a target; returns `targets`. */
  private notedTargets(lookups: readonly AckLookup[], targets: (AckTarget | undefined)[]): (AckTarget | undefined)[] {
    for (let i = 0; i < targets.length; i++) {
      const t = targets[i];
      if (t) this.notePartition(lookups[i]!.partitionId, queueSlot(t.queue.tenant, t.queue.queue));
    }
    return targets;
  }

  /** The queue slot (`queueSlot`) of the partition with public id `partitionId`, when an ack plan or a claim of this broker read it. */
  queueOfPartition(partitionId: string): string | undefined {
    return this.partitionQueues.get(partitionId);
  }

  /** Pops parked waiting for messages right now. */
  get parkedConsumers(): number {
    return this.waiters.size;
  }

  /** True while pop maintenance answers every pop with 204. */
  get popMaintenanceEnabled(): boolean {
    return this.popMaintenance;
  }

  /** Turns pop maintenance on or off (persisted, settings key `maintenance.pop`); parked pops are answered. */
  async setPopMaintenance(enabled: boolean): Promise<void> {
    await this.backend.admin.setSetting('maintenance.pop', String(enabled));
    this.applyPopMaintenance(enabled);
  }

  /** Sets pop maintenance here without persisting it (a flag another node set: jobs/maintenance.ts `follow`); parked pops are answered when it turns on. */
  applyPopMaintenance(enabled: boolean): void {
    if (enabled === this.popMaintenance) return;
    this.popMaintenance = enabled;
    if (enabled) this.waiters.wakeAll();
  }

  private notify(fn: (o: BrokerObserver) => void): void {
    for (const o of this.observers) {
      try {
        fn(o);
      } catch (e) {
        this.log.error({ err: e }, 'broker observer failed');
      }
    }
  }

  // ------------------------------------------------------------------ configure

  /**
   * Creates or reconfigures a queue (docs/http-api.md#configure).
   * @throws QueenError `invalid_option` (with `invalid`), `encryption_key_missing`
   */
  async configure(req: ConfigureRequest): Promise<ConfigureResult> {
    this.checkName('queue', req.queue);
    for (const [kind, v] of [['namespace', req.namespace], ['task', req.task], ['namespace', req.options.namespace], ['task', req.options.task]] as const) {
      if (typeof v === 'string') this.checkName(kind, v);
    }
    const key = { tenant: req.tenant ?? DEFAULT_TENANT, queue: req.queue };
    const existing = await this.backend.admin.readQueue(key);
    const base = req.mode === 'merge' && existing ? existing.options : undefined;
    const options = applyOptions(base, req.options);
    if (options.encryptionEnabled && !this.codec.canEncrypt) throw new QueenError('encryption_key_missing');
    const namespace = typeof req.namespace === 'string' && req.namespace !== '' ? req.namespace
      : typeof req.options.namespace === 'string' ? req.options.namespace : req.mode === 'replace' || !existing ? '' : existing.namespace;
    const task = typeof req.task === 'string' && req.task !== '' ? req.task
      : typeof req.options.task === 'string' ? req.options.task : req.mode === 'replace' || !existing ? '' : existing.task;
    const q = await this.backend.admin.configureQueue(key, { namespace, task, options }, this.clock.now());
    this.knownQueues.add(queueSlot(key.tenant, req.queue));
    return {
      configured: true, queueId: q.queueId, partitionId: null, queue: req.queue, namespace: q.namespace, task: q.task,
      storage: this.storage.kind, options: optionsView(q.options),
    };
  }

  // ------------------------------------------------------------------ push

  /**
   * Appends `items`; one result per item in request order (docs/http-api.md#push).
   * @param producerSub the caller's JWT `sub`, stamped on every message
   * @param tenant the tenant whose queues receive the items (the request's, src/http/tenant.ts)
   */
  async push(items: PushItem[], producerSub: string | null, tenant: string = DEFAULT_TENANT): Promise<PushResult[]> {
    this.counters.pushRequests++;
    if (items.length === 0) return [];
    // The maintenance spool keeps no tenant: only the default tenant's pushes may be spooled.
    if (tenant !== DEFAULT_TENANT && this.pushesDiverted?.()) throw new QueenError('maintenance_mode');
    const diverted = tenant === DEFAULT_TENANT ? this.pushGate?.(items, producerSub) : undefined;
    if (diverted) return diverted;
    const plan = planPush(this, await queueOptionsOf(this.backend, items, tenant), items, producerSub, tenant);
    const results = await appendPush(this.backend, plan, this.clock.now());
    for (const r of results) if (r.status === 'queued') this.counters.pushMessages++;
    this.notify((o) => o.pushed?.(results, this.clock.now(), tenant));
    return results;
  }

  // ------------------------------------------------------------------ pop

  /**
   * Claims messages for `req`; with `wait`, parks until a push makes some visible or the timeout
   * passes. Resolves null for "nothing" (the HTTP layer answers 204).
   * @param signal aborted when the client disconnects: nothing is claimed for it afterwards, and a
   *   claim made while it left is handed back ({@link handBack})
   */
  async pop(req: PopRequest, signal?: AbortSignal): Promise<PopResponse | EmptyConflationResponse | null> {
    this.counters.popRequests++;
    if (this.popMaintenance) return req.conflation ? { ...emptyConflation(req), conflation: true, paused: true } : null;
    const arrived = this.clock.now();
    const deadline = arrived + (req.wait ? req.timeoutMs : 0);
    if (req.subscription.since === undefined) {
      // Written out, not `{ ...s, since }`: V8 11 (Node 20) takes a slow path, about 1 µs, when an
      // object spread is followed by a key its source lacks (docs/architecture.md#hot-paths).
      const s = req.subscription;
      req = { ...req, subscription: { mode: s.mode, from: s.from, since: arrived, conflation: s.conflation } };
    }
    const parker = new Parker(req);
    let registered = false; // the parker holds a place among the waiters
    try {
      for (;;) {
        if (signal?.aborted || this.stopping || this.popMaintenance) return null;
        if (parker.wokenSinceReset) registered = false; // a wake-up took it out of the waiters
        parker.reset();
        const generation = this.readyGeneration(req.queue);
        const { claimed, storedConflation } = await claimThrough(this.backend, req, this.defaultNew, this.clock.now());
        if (parker.wokenSinceReset) registered = false; // a wake-up during the claim took it out of the waiters
        if (claimed.length > 0) {
          for (const c of claimed) this.notePartition(c.partitionId, queueSlot(req.tenant ?? DEFAULT_TENANT, c.queue));
          if (signal?.aborted && claimed[0]!.leaseId !== '') {
            // The client left while the claim ran: nobody will receive these messages.
            await this.handBack(claimed[0]!.leaseId);
            return null;
          }
          this.notify((o) => o.popped?.(req, claimed, this.clock.now()));
          const answer = renderPop(this.codec, this.log, this.counters, req, claimed);
          const echo = conflationEcho(storedConflation, req);
          if (echo.conflation) answer.conflation = true;
          if (echo.conflationConflict) answer.conflationConflict = true;
          return answer;
        }
        if (!req.wait || this.clock.now() >= deadline) {
          this.counters.popEmpty++;
          this.notify((o) => o.popped?.(req, [], this.clock.now()));
          const echo = conflationEcho(storedConflation, req);
          return echo.conflation ? { ...emptyConflation(req), ...echo, conflation: true } : null;
        }
        if (signal?.aborted) return null;
        // A wake-up that arrived while the claim ran may be for us: claim again instead of parking.
        if (this.readyGeneration(req.queue) !== generation) continue;
        if (!registered) this.waiters.add(parker.waiter); // throws too_many_waiters at QUEEN_MAX_WAITERS_PER_QUEUE
        registered = true;
        const until = this.recheckAt(deadline);
        const why = await parker.wait(this.scheduler, this.waiters, until, signal, until < deadline);
        registered = why === 'deadline' && until < deadline;
      }
    } finally {
      if (registered) this.waiters.remove(parker.waiter);
    }
  }

  /**
   * Hands back a pop's claim that nobody received (its client was gone before the answer could
   * be written): the lease `leaseId` ends at once and the delivery attempt it counted is taken
   * back, so the messages are claimable again as if never delivered (no retry is charged). A
   * commit-on-delivery pop has no lease and cannot be handed back (at-most-once).
   * @param leaseId the claim's lease (`""`: nothing to hand back)
   */
  async handBack(leaseId: string): Promise<void> {
    if (leaseId === '') return;
    const n = await this.backend.releaseLease(leaseId, this.clock.now(), true);
    this.log.debug({ leaseId, partitions: n }, 'pop answer not received: claim handed back');
  }

  /** The broker's default subscription mode is `new` (QUEEN_DEFAULT_SUBSCRIPTION_MODE). */
  private get defaultNew(): boolean {
    return this.config.defaultSubscriptionMode === 'new';
  }

  /**
   * When a parked pop looks again: its deadline, or sooner on a backend shared by several
   * processes, where a lost LISTEN/NOTIFY hint or a lease that expired on another node has no local
   * wake-up; a bounded re-check keeps that cost at about a second (docs/storage.md#postgresql-backend).
   */
  private recheckAt(deadline: number): number {
    const every = this.storage.recheckMs;
    return every === undefined ? deadline : Math.min(deadline, this.clock.now() + every);
  }

  /** Counts wake-up hints for `queue` (undefined: any queue, for discovery pops). */
  private readyGeneration(queue: string | undefined): number {
    return queue === undefined ? this.hintsSeen : this.hintsByQueue.get(queue) ?? 0;
  }

  // ------------------------------------------------------------------ ack

  /**
   * Applies acknowledgements; one outcome per input, in order (docs/http-api.md#ack).
   * @param tenant the caller's tenant: partitions of other tenants answer as unknown
   */
  async ack(inputs: AckInput[], tenant: string = DEFAULT_TENANT): Promise<AckOutcome[]> {
    this.counters.ackRequests++;
    if (inputs.length === 0) return [];
    let outcomes: AckOutcome[];
    const groups = groupAcks(inputs);
    for (let attempt = 1; ; attempt++) {
      const targets = ownTargets(this.notedTargets(groups.lookups, await this.backend.readAckTargets(groups.lookups)), tenant);
      const now = this.clock.now();
      const plan = planAcks(inputs, groups, targets, now);
      const commits = ackCommits(plan, now);
      // Refused when the lease ended or another unit moved the cursor after the plan read it:
      // decide again on the new state (each retry follows a commit that moved the cursor).
      const unit = commits.length > 0 ? await this.backend.unit(mapPacked(commits, (request) => ({ op: 'commit' as const, request }))) : undefined;
      if (!unit || unit.committed || attempt >= ACK_ATTEMPTS) {
        if (unit && !unit.committed) throw new QueenError('write_contention', `acknowledgement kept racing other commits (${ACK_ATTEMPTS} decisions); nothing was written: retry`);
        outcomes = plan.outcomes;
        break;
      }
    }
    for (const o of outcomes) {
      if (o.success) this.counters.ackMessages++;
      else this.counters.ackFailed++;
      if (o.dlq) this.counters.dlqMessages++;
    }
    this.notify((o) => o.acked?.(inputs, outcomes, this.clock.now()));
    return outcomes;
  }

  // ------------------------------------------------------------------ transaction

  /** Runs an all-or-nothing transaction (docs/http-api.md#transaction); refusals come back as `success:false`. */
  async transaction(req: TransactionRequest): Promise<TransactionResult> {
    this.counters.transactions++;
    if (this.pushesDiverted?.() && req.operations.some((op) => op.type === 'push')) {
      // A transaction cannot be half spooled: refuse it whole rather than let its pushes overtake
      // the spooled ones.
      throw new QueenError('maintenance_mode', 'push maintenance is on: transactions that push are refused until it is off',
        { success: false, reason: 'maintenance', results: [] });
    }
    const result = await this.decideAndRun(req);
    if (result.success) for (const r of result.results) if (r.type === 'ack' && r.dlq) this.counters.dlqMessages++;
    this.notify((o) => o.transacted?.(req, result, this.clock.now()));
    return result;
  }

  /**
   * Decides a transaction on committed state and runs it as one unit, deciding again when the
   * unit is refused because what it was decided on changed (at most {@link ACK_ATTEMPTS} times).
   * The KV rows its rider writes or checks are held in {@link kvWrites} meanwhile, as a KV call's.
   * @throws QueenError `write_contention` when every decision went stale
   */
  private decideAndRun(req: TransactionRequest): Promise<TransactionResult> {
    return this.kvWrites.run(kvWriteKeys(req.tenant ?? DEFAULT_TENANT, req.kv?.ops ?? []), () => this.decideAndRunHeld(req));
  }

  private async decideAndRunHeld(req: TransactionRequest): Promise<TransactionResult> {
    const transactionId = newId();
    for (let attempt = 1; ; attempt++) {
      const now = this.clock.now();
      const d = await decideTransaction(this.txBackend, this, req, transactionId, new KvView(this.backend.kv, req.tenant ?? DEFAULT_TENANT, now), now);
      if (d.refusal) return d.refusal;
      const unit = await this.backend.unit(d.ops);
      if (unit.committed) {
        if (d.kvView) req.kv?.committed?.(d.kvView);
        return d.answer(unit.results);
      }
      const answer = d.refused(unit.failedIndex, unit.failedItem);
      if (answer) return answer;
      if (attempt >= ACK_ATTEMPTS) throw new QueenError('write_contention', `transaction kept racing other commits (${ACK_ATTEMPTS} decisions); nothing was written: retry`);
    }
  }

  // ------------------------------------------------------------------ leases

  /**
   * Extends every live lease held by `leaseId` to max(current expiry, now + seconds); never
   * shortens, never revives an expired lease (docs/http-api.md#lease-extension). Only leases on
   * `tenant`'s queues: another tenant's lease id answers as an unknown one (`renewed: 0`).
   * @param seconds from now, s
   * @param tenant the caller's tenant (default: the default tenant)
   */
  async extendLease(leaseId: string, seconds: number, tenant: string = DEFAULT_TENANT): Promise<LeaseExtension> {
    const now = this.clock.now();
    const renewed = await this.backend.extendLease(leaseId, now + seconds * 1000, now, tenant);
    const at = renewed.length > 0 ? iso(Math.min(...renewed)) : null;
    const answer: LeaseExtension = { leaseId, success: renewed.length > 0, renewed: renewed.length, newExpiresAt: at, expiresAt: at, lease_expires_at: at };
    if (renewed.length === 0) answer.error = 'Lease not found or already expired';
    return answer;
  }

  // ------------------------------------------------------------------ queues

  /** Deletes a queue and everything under it; answers `existed:false` when there was none. */
  async deleteQueue(name: string, tenant: string = DEFAULT_TENANT): Promise<QueueDeletion> {
    const existed = await this.backend.admin.deleteQueue({ tenant, queue: name });
    if (existed) {
      this.hintsByQueue.delete(name); // a pop that read the old count claims once more, nothing else
      this.notify((o) => o.queueDeleted?.(name, tenant));
    }
    return existed
      ? { deleted: true, queue: name, existed: true }
      : { deleted: false, queue: name, existed: false, message: 'Queue not found, nothing was deleted' };
  }

  // ------------------------------------------------------------------ DLQ

  /** Dead letters, newest first, payloads decrypted (docs/http-api.md#dead-letters). */
  async listDlq(filter: { tenant?: string; queue?: string; group?: string; from?: number; to?: number; limit: number; offset: number }): Promise<DeadLetterPage> {
    const { rows, total } = await this.backend.dlq.list(filter);
    const messages = rows.map((r): DeadLetterView => ({
      id: r.id, transactionId: r.transactionId, partitionId: r.partitionId, queue: r.queue, partition: r.partition,
      consumerGroup: r.group, errorMessage: r.error, retryCount: r.retryCount, data: decodeForDelivery(this.codec, { ...r, id: r.messageId }, r, this.log, this.counters).data,
      messageId: r.messageId, traceId: r.traceId, producerSub: r.producerSub, createdAt: iso(r.createdAt), failedAt: iso(r.failedAt),
    }));
    const { limit, offset } = filter;
    return { messages, pagination: { limit, offset, total }, total };
  }

  // ------------------------------------------------------------------ health and lifecycle

  healthy(): boolean {
    return !this.stopping && this.storage.healthy();
  }

  /** Stops taking new work and answers every parked pop (204). */
  stopAccepting(): void {
    this.stopping = true;
    this.storage.stopAccepting();
    this.waiters.wakeAll();
  }

  /** {@link stopAccepting}, then waits up to `graceMs` for in-flight commits and closes the store. */
  async shutdown(graceMs: number): Promise<void> {
    this.stopAccepting();
    await this.storage.drain(graceMs);
    await this.storage.close();
  }
}
