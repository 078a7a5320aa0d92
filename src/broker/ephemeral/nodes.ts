/**
 * Ephemeral queues on several nodes sharing one PostgreSQL database (docs/ephemeral.md#multi-node,
 * docs/cluster.md#ephemeral-queues-on-several-nodes).
 *
 * - Placement: the owner of `(tenant, queue, partition)` is the rendezvous (highest-random-weight)
 *   winner over the candidates: score = xxh3-64 of `tenant \x1f "eph:" queue \x1f partition` seeded
 *   with xxh3-64 of the node's server id; ties go to the smaller server id. Candidates = this node
 *   (unless stopping) and the live membership rows whose `GET /api/v1/ephemeral/_ready` answered
 *   (probed once per server id and epoch, 1 s deadline; a 4xx counts as ready, a 5xx or no answer
 *   not), minus nodes that announced they are leaving (30 s, or until a new epoch answers).
 *   Recomputed every 250 ms on the one scheduler.
 * - Relays: {@link EphemeralNodes.forward} sends a request to the owner's HTTP address with
 *   `x-queen-eph-fwd: 1`, `x-queen-raft-token`, `x-queen-tenant` and the caller's `Authorization`.
 * - Hand-over: when the candidates change, every ring held here that another node owns now is
 *   shipped with `POST /api/v1/ephemeral/_adopt` (batches ≤ 8 MiB per owner and tenant, 10 s per
 *   attempt, retried with 100 ms → 2 s backoff for 30 s, each ring to its owner of the moment; a
 *   ring this node owns again meanwhile is kept here). {@link EphemeralNodes.drain} (SIGTERM) sends
 *   `_leaving` to every peer, waits for their answers, then ships everything, bounded by its
 *   budget. What cannot be delivered is lost (counted).
 * - Placement rule (docs/ephemeral.md#multi-node): a ring lives on its owner. A node that receives
 *   rings ({@link EphemeralNodes.receive}) keeps those it owns and passes the others on to their
 *   owner before it answers (one hop); a peer that answers `503 leaving` is excluded at once, as if
 *   it had sent `_leaving`, and the ring is placed again without it.
 */
import { xxh3 } from '@node-rs/xxhash';
import type { Logger } from 'pino';
import type { ClusterView } from '../../storage/runtime.js';
import type { SchedulerLane, Scheduler } from '../../util/scheduler.js';
import type { EphemeralEngine, ShippedRing } from './engine.js';

/** Placement recomputation period, ms. */
export const PLACEMENT_MS = 250;
/** Readiness probe deadline, ms. */
export const PROBE_MS = 1000;
/** A node that announced it is leaving stays excluded this long unless a new epoch answers, ms. */
export const LEAVING_EXCLUDED_MS = 30_000;
/** A hand-over batch carries at most this many payload bytes (per owner and tenant). */
export const ADOPT_BATCH_BYTES = 8 * 1024 * 1024;
/** One `_adopt` attempt's deadline, ms. */
export const ADOPT_ATTEMPT_MS = 10_000;
/** How long a hand-over keeps retrying, ms. */
export const ADOPT_RETRY_MS = 30_000;
/** Relay deadline of a request that does not wait, ms. */
export const RELAY_MS = 30_000;
/** Deadline of passing received rings on to their owner inside an `_adopt`, ms. */
export const PASS_ON_MS = 5_000;

/** A candidate node. */
export interface EphemeralNode {
  serverId: string;
  /** `host:port` of its HTTP listener; empty for this node. */
  address: string;
  /** The incarnation of `serverId` the membership row shows. */
  epoch: number;
  self: boolean;
}

/** What `_adopt` tells the receiver besides the rings (docs/ephemeral.md#multi-node). */
export interface AdoptContext {
  /** The rings were passed on by a node that received them: the receiver keeps them all (one hop). */
  hop: boolean;
  /** Sent by a stopping node: the receiver excludes it before placing the rings. */
  leaving: { node: string; epoch: number } | undefined;
}

/** One `_adopt` call's outcome. */
type Offer = { status: 'placed'; adopted: number; refusedRings: number } | { status: 'refused' | 'leaving' | 'failed' };

/** A relay's answer as the owner gave it. */
export interface RelayAnswer {
  status: number;
  contentType: string;
  body: Buffer;
  /** The `code` of a JSON error body, when there is one. */
  code: string | undefined;
  /** The owner's `Retry-After`, passed on to the caller. */
  retryAfter: string | undefined;
}

/** Settings of {@link EphemeralNodes}. */
export interface EphemeralNodesOptions {
  /** `QUEEN_RAFT_TOKEN`; undefined = unset (relays then carry no token and are not verified). */
  raftToken: string | undefined;
  log: Logger;
}

interface Probe {
  epoch: number;
  /** The address probed: a member's row that names another one (its first heartbeat may precede the bound port) is probed again. */
  address: string;
  ready: boolean | undefined;
}

const seeds = new Map<string, bigint>();
function seedOf(serverId: string): bigint {
  let s = seeds.get(serverId);
  if (s === undefined) seeds.set(serverId, (s = xxh3.xxh64(Buffer.from(serverId, 'utf8'))));
  return s;
}

/**
 * The rendezvous winner for a key among `nodes` (see the module comment).
 * @returns undefined when `nodes` is empty
 */
export function rendezvous<T extends { serverId: string }>(nodes: readonly T[], tenant: string, queue: string, partition: string): T | undefined {
  const key = Buffer.from(`${tenant}\u001feph:${queue}\u001f${partition}`, 'utf8');
  let best: T | undefined;
  let bestScore = -1n;
  for (const n of nodes) {
    const score = xxh3.xxh64(key, seedOf(n.serverId));
    if (score > bestScore || (score === bestScore && best !== undefined && n.serverId < best.serverId)) {
      best = n;
      bestScore = score;
    }
  }
  return best;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/** Placement, relays and hand-over of one node (see the module comment). */
export class EphemeralNodes {
  private readonly lane: SchedulerLane<string>;
  private readonly probes = new Map<string, Probe>();
  private readonly leavingNodes = new Map<string, { epoch: number; until: number }>();
  private candidates: EphemeralNode[] = [];
  private signature = '';
  private started = false;
  private shipping: Promise<void> = Promise.resolve();
  /** True while a stopping node tells its peers (`_leaving`): nothing is shipped before they know. */
  private announcing = false;
  /** Settles once the peers were told (immediately unless stopping). */
  private announced: Promise<void> = Promise.resolve();
  /** Hand-overs under way, by `tenant \x1f queue \x1f partition`. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** True from {@link drain} on: this node owns nothing and answers `_ready`/`_adopt` with 503 `leaving`. */
  stopping = false;
  /** Requests relayed to an owner, messages handed over (delivered / lost). */
  readonly counters = { forwarded: 0, delivered: 0, lost: 0 };

  constructor(private readonly engine: EphemeralEngine, private readonly cluster: ClusterView, private readonly scheduler: Scheduler, private readonly opts: EphemeralNodesOptions) {
    this.lane = scheduler.lane<string>('ephemeral-placement');
    this.candidates = [{ serverId: cluster.serverId, address: '', epoch: cluster.epoch, self: true }];
  }

  get serverId(): string {
    return this.cluster.serverId;
  }

  get epoch(): number {
    return this.cluster.epoch;
  }

  /** Starts the periodic placement. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.recompute();
    this.arm();
  }

  /** Stops the periodic placement (hand-overs in flight finish or give up on their own). */
  stop(): void {
    this.started = false;
    this.lane.cancel('tick');
  }

  private arm(): void {
    if (!this.started) return;
    this.lane.schedule('tick', this.scheduler.clock.now() + PLACEMENT_MS, () => {
      this.recompute();
      this.arm();
    });
  }

  /** The headers every node-to-node call carries. */
  private headers(tenant: string | undefined): Record<string, string> {
    const h: Record<string, string> = { 'x-queen-eph-fwd': '1' };
    if (this.opts.raftToken !== undefined) h['x-queen-raft-token'] = this.opts.raftToken;
    if (tenant !== undefined) h['x-queen-tenant'] = tenant;
    return h;
  }

  /** Probes a peer's `_ready` (see the module comment) and records the answer. */
  private probe(serverId: string, address: string, epoch: number): void {
    const p: Probe = { epoch, address, ready: undefined };
    this.probes.set(serverId, p);
    fetch(`http://${address}/api/v1/ephemeral/_ready`, { headers: this.headers(undefined), signal: AbortSignal.timeout(PROBE_MS) })
      .then(async (r) => {
        await r.arrayBuffer().catch(() => undefined);
        p.ready = r.status < 500;
      }, () => { p.ready = false; })
      .finally(() => {
        // Not ready: probe again at a later recomputation rather than never.
        if (!p.ready) setTimeout(() => { if (this.probes.get(serverId) === p) this.probes.delete(serverId); }, PROBE_MS).unref();
        else {
          const l = this.leavingNodes.get(serverId);
          if (l && l.epoch < epoch) this.leavingNodes.delete(serverId);
          this.recompute();
        }
      });
  }

  /** Recomputes the candidates from the membership view; ships moved rings when they changed. */
  recompute(): void {
    const now = Date.now();
    const next: EphemeralNode[] = this.stopping ? [] : [{ serverId: this.serverId, address: '', epoch: this.epoch, self: true }];
    for (const m of this.cluster.members()) {
      if (m.serverId === this.serverId || !m.live || m.address === '') continue;
      const p = this.probes.get(m.serverId);
      if (!p || p.epoch !== m.epoch || p.address !== m.address) {
        this.probe(m.serverId, m.address, m.epoch);
        continue;
      }
      if (!p.ready) continue;
      const l = this.leavingNodes.get(m.serverId);
      if (l && (l.until > now && l.epoch >= m.epoch)) continue;
      if (l) this.leavingNodes.delete(m.serverId);
      next.push({ serverId: m.serverId, address: m.address, epoch: m.epoch, self: false });
    }
    next.sort((a, b) => (a.serverId < b.serverId ? -1 : a.serverId > b.serverId ? 1 : 0));
    const sig = next.map((n) => `${n.serverId}@${n.address}`).join(',');
    this.candidates = next;
    if (sig === this.signature) return;
    const first = this.signature === '';
    this.signature = sig;
    this.opts.log.info({ nodes: next.map((n) => n.serverId) }, 'ephemeral placement changed');
    // While a stopping node announces itself, drain() ships everything once the peers know.
    if (!this.announcing && (!first || this.engine.heldRings().length > 0)) this.handOverMoved();
  }

  /** A peer announced it is stopping: exclude it (see the module comment). */
  markLeaving(serverId: string, epoch: number): void {
    if (serverId === this.serverId) return;
    this.leavingNodes.set(serverId, { epoch, until: Date.now() + LEAVING_EXCLUDED_MS });
    this.recompute();
  }

  /** A peer answered `503 leaving` (it is stopping): exclude it as if it had sent `_leaving`. */
  leavingAnswered(node: EphemeralNode): void {
    if (node.self) return;
    this.opts.log.info({ node: node.serverId }, 'an ephemeral peer answered that it is stopping');
    this.markLeaving(node.serverId, node.epoch);
  }

  /** The owner of a partition now; this node when nobody else is a candidate. */
  owner(tenant: string, queue: string, partition: string): EphemeralNode {
    return rendezvous(this.candidates, tenant, queue, partition) ?? { serverId: this.serverId, address: '', epoch: this.epoch, self: true };
  }

  /** The peers (not this node) that are candidates now. */
  peers(): readonly EphemeralNode[] {
    return this.candidates.filter((n) => !n.self);
  }

  /**
   * Sends one request to `node` as a relay (see the module comment).
   * @param pathAndQuery e.g. `/api/v1/ephemeral/pop?queue=q&partition=p`
   * @param deadlineMs the relay's deadline, ms
   * @throws Error when the owner did not answer within the deadline (or `signal` aborted)
   */
  async forward(node: EphemeralNode, method: string, pathAndQuery: string, tenant: string, authorization: string | undefined, body: string | undefined, deadlineMs: number, signal?: AbortSignal): Promise<RelayAnswer> {
    const headers = this.headers(tenant);
    if (authorization !== undefined) headers.authorization = authorization;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(deadlineMs);
    this.counters.forwarded++;
    const r = await fetch(`http://${node.address}${pathAndQuery}`, { method, headers, body, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    const buf = Buffer.from(await r.arrayBuffer());
    const contentType = r.headers.get('content-type') ?? 'application/json';
    let code: string | undefined;
    if (r.status >= 400 && contentType.includes('json')) {
      try {
        const c = (JSON.parse(buf.toString('utf8')) as { code?: unknown }).code;
        if (typeof c === 'string') code = c;
      } catch { /* not JSON after all */ }
    }
    return { status: r.status, contentType, body: buf, code, retryAfter: r.headers.get('retry-after') ?? undefined };
  }

  /**
   * Places rings another node shipped here (`POST _adopt`, docs/ephemeral.md#multi-node): a stopping
   * sender is excluded first; the rings this node owns are adopted; the others (the sender placed
   * them with another view, e.g. before it saw this node's peer become ready) are passed on to their
   * owner before this returns, unless they were passed on already (`hop`): those stay, and the
   * hand-over moves them once this node's view agrees. A ring whose owner does not take it within
   * {@link PASS_ON_MS} is kept here and handed over like any moved ring.
   * @returns messages placed (here or on their owner) and rings refused (bounds, names); never throws
   */
  async receive(tenant: string, rings: readonly ShippedRing[], ctx: AdoptContext): Promise<{ adopted: number; refusedRings: number }> {
    if (ctx.leaving) this.markLeaving(ctx.leaving.node, ctx.leaving.epoch);
    const total = { adopted: 0, refusedRings: 0 };
    const keep = (kept: readonly ShippedRing[]): void => {
      const r = this.engine.adopt(tenant, kept);
      total.adopted += r.adopted;
      total.refusedRings += r.refusedRings;
    };
    let pending = [...rings];
    let strays = false;
    // At most three rounds: a peer that answers `503 leaving` is excluded and its rings placed again.
    for (let round = 0; round < 3 && pending.length > 0; round++) {
      const { mine, away } = this.place(tenant, pending);
      pending = [];
      if (ctx.hop) {
        keep([...mine, ...[...away.values()].flatMap((g) => g.rings)]);
        strays = away.size > 0;
        break;
      }
      keep(mine);
      await Promise.all([...away.values()].map(async ({ owner, rings: theirs }) => {
        const offer = (await this.track(theirs.map((r) => ringKey(tenant, r)), this.offer(owner, tenant, theirs, Date.now() + PASS_ON_MS, true))) ?? { status: 'failed' };
        const count = messageCount(theirs);
        if (offer.status === 'placed') {
          total.adopted += offer.adopted;
          total.refusedRings += offer.refusedRings;
          this.counters.delivered += offer.adopted;
          this.counters.lost += count - offer.adopted;
          this.opts.log.info({ to: owner.serverId, rings: theirs.length, messages: count, adopted: offer.adopted }, 'ephemeral rings passed on to their owner');
        } else if (offer.status === 'refused') {
          total.refusedRings += theirs.length;
          this.counters.lost += count;
        } else if (offer.status === 'leaving') {
          pending.push(...theirs);
        } else {
          keep(theirs);
          strays = true;
        }
      }));
    }
    if (pending.length > 0) {
      keep(pending);
      strays = true;
    }
    if (strays) this.handOverMoved();
    return total;
  }

  /** Splits rings by their owner now: this node's, and the others' per owner. */
  private place(tenant: string, rings: readonly ShippedRing[]): { mine: ShippedRing[]; away: Map<string, { owner: EphemeralNode; rings: ShippedRing[] }> } {
    const mine: ShippedRing[] = [];
    const away = new Map<string, { owner: EphemeralNode; rings: ShippedRing[] }>();
    for (const r of rings) {
      const owner = this.owner(tenant, r.queue, r.partition);
      if (owner.self) {
        mine.push(r);
        continue;
      }
      let g = away.get(owner.serverId);
      if (!g) away.set(owner.serverId, (g = { owner, rings: [] }));
      g.rings.push(r);
    }
    return { mine, away };
  }

  /** Ships every ring held here whose owner is another node now (queued after any hand-over in flight). */
  private handOverMoved(): void {
    this.shipping = this.shipping.then(() => this.ship(Date.now() + ADOPT_RETRY_MS)).catch((e: unknown) => this.opts.log.warn({ err: e }, 'ephemeral hand-over failed'));
  }

  /**
   * Before a relay: waits for a hand-over of the partition already under way, and ships a ring
   * this node still holds for it, so the owner has the older messages before the relayed request.
   */
  async shipOne(tenant: string, queue: string, partition: string): Promise<void> {
    await this.announced;
    const key = `${tenant}\u001f${queue}\u001f${partition}`;
    const pending = this.inFlight.get(key);
    if (pending) await pending;
    const owner = this.owner(tenant, queue, partition);
    if (owner.self) return;
    const ring = this.engine.takeRing(tenant, queue, partition);
    if (!ring) return;
    await this.track([key], this.send(owner, tenant, [ring], Date.now() + ADOPT_RETRY_MS));
  }

  /** Registers `work` as the hand-over of the rings `keys` until it settles. */
  private track<T>(keys: readonly string[], work: Promise<T>): Promise<T | undefined> {
    const done = work.catch((e: unknown) => { this.opts.log.warn({ err: e }, 'ephemeral hand-over failed'); return undefined; });
    const settled = done.then(() => undefined);
    for (const k of keys) this.inFlight.set(k, settled);
    void settled.then(() => { for (const k of keys) if (this.inFlight.get(k) === settled) this.inFlight.delete(k); });
    return done;
  }

  /** Takes every moved ring out of the engine and ships it, grouped per owner and tenant. */
  private async ship(deadline: number): Promise<void> {
    const batches = new Map<string, { owner: EphemeralNode; tenant: string; rings: ShippedRing[]; keys: string[] }>();
    for (const { tenant, queue, partition } of this.engine.heldRings()) {
      const owner = this.owner(tenant, queue, partition);
      if (owner.self) continue;
      const ring = this.engine.takeRing(tenant, queue, partition);
      if (!ring) continue;
      const k = `${owner.serverId}\u001f${tenant}`;
      let b = batches.get(k);
      if (!b) batches.set(k, (b = { owner, tenant, rings: [], keys: [] }));
      b.rings.push(ring);
      b.keys.push(ringKey(tenant, ring));
    }
    // Registered before the first await: a relay of one of these partitions waits for its hand-over.
    await Promise.all([...batches.values()].map((b) => this.track(b.keys, this.send(b.owner, b.tenant, b.rings, deadline))));
  }

  /** Sends rings in batches of ≤ {@link ADOPT_BATCH_BYTES}, retrying until `deadline` (epoch ms). */
  private async send(owner: EphemeralNode, tenant: string, rings: ShippedRing[], deadline: number): Promise<void> {
    let batch: ShippedRing[] = [];
    let bytes = 0;
    const flush = async (): Promise<void> => {
      if (batch.length > 0) await this.sendBatch(owner, tenant, batch, deadline);
      batch = [];
      bytes = 0;
    };
    for (const r of rings) {
      const size = r.messages.reduce((n, m) => n + m.p.length + 32, 256);
      if (bytes + size > ADOPT_BATCH_BYTES) await flush();
      batch.push(r);
      bytes += size;
    }
    await flush();
  }

  /**
   * The `_adopt` body; payloads spliced in as the exact JSON texts they are. `hop` marks rings
   * passed on by a node that received them; `leaving` names a stopping sender.
   */
  static adoptBody(rings: readonly ShippedRing[], ctx: Partial<AdoptContext> = {}): string {
    const parts = rings.map((r) => `{"queue":${JSON.stringify(r.queue)},"partition":${JSON.stringify(r.partition)},"messages":[${r.messages.map((m) => `{"t":${m.t},"p":${m.p}}`).join(',')}],"groups":${JSON.stringify(r.groups)}}`);
    const hop = ctx.hop ? ',"hop":true' : '';
    const leaving = ctx.leaving ? `,"leaving":${JSON.stringify({ node: ctx.leaving.node, epoch: String(ctx.leaving.epoch) })}` : '';
    return `{"rings":[${parts.join(',')}]${hop}${leaving}}`;
  }

  /**
   * One `_adopt` call to `owner` (a stopping node names itself in the body). A `503 leaving`
   * answer excludes the owner at once ({@link leavingAnswered}). Never throws.
   */
  private async offer(owner: EphemeralNode, tenant: string, rings: readonly ShippedRing[], deadline: number, hop: boolean): Promise<Offer> {
    const body = EphemeralNodes.adoptBody(rings, { hop, leaving: this.stopping ? { node: this.serverId, epoch: this.epoch } : undefined });
    try {
      const r = await fetch(`http://${owner.address}/api/v1/ephemeral/_adopt`, {
        method: 'POST', headers: { ...this.headers(tenant), 'content-type': 'application/json' }, body,
        signal: AbortSignal.timeout(Math.max(1, Math.min(ADOPT_ATTEMPT_MS, deadline - Date.now()))),
      });
      const text = await r.text();
      if (r.status === 200) {
        const a = JSON.parse(text) as { adopted?: unknown; refusedRings?: unknown };
        return { status: 'placed', adopted: typeof a.adopted === 'number' ? a.adopted : 0, refusedRings: typeof a.refusedRings === 'number' ? a.refusedRings : 0 };
      }
      if (r.status >= 400 && r.status < 500) {
        this.opts.log.warn({ to: owner.serverId, status: r.status, messages: messageCount(rings) }, 'a peer refused an ephemeral hand-over (is QUEEN_RAFT_TOKEN the same on every node?): its contents are lost');
        return { status: 'refused' };
      }
      if (r.status === 503 && errorCode(text) === 'leaving') {
        this.leavingAnswered(owner);
        return { status: 'leaving' };
      }
    } catch (e) { this.opts.log.debug({ err: e, to: owner.serverId }, 'an ephemeral hand-over attempt got no answer (retried)'); }
    return { status: 'failed' };
  }

  /**
   * Ships one batch, retrying until `deadline` (epoch ms): after each failed attempt every ring is
   * placed again with the view of the moment; rings this node owns again are kept here (unless it
   * is stopping), the others go to their owner.
   */
  private async sendBatch(first: EphemeralNode, tenant: string, rings: ShippedRing[], deadline: number): Promise<void> {
    let backoff = 100;
    let owner = first;
    let pending = rings;
    for (;;) {
      const count = messageCount(pending);
      const offer = await this.offer(owner, tenant, pending, deadline, false);
      if (offer.status === 'placed') {
        this.counters.delivered += offer.adopted;
        this.counters.lost += count - offer.adopted;
        this.opts.log.info({ to: owner.serverId, rings: pending.length, messages: count, adopted: offer.adopted }, 'ephemeral rings handed over');
        return;
      }
      if (offer.status === 'refused') {
        this.counters.lost += count;
        return;
      }
      if (Date.now() + backoff >= deadline) break;
      const pause = async (): Promise<void> => {
        await sleep(backoff);
        backoff = Math.min(2000, backoff * 2);
      };
      // A peer that answered `503 leaving` is excluded already: its rings go elsewhere at once.
      if (offer.status === 'failed') await pause();
      this.recompute();
      const { mine, away } = this.place(tenant, pending);
      if (this.stopping) {
        // Nobody else is a candidate (owner() falls back on this node): keep offering to the last owner.
        if (mine.length > 0) away.set(owner.serverId, { owner, rings: [...(away.get(owner.serverId)?.rings ?? []), ...mine] });
      } else if (mine.length > 0) {
        const kept = this.engine.adopt(tenant, mine);
        this.counters.lost += messageCount(mine) - kept.adopted;
        this.opts.log.info({ rings: mine.length, messages: kept.adopted }, 'ephemeral rings kept: this node owns them again');
      }
      const groups = [...away.values()];
      if (groups.length === 0) return;
      if (groups.length > 1) {
        await Promise.all(groups.map((g) => this.sendBatch(g.owner, tenant, g.rings, deadline)));
        return;
      }
      // Nobody else to try (a stopping node whose peers all left): wait before offering again.
      if (offer.status === 'leaving' && groups[0]!.owner.serverId === owner.serverId) await pause();
      owner = groups[0]!.owner;
      pending = groups[0]!.rings;
    }
    this.counters.lost += messageCount(pending);
    this.opts.log.warn({ to: owner.serverId, messages: messageCount(pending) }, 'an ephemeral hand-over found no peer to take it: its contents are lost');
  }

  /**
   * SIGTERM: stop owning, tell every peer (`_leaving`, 1 s each) and wait for their answers, then
   * ship every ring held here, bounded by `budgetMs` in all. Never throws.
   */
  async drain(budgetMs: number): Promise<void> {
    const deadline = Date.now() + budgetMs;
    this.stopping = true;
    this.announcing = true;
    let told!: () => void;
    this.announced = new Promise<void>((r) => (told = r));
    this.recompute();
    const peers = this.peers();
    await Promise.all(peers.map((p) => fetch(`http://${p.address}/api/v1/ephemeral/_leaving`, {
      method: 'POST', headers: { ...this.headers(undefined), 'content-type': 'application/json' },
      body: JSON.stringify({ node: this.serverId, epoch: String(this.epoch) }), signal: AbortSignal.timeout(PROBE_MS),
    }).then((r) => r.arrayBuffer(), () => undefined)));
    this.announcing = false;
    told();
    const done = this.shipping.then(() => this.ship(deadline)).catch((e: unknown) => this.opts.log.warn({ err: e }, 'ephemeral drain failed'));
    await Promise.race([done, sleep(Math.max(0, deadline - Date.now()))]);
    this.stop();
  }
}

/** The key of a ring in {@link EphemeralNodes}' hand-overs under way. */
function ringKey(tenant: string, r: { queue: string; partition: string }): string {
  return `${tenant}\u001f${r.queue}\u001f${r.partition}`;
}

/** The `code` of a JSON error body, if it has one. */
function errorCode(text: string): string | undefined {
  try {
    const c = (JSON.parse(text) as { code?: unknown }).code;
    return typeof c === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}

function messageCount(rings: readonly ShippedRing[]): number {
  return rings.reduce((n, r) => n + r.messages.length, 0);
}
