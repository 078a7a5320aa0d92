/**
 * The SQLite backend of the operation contract (src/storage/sqlite/engine-backend.ts: the engine's
 * indexes over the SQL sub-stores, one implementation for every tenant) on a fresh data directory,
 * for the conformance suite. Its clock is a test clock that follows the `now` of each call (as the
 * contract allows a backend with its own clock to do), so lease expiry and delays fire through the
 * engine's one scheduler.
 */
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import { plainCodec } from '../../src/model/codec.js';
import type { AppendRequest, ClaimRequest, CursorCommit, QueueBackend, UnitOp } from '../../src/storage/contract.js';
import { EngineBackend } from '../../src/storage/sqlite/engine-backend.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { SyncMode } from '../../src/config/index.js';
import { TestClock } from '../../src/util/clock.js';

/** Opens the backend on `dir` (created); `close()` drains its units, stops its scheduler and closes the store. */
export function openSqliteBackend(dir: string, sync: SyncMode = 'normal'): QueueBackend {
  const clock = new TestClock(1_600_000_000_000);
  const store = SqliteStore.open({ dataDir: dir, sync });
  const { engine, units, backend: b } = EngineBackend.open(store, loadConfig({ QUEEN_DATA_DIR: dir }), plainCodec, pino({ level: 'silent' }), clock);
  engine.load();
  const follow = (now: number | undefined) => { if (now !== undefined && now > clock.now()) clock.set(now); };
  const nowOf = (o: UnitOp): number | undefined => (o.op === 'append' || o.op === 'commit' ? o.request.now : o.op === 'leaseHeld' || o.op === 'timerFailed' ? o.now : undefined);
  return Object.assign(Object.create(b) as QueueBackend, {
    append: (r: AppendRequest) => { follow(r.now); return b.append(r); },
    claim: (r: ClaimRequest) => { follow(r.now); return b.claim(r); },
    commitCursor: (r: CursorCommit) => { follow(r.now); return b.commitCursor(r); },
    extendLease: (id: string, until: number, now: number, tenant: string) => { follow(now); return b.extendLease(id, until, now, tenant); },
    releaseLease: (id: string, now: number, takeBackAttempt?: boolean) => { follow(now); return b.releaseLease(id, now, takeBackAttempt); },
    leaseHeld: (id: string, now: number) => { follow(now); return b.leaseHeld(id, now); },
    unit: (ops: UnitOp[]) => { for (const o of ops) follow(nowOf(o)); return b.unit(ops); },
    close: async () => {
      units.stop();
      await units.drain(1000);
      engine.stop();
      await store.close();
    },
  });
}
