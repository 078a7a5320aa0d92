import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startBroker } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitForParked } from '../../helpers/wait.js';

describe('durability', () => {
  test('a message answered 201 survives SIGKILL right after the answer', async () => {
    const b = await startBroker();
    const q = uniqueName();
    const r = await call(b.url, 'POST', '/api/v1/push', { items: Array.from({ length: 50 }, (_, i) => ({ queue: q, payload: i })) });
    assert.equal(r.status, 201);
    await b.kill();
    const b2 = await startBroker({ dataDir: b.dataDir });
    try {
      const p = await call(b2.url, 'GET', `/api/v1/pop/queue/${q}?batch=100`);
      assert.equal(p.status, 200);
      assert.deepEqual(p.body.messages.map((m: any) => m.data), Array.from({ length: 50 }, (_, i) => i));
    } finally {
      await b2.stop();
    }
  });

  test('an ack answered 200 is not redelivered after SIGKILL; a live lease still holds after restart', async () => {
    const b = await startBroker();
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'a', payload: 'acked' }, { queue: q, partition: 'b', payload: 'leased' }] });
    const first = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a`);
    const ack = await call(b.url, 'POST', '/api/v1/ack', { transactionId: first.body.messages[0].transactionId, partitionId: first.body.messages[0].partitionId, leaseId: first.body.leaseId });
    assert.equal(ack.body[0].success, true);
    const leased = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/b`);
    assert.equal(leased.status, 200);
    await b.kill();
    const b2 = await startBroker({ dataDir: b.dataDir });
    try {
      assert.equal((await call(b2.url, 'GET', `/api/v1/pop/queue/${q}/partition/a`)).status, 204, 'acked message not redelivered');
      assert.equal((await call(b2.url, 'GET', `/api/v1/pop/queue/${q}/partition/b`)).status, 204, 'the lease granted before the crash still holds');
      const ack2 = await call(b2.url, 'POST', '/api/v1/ack', { transactionId: leased.body.messages[0].transactionId, partitionId: leased.body.messages[0].partitionId, leaseId: leased.body.leaseId });
      assert.equal(ack2.body[0].success, true, 'the lease survives a restart and can be acked');
    } finally {
      await b2.stop();
    }
  });

  test('concurrent pushes that share a group commit are all durable', async () => {
    const b = await startBroker();
    const q = uniqueName();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: `p${i % 4}`, payload: i }] })));
    assert.ok(answers.every((a) => a.status === 201));
    await b.kill();
    const b2 = await startBroker({ dataDir: b.dataDir });
    try {
      const seen = new Set<number>();
      for (;;) {
        const p = await call(b2.url, 'GET', `/api/v1/pop/queue/${q}?batch=100&partitions=10&autoAck=true`);
        if (p.status === 204) break;
        for (const m of p.body.messages) seen.add(m.data);
      }
      assert.equal(seen.size, 40);
    } finally {
      await b2.stop();
    }
  });

  test('SIGTERM answers parked pops with 204 and exits 0', async () => {
    const b = await startBroker();
    const parked = fetch(`${b.url}/api/v1/pop/queue/${uniqueName()}?wait=true&timeout=30000`);
    await waitForParked(b.url, 1);
    // Exit 0 (not the grace-period exit 1) with the pop answered 204, well before its 30 s timeout.
    const code = await b.stop();
    const r = await parked;
    assert.equal(r.status, 204);
    assert.equal(code, 0);
  });
});
