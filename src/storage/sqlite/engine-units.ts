/**
 * The unit runner of the broker's SQLite backend (EngineBackend): each unit of work joins the
 * store's group commit (src/storage/sqlite/store.ts) with the engine's undo log (Engine.inUnit),
 * so a rolled-back unit restores the in-memory index entries it changed and nothing is reloaded
 * (docs/storage.md#in-memory-indexes). It refuses new units once stopping and lets the broker wait
 * for the ones in flight before the store closes.
 */
import type { Logger } from 'pino';
import { isQueenError, QueenError } from '../../errors.js';
import type { Store, StoreTx } from '../store.js';
import type { Engine } from './engine.js';
import { UnitRefused } from '../refused.js';

/** Runs units of work for the engine's backend (see the module comment). */
export class EngineUnits {
  private stopping = false;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(private readonly store: Store, private readonly engine: Engine, private readonly log: Logger) {}

  /**
   * Runs `work` as one unit in the next group commit; resolves with what it returned once the
   * commit is durable.
   * @throws QueenError code=shutting_down once {@link stop} was called; code=storage_error when the
   *   store failed; any QueenError (or the contract's UnitRefused refusal) that `work` threw
   */
  async run<T>(work: (tx: StoreTx) => T): Promise<T> {
    if (this.stopping) throw new QueenError('shutting_down');
    const p = this.store.run((tx) => this.engine.inUnit(tx, () => work(tx)));
    this.inflight.add(p);
    try {
      return await p;
    } catch (e) {
      if (!isQueenError(e) && !(e instanceof UnitRefused)) {
        this.log.error({ err: e }, 'unit of work failed; its in-memory changes were undone');
        throw new QueenError('storage_error', `storage error: ${(e as Error).message}`);
      }
      throw e;
    } finally {
      this.inflight.delete(p);
    }
  }

  /** Refuses every later unit (`shutting_down`). */
  stop(): void {
    this.stopping = true;
  }

  /** Waits up to `graceMs` (wall time: a real wait for the disk) for the units in flight. */
  async drain(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    while (this.inflight.size > 0 && Date.now() < deadline) {
      await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 50))]);
    }
  }
}
