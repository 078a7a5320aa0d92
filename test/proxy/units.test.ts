/** Units of the proxy: key format and hash, key presentation, client address and bucket keys, classification edges. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { generateKey, hashKey, presentedKey } from '../../src/auth/proxy/api-keys.js';
import { Buckets, clientIp, ipKey, MAX_RETRY_AFTER_S } from '../../src/proxy/limits.js';
import { produceOf } from '../../src/proxy/quotas.js';
import { classify, unsafeProxyPath } from '../../src/proxy/routes.js';

test('generated keys are qk_<env>_ + 43 base64url characters; the stored hash is sha256 hex of the whole key', () => {
  const k = generateKey('live');
  assert.match(k, /^qk_live_[A-Za-z0-9_-]{43}$/);
  assert.notEqual(generateKey('live'), k);
  assert.equal(hashKey(k), createHash('sha256').update(k, 'utf8').digest('hex'));
  assert.match(hashKey(k), /^[0-9a-f]{64}$/);
  assert.equal(hashKey('qk_live_é€'), createHash('sha256').update('qk_live_é€', 'utf8').digest('hex')); // UTF-8, not Latin-1
});

test('a key is presented as Bearer (any case) or bare; anything not starting qk_ is no key', () => {
  assert.equal(presentedKey('Bearer qk_a'), 'qk_a');
  assert.equal(presentedKey('bearer   qk_a '), 'qk_a');
  assert.equal(presentedKey('qk_live_x'), 'qk_live_x');
  assert.equal(presentedKey('Bearer eyJhbGciOi'), undefined);
  assert.equal(presentedKey(undefined), undefined);
});

test('client address: the peer unless it is a trusted proxy; X-Forwarded-For walked right to left', () => {
  assert.equal(clientIp('10.0.0.9', '1.2.3.4', []), '10.0.0.9', 'untrusted peer: the header is ignored');
  assert.equal(clientIp('::ffff:10.0.0.9', '1.2.3.4', ['10.0.0.9']), '1.2.3.4');
  assert.equal(clientIp('10.0.0.9', '6.6.6.6, 1.2.3.4, 10.0.0.8', ['10.0.0.9', '10.0.0.8']), '1.2.3.4', 'a forged left-most entry is not reached');
  assert.equal(clientIp('10.0.0.9', undefined, ['10.0.0.9']), '10.0.0.9');
});

test('bucket keys: IPv4 as is, IPv6 by its /64', () => {
  assert.equal(ipKey('192.0.2.1'), '192.0.2.1');
  assert.equal(ipKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(ipKey('2001:db8:1:2:aaaa::1'), ipKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'));
  assert.notEqual(ipKey('2001:db8:1:2::1'), ipKey('2001:db8:1:3::1'));
  assert.equal(ipKey('2001:0db8:0001:0002::1'), '2001:db8:1:2::/64');
});

test('classification edges: first match wins, /api fails closed, dot segments are unsafe', () => {
  assert.equal(classify('GET', '/api/v1/status').kind, 'operator');
  assert.equal(classify('GET', '/api/v1/status/queues').kind, 'read');
  assert.equal(classify('GET', '/api/v1/system/shared-state').kind, 'blocked');
  assert.equal(classify('DELETE', '/api/v1/resources/queues/q').kind, 'queue_admin');
  assert.equal(classify('GET', '/api/v1/resources/queues/q').kind, 'read');
  assert.equal(classify('POST', '/api/v1/dlq/x/replay').kind, 'queue_admin');
  assert.equal(classify('PATCH', '/api/v1/kv/ns/k').kind, 'blocked');
  assert.deepEqual(classify('PUT', '/api/v1/kv/ns/k'), { kind: 'gated', feature: 'kv', op: 'grow' });
  assert.equal(classify('GET', '/api/v2/x').kind, 'blocked');
  assert.equal(classify('GET', '/index.html').kind, 'read');
  for (const p of ['/a/./b', '/a/../b', '/a/%2e%2E/b', '/a//b', '/a/.']) assert.ok(unsafeProxyPath(p), p);
  for (const p of ['/a/.b', '/a/..b/c', '/a/b.']) assert.ok(!unsafeProxyPath(p), p);
});

test('a bucket charged by n tokens: refused whole (nothing taken) when short; a rate of 0 never refills', () => {
  const b = new Buckets();
  assert.deepEqual(b.charge('k', 0, 5, 3), { ok: true });
  assert.deepEqual(b.charge('k', 0, 5, 3), { ok: false, retryAfterS: MAX_RETRY_AFTER_S });
  assert.deepEqual(b.charge('k', 0, 5, 2), { ok: true }, 'the refused charge took nothing');
  assert.equal(b.charge('k', 0, 5, 1).ok, false);
  const slow = b.charge('s', 1, 4, 4);
  assert.deepEqual(slow, { ok: true });
  const r = b.charge('s', 1, 4, 4);
  assert.ok(!r.ok && r.retryAfterS >= 1 && r.retryAfterS <= 4, JSON.stringify(r));
});

test('the Produce of a body: push items, or every push operation of a transaction (single or items); partition "Default" when absent', () => {
  const push = produceOf('/api/v1/push', { items: [{ queue: 'a', partition: 'p' }, { queue: 'a' }, { queue: 'b', partition: 'p' }, { queue: '' }] })!;
  assert.equal(push.messages, 4);
  assert.deepEqual([...push.partitions].map(([q, p]) => [q, [...p]]), [['a', ['p', 'Default']], ['b', ['p']]]);
  const tx = produceOf('/api/v1/transaction', { operations: [
    { type: 'ack', transactionId: 't', partitionId: 'x' },
    { type: 'push', queue: 'a', payload: 1 },
    { type: 'push', items: [{ queue: 'c', partition: 'z', payload: 2 }, { queue: 'c', partition: 'z', payload: 3 }] },
  ] })!;
  assert.equal(tx.messages, 3);
  assert.deepEqual([...tx.partitions].map(([q, p]) => [q, [...p]]), [['a', ['Default']], ['c', ['z']]]);
  assert.equal(produceOf('/api/v1/ack', { items: [] }), undefined);
});
