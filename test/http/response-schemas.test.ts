/**
 * Every answer matches its route's documented response schema (src/http/schemas): a seeded broker
 * is asked a representative set of routes over real HTTP, and each body is validated with ajv
 * against the schema of the status it answered, required fields and types included. The wire types
 * of src/http/schemas/types.ts are derived from the same schemas, so this also checks that what
 * `tsc` believes about the answers is what the broker sends.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { errorSchema } from '../../src/http/schemas/common.js';
import { ROUTE_SCHEMAS } from '../../src/http/schemas/index.js';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';

const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema(errorSchema);

/** The validator of `route`'s answer under `status` (`2xx` falls back to the error envelope for 4xx/5xx). */
export function validatorOf(route: string, status: number): ValidateFunction {
  const responses = ROUTE_SCHEMAS[route]?.response;
  assert.ok(responses, `${route} has response schemas`);
  const schema = responses[String(status)] ?? responses[`${String(status)[0]}xx`];
  assert.ok(schema, `${route} documents status ${status}`);
  return ajv.compile(schema);
}

/** Asserts that `body` matches `route`'s schema for `status`. */
function conforms(route: string, status: number, body: unknown): void {
  const validate = validatorOf(route, status);
  assert.ok(validate(body), `${route} ${status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 400)}`);
}

let b: BrokerHandle;
const q = uniqueName('schemas');
const group = 'g1';
let popped: any;
let acked: any;
before(async () => {
  b = await startBroker();
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await call(b.url, method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
    return r;
  };
  await ok('POST', '/api/v1/configure', { queue: q, options: { retryLimit: 0 } });
  await ok('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue: q, partition: 'p1', payload: { n }, transactionId: `t${n}` })) });
  popped = (await ok('GET', `/api/v1/pop/queue/${q}?batch=3&consumerGroup=${group}`)).body;
  const m = popped.messages;
  acked = (await ok('POST', '/api/v1/ack', { transactionId: m[0].transactionId, partitionId: m[0].partitionId, leaseId: m[0].leaseId, status: 'dlq', error: 'poison', consumerGroup: group })).body;
  await ok('POST', '/api/v1/traces', { transactionId: m[1].transactionId, partitionId: m[1].partitionId, consumerGroup: group, traceNames: ['order-1'], data: { step: 1 } });
  await ok('PUT', '/api/v1/kv/schemas/k1', { value: { a: 1 }, forever: true });
  await ok('POST', '/api/v1/timers', { operations: [{ op: 'schedule', queue: q, timerKey: 'tk', delayMs: 60_000, txn: 'txn-tk', payload: Buffer.from('{"n":1}').toString('base64') }] });
});
after(async () => { await b.stop(); });

describe('answers match their response schemas', () => {
  test('the pop and ack answers (the seed) match', () => {
    conforms('GET /api/v1/pop/queue/:queue', 200, popped);
    assert.equal(popped.messages.length, 3);
    conforms('POST /api/v1/ack', 200, acked);
    assert.equal(acked.length, 1);
  });

  // `"METHOD /route"` → the concrete path asked, with an optional body.
  const cases: [string, () => string, unknown?][] = [
    ['POST /api/v1/configure', () => '/api/v1/configure', { queue: q, options: { retryLimit: 0 } }],
    ['POST /api/v1/push', () => '/api/v1/push', { items: [{ queue: q, partition: 'p2', payload: 'x' }, { queue: q, partition: 'p1', payload: 1, transactionId: 't1' }] }],
    ['POST /api/v1/lease/:leaseId/extend', () => `/api/v1/lease/${popped.messages[2].leaseId}/extend`, { seconds: 60 }],
    ['GET /api/v1/resources/queues', () => '/api/v1/resources/queues'],
    ['GET /api/v1/resources/queues/:queue', () => `/api/v1/resources/queues/${q}`],
    ['GET /api/v1/resources/overview', () => '/api/v1/resources/overview'],
    ['GET /api/v1/resources/partitions', () => `/api/v1/resources/partitions?queue=${q}`],
    ['GET /api/v1/resources/queues/:queue/depth', () => `/api/v1/resources/queues/${q}/depth`],
    ['GET /api/v1/status', () => '/api/v1/status'],
    ['GET /api/v1/status/queues', () => '/api/v1/status/queues'],
    ['GET /api/v1/status/queues/:queue', () => `/api/v1/status/queues/${q}`],
    ['GET /api/v1/status/queues/:queue/messages', () => `/api/v1/status/queues/${q}/messages?limit=2`],
    ['GET /api/v1/status/analytics', () => '/api/v1/status/analytics'],
    ['GET /api/v1/consumer-groups', () => '/api/v1/consumer-groups'],
    ['GET /api/v1/consumer-groups/:group', () => `/api/v1/consumer-groups/${group}`],
    ['GET /api/v1/consumer-groups/lagging', () => '/api/v1/consumer-groups/lagging?minLagSeconds=0'],
    ['GET /api/v1/dlq', () => `/api/v1/dlq?queue=${q}`],
    ['GET /api/v1/messages', () => `/api/v1/messages?queue=${q}`],
    ['GET /api/v1/messages/:partitionId/:transactionId', () => `/api/v1/messages/${popped.messages[1].partitionId}/${popped.messages[1].transactionId}`],
    ['GET /api/v1/traces/:partitionId/:transactionId', () => `/api/v1/traces/${popped.messages[1].partitionId}/${popped.messages[1].transactionId}`],
    ['GET /api/v1/traces/by-name/:traceName', () => '/api/v1/traces/by-name/order-1'],
    ['GET /api/v1/traces/names', () => '/api/v1/traces/names'],
    ['GET /api/v1/kv/:ns/*', () => '/api/v1/kv/schemas/k1'],
    ['POST /api/v1/kv', () => '/api/v1/kv', { operations: [{ op: 'get', ns: 'schemas', key: 'k1' }, { op: 'incr', ns: 'schemas', key: 'n', forever: true }] }],
    ['POST /api/v1/resources/kv/list', () => '/api/v1/resources/kv/list', { ns: 'schemas' }],
    ['GET /api/v1/resources/kv/namespaces', () => '/api/v1/resources/kv/namespaces'],
    ['POST /api/v1/locks', () => '/api/v1/locks', { operations: [{ op: 'acquire', name: 'l1', ttlSeconds: 30, owner: 'me' }] }],
    ['GET /api/v1/timers/:queue', () => `/api/v1/timers/${q}`],
    ['GET /api/v1/timers/:queue/*', () => `/api/v1/timers/${q}/tk`],
    ['GET /api/v1/system/maintenance', () => '/api/v1/system/maintenance'],
    ['GET /api/v1/status/buffers', () => '/api/v1/status/buffers'],
    ['GET /api/v1/analytics/system-metrics', () => '/api/v1/analytics/system-metrics'],
    ['GET /health', () => '/health'],
    ['GET /metrics', () => '/metrics'],
    ['GET /status', () => '/status'],
    ['GET /auth/me', () => '/auth/me'],
    ['POST /auth/logout', () => '/auth/logout'],
  ];
  for (const [route, path, body] of cases) {
    test(route, async () => {
      const r = await call(b.url, route.slice(0, route.indexOf(' ')), path(), body);
      assert.ok(r.status >= 200 && r.status < 300, `${route}: ${r.status} ${r.text}`);
      conforms(route, r.status, r.body);
    });
  }

  test('POST /api/v1/locks: refusals and owner-less permits match (null slot, token, owner)', async () => {
    const r = await call(b.url, 'POST', '/api/v1/locks', {
      operations: [
        { op: 'acquire', name: 'l2', ttlSeconds: 30 },
        { op: 'acquire', name: 'l2', ttlSeconds: 30, owner: 'other' },
        { op: 'release', name: 'l2', token: 999_999 },
        { op: 'get', name: 'l2' },
      ],
    });
    assert.equal(r.status, 200, r.text);
    const [granted, held, lost, state] = r.body.results;
    assert.equal(granted.acquired, true);
    assert.equal(granted.owner, null, 'an acquire without owner answers owner:null');
    assert.deepEqual([held.acquired, held.reason, held.slot, held.token], [false, 'held', null, null]);
    assert.deepEqual([lost.released, lost.reason, lost.token], [false, 'lost', null]);
    assert.equal(state.held, true);
    conforms('POST /api/v1/locks', 200, r.body);
  });

  test('a refusal matches the error envelope', async () => {
    const r = await call(b.url, 'GET', '/api/v1/status/analytics?interval=week');
    assert.equal(r.status, 400);
    conforms('GET /api/v1/status/analytics', 400, r.body);
  });

  test('a wrong answer is caught (the check is not vacuous)', () => {
    const validate = validatorOf('GET /api/v1/resources/queues', 200);
    assert.equal(validate({ queues: [{ name: 7 }] }), false, 'a mistyped field fails');
    assert.equal(validate({ queues: 'none' }), false, 'a mistyped container fails');
    const ack = validatorOf('POST /api/v1/ack', 200);
    assert.equal(ack([{ error: null }]), false, 'a missing required field fails');
  });
});
