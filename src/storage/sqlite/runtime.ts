/**
 * The SQLite backend as a {@link StorageRuntime} (src/storage/runtime.ts): the store opened by the
 * caller, the engine's indexes loaded from its snapshot, the unit runner, the contract
 * (EngineBackend) and the log reads. Synchronous: everything it reads is local.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config/index.js';
import type { PayloadCodec } from '../../model/codec.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { DEFAULT_TENANT } from '../contract.js';
import type { BootState, StorageRuntime } from '../runtime.js';
import type { StoreSnapshot } from '../store.js';
import type { Engine } from './engine.js';
import { EngineBackend } from './engine-backend.js';
import type { EngineUnits } from './engine-units.js';
import { SqliteLogReads } from './log-read.js';
import type { SqliteStore } from './store.js';

/** The SQLite runtime; `engine`, `units` and `store` stay reachable for the SQLite-specific tests. */
export class SqliteRuntime implements StorageRuntime {
  readonly kind = 'sqlite' as const;
  readonly engine: Engine;
  readonly units: EngineUnits;
  readonly backend: EngineBackend;
  readonly logs: SqliteLogReads;
  readonly boot: BootState;
  readonly recheckMs = undefined;

  /**
   * Builds the engine over `store` and loads its indexes from `snapshot` (read from the store when omitted).
   * @param clock the source of time of the engine's rules and of the scheduler (default: wall clock)
   */
  constructor(readonly store: SqliteStore, config: Config, codec: PayloadCodec, log: Logger, clock: Clock = systemClock, snapshot?: StoreSnapshot) {
    ({ engine: this.engine, units: this.units, backend: this.backend } = EngineBackend.open(store, config, codec, log, clock));
    const snap = snapshot ?? store.loadSnapshot();
    this.engine.load(snap);
    this.logs = new SqliteLogReads(this.engine, (w) => this.units.run(w));
    const dlqDepth = new Map<string, number>();
    for (const [pk, n] of store.ops.dlqDepthByQueue()) {
      const q = this.engine.queuesByPk.get(pk);
      if (q && q.tenant === DEFAULT_TENANT) dlqDepth.set(q.name, n);
    }
    this.boot = { settings: snap.settings, dlqDepth, queueNames: [...this.engine.tenantQueues(DEFAULT_TENANT)].map((q) => q.name) };
  }

  get scheduler(): Engine['scheduler'] {
    return this.engine.scheduler;
  }

  stopAccepting(): void {
    this.units.stop();
  }

  drain(graceMs: number): Promise<void> {
    return this.units.drain(graceMs);
  }

  healthy(): boolean {
    return this.store.healthy();
  }

  async close(): Promise<void> {
    this.engine.stop();
    await this.store.close();
  }
}
