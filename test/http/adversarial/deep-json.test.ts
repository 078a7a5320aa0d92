/**
 * Adversarial: deeply nested JSON. Every body the broker accepts must also be servable, and a
 * body it cannot handle must be refused with a 4xx, never a 500 (clients retry 5xx and fail over).
 * Today: a payload nested ~4,200 levels answers `500 storage_error: Maximum call stack size
 * exceeded`; one nested a few levels less is accepted (201) but every pop that reaches it answers
 * 500 (and leases it), and `GET /api/v1/messages` answers 500 for every listing that includes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const pushDeep = (queue: string, depth: number) =>
  call(b.url, 'POST', '/api/v1/push', `{"items":[{"queue":${JSON.stringify(queue)},"payload":${nested(depth)}}]}`);

function assertClientError(r: { status: number; body: any; text: string }, what: string) {
  assert.ok(r.status >= 400 && r.status < 500, `${what}: expected a 4xx, got ${r.status} ${r.text.slice(0, 200)}`);
  assert.equal(typeof r.body?.code, 'string', what);
  assert.equal(typeof r.body?.error, 'string', what);
}

describe('deeply nested JSON bodies', () => {
  test('a push, a transaction and a trace nested 10,000 and 100,000 levels answer 4xx, not 500', async () => {
    for (const depth of [10_000, 100_000]) {
      assertClientError(await pushDeep(uniqueName('deep'), depth), `push depth ${depth}`);
      assertClientError(await call(b.url, 'POST', '/api/v1/transaction',
        `{"operations":[{"type":"push","queue":"deep-txn","payload":${nested(depth)}}]}`), `transaction depth ${depth}`);
      assertClientError(await call(b.url, 'POST', '/api/v1/traces',
        `{"transactionId":"t","partitionId":"p","data":${nested(depth)}}`), `trace depth ${depth}`);
    }
    assert.equal((await call(b.url, 'GET', '/health')).status, 200);
  });

  test('the deepest payload the broker accepts can be popped and listed', async () => {
    // Binary search for the deepest accepted payload (each probe on its own queue); refusals of
    // any status count as "not accepted" here (the 500s are the previous test's subject).
    let lo = 1; let hi = 200_000; let deepestQueue = '';
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      const q = uniqueName('probe');
      const r = await pushDeep(q, mid);
      if (r.status === 201) { lo = mid; deepestQueue = q; } else hi = mid - 1;
    }
    assert.ok(deepestQueue !== '', 'even a depth-1 payload was refused');
    const listed = await call(b.url, 'GET', `/api/v1/messages?queue=${encodeURIComponent(deepestQueue)}`);
    assert.equal(listed.status, 200, `listing a queue holding a depth-${lo} payload answered ${listed.status} ${listed.text.slice(0, 200)}`);
    const all = await call(b.url, 'GET', '/api/v1/messages?limit=1000');
    assert.equal(all.status, 200, `the unfiltered message browser answered ${all.status}`);
    const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${encodeURIComponent(deepestQueue)}`);
    assert.equal(popped.status, 200, `popping an accepted depth-${lo} payload answered ${popped.status} ${popped.text.slice(0, 200)}`);
  });
});
