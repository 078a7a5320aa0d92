import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

describe('POST /api/v1/push', () => {
  test('answers 201 with one result per item in the wire shape and auto-creates queue and partition', async () => {
    const q = `${uniqueName('billing')}.invoices.eu`;
    const r = await call(b.url, 'POST', '/api/v1/push', { items: [
      { queue: q, partition: 'p1', payload: { n: 1 }, transactionId: 'a' },
      { queue: q, payload: { n: 2 } },
    ] });
    assert.equal(r.status, 201);
    assert.ok(Array.isArray(r.body));
    assert.equal(r.body.length, 2);
    assert.deepEqual(Object.keys(r.body[0]).sort(), ['index', 'message_id', 'offset', 'partition', 'partition_id', 'queueName', 'status', 'trace_id', 'transaction_id'].sort());
    // the reference's push answer names the partition by id and echoes the trace id of a queued item
    const parts = await call(b.url, 'GET', `/api/v1/resources/queues/${encodeURIComponent(q)}`);
    const byName = new Map((parts.body.partitions as { name: string; id: string }[]).map((p) => [p.name, p.id]));
    assert.deepEqual([r.body[0].partition_id, r.body[1].partition_id], [byName.get('p1'), byName.get('Default')]);
    assert.equal(r.body[0].trace_id, null);
    const traced = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 3, traceId: 'trace-7' }, { queue: q, partition: 'p1', payload: 4, transactionId: 'a' }] });
    assert.deepEqual([traced.body[0].trace_id, traced.body[1].status, 'partition_id' in traced.body[1]], ['trace-7', 'duplicate', false]);
    assert.equal(r.body[0].status, 'queued');
    assert.equal(r.body[0].transaction_id, 'a');
    assert.equal(r.body[0].queueName, q);
    assert.equal(r.body[0].index, 0);
    assert.equal(r.body[1].transaction_id, r.body[1].message_id, 'transactionId defaults to the message id');
    assert.match(r.body[0].message_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/, 'message ids are UUIDv7');
    const d = await call(b.url, 'GET', `/api/v1/resources/queues/${encodeURIComponent(q)}`);
    assert.equal(d.status, 200);
    assert.equal(d.body.namespace, q.split('.')[0]);
    assert.equal(d.body.task, 'invoices');
    assert.deepEqual(d.body.partitions.map((p: any) => p.name).sort(), ['Default', 'p1']);
  });

  // Encoders escape different characters (Go escapes & < >, PHP escapes / and every non-ASCII
  // character, all escape " and \). The reference's Rust push refused any escape in these three
  // fields with a 400 (queen-mq/queen: CHANGELOG.md, 1.0.0-beta.3); here an escape is only
  // spelling: the same name, the same dedup key and the same ack address as the raw characters.
  test('JSON escapes in queue, partition and transactionId name the characters they stand for: push, dedup, pop, ack', async () => {
    const tag = uniqueName('esc');
    const queue = `${tag}&é`;
    const raw = `{"items":[
      {"queue":"${tag}\\u0026\\u00e9","partition":"2026\\/07","transactionId":"Bed\\u0026Breakfast-771","payload":1},
      {"queue":"${tag}\\u0026\\u00e9","partition":"2026\\/07","transactionId":"q\\"uo\\\\te \\ud83d\\ude00","payload":2}]}`;
    const r = await call(b.url, 'POST', '/api/v1/push', raw);
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.map((x: any) => [x.status, x.queueName, x.partition, x.transaction_id]), [
      ['queued', queue, '2026/07', 'Bed&Breakfast-771'],
      ['queued', queue, '2026/07', 'q"uo\\te 😀'],
    ]);
    // the unescaped spelling of the same transaction id is a duplicate of it
    const again = await call(b.url, 'POST', '/api/v1/push', { items: [
      { queue, partition: '2026/07', transactionId: 'Bed&Breakfast-771', payload: 'again' },
      { queue, partition: '2026/07', transactionId: 'q"uo\\te 😀', payload: 'again' },
    ] });
    assert.deepEqual(again.body.map((x: any) => x.status), ['duplicate', 'duplicate']);
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=10`);
    assert.equal(pop.status, 200, pop.text);
    assert.deepEqual(pop.body.messages.map((m: any) => [m.queue, m.partition, m.transactionId, m.data]), [
      [queue, '2026/07', 'Bed&Breakfast-771', 1],
      [queue, '2026/07', 'q"uo\\te 😀', 2],
    ]);
    // acks addressed with escaped transaction ids find the messages
    const [m1, m2] = pop.body.messages;
    const ack = await call(b.url, 'POST', '/api/v1/ack/batch', `{"acknowledgments":[
      {"transactionId":"Bed\\u0026Breakfast-771","partitionId":"${m1.partitionId}","leaseId":"${m1.leaseId}","status":"completed"},
      {"transactionId":"q\\"uo\\\\te \\ud83d\\ude00","partitionId":"${m2.partitionId}","leaseId":"${m2.leaseId}","status":"completed"}]}`);
    assert.equal(ack.status, 200, ack.text);
    assert.deepEqual(ack.body.map((x: any) => [x.transactionId, x.success, x.noop]), [['Bed&Breakfast-771', true, false], ['q"uo\\te 😀', true, false]]);
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${encodeURIComponent(queue)}`)).status, 204, 'both acked');
  });

  test('dedups a transactionId per partition, inside one request and across requests; first occurrence wins', async () => {
    const q = uniqueName();
    const r1 = await call(b.url, 'POST', '/api/v1/push', { items: [
      { queue: q, payload: 1, transactionId: 't' },
      { queue: q, payload: 2, transactionId: 't' },
      { queue: q, partition: 'other', payload: 3, transactionId: 't' },
    ] });
    assert.deepEqual(r1.body.map((x: any) => x.status), ['queued', 'duplicate', 'queued']);
    assert.equal(r1.body[1].message_id, r1.body[0].message_id);
    const r2 = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 4, transactionId: 't' }] });
    assert.equal(r2.body[0].status, 'duplicate');
    assert.equal(r2.body[0].message_id, r1.body[0].message_id);
    assert.equal(r2.body[0].offset, 0);
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/Default?batch=10`);
    assert.deepEqual(pop.body.messages.map((m: any) => m.data), [1], 'the duplicate was not stored');
  });

  test('items interleaved over partitions: answers in request order, each partition\'s offsets in request order, dedup across the interleaving', async () => {
    const q = uniqueName();
    const parts = ['a', 'b', 'c'];
    const items = Array.from({ length: 12 }, (_, i) => ({ queue: q, partition: parts[i % 3], payload: { i }, transactionId: `t${i}` }));
    items.push({ queue: q, partition: 'a', payload: { i: 12 }, transactionId: 't0' }); // a repeat of item 0, three appends later
    const r = await call(b.url, 'POST', '/api/v1/push', { items });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.map((x: any) => x.index), items.map((_, i) => i));
    assert.deepEqual(r.body.map((x: any) => x.partition), items.map((x) => x.partition));
    assert.deepEqual(r.body.map((x: any) => x.offset), [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0]);
    assert.deepEqual(r.body.map((x: any) => x.status), [...Array(12).fill('queued'), 'duplicate']);
    assert.equal(r.body[12].message_id, r.body[0].message_id);
    for (const [k, part] of parts.entries()) {
      const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/${part}?batch=10`);
      assert.deepEqual(pop.body.messages.map((m: any) => m.data.i), [k, k + 3, k + 6, k + 9]);
    }
  });

  test('a dedup window of 0 turns dedup off', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { dedupWindowSeconds: 0 } });
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1, transactionId: 'x' }] });
    const r = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 2, transactionId: 'x' }] });
    assert.equal(r.body[0].status, 'queued');
  });

  test('a dedup window of 0 stores repeats inside one request too', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { dedupWindowSeconds: 0 } });
    const r = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 3, transactionId: 'x' }, { queue: q, payload: 4, transactionId: 'x' }] });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body.map((x: any) => x.status), ['queued', 'queued']);
    assert.notEqual(r.body[1].message_id, r.body[0].message_id);
    assert.equal(r.body[1].offset, r.body[0].offset + 1);
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
    assert.deepEqual(pop.body.messages.map((m: any) => m.data), [3, 4]);
  });

  test('keeps traceId and payload types (null, string, number, array) verbatim', async () => {
    const q = uniqueName();
    const trace = '019dc9b7-cb4f-7c1a-9b21-7e8a5c3a40e1';
    const payloads = [null, 'text', 42, [1, { a: 'b' }], { nested: { deep: true } }];
    await call(b.url, 'POST', '/api/v1/push', { items: payloads.map((p, i) => ({ queue: q, payload: p, traceId: i === 0 ? trace : undefined })) });
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
    assert.deepEqual(pop.body.messages.map((m: any) => m.data), payloads);
    assert.equal(pop.body.messages[0].traceId, trace);
    assert.equal(pop.body.messages[1].traceId, null);
  });

  test('an empty items array answers 201 []', async () => {
    const r = await call(b.url, 'POST', '/api/v1/push', { items: [] });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body, []);
  });

  test('a producerSub in the body is never honoured', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1, producerSub: 'mallory' }] });
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.equal(pop.body.messages[0].producerSub, null);
  });
});
