/**
 * An opened storage backend as the broker's services receive it (built by src/storage/open.ts):
 * the operation contract (src/storage/contract.ts), the offset-addressed log reads
 * (src/storage/log-read.ts), the one due-time scheduler on the injected clock, what boot reads, and
 * the lifecycle the services drive (docs/operations.md#boot). The domain never learns which
 * backend it runs on beyond `kind` and the contract's capabilities.
 */
import type { Scheduler } from '../util/scheduler.js';
import type { QueueBackend } from './contract.js';
import type { LogReadStore } from './log-read.js';

/** What boot reads once from the store (default tenant). */
export interface BootState {
  /** Broker-wide settings (maintenance flags). */
  settings: ReadonlyMap<string, string>;
  /** Dead letters stored per queue name. */
  dlqDepth: ReadonlyMap<string, number>;
  /** Names of the queues. */
  queueNames: readonly string[];
}

/**
 * The cluster-wide jobs that run on one node at a time (docs/cluster.md#singletons): `retention`
 * (the retention sweep), `timers` (firing due timers), `kv-expiry` (pruning expired KV rows).
 */
export const SINGLETON_TASKS = ['retention', 'timers', 'kv-expiry'] as const;
/** One of {@link SINGLETON_TASKS}. */
export type SingletonTask = (typeof SINGLETON_TASKS)[number];

/** A member of the cluster as the membership table shows it (docs/cluster.md#membership). */
export interface ClusterMember {
  serverId: string;
  /** Incremented each time a process starts under this id. */
  epoch: number;
  /** Where its HTTP port is (`host:port`, as it announced it). */
  address: string;
  /** Heartbeat within the node TTL (database clock) and not leaving. */
  live: boolean;
  /** Milliseconds since its last heartbeat (database clock). */
  lastSeenMs: number;
  leaving: boolean;
}

/** Who holds one singleton job (docs/cluster.md#singletons). */
export interface SingletonHolder {
  task: SingletonTask;
  /** The holder's server id, or null when nobody holds a live lease. */
  holder: string | null;
  epoch: number | null;
  /** Incremented each time the lease changes hands. */
  fencing: number;
  /** Runs recorded by every holder so far. */
  runs: number;
  /** Last recorded run (epoch ms, database clock), or null. */
  lastRunAt: number | null;
}

/** This node's view of the cluster: membership and the singleton jobs (undefined on SQLite: one node, every job runs here). */
export interface ClusterView {
  readonly serverId: string;
  /** Incremented per start under this id; 0 on a standby that never was a primary (it joins when promoted). */
  readonly epoch: number;
  /** What the database lets this node do: `primary`, `standby` (a hot-standby replica) or `read_only` (a primary refusing writes). */
  readonly role: 'primary' | 'standby' | 'read_only';
  /** This node's clock minus the database's, ms, as of the last heartbeat. */
  readonly clockSkewMs: number;
  /** On a standby, the replication follower as of the last heartbeat; undefined on a primary. */
  readonly follower: { state: 'following' | 'waiting' | 'halted'; lagMs: number } | undefined;
  /** True while this node holds `task`'s lease with time to spare (checked before each run). */
  holds(task: SingletonTask): boolean;
  /** Records one run of `task` by this node (`runs`, `last_run_at`; `queen_singleton_runs_total`). */
  ran(task: SingletonTask): void;
  /** Runs of each task by this node since boot. */
  readonly runsHere: ReadonlyMap<SingletonTask, number>;
  /** The members and holders as of the last heartbeat. */
  members(): readonly ClusterMember[];
  singletons(): readonly SingletonHolder[];
  /** Sets the HTTP address this node announces (after the listener bound). */
  announce(address: string): void;
  /** The replication link as PostgreSQL reports it (docs/cluster.md#standby). @throws the driver's error when the database does not answer */
  link(): Promise<LinkView>;
  /**
   * Promotes the standby database (`pg_promote`) and starts serving writes.
   * @returns the link after promotion
   * @throws QueenError `promote_unavailable` when the database role may not promote, `invalid_request` when it is no standby
   */
  promote(): Promise<LinkView>;
}

/** `GET /api/v1/system/link` (docs/cluster.md#standby): this node's database as primary, standby, or just promoted. */
export type LinkView =
  | { role: 'primary' | 'promoted'; position: { lsn: string | null }; readers: { name: string; after: string | null; idleMs: number | null; state: string }[] }
  | {
    role: 'standby'; source: string | null; position: { lsn: string | null };
    follower: { state: 'following' | 'waiting' | 'halted'; lagMs: number; error: string | null };
  };

/** An opened backend and its lifecycle (see the module comment). */
export interface StorageRuntime {
  readonly kind: 'sqlite' | 'postgres';
  readonly backend: QueueBackend;
  readonly logs: LogReadStore;
  /** The one due-time scheduler (leases, delays, timers, KV TTL, retention, pop deadlines). */
  readonly scheduler: Scheduler;
  readonly boot: BootState;
  /**
   * Longest a parked pop waits before it claims again, ms; undefined when every wake-up is local
   * (a single writer announces every change itself).
   */
  readonly recheckMs: number | undefined;
  /** Membership and singleton leases when several nodes may share the store; undefined = this node is alone. */
  readonly cluster?: ClusterView | undefined;
  /** Refuses every later unit of work (`shutting_down`). */
  stopAccepting(): void;
  /** Waits up to `graceMs` (ms, wall time) for the units of work in flight. */
  drain(graceMs: number): Promise<void>;
  /** False once closed or when the store stopped answering. */
  healthy(): boolean;
  /** Cancels every scheduled entry and closes the store. */
  close(): Promise<void>;
}
