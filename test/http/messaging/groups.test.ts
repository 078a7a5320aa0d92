import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { parkWitness, waitFor, waitForParked } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

const push = (q: string, payloads: unknown[]) => call(b.url, 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue: q, payload })) });
async function drain(q: string, qs: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (;;) {
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=100&${qs}`);
    if (r.status === 204) return out;
    out.push(...r.body.messages.map((m: any) => m.data));
    const last = r.body.messages.at(-1);
    await call(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId, consumerGroup: last.consumerGroup });
  }
}

describe('consumer groups', () => {
  test('fan-out: every group sees every message with its own cursor', async () => {
    const q = uniqueName();
    await push(q, [1, 2, 3]);
    assert.deepEqual(await drain(q, 'consumerGroup=a&subscriptionMode=all'), [1, 2, 3]);
    assert.deepEqual(await drain(q, 'consumerGroup=b&subscriptionMode=all'), [1, 2, 3]);
    assert.deepEqual(await drain(q, ''), [1, 2, 3], 'queue mode is a group of its own');
    await push(q, [4]);
    assert.deepEqual(await drain(q, 'consumerGroup=a'), [4]);
    assert.deepEqual(await drain(q, 'consumerGroup=b'), [4]);
  });

  // The reference lost the first message of a new partition for all but one of the groups parked on
  // its queue until the partition's next message (queen-mq/queen: CHANGELOG.md, 2.0.1-beta).
  test('the first message of a new partition wakes every group parked on the queue', async () => {
    const q = uniqueName();
    await push(q, ['seed']);
    const groups = ['g1', 'g2', 'g3'];
    for (const g of groups) assert.deepEqual(await drain(q, `consumerGroup=${g}&subscriptionMode=all`), ['seed']);
    const witness = await parkWitness(b.url, 20_000);
    const parked = groups.map((g) => call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=${g}&wait=true&timeout=20000&autoAck=true`));
    await waitForParked(b.url, groups.length + 1);
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'brand-new', payload: 'first' }] });
    for (const [i, r] of (await Promise.all(parked)).entries()) {
      assert.equal(r.status, 200, `${groups[i]}: ${r.status}`);
      assert.deepEqual(r.body.messages.map((m: any) => [m.partition, m.data]), [['brand-new', 'first']], groups[i]);
    }
    assert.ok(witness.parked(), 'the push woke them, not their timeout');
    await witness.release();
  });

  test('subscriptionMode new skips the backlog, all replays it; the mode applies only on first contact', async () => {
    const q = uniqueName();
    await push(q, ['old']);
    assert.deepEqual(await drain(q, 'consumerGroup=late&subscriptionMode=new'), []);
    assert.deepEqual(await drain(q, 'consumerGroup=replay&subscriptionMode=all'), ['old']);
    await push(q, ['fresh']);
    assert.deepEqual(await drain(q, 'consumerGroup=late&subscriptionMode=all'), ['fresh'], 'an existing cursor is never re-seeded');
  });

  test('the new mode also delivers partitions created after the group registered', async () => {
    const q = uniqueName();
    await push(q, ['before']);
    assert.deepEqual(await drain(q, 'consumerGroup=n&subscriptionMode=new-only'), []);
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'late-partition', payload: 'after' }] });
    assert.deepEqual(await drain(q, 'consumerGroup=n'), ['after']);
  });

  test('subscriptionFrom takes an ISO timestamp or now', async () => {
    const q = uniqueName();
    await push(q, ['a']);
    // `cut` is strictly after the first push and strictly before the second (timestamps are in ms).
    const pushed = Date.now();
    const cutMs = await waitFor(() => (Date.now() > pushed ? Date.now() : 0), { what: 'the clock to pass the first push', intervalMs: 1 });
    const cut = new Date(cutMs).toISOString();
    await waitFor(() => Date.now() > cutMs, { what: 'the clock to pass the cut', intervalMs: 1 });
    await push(q, ['b']);
    assert.deepEqual(await drain(q, `consumerGroup=ts&subscriptionFrom=${encodeURIComponent(cut)}`), ['b']);
    assert.deepEqual(await drain(q, 'consumerGroup=nowgroup&subscriptionFrom=now'), []);
    const bad = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=x&subscriptionFrom=yesterday`);
    assert.equal(bad.status, 400);
  });

  // The reference's pop kept re-selecting the partitions whose messages were all older than a
  // group's subscription timestamp, so a group subscribing from a recent time over many old
  // partitions could be answered empty while a newer message waited (queen-mq/queen: git history,
  // 0.11.6 "fix consumer group with timestamp when there is special partition setup").
  test('a timestamp subscription over many partitions of older messages gets the newer one at once (queue and discovery pops)', async () => {
    const ns = uniqueName('tsp');
    const q = `${ns}.t.wide`;
    await call(b.url, 'POST', '/api/v1/push', { items: Array.from({ length: 40 }, (_, i) => ({ queue: q, partition: `old-${String(i).padStart(2, '0')}`, payload: i })) });
    await call(b.url, 'POST', '/api/v1/push', { items: Array.from({ length: 10 }, (_, i) => ({ queue: `${ns}.t.old${i}`, payload: i })) });
    const pushed = Date.now();
    const cutMs = await waitFor(() => (Date.now() > pushed ? Date.now() : 0), { what: 'the clock to pass the old pushes', intervalMs: 1 });
    const cut = encodeURIComponent(new Date(cutMs).toISOString());
    await waitFor(() => Date.now() > cutMs, { what: 'the clock to pass the cut', intervalMs: 1 });
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'zz-new', payload: 'new' }, { queue: `${ns}.t.zz`, payload: 'new elsewhere' }] });
    const wide = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=recent&subscriptionFrom=${cut}&partitions=1&batch=10&autoAck=true`);
    assert.equal(wide.status, 200, 'one pop claiming one partition finds the newer message');
    assert.deepEqual(wide.body.messages.map((m: any) => [m.partition, m.data]), [['zz-new', 'new']]);
    // discovery claims one partition per pop (partitions=1): two pops, the two newer messages
    const found: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await call(b.url, 'GET', `/api/v1/pop?namespace=${ns}&consumerGroup=recent2&subscriptionFrom=${cut}&batch=10&autoAck=true`);
      assert.equal(r.status, 200, `discovery pop ${i + 1}`);
      found.push(...r.body.messages.map((m: any) => m.data));
    }
    assert.deepEqual(found.sort(), ['new', 'new elsewhere']);
  });

  test('the default mode for a named group without subscriptionMode is all (DEFAULT_SUBSCRIPTION_MODE)', async () => {
    const q = uniqueName();
    await push(q, ['backlog']);
    assert.deepEqual(await drain(q, 'consumerGroup=defaulted'), ['backlog']);
  });

  test('DEFAULT_SUBSCRIPTION_MODE=new makes a group without a mode skip the backlog', async () => {
    const b2 = await startBroker({ env: { DEFAULT_SUBSCRIPTION_MODE: 'new' } });
    try {
      const q = uniqueName();
      await call(b2.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'old' }] });
      const r = await call(b2.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=fresh`);
      assert.equal(r.status, 204);
      await call(b2.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'new' }] });
      const r2 = await call(b2.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=fresh`);
      assert.deepEqual(r2.body.messages.map((m: any) => m.data), ['new']);
    } finally {
      await b2.stop();
    }
  });

  // Two reports against a broker whose default is `new`: a subscriptionFrom timestamp must still
  // win over the default (queen-mq/queen: git history, 0.7.3 "fix bug in timestamp subscription
  // when the server has default mode 'new'"), and a group deleted with its metadata re-registers
  // at the tail, so replaying the backlog takes an explicit start
  // (https://github.com/queen-mq/queen/issues/29).
  test('under DEFAULT_SUBSCRIPTION_MODE=new an explicit mode or timestamp wins, and a deleted group starts again at the tail', async () => {
    const b2 = await startBroker({ env: { DEFAULT_SUBSCRIPTION_MODE: 'new' } });
    try {
      const q = uniqueName();
      const pushTo = (payloads: unknown[]) => call(b2.url, 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue: q, payload })) });
      const drainOn = async (qs: string) => {
        const r = await call(b2.url, 'GET', `/api/v1/pop/queue/${q}?batch=100&autoAck=true&${qs}`);
        return r.status === 204 ? [] : r.body.messages.map((m: any) => m.data);
      };
      await pushTo([1, 2]);
      assert.deepEqual(await drainOn('consumerGroup=fromEpoch&subscriptionFrom=1970-01-01T00%3A00%3A00Z'), [1, 2], 'a timestamp overrides the default');
      assert.deepEqual(await drainOn('consumerGroup=explicitAll&subscriptionMode=all'), [1, 2], 'an explicit mode overrides the default');
      assert.deepEqual(await drainOn('consumerGroup=worker'), [], 'the default: the backlog is skipped');
      await pushTo([3]);
      assert.deepEqual(await drainOn('consumerGroup=worker'), [3]);

      const del = await call(b2.url, 'DELETE', '/api/v1/consumer-groups/worker?deleteMetadata=true');
      assert.equal(del.body.metadataDeleted, true);
      assert.deepEqual(await drainOn('consumerGroup=worker'), [], 're-registered under the default: at the tail again');
      await pushTo([4]);
      assert.deepEqual(await drainOn('consumerGroup=worker'), [4]);
      await call(b2.url, 'DELETE', `/api/v1/consumer-groups/worker/queues/${q}?deleteMetadata=true`);
      assert.deepEqual(await drainOn('consumerGroup=worker&subscriptionFrom=1970-01-01T00%3A00%3A00Z'), [1, 2, 3, 4], 'deleted, then re-registered from a timestamp: the whole backlog');
    } finally {
      await b2.stop();
    }
  });

  test('a new-mode group that long-polls a queue before it exists gets the first push', async () => {
    const q = uniqueName();
    const waiting = call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=early&subscriptionMode=new&wait=true&timeout=10000`);
    await waitForParked(b.url, 1);
    await push(q, ['first']);
    const r = await waiting;
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['first']);
  });

  test('autoAck commits at delivery: no lease, leaseId is empty, no redelivery', async () => {
    const q = uniqueName();
    await push(q, [1, 2]);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?autoAck=true&batch=1`);
    assert.equal(r.body.leaseId, '');
    assert.equal(r.body.messages[0].leaseId, '');
    const next = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?autoAck=true&batch=5`);
    assert.deepEqual(next.body.messages.map((m: any) => m.data), [2], 'not blocked by a lease');
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204);
  });

  // The reference renamed the pop's autoAck to commitOnDelivery (autoAck stays as the deprecated
  // alias) and documents only the new name (queen-mq/queen: CHANGELOG.md, 2.0.2). A broker that
  // ignored the new name would lease the batch: the caller, who acks nothing, gets every message
  // again when the lease runs out.
  test('commitOnDelivery is the name of autoAck on the queue, partition and discovery pops', async () => {
    const ns = uniqueName('cod');
    const q = `${ns}.t.q`;
    await call(b.url, 'POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue: q, partition: 'p', payload: n })) });
    for (const path of [`/api/v1/pop/queue/${q}?consumerGroup=w`, `/api/v1/pop/queue/${q}/partition/p?consumerGroup=w`, `/api/v1/pop?namespace=${ns}&consumerGroup=w`]) {
      const r = await call(b.url, 'GET', `${path}&subscriptionMode=all&batch=1&commitOnDelivery=true`);
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      assert.equal(r.body.leaseId, '', path);
      assert.equal(r.body.messages[0].leaseId, '', path);
    }
    const rest = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=w&batch=10`);
    assert.equal(rest.status, 204, `the three messages were committed at delivery, none is leased: ${rest.text}`);
    // either name set to true commits; a bad value of the new name is refused like the old one
    await push(q, [4]);
    const either = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=w&commitOnDelivery=false&autoAck=true`);
    assert.equal(either.body.leaseId, '');
    const bad = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?commitOnDelivery=yes`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_request');
    const conflating = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=c&conflation=true&commitOnDelivery=true`);
    assert.equal(conflating.status, 400);
    assert.equal(conflating.body.success, false);
    assert.match(conflating.body.error, /commitOnDelivery/);
  });
});
