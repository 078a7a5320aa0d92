/**
 * The SQLite WAL is bounded: after a burst that grows it past QUEEN_WAL_LIMIT_BYTES, an idle
 * checkpoint brings it back under the limit within seconds, and a SIGKILL at that moment loses
 * nothing (pushed unconsumed messages pop after restart, acked ones do not).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startBroker } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';

const LIMIT = 1024 * 1024;

function walBytes(dataDir: string): number {
  try {
    return fs.statSync(path.join(dataDir, 'queen.db-wal')).size;
  } catch {
    return 0;
  }
}

test('the WAL shrinks under QUEEN_WAL_LIMIT_BYTES once idle, and a SIGKILL then loses nothing', async () => {
  const b = await startBroker({ env: { QUEEN_WAL_LIMIT_BYTES: String(LIMIT) } });
  const acked = uniqueName('wal-acked');
  const kept = uniqueName('wal-kept');
  const blob = 'x'.repeat(20_000);
  // 24 MB through the WAL: 12 pushes of 100 × 20 KB into the queue that is consumed (each one
  // commit of 2 MB, so the WAL must pass the 1 MiB limit while it commits) …
  let peak = 0;
  for (let i = 0; i < 12; i++) {
    const r = await call(b.url, 'POST', '/api/v1/push', {
      items: Array.from({ length: 100 }, (_, k) => ({ queue: acked, partition: `p${k % 4}`, payload: { i, k, blob } })),
    });
    assert.equal(r.status, 201, r.text.slice(0, 200));
    peak = Math.max(peak, walBytes(b.dataDir));
  }
  // … and a few that stay unconsumed.
  const keptItems = Array.from({ length: 20 }, (_, k) => ({ queue: kept, partition: 'only', payload: { k } }));
  assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: keptItems })).status, 201);
  let consumed = 0;
  for (;;) {
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${acked}?batch=500&partitions=4`);
    if (p.status === 204) break;
    assert.equal(p.status, 200, p.text.slice(0, 200));
    const byPartition = new Map<string, { transactionId: string; partitionId: string }>();
    for (const m of p.body.messages) byPartition.set(m.partitionId, m);
    for (const last of byPartition.values()) {
      const a = await call(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: p.body.leaseId });
      assert.equal(a.body[0].success, true, a.text);
    }
    consumed += p.body.messages.length;
  }
  assert.equal(consumed, 1200);
  assert.ok(peak > LIMIT, `the burst never grew the WAL past the limit (peak ${peak} bytes): the test would prove nothing`);
  const deadline = Date.now() + 10_000;
  let now = walBytes(b.dataDir);
  while (now > LIMIT) {
    if (Date.now() > deadline) {
      await b.kill();
      assert.fail(`the WAL stayed at ${now} bytes (limit ${LIMIT}) for 10 s of idle`);
    }
    await new Promise((r) => setTimeout(r, 50));
    now = walBytes(b.dataDir);
  }
  await b.kill();
  assert.ok(walBytes(b.dataDir) <= LIMIT);

  const b2 = await startBroker({ dataDir: b.dataDir, env: { QUEEN_WAL_LIMIT_BYTES: String(LIMIT) } });
  try {
    assert.equal((await call(b2.url, 'GET', `/api/v1/pop/queue/${acked}?batch=10&partitions=4`)).status, 204, 'acked messages came back');
    const p = await call(b2.url, 'GET', `/api/v1/pop/queue/${kept}?batch=100`);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body.messages.map((m: any) => m.data), keptItems.map((i) => i.payload));
  } finally {
    await b2.stop();
  }
});
