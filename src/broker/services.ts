/**
 * The broker's services, built once per process by `main.ts` (and by domain tests, on a test
 * clock): the store, the clock and the one scheduler, the broker facade, KV and locks, timers,
 * traces and the operator views, and the background jobs (activity, retention, maintenance spool,
 * metrics, KV expiry sweep, timer firing, lease expiry). Each is constructed here and handed to
 * whoever uses it; nothing finds a service by lookup.
 *
 * One start order and its reverse as the stop order (docs/operations.md#boot):
 *
 * | start                                   | stop (reverse)                                 |
 * |-----------------------------------------|------------------------------------------------|
 * | 1. broker: boot state (the runtime     | 4. broker: wait for in-flight commits, cancel  |
 * |    loaded its indexes and timers)       |    every scheduled entry, close the store      |
 * | 2. KV expiry sweep                      | 3. KV expiry sweep                             |
 * | 3. admin jobs: DLQ depths, spool replay,| 2. admin jobs: retention and spool finished,   |
 * |    retention sweep                      |    metrics stopped                             |
 * | 4. timers: fire what is due             | 1. timers: no new round, the running one ends  |
 * | 5. front doors other than HTTP (the     | 0. those front doors: stop accepting, answer   |
 * |    Kafka port), {@link openFrontDoor}   |    what is in hand, close every connection     |
 *
 * Before {@link stop}, main.ts calls {@link stopAccepting}, {@link closeFrontDoors} and closes the
 * HTTP listener; {@link stop} closes any front door still open first, so no front door is serving
 * while the store closes.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { PayloadCodec } from '../model/codec.js';
import type { StorageRuntime } from '../storage/runtime.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Scheduler } from '../util/scheduler.js';
import type { AdminViews } from './admin/views.js';
import { Broker } from './broker.js';
import { Kv } from './coordination/kv.js';
import { Timers } from './coordination/timers.js';
import { EphemeralEngine } from './ephemeral/engine.js';
import { registerEphemeralMetrics } from './ephemeral/metrics.js';
import { EphemeralNodes } from './ephemeral/nodes.js';
import { AdminJobs } from './jobs/admin-jobs.js';
import { registerClusterMetrics } from './jobs/cluster-metrics.js';
import { PartitionLogs } from './messaging/log-read.js';
import { KafkaSideTables } from './messaging/kafka-meta.js';
import { TenantUsage } from './admin/tenant-usage.js';

/** What {@link Services} is built from. */
export interface ServicesDeps {
  /** The opened storage backend (src/storage/open.ts). */
  storage: StorageRuntime;
  config: Config;
  /** Payload encryption (or the plain codec). */
  codec: PayloadCodec;
  log: Logger;
  /** The source of time for every rule (default: wall clock); tests pass a `TestClock`. */
  clock?: Clock;
}

/** A listener outside HTTP whose lifetime the services order (the Kafka port, src/kafka/server.ts). */
export interface FrontDoor<T = unknown> {
  /** A short name for logs. */
  readonly name: string;
  /** Binds and serves. */
  start(): Promise<T>;
  /** Stops accepting, answers or ends every connection; resolves once they are closed. */
  stop(): Promise<void>;
  /** What `GET /status` shows of it, under {@link name} (docs/http-api.md#health-and-metrics). */
  status?(): Record<string, unknown>;
}

/** Every broker service of one process, with one start and one stop order (see the module comment). */
export class Services {
  readonly clock: Clock;
  /** The one due-time scheduler (lease expiry, delays, timers, KV TTL, retention, pop deadlines). */
  readonly scheduler: Scheduler;
  /** The operations of the Queen API. */
  readonly broker: Broker;
  /** KV batches and console reads; locks run over it. */
  readonly kv: Kv;
  /** Scheduled messages and their firing loop. */
  readonly timers: Timers;
  /** Activity counters, retention, maintenance modes, Prometheus metrics. */
  readonly jobs: AdminJobs;
  /** Read-only operator views. */
  readonly views: AdminViews;
  /** Partition logs by offset, for the Kafka port (src/broker/messaging/log-read.ts). */
  readonly logs: PartitionLogs;
  /** The Kafka port's side tables (src/broker/messaging/kafka-meta.ts). */
  readonly kafkaMeta: KafkaSideTables;
  /** What each tenant holds (partitions, stored bytes) and the purge of its KV, locks and timers: the proxy's quotas (src/proxy/quotas.ts). */
  readonly usage: TenantUsage;
  /** Ephemeral (RAM-only) queues (docs/ephemeral.md); {@link loadEphemeral} before serving. */
  readonly ephemeral: EphemeralEngine;
  /** Placement, relays and hand-over of ephemeral partitions across nodes (docs/ephemeral.md#multi-node); undefined on SQLite. */
  readonly ephemeralNodes: EphemeralNodes | undefined;
  private state: 'new' | 'started' | 'stopped' = 'new';
  private readonly doors: FrontDoor[] = [];

  constructor(deps: ServicesDeps) {
    this.clock = deps.clock ?? systemClock;
    this.broker = new Broker(deps.storage, deps.config, deps.codec, deps.log, this.clock);
    this.scheduler = this.broker.scheduler;
    this.kv = new Kv(this.broker);
    this.jobs = new AdminJobs(this.broker);
    this.views = this.jobs.views;
    this.timers = new Timers(this.broker);
    this.logs = new PartitionLogs(this.broker.backend, deps.storage.logs, this.clock);
    this.kafkaMeta = new KafkaSideTables(this.broker.backend, this.clock);
    this.usage = new TenantUsage(this.broker.backend);
    this.ephemeral = new EphemeralEngine(this.broker.backend, deps.config.ephemeral, this.clock);
    const cluster = deps.storage.cluster;
    this.ephemeralNodes = cluster ? new EphemeralNodes(this.ephemeral, cluster, this.scheduler, { raftToken: deps.config.tenancy.raftToken, log: deps.log }) : undefined;
    registerEphemeralMetrics(this.jobs.metrics.registry, this.ephemeral, this.ephemeralNodes);
    if (cluster && deps.config.tenancy.raftToken === undefined && deps.config.jwt.enabled) {
      deps.log.warn('JWT is on and QUEEN_RAFT_TOKEN is unset: nodes cannot verify ephemeral hand-overs, so a stopping node\'s ephemeral contents are dropped (docs/ephemeral.md#multi-node)');
    }
    if (deps.storage.cluster) registerClusterMetrics(this.jobs.metrics.registry, deps.storage.cluster);
  }

  /** Re-creates declared ephemeral queues (empty) and reads the kill switch; call after {@link start}, before the listener opens. */
  async loadEphemeral(): Promise<void> {
    await this.ephemeral.load();
    this.ephemeralNodes?.start();
  }

  /**
   * Starts everything in order, from the storage runtime's boot state; call once, before serving.
   * @throws Error when called twice
   */
  start(): void {
    if (this.state !== 'new') throw new Error(`services already ${this.state}`);
    this.state = 'started';
    this.broker.start();
    this.kv.start();
    this.jobs.start(this.broker.storage.boot);
    // Several nodes on one database: the maintenance flags another node sets hold here too.
    if (this.broker.storage.cluster) this.jobs.maintenance.follow(this.broker.config.cluster.heartbeatMs);
    this.timers.start(); // includes timers that fell due while the broker was down
  }

  /**
   * Starts a front door after the domain (call after {@link start}); it is closed before the domain stops.
   * @returns what the door's start returns (the Kafka port: its bound port)
   * @throws Error when the services are not started; the door's own start error
   */
  async openFrontDoor<T>(door: FrontDoor<T>): Promise<T> {
    if (this.state !== 'started') throw new Error(`front door ${door.name} opened while the services are ${this.state}`);
    const r = await door.start();
    this.doors.push(door);
    return r;
  }

  /** The status blocks of the open front doors, by name (`GET /status`). */
  frontDoorStatus(): Record<string, Record<string, unknown>> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const d of this.doors) if (d.status) out[d.name] = d.status();
    return out;
  }

  /** Closes the open front doors, last opened first (every connection answered or ended). Idempotent. */
  async closeFrontDoors(): Promise<void> {
    for (const door of this.doors.splice(0).reverse()) await door.stop();
  }

  /** Stops taking new work and answers every parked pop (204); background jobs keep running. */
  stopAccepting(): void {
    this.broker.stopAccepting();
    this.ephemeral.close();
  }

  /**
   * Stops everything in reverse start order, then closes the store. Idempotent.
   * @param graceMs how long to wait for in-flight commits, ms
   */
  async stop(graceMs: number): Promise<void> {
    if (this.state === 'stopped') return;
    const started = this.state === 'started';
    this.state = 'stopped';
    this.broker.stopAccepting();
    this.ephemeralNodes?.stop();
    this.ephemeral.close();
    await this.closeFrontDoors();
    if (started) {
      await this.timers.stop();
      await this.jobs.stop();
      this.kv.stop();
    }
    await this.broker.shutdown(graceMs);
  }
}
