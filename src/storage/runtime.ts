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
  /** Refuses every later unit of work (`shutting_down`). */
  stopAccepting(): void;
  /** Waits up to `graceMs` (ms, wall time) for the units of work in flight. */
  drain(graceMs: number): Promise<void>;
  /** False once closed or when the store stopped answering. */
  healthy(): boolean;
  /** Cancels every scheduled entry and closes the store. */
  close(): Promise<void>;
}
