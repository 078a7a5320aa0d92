/**
 * Two-node scenarios with the official JS client (queen-mq/queen: clients/client-js, client-v2),
 * run from outside the repository (docs/compat.md#two-nodes): one client bound to node A (producer),
 * one bound to node B (consumer), both nodes on one PostgreSQL database. Checks delivery order per
 * partition, exactly-once acks, long-poll wake-up latency (push on A -> parked pop on B), consumer
 * groups, acks and lease expiry across nodes, transactions committed on the other node, and the DLQ.
 *
 * Usage: QUEEN_CLIENT_DIR=<client-js folder> node scripts/compat/two-nodes.mjs <url A> <url B> [scenario...]
 * Env: WAKE_ROUNDS (default 100). Exit code 0 when every scenario passed.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const clientDir = process.env.QUEEN_CLIENT_DIR;
if (!clientDir) { console.error('set QUEEN_CLIENT_DIR to the clients/client-js folder of the reference repository'); process.exit(2); }
const { Queen } = await import(pathToFileURL(path.join(clientDir, 'client-v2/index.js')).href);
const [A, B, ...only] = process.argv.slice(2);
const producer = new Queen({ url: A, handleSignals: false });
const consumer = new Queen({ url: B, handleSignals: false });
const run = `d${Date.now().toString(36)}`;
const results = [];
const ROUNDS = Number(process.env.WAKE_ROUNDS || 100);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const assert = (c, m) => { if (!c) throw new Error(m); };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };

async function drain(q, { group, batch = 10, leaseSeconds, max = 100000 } = {}) {
  const got = [];
  for (;;) {
    let b = consumer.queue(q).batch(batch).wait(false);
    if (group) b = b.group(group);
    const msgs = await b.pop();
    if (msgs.length === 0) break;
    got.push(...msgs);
    const r = await consumer.ack(msgs, true, group ? { group } : {});
    if (got.length > max) throw new Error('too many deliveries');
  }
  return got;
}

const scenarios = {
  // 2,000 messages over 8 partitions pushed on A in batches of 50; B pops batches and acks them:
  // every message once, per-partition order = push order, nothing left after.
  async orderExactlyOnce() {
    const q = `${run}-order`;
    await producer.queue(q).create();
    const per = 250, parts = 8;
    for (let p = 0; p < parts; p++) for (let i = 0; i < per; i += 50) {
      await producer.queue(q).partition(`p${p}`).push(Array.from({ length: 50 }, (_, k) => ({ data: { p, i: i + k } })));
    }
    const got = await drain(q, { batch: 25 });
    const seen = new Map();
    const ids = new Set();
    for (const m of got) {
      assert(!ids.has(m.transactionId), `duplicate delivery ${m.transactionId}`); ids.add(m.transactionId);
      const last = seen.get(m.data.p) ?? -1;
      assert(m.data.i === last + 1, `partition p${m.data.p}: got ${m.data.i} after ${last}`);
      seen.set(m.data.p, m.data.i);
    }
    assert(got.length === per * parts, `delivered ${got.length}, pushed ${per * parts}`);
    const again = await consumer.queue(q).batch(10).wait(false).pop();
    assert(again.length === 0, `${again.length} redelivered after ack`);
    return `${got.length} pushed on A, delivered once each on B in partition order`;
  },
  // consume() with 4 workers on B (auto-ack), producer on A pushing concurrently.
  async consumeConcurrent() {
    const q = `${run}-consume`;
    await producer.queue(q).create();
    const total = 1000, parts = 10;
    const seen = new Map(); const ids = new Set(); let dup = 0, disorder = 0;
    const ac = new AbortController();
    const consB = consumer.queue(q).concurrency(4).batch(10).timeoutMillis(2000).limit(total).each().consume(async (m) => {
      if (ids.has(m.transactionId)) dup++; ids.add(m.transactionId);
      const last = seen.get(m.data.p) ?? -1; if (m.data.i !== last + 1) disorder++; seen.set(m.data.p, m.data.i);
    }, { signal: ac.signal });
    const cons = (async () => { await consB; })().catch((e) => e);
    const prod = (async () => { for (let i = 0; i < total / parts; i += 10) for (let p = 0; p < parts; p++) await producer.queue(q).partition(`p${p}`).push(Array.from({ length: 10 }, (_, k) => ({ data: { p, i: i + k } }))); })();
    await prod;
    const t = Date.now();
    while (ids.size < total && Date.now() - t < 60000) await sleep(100);
    ac.abort(); await Promise.race([cons, sleep(3000)]);
    assert(dup === 0, `${dup} duplicates`); assert(disorder === 0, `${disorder} out of order`);
    assert(ids.size === total, `consumed ${ids.size}/${total}`);
    await sleep(300);
    const left = await consumer.queue(q).batch(100).wait(false).pop();
    assert(left.length === 0, `${left.length} left after auto-ack`);
    return `${total} consumed on B by 4 workers while A pushed; 0 duplicates, 0 out of order`;
  },
  // Long poll parked on B, one push on A, latency until B's pop returns it. 100 rounds.
  async longPollWake() { return wake(producer, `${run}-wake`, 'A', 'B'); },
  // The same on one node (push on B, pop on B), for comparison.
  async longPollWakeSameNode() { return wake(consumer, `${run}-wake1`, 'B', 'B'); },
};
async function wake(producer, q, pn, cn) {
  {
    await producer.queue(q).create();
    const lat = [];
    for (let r = 0; r < ROUNDS; r++) {
      const popP = consumer.queue(q).batch(1).wait(true).timeoutMillis(10000).pop();
      await sleep(30); // let the pop park on B
      const t0 = performance.now();
      await producer.queue(q).push([{ data: { r } }]);
      const tPush = performance.now();
      const msgs = await popP;
      const t1 = performance.now();
      assert(msgs.length === 1 && msgs[0].data.r === r, `round ${r}: got ${JSON.stringify(msgs.map((m) => m.data))}`);
      lat.push(t1 - t0);
      await consumer.ack(msgs[0], true);
    }
    return `${lat.length} rounds, push on ${pn} -> parked pop on ${cn} returns: p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${Math.max(...lat).toFixed(1)} ms`;
  }
}
const scenarios2 = {
  // Consumer groups: two groups on B each receive every message produced on A; ack in one does not affect the other.
  async consumerGroups() {
    const q = `${run}-groups`;
    await producer.queue(q).create();
    await producer.queue(q).partition('g').push(Array.from({ length: 200 }, (_, i) => ({ data: { i } })));
    const g1 = await drain(q, { group: 'g1', batch: 20 });
    const g2 = await drain(q, { group: 'g2', batch: 7 });
    for (const [n, g] of [['g1', g1], ['g2', g2]]) {
      assert(g.length === 200, `${n} got ${g.length}`);
      g.forEach((m, k) => assert(m.data.i === k, `${n} order at ${k}: ${m.data.i}`));
    }
    return 'groups g1 and g2 on B each got the 200 messages pushed on A, in order';
  },
  // A lease taken on B is acked through A (the other node) and is gone on both; an un-acked lease
  // taken on B expires and the message is redelivered to a pop on A.
  async crossNodeAckAndLease() {
    const q = `${run}-lease`;
    await producer.queue(q).config({ leaseTime: 2 }).create();
    await producer.queue(q).push([{ data: { n: 1 } }, { data: { n: 2 } }]);
    const [m1] = await consumer.queue(q).batch(1).wait(false).pop();
    assert(m1?.data.n === 1, 'first pop on B');
    const r = await producer.ack(m1, true);
    const [m2] = await consumer.queue(q).batch(1).wait(false).pop();
    assert(m2?.data.n === 2, `second pop on B: ${JSON.stringify(m2?.data)}`);
    // do not ack m2; its 2 s lease expires; A must redeliver it
    const t = Date.now(); let again;
    while (Date.now() - t < 10000) { [again] = await producer.queue(q).batch(1).wait(false).pop(); if (again) break; await sleep(200); }
    assert(again?.data.n === 2, `redelivery on A after lease expiry: ${JSON.stringify(again?.data)}`);
    const stale = await consumer.ack(m2, true); // the expired lease of B
    await producer.ack(again, true);
    const left = await consumer.queue(q).batch(10).wait(false).pop();
    assert(left.length === 0, `${left.length} left`);
    return `ack on A of a B lease ok; expired B lease redelivered on A after ${Date.now() - t} ms; stale ack answered ${JSON.stringify(stale)}`;
  },
  // Transaction: B pops from an input queue; the ack of that message and a push into an output
  // queue are committed in one transaction on A; B then finds the output, the input is gone.
  async transactionAcrossNodes() {
    const qi = `${run}-tx-in`, qo = `${run}-tx-out`;
    await producer.queue(qi).create(); await producer.queue(qo).create();
    await producer.queue(qi).push([{ data: { step: 1 } }]);
    const [m] = await consumer.queue(qi).batch(1).wait(false).pop();
    assert(m, 'pop on B');
    const tx = await producer.transaction().ack(m).queue(qo).push([{ data: { step: 2, from: m.transactionId } }]).commit();
    assert(tx.success, 'tx failed');
    const [o] = await consumer.queue(qo).batch(1).wait(false).pop();
    assert(o?.data.step === 2 && o.data.from === m.transactionId, `output: ${JSON.stringify(o?.data)}`);
    await consumer.ack(o, true);
    const left = await consumer.queue(qi).batch(1).wait(false).pop();
    assert(left.length === 0, 'input redelivered after tx ack');
    return 'B popped, A committed ack+push, B consumed the output; input not redelivered';
  },
  // DLQ: retryLimit 1, B fails the message twice; the DLQ read on A shows it.
  async dlqAcrossNodes() {
    const q = `${run}-dlq`;
    await producer.queue(q).config({ retryLimit: 1, dlqAfterMaxRetries: true }).create();
    await producer.queue(q).push([{ data: { bad: true } }]);
    let fails = 0;
    for (let k = 0; k < 5; k++) {
      const [m] = await consumer.queue(q).batch(1).wait(false).pop();
      if (!m) break;
      await consumer.ack(m, false, { error: 'boom' }); fails++;
    }
    const t = Date.now(); let d;
    while (Date.now() - t < 5000) { d = await producer.queue(q).dlq().limit(10).get(); if (d?.messages?.length) break; await sleep(200); }
    assert(d?.messages?.length === 1, `DLQ on A: ${JSON.stringify(d).slice(0, 200)}`);
    return `${fails} failed acks on B; DLQ read on A has 1 message`;
  },
};

for (const [name, fn] of Object.entries({ ...scenarios, ...scenarios2 })) {
  if (only.length && !only.includes(name)) continue;
  const t = performance.now();
  try { const msg = await fn(); results.push({ name, ok: true, ms: performance.now() - t, msg }); }
  catch (e) { results.push({ name, ok: false, ms: performance.now() - t, msg: e.stack || e.message }); }
  const r = results.at(-1); console.log(`${r.ok ? 'PASS' : 'FAIL'} ${name} ${(r.ms / 1000).toFixed(1)} s: ${r.msg}`);
}
console.log(`${results.filter((r) => r.ok).length}/${results.length} passed`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
