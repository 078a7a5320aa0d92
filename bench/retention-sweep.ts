/**
 * Measures the retention sweep on a queue with 100 partitions and with 100,000 partitions, both
 * with every retention rule switched on (retentionSeconds, completedRetentionSeconds,
 * maxWaitTimeSeconds) and nothing old enough to remove: the idle sweep must not grow with the
 * number of partitions (docs/storage.md#costs-scale-with-work). Also reports the one-time first sweep after the completed
 * rule is switched on (it seeds the partitions with messages) and a sweep after a consumer acked
 * 100 partitions (work-proportional).
 *
 * In-process (no HTTP), real SQLite store in a temporary directory, synchronous=NORMAL for the
 * set-up pushes only. Run: `npx tsc -p tsconfig.json && node dist/bench/retention-sweep.js`
 * (optional argument: partition counts, e.g. `100,100000`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { plainCodec } from '../src/model/codec.js';
import { Services } from '../src/broker/services.js';
import { loadConfig } from '../src/config/index.js';
import { SqliteStore } from '../src/storage/sqlite/store.js';
import { SqliteRuntime } from '../src/storage/sqlite/runtime.js';

const SWEEPS = 50;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

async function measure(partitions: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-bench-retention-'));
  const config = loadConfig({ QUEEN_DATA_DIR: dir, RETENTION_INTERVAL: '86400000', QUEEN_SYNC: 'normal' });
  const store = SqliteStore.open({ dataDir: dir, sync: config.sync });
  const log = pino({ level: 'silent' });
  const services = new Services({ storage: new SqliteRuntime(store, config, plainCodec, log), config, codec: plainCodec, log });
  services.start();
  const { broker, jobs: ops } = services;
  const queue = `bench-${partitions}`;
  await broker.configure({
    queue, mode: 'replace',
    options: { retentionEnabled: true, retentionSeconds: 86_400, completedRetentionSeconds: 3600, maxWaitTimeSeconds: 86_400 },
  });
  const t0 = performance.now();
  for (let i = 0; i < partitions; i += 10_000) {
    const n = Math.min(10_000, partitions - i);
    await broker.push(Array.from({ length: n }, (_, k) => ({ queue, partition: `p${i + k}`, payload: { i: i + k } })), null);
  }
  const pushMs = performance.now() - t0;

  const first = await ops.retention.sweep();
  const idle: number[] = [];
  for (let i = 0; i < SWEEPS; i++) idle.push((await ops.retention.sweep()).durationMs);
  idle.sort((a, b) => a - b);

  // A consumer group acks 100 partitions: the next sweep visits those, not all of them.
  const popped = await broker.pop({
    queue, partition: undefined, namespace: undefined, task: undefined, group: 'g', batch: 100, partitions: 100, wait: false,
    timeoutMs: 0, autoAck: true, leaseSeconds: undefined, subscription: { mode: 'all' },
  });
  const afterAcks = await ops.retention.sweep();

  console.log(JSON.stringify({
    partitions, setupPushMs: Math.round(pushMs),
    firstSweep: { ms: +first.durationMs.toFixed(3), partitionsVisited: first.partitionsVisited, removed: first.removed },
    idleSweepMs: { sweeps: SWEEPS, median: +pct(idle, 50).toFixed(3), p90: +pct(idle, 90).toFixed(3), max: +idle[idle.length - 1]!.toFixed(3) },
    afterConsumerAcked100: { delivered: popped?.messages.length ?? 0, ms: +afterAcks.durationMs.toFixed(3), partitionsVisited: afterAcks.partitionsVisited, removed: afterAcks.removed },
  }));
  await services.stop(1000);
  fs.rmSync(dir, { recursive: true, force: true });
}

const counts = (process.argv[2] ?? '100,100000').split(',').map(Number);
for (const n of counts) await measure(n);
