/**
 * Per-cluster quotas beyond the request rate (docs/proxy.md#quotas-and-limits; public reference
 * `proxy/src/limits.rs`, `server/src/quota.rs`), checked on the parsed body of a push, a
 * transaction or a configure through the broker router's quota hook (src/http/tenant.ts):
 *
 * "Produce" here: a push, the pushes of a transaction, a dead-letter replay (one message).
 *
 * - `max_queues`, `max_partitions_per_queue`: a Produce or a configure that would create a queue,
 *   or a partition in a queue, beyond the limit answers
 *   `403 quota_exceeded`; what exists goes on. Counts per tenant are cached (read from the store
 *   when a request names a queue or partition the cache does not know and the counts are older than
 *   {@link SHAPE_TTL_MS}, and again before a refusal when older than {@link RECHECK_MS}); a partition
 *   the cache does not know is looked up with one point read. Creations admitted but not answered
 *   yet are reserved, so concurrent requests on this node cannot both take the last slot.
 * - `max_retained_bytes`: a Produce while the tenant's stored payload bytes reach the limit answers
 *   `403 storage_quota_exceeded`. The bytes are sampled from the store at most every
 *   `QUEEN_PROXY_STORAGE_SAMPLE_MS`, plus the `Content-Length` of the Produce requests admitted since
 *   the sample began (an over-estimate until the next sample); a refusal re-samples first when the
 *   sample is older than {@link RECHECK_MS}.
 * - `max_msgs_per_sec` / `msgs_burst`: a token bucket per cluster charged by the number of messages
 *   a Produce carries: `429 rate_limited` with `Retry-After`; a Produce carrying more messages than
 *   the burst can never be afforded and answers `413 payload_too_large` (split the batch).
 * - `max_retention_seconds` on a configure, `max_batch_items` (a size cap, always enforced) and
 *   `max_parked_pops` (long-polls parked at once, counted here).
 *
 * A quota over its limit refuses when enforcing; with `QUEEN_PROXY_ENFORCE=false` it is logged and
 * counted (`queen_proxy_limit_decisions_total`, `enforced="false"`) and the request goes on.
 */
import type { Logger } from 'pino';
import type { Limits } from '../auth/proxy/state.js';
import { QueenError, type ErrorCode } from '../errors.js';
import { RateRefusal, type QuotaCheck } from '../model/in-process.js';
import type { Clock } from '../util/clock.js';
import { Buckets } from './limits.js';
import type { Meter } from './meter.js';

type Obj = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Cached queue and partition counts older than this (ms) are read again before a decision that creates. */
export const SHAPE_TTL_MS = 30_000;
/** A refusal first reads counts or stored bytes again when they are older than this (ms). */
export const RECHECK_MS = 1_000;
/** Existing partitions remembered at most (the set is cleared when full; a miss costs one point read). */
const KNOWN_MAX = 100_000;

/** What the quotas read from the broker (src/broker/admin/tenant-usage.ts). */
export interface TenantReads {
  /** Partitions per queue of a tenant (queue name → count). */
  partitionCounts(tenant: string): Promise<Map<string, number>>;
  /** True when the partition exists. */
  partitionExists(tenant: string, queue: string, partition: string): Promise<boolean>;
  /** Stored payload bytes of the tenant's live messages. */
  retainedBytes(tenant: string): Promise<number>;
}

/** The Produce content of a request body: queue → partitions named, and the number of messages. */
interface Produce {
  partitions: Map<string, Set<string>>;
  messages: number;
}

/** A tenant's cached queue → partition count, with the in-flight creations reserved on top. */
interface Shape {
  counts: Map<string, number>;
  /** When `counts` was read (ms). */
  at: number;
  /** Queue → in-flight requests that may create it. */
  pendingQueues: Map<string, number>;
  /** Queue → partition → in-flight requests that may create it. */
  pendingParts: Map<string, Map<string, number>>;
}

/** A tenant's stored bytes: the last sample plus what was admitted since it began. */
interface Stored {
  bytes: number;
  /** When the sample began (ms). */
  at: number;
  /** `admitted` when the sample began. */
  base: number;
  /** Produce bytes admitted, ever. */
  admitted: number;
  loading: Promise<void> | undefined;
}

/** `POST /api/v1/dlq/:id/replay` and `POST /api/v1/messages/:partitionId/:transactionId/retry`: a dead letter back into a queue. */
const REPLAY = /^\/api\/v1\/(?:dlq\/[^/]+\/replay|messages\/[^/]+\/[^/]+\/retry)$/;

/**
 * The queues and partitions a push's items, a transaction's push operations or a dead-letter
 * replay name, and how many messages they add. A replay adds one message; it names a queue (and a
 * partition) only when its body gives a target queue: otherwise it goes back where it came from.
 */
export function produceOf(path: string, body: Obj): Produce | undefined {
  if (REPLAY.test(path)) {
    const partitions = new Map<string, Set<string>>();
    if (typeof body.queue === 'string' && body.queue !== '') {
      partitions.set(body.queue, new Set(typeof body.partition === 'string' && body.partition !== '' ? [body.partition] : []));
    }
    return { partitions, messages: 1 };
  }
  let items: unknown[];
  if (path === '/api/v1/push' && Array.isArray(body.items)) {
    items = body.items;
  } else if (path === '/api/v1/transaction' && Array.isArray(body.operations)) {
    items = [];
    for (const op of body.operations as unknown[]) {
      if (typeof op !== 'object' || op === null || (op as Obj).type !== 'push') continue;
      const o = op as Obj;
      if (Array.isArray(o.items)) items.push(...(o.items as unknown[]));
      else items.push(o);
    }
  } else {
    return undefined;
  }
  const partitions = new Map<string, Set<string>>();
  for (const i of items) {
    if (typeof i !== 'object' || i === null) continue;
    const { queue, partition } = i as Obj;
    if (typeof queue !== 'string' || queue === '') continue;
    let set = partitions.get(queue);
    if (!set) partitions.set(queue, set = new Set());
    set.add(typeof partition === 'string' ? partition : 'Default');
  }
  return { partitions, messages: items.length };
}

/** Quota decisions of the proxy (see the module comment). */
export class Quotas {
  private readonly shapes = new Map<string, Shape>();
  private readonly loadingShapes = new Map<string, Promise<Shape>>();
  /** Existing partitions, `tenant \0 queue \0 partition`. */
  private readonly known = new Set<string>();
  private readonly stored = new Map<string, Stored>();
  private readonly parked = new Map<string, number>();
  private readonly messages = new Buckets();

  constructor(
    private readonly reads: TenantReads,
    private readonly meter: Meter,
    private readonly log: Logger,
    private readonly enforce: boolean,
    private readonly clock: Clock,
    private readonly storageSampleMs: number,
  ) {}

  /**
   * Records a quota over its limit: throws when enforcing (`code`, 403 unless the code says
   * otherwise), else logs and lets it pass.
   * @throws QueenError `quota_exceeded` (403), `storage_quota_exceeded` (403), `payload_too_large` (413)
   */
  over(tenant: string, cluster: string, limit: string, message: string, code: ErrorCode = 'quota_exceeded'): void {
    this.meter.decision(tenant, code, this.enforce);
    if (this.enforce) throw new QueenError(code, message);
    this.log.warn({ cluster, limit, code }, 'shadow mode: request over a cluster quota let through (QUEEN_PROXY_ENFORCE=false)');
  }

  /**
   * Takes a parked long-poll slot of `cluster` (limit `max`, undefined = unlimited); the returned
   * function gives it back. Over the limit: see {@link over}.
   */
  park(tenant: string, cluster: string, slug: string, max: number | undefined): () => void {
    const n = this.parked.get(cluster) ?? 0;
    if (max !== undefined && n >= max) this.over(tenant, slug, 'max_parked_pops', `the plan allows ${max} parked long-polls at once`);
    this.parked.set(cluster, n + 1);
    this.meter.parked(tenant, 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.meter.parked(tenant, -1);
      const left = (this.parked.get(cluster) ?? 1) - 1;
      if (left <= 0) this.parked.delete(cluster);
      else this.parked.set(cluster, left);
    };
  }

  /** The check the broker router runs on a forwarded request's parsed body, for cluster `clusterId` (`slug`) with `limits`. */
  check(clusterId: string, slug: string, limits: Limits): QuotaCheck {
    return async ({ method, path, body, tenant, bytes }) => {
      if (method === 'DELETE' && path.startsWith('/api/v1/resources/queues/')) {
        // A queue deleted through this proxy: once it is gone, the next creation reads the counts again.
        return () => { this.shapes.delete(tenant); };
      }
      if (method !== 'POST') return;
      const b = typeof body === 'object' && body !== null ? body as Obj : {};
      let produce: Produce | undefined;
      if (path === '/api/v1/configure' && typeof b.queue === 'string') {
        const options = typeof b.options === 'object' && b.options !== null ? b.options as Obj : {};
        const max = num(limits.max_retention_seconds);
        for (const k of ['retentionSeconds', 'completedRetentionSeconds']) {
          const v = num(options[k]);
          if (max !== undefined && v !== undefined && v > max) this.over(tenant, slug, 'max_retention_seconds', `${k} ${v} is over the plan's ${max} s`);
        }
        produce = { partitions: new Map([[b.queue, new Set<string>()]]), messages: 0 };
      } else {
        produce = produceOf(path, b);
        if (!produce || (body === undefined && !REPLAY.test(path))) return;
        const cap = num(limits.max_batch_items);
        if (cap !== undefined && produce.messages > cap) {
          throw new QueenError('payload_too_large', `${path === '/api/v1/push' ? 'items has' : path === '/api/v1/transaction' ? 'the transaction pushes' : 'this request pushes'} ${produce.messages} entries; the plan allows ${cap}`);
        }
        const maxBytes = num(limits.max_retained_bytes);
        if (maxBytes !== undefined && produce.messages > 0) await this.checkStored(tenant, slug, maxBytes);
      }
      const release = await this.reserve(tenant, slug, produce, num(limits.max_queues), num(limits.max_partitions_per_queue));
      try {
        this.chargeMessages(clusterId, tenant, slug, produce.messages, num(limits.max_msgs_per_sec), num(limits.msgs_burst));
      } catch (e) {
        release?.(0); // refused here: nothing was created
        throw e;
      }
      const s = this.stored.get(tenant);
      if (s && produce.messages > 0) s.admitted += bytes;
      return release;
    };
  }

  // ------------------------------------------------------------------ messages per second

  /**
   * Charges `n` messages to the cluster's message bucket (`rate`/s, `burst`, default = rate).
   * @throws RateRefusal (429) when the bucket is short; QueenError `payload_too_large` when `n` > burst (enforcing)
   */
  private chargeMessages(clusterId: string, tenant: string, slug: string, n: number, rate: number | undefined, burst: number | undefined): void {
    if (rate === undefined || n === 0) return;
    const size = Math.max(1, burst ?? rate);
    if (n > size) {
      // Never affordable, however long the client waits: refused as too large rather than 429.
      this.over(tenant, slug, 'msgs_burst', `this request carries ${n} messages; the plan's msgs_burst is ${size}: split it`, 'payload_too_large');
      return;
    }
    const c = this.messages.charge(clusterId, rate, size, n);
    if (c.ok) return;
    this.meter.decision(tenant, 'rate_limited', this.enforce);
    if (this.enforce) throw new RateRefusal(`cluster message rate exceeded (max_msgs_per_sec ${rate})`, c.retryAfterS);
    this.log.warn({ cluster: slug, limit: 'max_msgs_per_sec', code: 'rate_limited' }, 'shadow mode: request over the cluster message rate let through (QUEEN_PROXY_ENFORCE=false)');
  }

  // ------------------------------------------------------------------ stored bytes

  private sample(tenant: string, s: Stored): Promise<void> {
    if (s.loading) return s.loading;
    const at = this.clock.now();
    const base = s.admitted;
    s.loading = this.reads.retainedBytes(tenant).then((bytes) => {
      Object.assign(s, { bytes, at, base });
    }, (e: unknown) => {
      this.log.warn({ err: e }, 'reading a tenant\'s stored bytes failed; the last sample stays');
    }).finally(() => { s.loading = undefined; });
    return s.loading;
  }

  /** Refuses a Produce while the tenant's stored bytes reach `max` (see the module comment). */
  private async checkStored(tenant: string, slug: string, max: number): Promise<void> {
    let s = this.stored.get(tenant);
    if (!s) {
      s = { bytes: 0, at: 0, base: 0, admitted: 0, loading: undefined };
      this.stored.set(tenant, s);
      await this.sample(tenant, s);
    } else if (s.at === 0 && s.loading) {
      await s.loading; // the first sample is still being read: decide on it, not on 0
    } else if (this.clock.now() - s.at >= this.storageSampleMs) {
      void this.sample(tenant, s); // decided on the last sample; the next request sees the new one
    }
    const estimate = () => s.bytes + s.admitted - s.base;
    if (estimate() < max) return;
    if (this.clock.now() - s.at >= RECHECK_MS) await this.sample(tenant, s);
    const now = estimate();
    if (now >= max) this.over(tenant, slug, 'max_retained_bytes', `the cluster stores ${now} bytes; the plan allows ${max}`, 'storage_quota_exceeded');
  }

  // ------------------------------------------------------------------ queues and partitions

  private async shape(tenant: string, fresh: boolean): Promise<Shape> {
    const have = this.shapes.get(tenant);
    if (have && !fresh) return have;
    let loading = this.loadingShapes.get(tenant);
    if (!loading) {
      const at = this.clock.now();
      loading = this.reads.partitionCounts(tenant).then((counts) => {
        const s = this.shapes.get(tenant);
        if (s) return Object.assign(s, { counts, at });
        const created: Shape = { counts, at, pendingQueues: new Map(), pendingParts: new Map() };
        this.shapes.set(tenant, created);
        return created;
      }).finally(() => this.loadingShapes.delete(tenant));
      this.loadingShapes.set(tenant, loading);
    }
    return loading;
  }

  /**
   * Decides the queues and partitions `produce` may create, and reserves them until the returned
   * release runs with the answer's status (2xx: counted as created; else dropped).
   * @throws QueenError `quota_exceeded` (enforcing)
   */
  private async reserve(tenant: string, slug: string, produce: Produce, maxQueues: number | undefined, maxParts: number | undefined): Promise<((status: number) => void) | undefined> {
    if (maxQueues === undefined && maxParts === undefined) return undefined;
    let shape = this.shapes.get(tenant);
    const knownKey = (q: string, p: string) => `${tenant}\u0000${q}\u0000${p}`;
    const unknownQueue = (s: Shape | undefined, q: string) => !s || (!s.counts.has(q) && !s.pendingQueues.has(q));
    const unknownParts = (q: string) => maxParts === undefined ? [] : [...produce.partitions.get(q)!].filter((p) => !this.known.has(knownKey(q, p)));
    const needsRead = [...produce.partitions.keys()].some((q) => unknownQueue(shape, q) || unknownParts(q).length > 0);
    if (!needsRead) return undefined; // nothing new: no store read, no reservation
    if (!shape || this.clock.now() - shape.at >= SHAPE_TTL_MS) shape = await this.shape(tenant, true);
    // Partitions the cache does not know, in queues that exist: one point read each.
    if (maxParts !== undefined) {
      const lookups: Promise<void>[] = [];
      for (const q of produce.partitions.keys()) {
        if (!shape.counts.has(q)) continue;
        for (const p of unknownParts(q)) {
          lookups.push(this.reads.partitionExists(tenant, q, p).then((yes) => { if (yes) this.noteKnown(knownKey(q, p)); }));
        }
      }
      await Promise.all(lookups);
    }
    const decide = (s: Shape) => {
      const newQueues = [...produce.partitions.keys()].filter((q) => unknownQueue(s, q));
      let queueTotal = s.counts.size;
      for (const q of s.pendingQueues.keys()) if (!s.counts.has(q)) queueTotal++;
      const newParts = new Map<string, string[]>();
      let partsOver: { queue: string; total: number } | undefined;
      if (maxParts !== undefined) {
        for (const [q, parts] of produce.partitions) {
          const pending = s.pendingParts.get(q);
          const fresh = [...parts].filter((p) => !this.known.has(knownKey(q, p)) && !pending?.has(p));
          if (fresh.length === 0) continue;
          newParts.set(q, fresh);
          const total = (s.counts.get(q) ?? 0) + (pending?.size ?? 0) + fresh.length;
          if (total > maxParts && !partsOver) partsOver = { queue: q, total };
        }
      }
      const queuesOver = maxQueues !== undefined && newQueues.length > 0 && queueTotal + newQueues.length > maxQueues;
      return { newQueues, newParts, queuesOver, queueTotal, partsOver };
    };
    let d = decide(shape);
    if ((d.queuesOver || d.partsOver) && this.clock.now() - shape.at >= RECHECK_MS) {
      shape = await this.shape(tenant, true);
      d = decide(shape);
    }
    if (d.queuesOver) this.over(tenant, slug, 'max_queues', `the plan allows ${maxQueues} queues; this request would make ${d.queueTotal + d.newQueues.length}`);
    if (d.partsOver) this.over(tenant, slug, 'max_partitions_per_queue', `the plan allows ${maxParts} partitions per queue (max_partitions_per_queue); this request would make ${d.partsOver.total} in queue ${d.partsOver.queue}`);
    // Reserve (no await from the decision to here: concurrent requests of this node see it).
    const s = shape;
    for (const q of d.newQueues) s.pendingQueues.set(q, (s.pendingQueues.get(q) ?? 0) + 1);
    for (const [q, parts] of d.newParts) {
      let m = s.pendingParts.get(q);
      if (!m) s.pendingParts.set(q, m = new Map<string, number>());
      for (const p of parts) m.set(p, (m.get(p) ?? 0) + 1);
    }
    let released = false;
    return (status: number) => {
      if (released) return;
      released = true;
      // The request is over: a 2xx created what it named (a transaction answered 200 with
      // success:false is over-counted until the next read); any other answer created nothing.
      const created = status >= 200 && status < 300;
      for (const q of d.newQueues) {
        const n = (s.pendingQueues.get(q) ?? 1) - 1;
        if (n > 0) s.pendingQueues.set(q, n);
        else s.pendingQueues.delete(q);
        if (created && !s.counts.has(q)) s.counts.set(q, 0);
      }
      for (const [q, parts] of d.newParts) {
        const m = s.pendingParts.get(q);
        for (const p of parts) {
          const n = (m?.get(p) ?? 1) - 1;
          if (n > 0) m!.set(p, n);
          else m?.delete(p);
          const k = knownKey(q, p);
          if (created && !this.known.has(k)) {
            this.noteKnown(k);
            s.counts.set(q, (s.counts.get(q) ?? 0) + 1);
          }
        }
        if (m && m.size === 0) s.pendingParts.delete(q);
      }
    };
  }

  private noteKnown(key: string): void {
    if (this.known.size >= KNOWN_MAX) this.known.clear();
    this.known.add(key);
  }
}
