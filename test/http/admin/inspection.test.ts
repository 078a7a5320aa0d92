/**
 * Operator inspection routes over real HTTP: resources, messages (filters, keyset pagination under
 * concurrent pushes), dead-letter admin (delete, purge, replay exactly once), traces, status.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

const enc = encodeURIComponent;

async function push(queue: string, items: { partition?: string; payload: unknown; transactionId?: string }[]) {
  const r = await call(b.url, 'POST', '/api/v1/push', { items: items.map((i) => ({ queue, ...i })) });
  assert.equal(r.status, 201, r.text);
  return r.body as any[];
}

/** Pops one message and nacks it `dlq`, returning the popped message. */
async function deadLetter(queue: string, partition: string, payload: unknown, transactionId: string) {
  await push(queue, [{ partition, payload, transactionId }]);
  const p = await call(b.url, 'GET', `/api/v1/pop/queue/${enc(queue)}/partition/${enc(partition)}?batch=1`);
  assert.equal(p.status, 200, p.text);
  const m = p.body.messages[0];
  const a = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq', error: 'boom' });
  assert.equal(a.body[0].success, true, a.text);
  return m;
}

describe('resources', () => {
  test('overview, namespaces, tasks, partitions and depth reflect pushes and consumption', async () => {
    const ns = uniqueName('ns');
    const q = `${ns}.billing`;
    await push(q, [{ partition: 'a', payload: 1 }, { partition: 'a', payload: 2 }, { partition: 'b', payload: 3 }]);
    const ov = await call(b.url, 'GET', '/api/v1/resources/overview');
    assert.equal(ov.status, 200);
    for (const k of ['queues', 'partitions', 'namespaces', 'tasks', 'messages', 'lag', 'throughput', 'timestamp']) assert.ok(k in ov.body, k);
    assert.ok(ov.body.messages.total >= 3);

    const nss = await call(b.url, 'GET', '/api/v1/resources/namespaces');
    const mine = nss.body.namespaces.find((n: any) => n.namespace === ns);
    assert.deepEqual(mine, { namespace: ns, queues: 1, partitions: 2, messages: { total: 3, pending: 3 } });
    const tasks = await call(b.url, 'GET', '/api/v1/resources/tasks');
    assert.ok(tasks.body.tasks.some((t: any) => t.task === 'billing'));

    const parts = await call(b.url, 'GET', `/api/v1/resources/partitions?queue=${enc(q)}`);
    assert.equal(parts.status, 200);
    assert.deepEqual(parts.body.partitions.map((p: any) => [p.name, p.messages.total]), [['a', 2], ['b', 1]]);
    const parts2 = await call(b.url, 'GET', `/api/v1/resources/queues/${enc(q)}/partitions?limit=1`);
    assert.equal(parts2.body.partitions.length, 1);
    assert.equal(parts2.body.pagination.nextAfter, 'a');
    const parts3 = await call(b.url, 'GET', `/api/v1/resources/queues/${enc(q)}/partitions?limit=1&after=a`);
    assert.equal(parts3.body.partitions[0].name, 'b');

    const d = await call(b.url, 'GET', `/api/v1/resources/queues/${enc(q)}/depth`);
    assert.equal(d.status, 200);
    assert.equal(d.body.pending, 3);
    assert.equal(d.body.partitionsPending, 2);
    assert.deepEqual(d.body.partitions[0], { partition: 'a', pending: 2 });

    // consume partition a in queue mode: depth and the queue list/detail lag follow
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${enc(q)}/partition/a?batch=10&autoAck=true`);
    assert.equal(p.body.messages.length, 2);
    const d2 = await call(b.url, 'GET', `/api/v1/resources/queues/${enc(q)}/depth`);
    assert.equal(d2.body.pending, 1);
    const detail = await call(b.url, 'GET', `/api/v1/resources/queues/${enc(q)}`);
    const qm = detail.body.consumerGroups.find((g: any) => g.name === '__QUEUE_MODE__');
    assert.equal(qm.totalLag, 1);
    assert.equal(qm.partitionsWithLag, 1);
    assert.ok(qm.oldestUnconsumedAt);
    const list = await call(b.url, 'GET', '/api/v1/resources/queues');
    const row = list.body.queues.find((x: any) => x.name === q);
    assert.equal(row.groups[0].totalLag, 1);
  });

  // Reported against the reference dashboard: a queue read by named groups ("bus mode") showed its
  // consumed messages as pending forever, in the listing and in the counts, and one pop without a
  // group (a debug pop, even one that found nothing) pinned them there. The fix: named groups
  // decide when the queue has any, the queue-mode cursor only when it has none (queen-mq/queen:
  // CHANGELOG.md, 1.0.0-beta.4 "The dashboard reported messages as pending after they had been
  // consumed and acknowledged").
  test('a queue read by named groups counts what they consumed; a stray pop without a group changes nothing', async () => {
    const q = uniqueName('bus');
    const consume = async (g: string, n: number) => {
      const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=${g}&subscriptionMode=all&batch=${n}`);
      assert.equal(p.status, 200, p.text);
      const last = p.body.messages.at(-1);
      await call(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId, consumerGroup: g, status: 'completed' });
    };
    const statuses = async () => (await call(b.url, 'GET', `/api/v1/messages?queue=${q}`)).body.messages.map((m: any) => m.status).reverse();
    const counts = async () => {
      const detail = (await call(b.url, 'GET', `/api/v1/resources/queues/${q}`)).body;
      const row = (await call(b.url, 'GET', '/api/v1/resources/queues')).body.queues.find((x: any) => x.name === q);
      const parts = (await call(b.url, 'GET', `/api/v1/resources/partitions?queue=${q}`)).body.partitions;
      const status = (await call(b.url, 'GET', `/api/v1/status/queues/${q}`)).body.queue.messages;
      const pick = (c: any) => [c.pending, c.processing, c.completed];
      assert.deepEqual(pick(detail.totals), pick(status), 'queue detail and status agree');
      assert.deepEqual([row.messages.pending, row.messages.processing], pick(detail.totals).slice(0, 2), 'queue list agrees');
      assert.deepEqual(pick(parts[0].messages), pick(detail.totals), 'the one partition agrees');
      return pick(detail.totals);
    };

    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204, 'a pop without a group on the empty queue');
    await push(q, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await consume('billing', 3);
    assert.deepEqual(await statuses(), ['completed', 'completed', 'completed']);
    assert.deepEqual(await counts(), [0, 0, 3], 'pending, processing, completed');
    const first = (await call(b.url, 'GET', `/api/v1/messages?queue=${q}`)).body.messages[0];
    assert.equal((await call(b.url, 'GET', `/api/v1/messages/${first.partitionId}/${first.transactionId}`)).body.status, 'completed');

    // a second named group behind the first: the slowest named group decides
    await consume('audit', 1);
    assert.deepEqual(await statuses(), ['completed', 'pending', 'pending']);
    assert.deepEqual(await counts(), [2, 0, 1]);
    const leased = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=audit&batch=1`);
    assert.equal(leased.status, 200);
    assert.deepEqual(await statuses(), ['completed', 'processing', 'pending']);
    assert.deepEqual(await counts(), [1, 1, 1]);

    // without any named group the queue-mode cursor decides, as before
    const qm = uniqueName('qm');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: qm, payload: 1 }, { queue: qm, payload: 2 }] });
    await call(b.url, 'GET', `/api/v1/pop/queue/${qm}?batch=1&autoAck=true`);
    assert.deepEqual((await call(b.url, 'GET', `/api/v1/resources/queues/${qm}`)).body.totals, { total: 2, pending: 1, processing: 0, completed: 1, failed: 0, deadLetter: 0 });
  });

  test('without a queue, /resources/partitions pages through every queue\'s partitions without repeats', async () => {
    const q = uniqueName('allparts');
    await call(b.url, 'POST', '/api/v1/push', { items: ['a', 'b', 'c'].map((partition) => ({ queue: q, partition, payload: 1 })) });
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 1000; page++) {
      const r: any = await call(b.url, 'GET', `/api/v1/resources/partitions?limit=2${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      assert.equal(r.status, 200);
      seen.push(...r.body.partitions.map((p: any) => `${p.queue}/${p.name}`));
      after = r.body.pagination.nextAfter;
      if (!after) break;
    }
    assert.equal(new Set(seen).size, seen.length, 'no repeats');
    for (const p of ['a', 'b', 'c']) assert.ok(seen.includes(`${q}/${p}`), p);
    // The cursor travels in a URL, so it holds no NUL (refused on every route); anything else is refused as a cursor.
    const bad = await call(b.url, 'GET', '/api/v1/resources/partitions?limit=2&after=nope');
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.code, 'invalid_request');
  });

  test('bad input: unknown queue 404, unknown group 404', async () => {
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues/nope-none/depth')).body.code, 'queue_not_found');
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues/nope-none/depth')).status, 404);
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/partitions?queue=nope-none')).status, 404);
    const q = uniqueName();
    await push(q, [{ payload: 1 }]);
    const r = await call(b.url, 'GET', `/api/v1/resources/queues/${q}/depth?group=ghost`);
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'group_not_found');
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues/x/partitions?limit=abc')).status, 400);
  });

  test('offset paging of /messages is refused with a message that names the cursor to use instead', async () => {
    const q = uniqueName();
    await push(q, [{ payload: 1 }]);
    const r = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&offset=5`);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'invalid_request');
    assert.match(r.body.error, /offset paging is not supported: use cursor/);
    assert.equal((await call(b.url, 'GET', `/api/v1/messages?queue=${q}&offset=0`)).status, 200, 'offset 0 is the first page');
  });
});

describe('messages', () => {
  test('keyset pagination neither skips nor repeats while messages keep arriving', async () => {
    const q = uniqueName();
    const initial = 250;
    await push(q, Array.from({ length: initial }, (_, i) => ({ partition: `p${i % 7}`, payload: { i }, transactionId: `init-${i}` })));
    let stop = false;
    let extra = 0;
    const writer = (async () => {
      while (!stop) {
        await push(q, [{ partition: `p${extra % 5}`, payload: { extra }, transactionId: `new-${extra}` }]);
        extra++;
      }
    })();
    const seen = new Map<string, number>();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const qs: string = `queue=${q}&limit=17${cursor ? `&cursor=${cursor}` : ''}`;
      const r = await call(b.url, 'GET', `/api/v1/messages?${qs}`);
      assert.equal(r.status, 200, r.text);
      for (const m of r.body.messages) seen.set(`${m.partitionId}/${m.transactionId}`, (seen.get(`${m.partitionId}/${m.transactionId}`) ?? 0) + 1);
      cursor = r.body.pagination.nextCursor;
      pages++;
      // Let at least one push land between two pages, so the listing always races the writer.
      const pushed = extra;
      await waitFor(() => extra > pushed, { what: 'a push between two pages of the listing' });
    } while (cursor && pages < 1000);
    stop = true;
    await writer;
    assert.ok(extra > 0, 'pushes happened during the listing');
    for (const [k, n] of seen) assert.equal(n, 1, `repeated ${k}`);
    const initialSeen = [...seen.keys()].filter((k) => k.includes('/init-')).length;
    assert.equal(initialSeen, initial, 'every message that existed at the start is listed exactly once');
  });

  test('filters: partition, from/to, status; one message by address; bad filters are 400', async () => {
    const q = uniqueName();
    await push(q, [{ partition: 'a', payload: { x: 1 }, transactionId: 't1' }, { partition: 'b', payload: { x: 2 }, transactionId: 't2' }]);
    const onlyA = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&partition=a`);
    assert.deepEqual(onlyA.body.messages.map((m: any) => m.transactionId), ['t1']);
    assert.equal(onlyA.body.messages[0].status, 'pending');
    assert.deepEqual(onlyA.body.messages[0].data, { x: 1 });
    const future = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&from=${new Date(Date.now() + 60_000).toISOString()}`);
    assert.equal(future.body.messages.length, 0);
    const past = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&to=${new Date(Date.now() - 3_600_000).toISOString()}`);
    assert.equal(past.body.messages.length, 0);
    await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a?autoAck=true`);
    const done = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&status=completed`);
    assert.deepEqual(done.body.messages.map((m: any) => m.transactionId), ['t1']);
    const pending = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&status=pending`);
    assert.deepEqual(pending.body.messages.map((m: any) => m.transactionId), ['t2']);

    const one = await call(b.url, 'GET', `/api/v1/messages/${onlyA.body.messages[0].partitionId}/t1`);
    assert.equal(one.status, 200);
    assert.equal(one.body.status, 'completed');
    assert.equal(one.body.queue, q);
    assert.deepEqual(one.body.data, { x: 1 });
    assert.equal((await call(b.url, 'GET', `/api/v1/messages/${onlyA.body.messages[0].partitionId}/nope`)).status, 404);

    for (const bad of ['from=yesterday', 'status=weird', 'limit=0', 'cursor=%%%', 'partition=a', `queue=${q}&partition=zz`, 'queue=missing-queue']) {
      const r = await call(b.url, 'GET', `/api/v1/messages?${bad}`);
      assert.ok(r.status === 400 || r.status === 404, `${bad} → ${r.status}`);
    }
    assert.equal((await call(b.url, 'GET', '/api/v1/messages?queue=missing-queue')).status, 404);
    assert.equal((await call(b.url, 'GET', '/api/v1/messages?from=bad')).status, 400);
  });
});

describe('dead letters', () => {
  test('replay moves a dead letter back exactly once; retry by address; delete only dead letters', async () => {
    const q = uniqueName();
    const m = await deadLetter(q, 'p', { v: 'x' }, 'order-1');
    const list = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`);
    assert.equal(list.body.messages.length, 1);
    const id = list.body.messages[0].id;
    const detail = await call(b.url, 'GET', `/api/v1/messages/${m.partitionId}/order-1`);
    assert.equal(detail.body.status, 'dead_letter');
    assert.equal(detail.body.errorMessage, 'boom');

    const [r1, r2] = await Promise.all([
      call(b.url, 'POST', `/api/v1/dlq/${id}/replay`, {}),
      call(b.url, 'POST', `/api/v1/dlq/${id}/replay`, {}),
    ]);
    const ok = [r1, r2].filter((r) => r.status === 200);
    assert.equal(ok.length, 1, `${r1.status} ${r2.status}`);
    assert.equal(ok[0]!.body.result, 'moved');
    assert.equal(ok[0]!.body.replayedAs.transaction_id, `dlq:${id}`);
    assert.equal(ok[0]!.body.dlqRowRemoved, true);
    const other = [r1, r2].find((r) => r.status !== 200)!;
    assert.equal(other.status, 404);
    assert.equal(other.body.result, 'gone');
    const again = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=10`);
    assert.equal(again.body.messages.length, 1);
    assert.deepEqual(again.body.messages[0].data, { v: 'x' });
    assert.equal((await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages.length, 0);

    // Many replays racing for one dead letter, several rounds: exactly one is answered `moved`, the
    // others `gone` (a replay that read the row before the winner committed must not answer 200).
    for (let round = 0; round < 5; round++) {
      const rq = uniqueName();
      await deadLetter(rq, 'p', { round }, `race-${round}`);
      const rid = (await call(b.url, 'GET', `/api/v1/dlq?queue=${rq}`)).body.messages[0].id;
      const answers = await Promise.all(Array.from({ length: 8 }, () => call(b.url, 'POST', `/api/v1/dlq/${rid}/replay`, {})));
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 404, 404, 404, 404, 404, 404, 404], `round ${round}: ${answers.map((r) => `${r.status} ${r.body?.result}`).join(', ')}`);
      const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${rq}/partition/p?batch=10`);
      assert.equal(popped.body.messages.length, 1, `round ${round}: replayed once`);
    }

    // replay into another queue, blank names refused
    const m2 = await deadLetter(q, 'p2', { v: 'y' }, 'order-2');
    const id2 = (await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages[0].id;
    assert.equal((await call(b.url, 'POST', `/api/v1/dlq/${id2}/replay`, { queue: '  ' })).status, 400);
    // A body that is not an object is refused, and the dead letter stays (outside check: `[1]`
    // replayed and removed the row).
    for (const body of ['[1]', '"x"', '7']) {
      const r = await call(b.url, 'POST', `/api/v1/dlq/${id2}/replay`, body);
      assert.equal(r.status, 400, `${body}: ${r.text}`);
      assert.equal(r.body.code, 'invalid_request');
      assert.equal(r.body.success, false);
    }
    assert.equal((await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages.length, 1, 'the dead letter is still there');
    const q2 = uniqueName();
    const moved = await call(b.url, 'POST', `/api/v1/dlq/${id2}/replay`, { queue: q2 });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.queue, q2);

    // retry by address, then delete (dead letters only)
    const m3 = await deadLetter(q, 'p3', { v: 'z' }, 'order-3');
    const retry = await call(b.url, 'POST', `/api/v1/messages/${m3.partitionId}/order-3/retry`, {});
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.result, 'moved');
    assert.equal((await call(b.url, 'POST', `/api/v1/messages/${m3.partitionId}/order-3/retry`, {})).status, 404);
    const del404 = await call(b.url, 'DELETE', `/api/v1/messages/${m2.partitionId}/order-2`);
    assert.equal(del404.status, 404, 'live messages are immutable; its dead letter was replayed');
    const m4 = await deadLetter(q, 'p4', 4, 'order-4');
    const del = await call(b.url, 'DELETE', `/api/v1/messages/${m4.partitionId}/order-4`);
    assert.equal(del.status, 200);
    assert.equal(del.body.success, true);
  });

  // The replay's transaction id `dlq:<id>` can be derived by anyone who reads the listing. A
  // replay that finds it taken writes nothing and must keep the dead letter: a move that moved
  // nothing may not destroy the record (queen-mq/queen: CHANGELOG.md, 1.6.0 "Dead-letter replay
  // runs on a move"). Replays of the other groups' dead letters of the same message go on.
  test('a replay whose dlq:<id> is already taken answers duplicate and keeps the dead letter', async () => {
    const q = uniqueName();
    await push(q, [{ partition: 'p', payload: { v: 'once' }, transactionId: 'fan-1' }]);
    for (const g of ['ga', 'gb']) {
      const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?consumerGroup=${g}&subscriptionMode=all`);
      const m = p.body.messages[0];
      const a = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, consumerGroup: g, status: 'dlq', error: `boom ${g}` });
      assert.equal(a.body[0].dlq, true, a.text);
    }
    const rows = (await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages;
    const ga = rows.find((r: any) => r.consumerGroup === 'ga');
    const gb = rows.find((r: any) => r.consumerGroup === 'gb');
    assert.ok(ga && gb, JSON.stringify(rows));
    const squat = await push(q, [{ partition: 'p', payload: 'squatter', transactionId: `dlq:${ga.id}` }]);
    assert.equal(squat[0].status, 'queued');

    const dup = await call(b.url, 'POST', `/api/v1/dlq/${ga.id}/replay`, {});
    assert.equal(dup.status, 200, dup.text);
    assert.equal(dup.body.result, 'duplicate');
    assert.equal(dup.body.dlqRowRemoved, false);
    assert.equal(dup.body.replayedAs.status, 'duplicate');
    const after = (await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages;
    assert.deepEqual(after.map((r: any) => r.id).sort(), [ga.id, gb.id].sort(), 'both dead letters are still there');
    assert.equal((await call(b.url, 'POST', `/api/v1/dlq/${ga.id}/replay`, {})).body.result, 'duplicate', 'and stays replayable, not gone');

    const moved = await call(b.url, 'POST', `/api/v1/dlq/${gb.id}/replay`, {});
    assert.equal(moved.body.result, 'moved', moved.text);
    const left = (await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages;
    assert.deepEqual(left.map((r: any) => r.id), [ga.id], 'only the replayed group’s dead letter was removed');
  });

  test('purge needs a queue and removes only that queue’s dead letters', async () => {
    const q1 = uniqueName();
    const q2 = uniqueName();
    await deadLetter(q1, 'p', 1, 'a');
    await deadLetter(q1, 'p', 2, 'b');
    await deadLetter(q2, 'p', 3, 'c');
    const missing = await call(b.url, 'DELETE', '/api/v1/dlq');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.success, false);
    assert.equal((await call(b.url, 'DELETE', '/api/v1/dlq?queue=no-such-queue')).status, 404);
    const r = await call(b.url, 'DELETE', `/api/v1/dlq?queue=${q1}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.deleted, 2);
    assert.equal((await call(b.url, 'GET', `/api/v1/dlq?queue=${q1}`)).body.messages.length, 0);
    assert.equal((await call(b.url, 'GET', `/api/v1/dlq?queue=${q2}`)).body.messages.length, 1);
  });
});

describe('traces', () => {
  test('record (201) and list by message, by name, names; bad input', async () => {
    const q = uniqueName();
    const [r] = await push(q, [{ payload: 1, transactionId: 'tx-1' }]);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    const pid = p.body.messages[0].partitionId;
    const name = uniqueName('trace');
    const t1 = await call(b.url, 'POST', '/api/v1/traces', { transactionId: 'tx-1', partitionId: pid, traceNames: [name], data: { step: 1 } });
    assert.equal(t1.status, 201, t1.text);
    assert.equal(t1.body.success, true);
    assert.ok(t1.body.traceId);
    await call(b.url, 'POST', '/api/v1/traces', { transactionId: 'tx-1', partitionId: pid, traceNames: name, eventType: 'error', data: 'two' });
    const byMsg = await call(b.url, 'GET', `/api/v1/traces/${pid}/tx-1`);
    assert.deepEqual(byMsg.body.traces.map((t: any) => [t.event_type, t.data, t.trace_names]), [['info', { step: 1 }, [name]], ['error', 'two', [name]]]);
    assert.equal(byMsg.body.traces[0].consumer_group, '__QUEUE_MODE__');
    const byName = await call(b.url, 'GET', `/api/v1/traces/by-name/${name}`);
    assert.equal(byName.body.traces.length, 2);
    assert.equal(byName.body.traces[0].queue_name, q);
    assert.equal(byName.body.traces[0].transaction_id, r.transaction_id);
    const names = await call(b.url, 'GET', '/api/v1/traces/names?limit=1000');
    const n = names.body.trace_names.find((x: any) => x.trace_name === name);
    assert.equal(n.trace_count, 2);
    assert.equal(n.message_count, 1);

    assert.equal((await call(b.url, 'POST', '/api/v1/traces', { partitionId: pid, data: 1 })).status, 400);
    assert.equal((await call(b.url, 'POST', '/api/v1/traces', { transactionId: 'tx-1', partitionId: pid })).status, 400);
    const nf = await call(b.url, 'POST', '/api/v1/traces', { transactionId: 'nope', partitionId: pid, data: 1 });
    assert.equal(nf.status, 404);
    assert.equal(nf.body.success, false);
    assert.equal((await call(b.url, 'POST', '/api/v1/traces', { transactionId: 'tx-1', partitionId: pid, data: 1, traceNames: [5] })).status, 400);
  });
});

describe('status', () => {
  test('status, queues, queue detail and analytics come from live counters', async () => {
    const q = uniqueName();
    await push(q, [{ payload: 1 }, { payload: 2 }]);
    await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1&autoAck=true`);
    const s = await call(b.url, 'GET', `/api/v1/status?queue=${q}`);
    assert.equal(s.status, 200);
    assert.equal(s.body.messages.total, 2);
    const last = s.body.throughput[s.body.throughput.length - 1];
    assert.equal(last.ingested, 2);
    assert.equal(last.processed, 1);
    const qs = await call(b.url, 'GET', `/api/v1/status/queues?queue=${q}`);
    assert.equal(qs.body.queues[0].name, q);
    const qd = await call(b.url, 'GET', `/api/v1/status/queues/${q}`);
    assert.equal(qd.status, 200);
    assert.equal(qd.body.partitions[0].cursor[0].consumerGroup, '__QUEUE_MODE__');
    const an = await call(b.url, 'GET', `/api/v1/status/analytics?queue=${q}`);
    assert.equal(an.body.totals.ingested, 2);
    const hourly = await call(b.url, 'GET', `/api/v1/status/analytics?interval=hour`);
    assert.equal(hourly.status, 200);
    assert.equal((await call(b.url, 'GET', '/api/v1/status/queues/nope-q')).status, 404);
    // the reference's message listing of a queue: newest first, limit and offset, [] for an unknown queue
    const listed = await call(b.url, 'GET', `/api/v1/status/queues/${q}/messages`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.map((m: { status: string }) => m.status), ['pending', 'completed']);
    assert.deepEqual(Object.keys(listed.body[0]).sort(), ['createdAt', 'id', 'partition', 'partitionId', 'queue', 'queuePath', 'status', 'transactionId']);
    assert.equal(listed.body[0].queuePath, `${q}/Default`);
    const second = await call(b.url, 'GET', `/api/v1/status/queues/${q}/messages?limit=1&offset=1`);
    assert.deepEqual(second.body.map((m: { id: string }) => m.id), [listed.body[1].id]);
    assert.deepEqual((await call(b.url, 'GET', `/api/v1/status/queues/${q}/messages?offset=2`)).body, []);
    assert.deepEqual((await call(b.url, 'GET', '/api/v1/status/queues/nope-q/messages')).body, []);
    assert.equal((await call(b.url, 'GET', `/api/v1/status/queues/${q}/messages?limit=0`)).status, 400);
    assert.equal((await call(b.url, 'GET', `/api/v1/status/queues/${q}/messages?offset=1001`)).status, 400);
    assert.equal((await call(b.url, 'GET', '/api/v1/status?queue=nope-q')).status, 404);
    assert.equal((await call(b.url, 'GET', '/api/v1/status/analytics?interval=week')).status, 400);
    assert.equal((await call(b.url, 'GET', '/api/v1/status?from=never')).status, 400);
    const buf = await call(b.url, 'GET', '/api/v1/status/buffers');
    assert.deepEqual(Object.keys(buf.body).sort(), ['dbHealthy', 'failed', 'pending', 'worker']);
  });

  test('PostgreSQL-only analytics answer neutral documents that say so, not 404s', async () => {
    for (const name of ['postgres-stats', 'queue-parked-replicas', 'workload', 'retention', 'dlq-signatures', 'partition-liveness', 'queue-ops']) {
      const r = await call(b.url, 'GET', `/api/v1/analytics/${name}`);
      assert.equal(r.status, 200, name);
      assert.equal(r.body.supported, false, name);
    }
    const lag = await call(b.url, 'GET', '/api/v1/analytics/queue-lag');
    assert.deepEqual(lag.body, []);
  });
});
