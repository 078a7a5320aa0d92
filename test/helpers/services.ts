/**
 * The broker's services for domain tests: a real SQLite store in a fresh temp directory, a
 * `TestClock` that stands still until the test moves it, and the one start/stop order of
 * src/broker/services.ts. Nothing listens; tests call the services directly.
 */
import path from 'node:path';
import { pino } from 'pino';
import { QUEUE_MODE } from '../../src/broker/broker.js';
import type { PopRequest } from '../../src/broker/messaging/pop.js';
import { Services } from '../../src/broker/services.js';
import { loadConfig } from '../../src/config/index.js';
import { plainCodec } from '../../src/model/codec.js';
import { SqliteRuntime } from '../../src/storage/sqlite/runtime.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { TestClock } from '../../src/util/clock.js';
import { tempDir } from './broker.js';

/** Started services on a test clock; `stop()` closes them (call it in `after`). */
export interface TestServices {
  services: Services;
  clock: TestClock;
  dataDir: string;
  stop: () => Promise<void>;
}

/**
 * Builds and starts the services.
 * @param env extra environment for the configuration (e.g. `RETENTION_INTERVAL`)
 * @param at reopen this data directory (a restart) on this clock instead of a fresh one
 */
export function startTestServices(env: Record<string, string> = {}, at?: { dataDir: string; clock: TestClock }): TestServices {
  const dataDir = at?.dataDir ?? path.join(tempDir(), 'data');
  const clock = at?.clock ?? new TestClock();
  const config = loadConfig({ QUEEN_DATA_DIR: dataDir, ...env });
  const log = pino({ level: 'silent' });
  const storage = new SqliteRuntime(SqliteStore.open({ dataDir, sync: 'off' }), config, plainCodec, log, clock);
  const services = new Services({ storage, config, codec: plainCodec, log, clock });
  services.start();
  return { services, clock, dataDir, stop: () => services.stop(1000) };
}

/** A non-waiting pop of `queue` in queue mode (override any field). */
export function popOf(queue: string, over: Partial<PopRequest> = {}): PopRequest {
  return { queue, partition: undefined, namespace: undefined, task: undefined, group: QUEUE_MODE, batch: 10, partitions: 1, wait: false, timeoutMs: 0, autoAck: false, leaseSeconds: undefined, subscription: {}, ...over };
}
