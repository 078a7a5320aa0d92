/**
 * The ephemeral (RAM-only) queue engine of one process (docs/ephemeral.md): push, pop, ack,
 * configure, reset, delete and the status reads over in-memory rings. Nothing touches the store
 * but declarations and the kill switch (src/storage/contract.ts `EphemeralSubStore`, settings).
 * Rules restated from the public reference's server/src/ephemeral.rs and
 * webdoc/src/content/docs/reference/http/ephemeral.mdx.
 */
import type { EphemeralConfig } from '../../config/ephemeral.js';
import { QueenError } from '../../errors.js';
import { DEFAULT_TENANT, type QueueBackend } from '../../storage/contract.js';
import type { Clock, ClockTimer } from '../../util/clock.js';
import { MinHeap } from '../../util/heap.js';
import { hasBadNameChars } from '../../util/names.js';
import { formatId, idStem, newEpoch, parseOwnId } from './ids.js';
import { defaultOptions, optionsInForce, validateOptions } from './options.js';
import { EphemeralQueue } from './queue.js';
import { Ring, type GroupCursor } from './ring.js';
import { TokenBuckets } from './rate.js';

/** The consumer group of a pop without `group` (one shared cursor). */
export const QUEUE_MODE = '__QUEUE_MODE__';
/** Largest push batch, ack batch and pop batch. */
export const MAX_ITEMS = 10_000;
/** Queues one process keeps (implicit creation past it answers 503 ephemeral_unavailable). */
export const MAX_QUEUES = 100_000;
/** Declarations loaded per tenant at boot. */
const MAX_DECLARATIONS = 10_000;
/** The settings key of the kill switch (absent = on). */
const ENABLED_KEY = 'ephemeral.enabled';
/** Cadence of the TTL / idle-collection sweep, ms. */
const SWEEP_MS = 500;

/** A delivered message. */
export interface EphemeralMessage {
  id: string;
  partition: string;
  attempts: number;
  /** The exact JSON text received. */
  payload: string;
}

/** Pop parameters (already bounded by the caller). */
export interface EphemeralPop {
  partition: string | undefined;
  group: string;
  batch: number;
  wait: boolean;
  timeoutMs: number;
  commitOnDelivery: boolean;
  /** Aborted when the client went away: nothing is claimed for it afterwards. */
  signal?: AbortSignal;
}

/** One ack outcome (docs/ephemeral.md#ack). */
/** One group's position in a shipped ring, counted from the ring's first shipped message (docs/ephemeral.md#multi-node). */
export interface ShippedGroup {
  g: string;
  next: number;
  redeliver: number[];
  attempts: [number, number][];
  skipped: number;
}

/** A ring as one node ships it to another (`POST /api/v1/ephemeral/_adopt`, docs/ephemeral.md#multi-node). */
export interface ShippedRing {
  queue: string;
  partition: string;
  /** `t` enqueue time (epoch ms), `p` the payload's exact JSON text. */
  messages: { t: number; p: string }[];
  groups: ShippedGroup[];
}

export type AckOutcome = 'acked' | 'redelivered' | 'stale' | 'unknown';

/** Counters for Prometheus. */
export interface EphemeralCounters {
  pushed: number;
  popped: number;
  acked: number;
  dropped: { bounds: number; ttl: number; retry: number };
}

interface LeaseEntry {
  q: EphemeralQueue;
  ring: Ring;
  g: GroupCursor;
}

/**
 * Checks a queue, partition or group name: non-empty, ≤ 512 UTF-8 bytes, no byte below 0x20, and no
 * lone UTF-16 surrogate (it has no UTF-8 form: a declared queue so named would come back from the
 * store under another name; the durable names refuse it too, src/util/names.ts).
 * @throws QueenError `ephemeral_bad_request`
 */
export function checkName(value: string, what: string): void {
  if (value === '') throw new QueenError('ephemeral_bad_request', `${what} must not be empty`);
  if (Buffer.byteLength(value) > 512) throw new QueenError('ephemeral_bad_request', `${what} is longer than 512 bytes`);
  for (let i = 0; i < value.length; i++) {
    if (value.charCodeAt(i) < 0x20) throw new QueenError('ephemeral_bad_request', `control characters are not allowed in ${what}`);
  }
  if (hasBadNameChars(value)) throw new QueenError('ephemeral_bad_request', `a lone UTF-16 surrogate is not allowed in ${what}`);
}

/** The ephemeral engine (see the module comment). */
export class EphemeralEngine {
  /** Random 64-bit number drawn at process start (hex); ids of another epoch answer `stale`. */
  readonly epoch = newEpoch();
  /** The tenant of requests without one (docs/storage.md#schema). */
  readonly defaultTenant = DEFAULT_TENANT;
  private readonly queues = new Map<string, EphemeralQueue>();
  private incarnations = 0;
  /** Payload bytes held by every queue of this process. */
  cellBytes = 0;
  enabled = true;
  readonly counters: EphemeralCounters = { pushed: 0, popped: 0, acked: 0, dropped: { bounds: 0, ttl: 0, retry: 0 } };
  private readonly leaseHeap = new MinHeap<LeaseEntry>();
  private leaseTimer: ClockTimer | undefined;
  private leaseTimerAt = Infinity;
  private sweepTimer: ClockTimer | undefined;
  private readonly buckets: TokenBuckets;
  private closed = false;

  constructor(private readonly backend: QueueBackend, readonly config: EphemeralConfig, private readonly clock: Clock) {
    this.buckets = new TokenBuckets(config.rate, config.burst);
  }

  private key(tenant: string, queue: string): string {
    return `${tenant}\u001feph:${queue}`;
  }

  private nextIncarnation = (): number => ++this.incarnations;

  /** Loads declarations (re-created empty) and the kill switch, then starts the sweeper. Call before serving. */
  async load(): Promise<void> {
    const now = this.clock.now();
    for (const d of await this.backend.ephemeral.list(MAX_DECLARATIONS)) {
      let sent: Record<string, unknown> = {};
      try {
        const parsed = JSON.parse(d.options) as unknown;
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) sent = parsed as Record<string, unknown>;
      } catch { /* a damaged row declares with defaults */ }
      this.queues.set(this.key(d.tenant, d.queue), new EphemeralQueue(d.tenant, d.queue, 'declared', optionsInForce(sent, this.config), now));
    }
    this.enabled = (await this.backend.admin.setting(ENABLED_KEY)) !== 'false';
    this.armSweep();
  }

  /** Stops the timers and answers every parked pop (empty). */
  close(): void {
    this.closed = true;
    if (this.sweepTimer) this.clock.clearTimer(this.sweepTimer);
    if (this.leaseTimer) this.clock.clearTimer(this.leaseTimer);
    for (const q of this.queues.values()) q.wake();
  }

  /** Number of queues held. */
  get queueCount(): number {
    return this.queues.size;
  }

  /** Parked pops, every queue. */
  get parked(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.waiters.size;
    return n;
  }

  /**
   * Sets the kill switch; stored first (docs/ephemeral.md#kill-switch).
   * @throws Error when the store write fails
   */
  async setEnabled(enabled: boolean): Promise<void> {
    await this.backend.admin.setSetting(ENABLED_KEY, String(enabled));
    this.enabled = enabled;
  }

  /**
   * Gates every route, in the order of docs/ephemeral.md#common-rules: the kill switch, the tenant's
   * grant, then (push only) the tenant's message rate. The default tenant never needs a grant; others
   * need one when `QUEEN_EPHEMERAL_REQUIRE_GRANT` is on, and this broker keeps no grant rows.
   * @param messages messages a push carries (0 = not a push)
   * @throws QueenError `ephemeral_disabled`, `feature_gated` or `rate_limited` (`retryAfterS` in `extra`)
   */
  gate(tenant: string, messages: number): void {
    if (!this.enabled) throw new QueenError('ephemeral_disabled', undefined, { retryAfterS: 5 });
    if (this.config.requireGrant && tenant !== this.defaultTenant) throw new QueenError('feature_gated');
    if (messages > 0) {
      const waitMs = this.buckets.take(tenant, messages, this.clock.now());
      if (waitMs > 0) throw new QueenError('rate_limited', undefined, { retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) });
    }
  }

  private queue(tenant: string, name: string, now: number): EphemeralQueue {
    const k = this.key(tenant, name);
    let q = this.queues.get(k);
    if (!q) {
      if (this.queues.size >= MAX_QUEUES) throw new QueenError('ephemeral_unavailable', 'this broker holds as many ephemeral queues as it may');
      this.queues.set(k, (q = new EphemeralQueue(tenant, name, 'implicit', defaultOptions(this.config), now)));
    }
    q.touchedAt = now;
    return q;
  }

  /** The queue if it exists (no creation). */
  find(tenant: string, name: string): EphemeralQueue | undefined {
    return this.queues.get(this.key(tenant, name));
  }

  /**
   * Appends every payload or none (docs/ephemeral.md#push); wakes parked pops.
   * @param payloads exact JSON texts
   * @returns how many were appended
   * @throws QueenError `queue_full` (429), `ephemeral_unavailable` (503)
   */
  push(tenant: string, queueName: string, partition: string, payloads: string[]): number {
    if (payloads.length === 0) return 0;
    const now = this.clock.now();
    const q = this.queue(tenant, queueName, now);
    this.expireTtl(q, now);
    let bytes = 0;
    const sizes = payloads.map((p) => {
      const b = Buffer.byteLength(p);
      bytes += b;
      return b;
    });
    const o = q.options;
    const fits = (): boolean => q.length + payloads.length <= o.maxLength && q.bytes + bytes <= o.maxBytes;
    if (!fits()) {
      const ring = q.rings.get(partition);
      if (o.policy !== 'dropOldest' || payloads.length > o.maxLength || bytes > o.maxBytes || !ring) {
        throw new QueenError('queue_full', `ephemeral queue ${queueName} is full (maxLength ${o.maxLength}, maxBytes ${o.maxBytes}, policy ${o.policy})`);
      }
      while (!fits() && ring.length > 0) {
        const m = ring.dropHead(true)!;
        this.forget(q, m.bytes, 1);
        q.drops.bounds++;
        this.counters.dropped.bounds++;
      }
      if (!fits()) throw new QueenError('queue_full', `ephemeral queue ${queueName} is full and partition ${partition} has nothing left to drop`);
    }
    if (this.config.maxBytes > 0 && this.cellBytes + bytes > this.config.maxBytes) {
      throw new QueenError('ephemeral_unavailable', `this broker holds ${this.cellBytes} ephemeral bytes of ${this.config.maxBytes} (QUEEN_EPHEMERAL_MAX_BYTES)`);
    }
    const ring = q.ring(partition, true, this.nextIncarnation, now);
    for (let i = 0; i < payloads.length; i++) ring.append(payloads[i]!, sizes[i]!, now);
    ring.touchedAt = now;
    q.length += payloads.length;
    q.bytes += bytes;
    this.cellBytes += bytes;
    this.counters.pushed += payloads.length;
    q.wake();
    return payloads.length;
  }

  private forget(q: EphemeralQueue, bytes: number, count: number): void {
    q.bytes -= bytes;
    q.length -= count;
    this.cellBytes -= bytes;
  }

  private expireTtl(q: EphemeralQueue, now: number): void {
    const ttl = q.options.ttlSeconds;
    if (ttl <= 0 || q.length === 0) return;
    const cut = now - ttl * 1000;
    for (const ring of q.rings.values()) {
      while (ring.length > 0 && ring.first()!.at <= cut) {
        const m = ring.dropHead(true)!;
        this.forget(q, m.bytes, 1);
        q.drops.ttl++;
        this.counters.dropped.ttl++;
      }
    }
  }

  private take(q: EphemeralQueue, p: EphemeralPop, want: number, out: EphemeralMessage[], now: number): void {
    const rings = p.partition !== undefined ? [q.rings.get(p.partition)].filter((r): r is Ring => r !== undefined) : q.sortedRings();
    const leaseMs = q.options.leaseSeconds * 1000;
    for (const ring of rings) {
      if (out.length >= want) break;
      const g = ring.group(p.group);
      const before = out.length;
      const stem = idStem(this.epoch, ring.partition, ring.incarnation);
      // `fresh`: read forward from the cursor, so no attempts or lease exist for it yet. A first
      // delivery stores no attempts (absent = 1, see GroupCursor.attempts): one map write less per message.
      const deliver = (local: number, fresh: boolean): void => {
        const m = ring.at(local);
        if (!m) return;
        const attempts = fresh ? 1 : (g.attempts.get(local) ?? 1) + 1;
        if (p.commitOnDelivery) {
          if (!fresh) g.attempts.delete(local);
        } else {
          if (!fresh) {
            g.attempts.set(local, attempts);
            g.leases.delete(local); // re-inserted last: the map stays in expiry order
          }
          g.leases.set(local, now + leaseMs);
        }
        const id = stem.base !== undefined ? stem.prefix + String(stem.base + local) : formatId(this.epoch, ring.partition, ring.incarnation, local);
        out.push({ id, partition: ring.partition, attempts, payload: m.payload });
      };
      while (out.length < want && g.redeliver.length > 0) deliver(g.redeliver.shift()!, false);
      if (g.next < ring.headLocal) g.next = ring.headLocal;
      while (out.length < want && g.next < ring.nextLocal) deliver(g.next++, true);
      if (out.length > before) {
        ring.touchedAt = now;
        if (!p.commitOnDelivery) this.scheduleLeases(q, ring, g);
        else this.reclaim(q, ring);
      }
    }
  }

  /**
   * Delivers up to `batch` messages, long-polling when `wait` (docs/ephemeral.md#pop).
   * @returns the delivered messages (possibly none)
   */
  async pop(tenant: string, queueName: string, p: EphemeralPop): Promise<EphemeralMessage[]> {
    const start = this.clock.now();
    const q = this.queue(tenant, queueName, start);
    q.rememberGroup(p.group);
    for (const ring of q.rings.values()) ring.group(p.group);
    const out: EphemeralMessage[] = [];
    const wb = q.options.windowBuffer;
    let deadline = start + p.timeoutMs;
    let firstAt: number | undefined;
    q.inUse++;
    try {
      for (;;) {
        if (p.signal?.aborted) return out;
        const now = this.clock.now();
        this.sweepLeases(now);
        this.expireTtl(q, now);
        this.take(q, p, p.batch, out, now);
        if (out.length > 0 && firstAt === undefined) {
          firstAt = now;
          if (wb.ms > 0) deadline = Math.min(deadline, now + wb.ms);
        }
        const waited = now - start;
        const ready = out.length > 0 && (out.length >= p.batch || (wb.ms === 0 && wb.count === 0) || (wb.count > 0 && out.length >= wb.count) || (wb.ms > 0 && waited >= wb.ms));
        if (ready || !p.wait || this.closed || q.deleted || now >= deadline) break;
        await this.park(q, deadline - now, p.signal);
      }
      this.counters.popped += out.length;
      return out;
    } finally {
      q.inUse--;
      q.touchedAt = this.clock.now();
    }
  }

  private park(q: EphemeralQueue, ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: ClockTimer | undefined = undefined;
      const done = (): void => {
        q.waiters.delete(done);
        if (timer) this.clock.clearTimer(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      q.waiters.add(done);
      timer = this.clock.setTimer(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Settles acks (docs/ephemeral.md#ack); one outcome per id, in order.
   * @param acks `{id, status}` with status already normalised
   */
  ack(tenant: string, queueName: string, group: string, acks: { id: unknown; status: 'completed' | 'failed' }[]): AckOutcome[] {
    const now = this.clock.now();
    const q = this.find(tenant, queueName);
    this.sweepLeases(now);
    const touched = new Set<Ring>();
    let woken = false;
    const prefix = `e:${this.epoch}:`;
    let ring: Ring | undefined;
    let g: GroupCursor | undefined;
    const results = acks.map(({ id, status }): AckOutcome => {
      const parsed = parseOwnId(id, prefix);
      if (parsed === 'stale') return 'stale';
      if (!q || !parsed) return 'unknown';
      if (ring?.partition !== parsed.partition) { // an ack batch is mostly one partition
        ring = q.rings.get(parsed.partition);
        g = ring?.groups.get(group);
      }
      if (!ring || !g || ring.incarnation !== parsed.incarnation || !g.leases.delete(parsed.local)) return 'unknown';
      touched.add(ring);
      if (status === 'completed') {
        g.attempts.delete(parsed.local);
        this.counters.acked++;
        return 'acked';
      }
      if ((g.attempts.get(parsed.local) ?? 1) >= q.options.retryLimit) {
        g.attempts.delete(parsed.local);
        q.drops.retry++;
        this.counters.dropped.retry++;
        return 'acked';
      }
      Ring.redeliver(g, parsed.local);
      woken = true;
      return 'redelivered';
    });
    if (q) {
      q.touchedAt = now;
      for (const ring of touched) {
        ring.touchedAt = now;
        this.reclaim(q, ring);
      }
      if (woken) q.wake();
    }
    return results;
  }

  private reclaim(q: EphemeralQueue, ring: Ring): void {
    const freed = ring.reclaim();
    if (freed.count > 0) this.forget(q, freed.bytes, freed.count);
  }

  private scheduleLeases(q: EphemeralQueue, ring: Ring, g: GroupCursor): void {
    if (g.scheduled) return;
    const first = g.leases.values().next();
    if (first.done) return;
    g.scheduled = true;
    this.leaseHeap.push(first.value, { q, ring, g });
    this.armLeaseTimer();
  }

  private armLeaseTimer(): void {
    const at = this.leaseHeap.peekAt();
    if (at === undefined || at >= this.leaseTimerAt || this.closed) return;
    if (this.leaseTimer) this.clock.clearTimer(this.leaseTimer);
    this.leaseTimerAt = at;
    this.leaseTimer = this.clock.setTimer(() => {
      this.leaseTimer = undefined;
      this.leaseTimerAt = Infinity;
      this.sweepLeases(this.clock.now());
    }, at - this.clock.now());
  }

  /** Expired leases become redeliveries, or drops once attempts reached `retryLimit` (docs/ephemeral.md#engine). */
  private sweepLeases(now: number): void {
    while ((this.leaseHeap.peekAt() ?? Infinity) <= now) {
      const { q, ring, g } = this.leaseHeap.pop()!;
      g.scheduled = false;
      let woken = false;
      for (const [local, exp] of g.leases) {
        if (exp > now) break;
        g.leases.delete(local);
        if ((g.attempts.get(local) ?? 1) >= q.options.retryLimit) {
          g.attempts.delete(local);
          q.drops.retry++;
          this.counters.dropped.retry++;
        } else {
          Ring.redeliver(g, local);
          woken = true;
        }
      }
      this.reclaim(q, ring);
      if (woken) q.wake();
      this.scheduleLeases(q, ring, g);
    }
    this.armLeaseTimer();
  }

  private armSweep(): void {
    if (this.closed) return;
    this.sweepTimer = this.clock.setTimer(() => {
      this.sweep(this.clock.now());
      this.armSweep();
    }, SWEEP_MS);
  }

  /** TTL drops, empty-ring release and implicit-queue collection (docs/ephemeral.md#engine). */
  sweep(now: number): void {
    this.sweepLeases(now);
    const implicitIdleMs = this.config.implicitIdleS * 1000;
    for (const [k, q] of this.queues) {
      this.expireTtl(q, now);
      for (const [p, ring] of q.rings) {
        if (ring.length === 0 && now - ring.touchedAt >= this.config.idleGcMs && q.inUse === 0) {
          let leased = false;
          for (const g of ring.groups.values()) if (g.leases.size > 0) leased = true;
          if (!leased) q.dropRing(p);
        }
      }
      if (q.tier === 'implicit' && implicitIdleMs > 0 && q.length === 0 && q.inUse === 0 && now - q.touchedAt >= implicitIdleMs) {
        q.deleted = true;
        q.wake();
        this.drop(q);
        this.queues.delete(k);
      }
    }
  }

  private drop(q: EphemeralQueue): number {
    let n = 0;
    for (const ring of q.rings.values()) {
      n += ring.clear();
      for (const g of ring.groups.values()) g.scheduled = false;
    }
    this.cellBytes -= q.bytes;
    q.bytes = 0;
    q.length = 0;
    q.dropRings();
    return n;
  }

  /**
   * Stores a declaration, then applies it (docs/ephemeral.md#configure).
   * @returns the stored row: the options as sent and the write time (epoch ms)
   * @throws QueenError `ephemeral_bad_request`, `ephemeral_configure_failed`
   */
  async configure(tenant: string, queueName: string, rawOptions: unknown): Promise<{ options: Record<string, unknown>; updatedAt: number }> {
    const sent = validateOptions(rawOptions);
    const now = this.clock.now();
    try {
      await this.backend.ephemeral.put({ tenant, queue: queueName, options: JSON.stringify(sent), updatedAt: now });
    } catch (e) {
      throw new QueenError('ephemeral_configure_failed', `the declaration could not be stored: ${(e as Error).message}`);
    }
    const q = this.queue(tenant, queueName, now);
    q.tier = 'declared';
    q.options = optionsInForce(sent, this.config);
    q.wake();
    return { options: sent, updatedAt: now };
  }

  /** Drops every message, voids leases, moves cursors to the tail; the declaration stays. Returns messages dropped. */
  reset(tenant: string, queueName: string): number {
    const q = this.find(tenant, queueName);
    if (!q) return 0;
    let n = 0;
    for (const ring of q.rings.values()) n += ring.clear();
    this.cellBytes -= q.bytes;
    q.bytes = 0;
    q.length = 0;
    return n;
  }

  /**
   * Removes a queue: memory first, then its declaration (docs/ephemeral.md#reset-and-delete).
   * @throws QueenError `ephemeral_delete_failed` when the row removal fails
   */
  async delete(tenant: string, queueName: string): Promise<{ deleted: boolean; declared: boolean }> {
    const k = this.key(tenant, queueName);
    const q = this.queues.get(k);
    if (q) {
      this.drop(q);
      this.queues.delete(k);
      q.deleted = true;
      q.wake();
    }
    let declared: boolean;
    try {
      declared = await this.backend.ephemeral.delete(tenant, queueName);
    } catch (e) {
      throw new QueenError('ephemeral_delete_failed', `the rings were dropped but the declaration was not: ${(e as Error).message}`);
    }
    return { deleted: q !== undefined || declared, declared };
  }

  /** Every (tenant, queue, partition) whose ring holds messages here, for hand-over (docs/ephemeral.md#multi-node). */
  heldRings(): { tenant: string; queue: string; partition: string }[] {
    const out: { tenant: string; queue: string; partition: string }[] = [];
    for (const q of this.queues.values()) for (const r of q.rings.values()) if (r.length > 0) out.push({ tenant: q.tenant, queue: q.name, partition: r.partition });
    return out;
  }

  /**
   * Removes a ring and answers it in the hand-over shape of docs/ephemeral.md#multi-node: the held
   * messages (`t` enqueue time ms, `p` the exact JSON text) and each group's position counted from
   * the first shipped message (`next`, `redeliver`, `attempts`; leased messages are shipped as
   * redeliveries, since their ids become stale on the new owner).
   * @returns undefined when the ring holds nothing (it is released all the same)
   */
  takeRing(tenant: string, queueName: string, partition: string): ShippedRing | undefined {
    const q = this.find(tenant, queueName);
    const ring = q?.ring(partition, false);
    if (!q || !ring) return undefined;
    const base = ring.headLocal;
    const messages: { t: number; p: string }[] = [];
    for (let local = base; local < ring.nextLocal; local++) {
      const m = ring.at(local);
      if (m) messages.push({ t: m.at, p: m.payload });
    }
    const groups: ShippedGroup[] = [];
    for (const [name, g] of ring.groups) {
      const again = new Set<number>([...g.redeliver, ...g.leases.keys()].filter((l) => l >= base).map((l) => l - base));
      groups.push({
        g: name, next: Math.max(0, g.next - base), redeliver: [...again].sort((a, b) => a - b),
        attempts: [...g.attempts].filter(([l]) => l >= base).map(([l, n]) => [l - base, n] as [number, number]), skipped: g.skipped,
      });
      g.leases.clear();
      g.redeliver = [];
      g.attempts.clear();
    }
    this.forget(q, ring.bytes, ring.length);
    q.dropRing(partition);
    return messages.length === 0 ? undefined : { queue: queueName, partition, messages, groups };
  }

  /**
   * Takes over rings shipped by another node (docs/ephemeral.md#multi-node). A ring whose names are
   * invalid, or that does not fit this node's bounds (queue length and bytes, the node ceiling), is
   * refused whole. Into an empty ring the groups' positions are restored; into a ring that already
   * holds messages the moved ones are appended and the groups keep their positions.
   * @returns messages adopted and rings refused
   */
  adopt(tenant: string, rings: readonly ShippedRing[]): { adopted: number; refusedRings: number } {
    let adopted = 0;
    let refusedRings = 0;
    const now = this.clock.now();
    for (const r of rings) {
      try {
        checkName(r.queue, 'queue');
        checkName(r.partition, 'partition');
      } catch {
        refusedRings++;
        continue;
      }
      if (r.messages.length === 0) continue;
      const q = this.queue(tenant, r.queue, now);
      let bytes = 0;
      const sizes = r.messages.map((m) => {
        const b = Buffer.byteLength(m.p);
        bytes += b;
        return b;
      });
      const o = q.options;
      if (q.length + r.messages.length > o.maxLength || q.bytes + bytes > o.maxBytes || (this.config.maxBytes > 0 && this.cellBytes + bytes > this.config.maxBytes)) {
        refusedRings++;
        continue;
      }
      const ring = q.ring(r.partition, true, this.nextIncarnation, now);
      const fresh = ring.length === 0;
      const base = ring.nextLocal;
      for (let i = 0; i < r.messages.length; i++) ring.append(r.messages[i]!.p, sizes[i]!, r.messages[i]!.t);
      if (fresh) {
        const n = r.messages.length;
        const inRange = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < n;
        for (const sg of r.groups) {
          if (typeof sg.g !== 'string' || sg.g === '') continue;
          q.rememberGroup(sg.g);
          const g = ring.group(sg.g);
          g.next = base + (Number.isSafeInteger(sg.next) ? Math.min(Math.max(0, sg.next), n) : 0);
          g.redeliver = [...new Set(sg.redeliver.filter(inRange))].sort((a, b) => a - b).filter((l) => base + l < g.next).map((l) => base + l);
          for (const [l, a] of sg.attempts) if (inRange(l) && g.redeliver.includes(base + l) && Number.isSafeInteger(a) && a > 1) g.attempts.set(base + l, a);
          g.skipped = Number.isSafeInteger(sg.skipped) ? sg.skipped : 0;
        }
      }
      ring.touchedAt = now;
      q.length += r.messages.length;
      q.bytes += bytes;
      this.cellBytes += bytes;
      adopted += r.messages.length;
      this.reclaim(q, ring);
      q.wake();
    }
    return { adopted, refusedRings };
  }

  /** A tenant's queues, sorted by name. */
  list(tenant: string): EphemeralQueue[] {
    return [...this.queues.values()].filter((q) => q.tenant === tenant).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}
