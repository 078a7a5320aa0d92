/**
 * The operation contract's behavioural cases (src/storage/contract.ts, docs/storage.md#operation-contract),
 * with no backend-specific assertion: conformance.test.ts runs them on every backend, and
 * conformance-meta.test.ts runs them on a deliberately wrong double to prove they can fail.
 */
import assert from 'node:assert/strict';
import { QUEUE_DEFAULTS } from '../../src/model/options.js';
import { attemptOf, DEFAULT_TENANT, type AppendResult, type ClaimRequest, type QueueBackend, type QueueKey, type UnitOp } from '../../src/storage/contract.js';

export interface ContractCase {
  name: string;
  /** The case depends on cursor commits taking effect. */
  cursorCommit: boolean;
  run(b: QueueBackend): Promise<void>;
}

const T0 = 1_700_000_000_000;
const Q: QueueKey = { tenant: DEFAULT_TENANT, queue: 'q' };
const P = { ...Q, partition: 'p' };

function item(txn: string, payload = '1') {
  return { messageId: `m-${txn}`, transactionId: txn, payload, encrypted: false, traceId: null, producerSub: null };
}

function claimReq(over: Partial<ClaimRequest> = {}): ClaimRequest {
  return { queue: Q, group: 'g', maxPartitions: 1, batch: 10, leaseId: 'L1', leaseMs: 30_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now: T0, ...over };
}

async function fill(b: QueueBackend, n: number, now = T0): Promise<void> {
  await b.append({ key: P, items: Array.from({ length: n }, (_, i) => item(`t${i}`)), dedupWindowMs: 0, now });
}

const offsets = (batch: { messages: { offset: number }[] } | undefined) => batch?.messages.map((m) => m.offset);

export const contractCases: ContractCase[] = [
  { name: 'append assigns dense offsets and answers duplicates with the original offset', cursorCommit: false, async run(b) {
    const r1 = await b.append({ key: P, items: [item('a'), item('b'), item('a')], dedupWindowMs: 60_000, now: T0 });
    assert.deepEqual(r1.outcomes.map((o) => [o.status, o.offset]), [['queued', 0], ['queued', 1], ['duplicate', 0]]);
    const r2 = await b.append({ key: P, items: [item('b'), item('c')], dedupWindowMs: 60_000, now: T0 + 1 });
    assert.deepEqual(r2.outcomes.map((o) => [o.status, o.offset, o.messageId]), [['duplicate', 1, 'm-b'], ['queued', 2, 'm-c']]);
    const r3 = await b.append({ key: P, items: [item('a')], dedupWindowMs: 1_000, now: T0 + 5_000 });
    assert.deepEqual(r3.outcomes.map((o) => o.status), ['queued'], 'outside the window it is new');
    assert.equal((await b.readPartition(P))?.headOffset, 4);
  } },
  { name: 'claim leases the next messages; the lease excludes the group until it expires; other groups are independent', cursorCommit: false, async run(b) {
    await fill(b, 3);
    const [got] = await b.claim(claimReq({ batch: 2 }));
    assert.deepEqual(offsets(got), [0, 1]);
    assert.equal(got!.deliveryAttempt, 1);
    assert.deepEqual(await b.claim(claimReq({ leaseId: 'L2' })), [], 'leased: skipped, not waited on');
    assert.deepEqual(offsets((await b.claim(claimReq({ group: 'other', leaseId: 'L3' })))[0]), [0, 1, 2]);
    const again = await b.claim(claimReq({ leaseId: 'L4', now: T0 + 30_001 }));
    assert.deepEqual(offsets(again[0]), [0, 1, 2], 'expired lease: redelivered from the cursor');
    assert.equal(again[0]!.deliveryAttempt, 2);
    assert.equal((await b.readCursor({ ...P, group: 'g' }))?.leaseId, 'L4');
  } },
  { name: 'auto-ack claims move the cursor past what they return', cursorCommit: false, async run(b) {
    await fill(b, 3);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: null, batch: 2 })))[0]), [0, 1]);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: null })))[0]), [2]);
    assert.equal((await b.readCursor({ ...P, group: 'g' }))?.committedOffset, 3);
  } },
  { name: 'delayed processing, window buffer, conflation and subscription seeds are honoured', cursorCommit: false, async run(b) {
    const hints: (number | null)[] = [];
    b.onPartitionsReady((_q, _p, at) => hints.push(at));
    await fill(b, 2);
    assert.deepEqual(await b.claim(claimReq({ delayMs: 1_000 })), [], 'not visible yet');
    assert.ok(hints.includes(T0 + 1_000), 'the visibility time is announced');
    assert.deepEqual(await b.claim(claimReq({ windowMs: 500, now: T0 + 100 })), [], 'window not elapsed');
    assert.deepEqual(offsets((await b.claim(claimReq({ conflation: true, now: T0 + 1_000 })))[0]), [1], 'newest only');
    await fill(b, 1, T0 + 10_000);
    assert.deepEqual(offsets((await b.claim(claimReq({ group: 'late', seed: { mode: 'from', fromTime: T0 + 5_000 } })))[0]), [2]);
  } },
  { name: 'an ack commit moves the cursor and releases the lease; the next claim starts after it', cursorCommit: true, async run(b) {
    await fill(b, 3);
    await b.claim(claimReq({ batch: 2 }));
    const r = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 2, retryCount: 0, release: true, now: T0 + 1 });
    assert.equal(r.applied, true);
    assert.equal(r.cursor?.committedOffset, 2);
    assert.equal(r.cursor?.leaseId, null);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: 'L2', now: T0 + 2 })))[0]), [2]);
  } },
  { name: 'a commit under a lease that is not held is refused and writes nothing', cursorCommit: true, async run(b) {
    await fill(b, 2);
    await b.claim(claimReq());
    const wrong = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: 'nope', committedOffset: 2, retryCount: 0, release: true, now: T0 + 1 });
    assert.equal(wrong.applied, false);
    const late = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 2, retryCount: 0, release: true, now: T0 + 60_000 });
    assert.equal(late.applied, false, 'expired');
    assert.equal((await b.readCursor({ ...P, group: 'g' }))?.committedOffset, 0);
  } },
  { name: 'a nack rewinds the cursor with its retry count; the batch is redelivered as a new attempt', cursorCommit: true, async run(b) {
    await fill(b, 3);
    await b.claim(claimReq());
    const r = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 1, retryCount: 1, release: true, now: T0 + 1 });
    assert.equal(r.cursor?.retryCount, 1);
    const [again] = await b.claim(claimReq({ leaseId: 'L2', now: T0 + 2 }));
    assert.deepEqual(offsets(again), [1, 2]);
    assert.equal(again!.deliveryAttempt, 2);
  } },
  { name: 'a DLQ hand-off copies the message to the dead letters and moves past it', cursorCommit: true, async run(b) {
    await fill(b, 2);
    await b.claim(claimReq());
    await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 1, retryCount: 0, release: true, now: T0 + 1,
      deadLetter: { id: 'd1', offset: 0, error: 'boom', retryCount: 3 } });
    const { rows, total } = await b.dlq.list({ queue: 'q', limit: 10, offset: 0 });
    assert.equal(total, 1);
    assert.equal(rows[0]?.transactionId, 't0');
    assert.equal((await b.dlq.list({ tenant: DEFAULT_TENANT, queue: 'q', limit: 10, offset: 0 })).total, 1, 'the queue\'s tenant');
    const other = await b.dlq.list({ tenant: '00000000-0000-0000-0000-0000000000dd', limit: 10, offset: 0 });
    assert.deepEqual([other.rows.length, other.total], [0, 0], 'another tenant lists none of them');
    assert.equal((await b.dlq.get('d1'))?.error, 'boom');
    assert.equal(await b.dlq.delete('d1'), true);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: 'L2', now: T0 + 2 })))[0]), [1]);
  } },
  { name: 'lease extension never shortens nor revives; release frees the partition for the group', cursorCommit: false, async run(b) {
    await fill(b, 1);
    await b.claim(claimReq());
    assert.deepEqual(await b.extendLease('L1', T0 + 500_000, T0 + 1, '00000000-0000-0000-0000-0000000000dd'), [],
      'another tenant: not extended, not counted');
    assert.deepEqual(await b.extendLease('L1', T0 + 10, T0 + 1, DEFAULT_TENANT), [T0 + 30_000], 'never shortened (nor by the other tenant\'s call)');
    assert.deepEqual(await b.extendLease('L1', T0 + 90_000, T0 + 1, DEFAULT_TENANT), [T0 + 90_000]);
    assert.deepEqual(await b.extendLease('L1', T0 + 200_000, T0 + 95_000, DEFAULT_TENANT), [], 'expired: not revived');
    await b.claim(claimReq({ leaseId: 'L2', now: T0 + 95_000 }));
    const ready: string[][] = [];
    b.onPartitionsReady((_q, parts) => ready.push(parts));
    assert.equal(await b.releaseLease('L2', T0 + 95_001), 1);
    assert.deepEqual(ready, [['p']]);
    assert.equal((await b.claim(claimReq({ leaseId: 'L3', now: T0 + 95_002 }))).length, 1);
  } },
  { name: 'a release that takes the attempt back (a claim nobody received) leaves the next claim at the same attempt', cursorCommit: false, async run(b) {
    await fill(b, 2);
    const attempt = async (leaseId: string, now: number) => (await b.claim(claimReq({ leaseId, now })))[0]?.deliveryAttempt;
    assert.equal(await attempt('L1', T0), 1);
    assert.equal(await b.releaseLease('L1', T0 + 1, true), 1);
    assert.equal(await attempt('L2', T0 + 2), 1, 'the handed-back first delivery counted nothing');
    assert.equal(await attempt('L3', T0 + 30_003), 2, 'the expiry of L2 makes the next claim a redelivery');
    assert.equal(await b.releaseLease('L3', T0 + 30_004, true), 1);
    assert.equal(await attempt('L4', T0 + 30_005), 2, 'a handed-back redelivery is counted once');
    assert.equal(await b.releaseLease('L4', T0 + 30_006), 1);
    assert.equal(await attempt('L5', T0 + 30_007), 3, 'a plain release still counts the delivery');
  } },
  ...[{ how: '', over: {} }, { how: ' (claims with a delay option)', over: { delayMs: 1 } }].map(({ how, over }): ContractCase => ({
    name: `each message's delivery attempt counts its deliveries whatever the batch sizes; a hand-back is not one; a seek starts again${how}`,
    cursorCommit: true,
    async run(b) {
      await fill(b, 6);
      const claim = async (leaseId: string, now: number, batch = 10) => {
        const [got] = await b.claim(claimReq({ leaseId, now, batch, ...over }));
        return got?.messages.map((m) => [m.offset, attemptOf(got.attempts, m.offset)]);
      };
      const commit = (leaseId: string, committedOffset: number, now: number) =>
        b.commitCursor({ key: { ...P, group: 'g' }, leaseId, committedOffset, retryCount: 0, release: true, now });
      assert.deepEqual(await claim('L1', T0 + 10, 6), [[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1]]);
      const [two] = await b.claim(claimReq({ leaseId: 'L2', now: T0 + 30_011, batch: 2, ...over }));
      assert.deepEqual([two?.deliveryAttempt, attemptOf(two!.attempts, 1)], [2, 2], 'the lease of L1 expired: a redelivery');
      assert.equal((await commit('L2', 2, T0 + 30_012)).applied, true);
      assert.deepEqual(await claim('L3', T0 + 30_013), [[2, 2], [3, 2], [4, 2], [5, 2]], 'delivered once before, in the first batch');
      assert.equal(await b.releaseLease('L3', T0 + 30_014, true), 1);
      assert.deepEqual(await claim('L4', T0 + 30_015), [[2, 2], [3, 2], [4, 2], [5, 2]], 'the hand-back counted nothing');
      assert.equal((await commit('L4', 3, T0 + 30_016)).applied, true, 'a nack at offset 3');
      await fill(b, 2);
      assert.deepEqual(await claim('L5', T0 + 30_017), [[3, 3], [4, 3], [5, 3], [6, 1], [7, 1]], 'redeliveries and first deliveries in one batch');
      assert.ok(await b.admin.seekGroup(Q, 'g', 'p', { timestamp: T0 }, T0 + 30_018));
      assert.deepEqual(await claim('L6', T0 + 30_019, 3), [[0, 1], [1, 1], [2, 1]], 'a seek sets the position: counted from 1 again');
      assert.equal((await commit('L6', 3, T0 + 30_020)).applied, true);
      const back = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: null, committedOffset: 1, retryCount: 0, release: true, now: T0 + 30_021 });
      assert.equal(back.applied, true, 'a position set back (as the Kafka port commits one)');
      assert.deepEqual(await claim('L7', T0 + 30_022, 3), [[1, 1], [2, 1], [3, 1]], 'counted from 1 again, as after a seek');
    },
  })),
  { name: 'a unit is all or nothing: a lost lease refuses every op of it', cursorCommit: true, async run(b) {
    await fill(b, 1);
    const r = await b.unit([
      { op: 'append', request: { key: P, items: [item('x')], dedupWindowMs: 0, now: T0 } },
      { op: 'kvPut', tenant: DEFAULT_TENANT, row: { ns: 'n', key: 'k', value: '1', version: 1, expiresAt: null, updatedAt: T0 } },
      { op: 'commit', request: { key: { ...P, group: 'g' }, leaseId: 'not-held', committedOffset: 1, retryCount: 0, release: true, now: T0 } },
    ]);
    assert.deepEqual(r, { committed: false, failedIndex: 2 });
    assert.equal((await b.readPartition(P))?.headOffset, 1);
    assert.equal(await b.kv.get(DEFAULT_TENANT, 'n', 'k'), undefined);
  } },
  { name: 'a unit commits acks, pushes, KV and timer riders together', cursorCommit: true, async run(b) {
    await fill(b, 1);
    await b.claim(claimReq());
    const r = await b.unit([
      { op: 'commit', request: { key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 1, retryCount: 0, release: true, now: T0 } },
      { op: 'append', request: { key: { ...Q, partition: 'out' }, items: [item('y')], dedupWindowMs: 0, now: T0 } },
      { op: 'kvPut', tenant: DEFAULT_TENANT, row: { ns: 'n', key: 'k', value: '"v"', version: 1, expiresAt: null, updatedAt: T0 } },
      { op: 'timerPut', tenant: DEFAULT_TENANT, row: timer('t1', T0 + 10) },
    ]);
    assert.equal(r.committed, true);
    assert.equal((await b.readCursor({ ...P, group: 'g' }))?.committedOffset, 1);
    assert.equal((await b.readPartition({ ...Q, partition: 'out' }))?.headOffset, 1);
    assert.equal((await b.kv.get(DEFAULT_TENANT, 'n', 'k'))?.value, '"v"');
    assert.equal((await b.timers.get(DEFAULT_TENANT, 'q', 't1'))?.deliverAt, T0 + 10);
  } },
  { name: 'unit preconditions: a KV row, a timer or a lease that changed refuses the unit and writes nothing', cursorCommit: false, async run(b) {
    const T = DEFAULT_TENANT;
    await b.kv.put(T, { ns: 'n', key: 'k', value: '1', version: 3, expiresAt: null, updatedAt: T0 });
    await b.timers.put(T, timer('t1', T0 + 10));
    await fill(b, 1);
    await b.claim(claimReq());
    const t1 = { deliverAt: T0 + 10, messageId: 'm-t1', attempts: 0, updatedAt: T0 };
    const marker = { op: 'kvPut' as const, tenant: T, row: { ns: 'n', key: 'marker', value: '1', version: 9, expiresAt: null, updatedAt: T0 } };
    const refusals: [string, UnitOp][] = [
      ['kv version', { op: 'kvExpect', tenant: T, ns: 'n', key: 'k', version: 2 }],
      ['kv absent', { op: 'kvExpect', tenant: T, ns: 'n', key: 'k', version: null }],
      ['kv fencing', { op: 'kvPut', tenant: T, row: { ns: 'n', key: 'k', value: '2', version: 3, expiresAt: null, updatedAt: T0 } }],
      ['timer changed', { op: 'timerExpect', tenant: T, queue: 'q', timerKey: 't1', expect: { ...t1, attempts: 1 } }],
      ['timer absent', { op: 'timerExpect', tenant: T, queue: 'q', timerKey: 'nope', expect: t1 }],
      ['lease not held', { op: 'leaseHeld', leaseId: 'L1', now: T0 + 30_000 }], // last: a backend's clock may follow `now`
    ];
    assert.deepEqual(await b.unit([{ op: 'leaseHeld', leaseId: 'L1', now: T0 + 1 }]), { committed: true, results: [{ done: true }] }, 'a live lease');
    for (const [what, op] of refusals) {
      assert.deepEqual(await b.unit([marker, op]), { committed: false, failedIndex: 1 }, what);
      assert.equal(await b.kv.get(T, 'n', 'marker'), undefined, `${what}: nothing written`);
    }
    const ok = await b.unit([
      { op: 'kvExpect', tenant: T, ns: 'n', key: 'k', version: 3 },
      { op: 'kvExpect', tenant: T, ns: 'n', key: 'none', version: null },
      { op: 'timerExpect', tenant: T, queue: 'q', timerKey: 't1', expect: t1 },
      { op: 'timerExpect', tenant: T, queue: 'q', timerKey: 'nope', expect: null },
      { op: 'kvPut', tenant: T, row: { ns: 'n', key: 'k', value: '2', version: 4, expiresAt: null, updatedAt: T0 } },
    ]);
    assert.equal(ok.committed, true);
    assert.equal((await b.kv.get(T, 'n', 'k'))?.version, 4);
  } },
  { name: 'KV versions: a removed row raises the floor; a re-created key must be written above it', cursorCommit: false, async run(b) {
    const T = DEFAULT_TENANT;
    const put = (key: string, version: number) => b.unit([{ op: 'kvPut', tenant: T, row: { ns: 'n', key, value: '1', version, expiresAt: null, updatedAt: T0 } }]);
    assert.equal((await put('a', 5)).committed, true);
    assert.equal(await b.kv.floor(), 0);
    const del = await b.unit([{ op: 'kvDelete', tenant: T, ns: 'n', key: 'a' }, { op: 'kvDelete', tenant: T, ns: 'n', key: 'gone' }]);
    assert.deepEqual(del.committed && del.results, [{ done: true }, { done: false }]);
    assert.equal(await b.kv.floor(), 5);
    assert.equal((await put('a', 5)).committed, false, 'a version at the floor is refused');
    assert.equal((await put('b', 6)).committed, true);
  } },
  { name: 'KV listings: namespaces per tenant with counts, the next expiry', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-000000000002';
    await b.kv.put(DEFAULT_TENANT, { ns: 'a', key: 'k1', value: '1', version: 1, expiresAt: T0 + 50, updatedAt: T0 });
    await b.kv.put(DEFAULT_TENANT, { ns: 'a', key: 'k2', value: '1', version: 1, expiresAt: null, updatedAt: T0 });
    await b.kv.put(other, { ns: 'z', key: 'k', value: '1', version: 1, expiresAt: T0 + 20, updatedAt: T0 });
    assert.deepEqual(await b.kv.namespaces(DEFAULT_TENANT, '', 10), [{ ns: 'a', keys: 2 }]);
    assert.deepEqual(await b.kv.namespaces(other, '', 10), [{ ns: 'z', keys: 1 }]);
    assert.equal(await b.kv.nextExpiry(), T0 + 20);
  } },
  { name: 'a refuseDuplicates append refuses its unit and names the item; a plain one answers the duplicate', cursorCommit: false, async run(b) {
    await b.append({ key: P, items: [item('a')], dedupWindowMs: 60_000, now: T0 });
    const r = await b.unit([
      { op: 'append', request: { key: { ...Q, partition: 'other' }, items: [item('x')], dedupWindowMs: 60_000, now: T0 } },
      { op: 'append', request: { key: P, items: [item('b'), item('a')], dedupWindowMs: 60_000, refuseDuplicates: true, now: T0 } },
    ]);
    assert.deepEqual(r, { committed: false, failedIndex: 1, failedItem: 1 });
    assert.equal((await b.readPartition(P))?.headOffset, 1);
    assert.equal(await b.readPartition({ ...Q, partition: 'other' }), undefined, 'the whole unit was rolled back');
    const plain = await b.unit([{ op: 'append', request: { key: P, items: [item('a')], dedupWindowMs: 60_000, now: T0 } }]);
    assert.equal(plain.committed && (plain.results[0] as AppendResult).outcomes[0]?.status, 'duplicate');
  } },
  { name: 'timer firing as one unit: delete the timer and append its message; a failed firing is recorded', cursorCommit: false, async run(b) {
    const T = DEFAULT_TENANT;
    await b.timers.put(T, timer('t1', T0 + 10));
    await b.timers.put(T, timer('t2', T0 + 20));
    assert.equal(await b.timers.nextDueAt(), T0 + 10);
    assert.deepEqual((await b.timers.list(T, 'q', undefined, 10)).map((t) => t.timerKey), ['t1', 't2']);
    assert.deepEqual((await b.timers.list(T, 'q', 't1', 10)).map((t) => t.timerKey), ['t2']);
    const fired = await b.unit([
      { op: 'timerExpect', tenant: T, queue: 'q', timerKey: 't1', expect: { deliverAt: T0 + 10, messageId: 'm-t1', attempts: 0, updatedAt: T0 } },
      { op: 'timerDelete', tenant: T, queue: 'q', timerKey: 't1' },
      { op: 'append', request: { key: P, items: [item('t1')], dedupWindowMs: 0, now: T0 + 10 } },
    ]);
    assert.equal(fired.committed, true);
    assert.equal(await b.timers.get(T, 'q', 't1'), undefined);
    assert.equal((await b.readPartition(P))?.headOffset, 1);
    const failed = await b.unit([{ op: 'timerFailed', tenant: T, queue: 'q', timerKey: 't2', error: 'boom', retryAt: T0 + 2_000, now: T0 + 20 }]);
    assert.deepEqual(failed.committed && failed.results, [{ done: true }]);
    const t2 = await b.timers.get(T, 'q', 't2');
    assert.deepEqual([t2?.attempts, t2?.lastError, t2?.deliverAt], [1, 'boom', T0 + 2_000]);
    const gone = await b.unit([{ op: 'timerFailed', tenant: T, queue: 'q', timerKey: 't1', error: 'x', retryAt: T0, now: T0 }]);
    assert.deepEqual(gone.committed && gone.results, [{ done: false }]);
  } },
  { name: 'queue configuration: created when missing, options as given, per tenant; settings', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-000000000002';
    assert.equal(await b.admin.readQueue(Q), undefined);
    const options = { ...QUEUE_DEFAULTS, leaseTime: 7, retryLimit: 2 };
    const made = await b.admin.configureQueue(Q, { namespace: 'ns', task: 't', options }, T0);
    assert.deepEqual([made.namespace, made.task, made.options.leaseTime, made.options.retryLimit], ['ns', 't', 7, 2]);
    await fill(b, 1);
    const again = await b.admin.configureQueue(Q, { namespace: '', task: '', options: { ...options, leaseTime: 9 } }, T0 + 1);
    assert.equal(again.queueId, made.queueId, 'the same queue, reconfigured');
    assert.deepEqual(await b.admin.readQueue(Q), again);
    assert.equal((await b.readPartition(P))?.headOffset, 1, 'its messages stay');
    assert.equal(await b.admin.readQueue({ tenant: other, queue: 'q' }), undefined, 'another tenant has no such queue');
    assert.equal(await b.admin.setting('maintenance.pop'), undefined);
    await b.admin.setSetting('maintenance.pop', 'true');
    assert.equal(await b.admin.setting('maintenance.pop'), 'true');
  } },
  { name: 'dead letters: by address, deleted by address, purged per queue and group, deleted in a unit only while present', cursorCommit: true, async run(b) {
    await fill(b, 3);
    const dead = async (group: string, id: string, offset: number) => {
      await b.claim(claimReq({ group, leaseId: `L-${id}` }));
      await b.commitCursor({ key: { ...P, group }, leaseId: `L-${id}`, committedOffset: offset + 1, retryCount: 0, release: true, now: T0 + 1,
        deadLetter: { id, offset, error: 'x', retryCount: 0 } });
    };
    await dead('g1', 'd1', 0);
    await dead('g2', 'd2', 0);
    await dead('g3', 'd3', 0);
    const { partitionId } = (await b.readPartition(P))!;
    assert.equal((await b.dlq.findByAddress(partitionId, 't0'))?.transactionId, 't0');
    assert.deepEqual(await b.unit([{ op: 'dlqDelete', id: 'd1' }]), { committed: true, results: [{ done: true }] });
    assert.deepEqual(await b.unit([{ op: 'dlqDelete', id: 'd1' }]), { committed: false, failedIndex: 0 }, 'gone: refused');
    assert.equal(await b.dlq.purge(Q, 'g2', 10), 1);
    assert.equal((await b.dlq.list({ queue: 'q', limit: 10, offset: 0 })).total, 1);
    assert.deepEqual(await b.dlq.deleteByAddress(partitionId, 't0'), { queue: 'q', deleted: 1 });
    assert.deepEqual(await b.dlq.deleteByAddress(partitionId, 't0'), { queue: undefined, deleted: 0 });
    assert.equal(await b.dlq.purge({ ...Q, queue: 'none' }, undefined, 10), 0);
  } },
  { name: 'a trace event on a queue that does not exist is not recorded', cursorCommit: false, async run(b) {
    const e = { partition: 'p', partitionId: 'x', transactionId: 'a', messageId: null, group: 'g', eventType: 'info', data: '1', workerId: null, names: ['n'], createdAt: T0 };
    assert.equal(await b.traces.add(Q, e), undefined);
    await fill(b, 1);
    assert.equal(typeof await b.traces.add(Q, e), 'string');
    assert.equal((await b.traces.byName(DEFAULT_TENANT, 'n', 10, 0)).total, 1);
  } },
  { name: 'seek moves a group\'s cursor to the end or to a time and drops its lease; unknown queue or partition is answered', cursorCommit: false, async run(b) {
    await fill(b, 3);
    await b.append({ key: P, items: [item('late1'), item('late2')], dedupWindowMs: 0, now: T0 + 10_000 });
    await b.claim(claimReq({ now: T0 + 10_000 }));
    assert.deepEqual(await b.admin.seekGroup(Q, 'g', undefined, { toEnd: true }, T0 + 20_000), [{ partition: 'p', committedOffset: 5 }]);
    const c = await b.readCursor({ ...P, group: 'g' });
    assert.deepEqual([c?.committedOffset, c?.leaseId], [5, null], 'at the end, lease dropped');
    assert.deepEqual(await b.claim(claimReq({ leaseId: 'L2', now: T0 + 20_001 })), []);
    assert.deepEqual(await b.admin.seekGroup(Q, 'g', 'p', { timestamp: T0 + 5_000 }, T0 + 20_002), [{ partition: 'p', committedOffset: 3 }]);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: 'L3', now: T0 + 20_003 })))[0]), [3, 4]);
    assert.deepEqual(await b.admin.seekGroup(Q, 'new', undefined, { timestamp: T0 }, T0 + 20_004), [{ partition: 'p', committedOffset: 0 }], 'a new group is registered');
    assert.equal(await b.admin.seekGroup(Q, 'g', 'nope', { toEnd: true }, T0 + 20_005), undefined);
    assert.equal(await b.admin.seekGroup({ ...Q, queue: 'nope' }, 'g', undefined, { toEnd: true }, T0 + 20_005), undefined);
  } },
  { name: 'deleting a group\'s cursors restarts it from its subscription; deleting its metadata too forgets it', cursorCommit: false, async run(b) {
    await fill(b, 2);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: null })))[0]), [0, 1]);
    const r = await b.admin.deleteGroup(DEFAULT_TENANT, 'g', 'q', false, T0 + 1);
    assert.deepEqual(r, { cursorsDeleted: 1, partitions: [P] });
    assert.equal(await b.readCursor({ ...P, group: 'g' }), undefined);
    assert.deepEqual(offsets((await b.claim(claimReq({ leaseId: null, now: T0 + 2 })))[0]), [0, 1], 'from the start again');
    assert.equal((await b.admin.deleteGroup(DEFAULT_TENANT, 'g', undefined, true, T0 + 3)).cursorsDeleted, 1);
    assert.deepEqual(await b.admin.deleteGroup(DEFAULT_TENANT, 'g', undefined, true, T0 + 4), { cursorsDeleted: 0, partitions: [] }, 'forgotten');
  } },
  { name: 'a group\'s subscription start changes where it starts on partitions it has no cursor on', cursorCommit: false, async run(b) {
    await fill(b, 2);
    assert.deepEqual(await b.claim(claimReq({ group: 'g2', seed: { mode: 'from', fromTime: T0 + 1 }, now: T0 + 2 })), [], 'registered after the messages');
    assert.equal(await b.admin.setSubscriptionFrom(DEFAULT_TENANT, 'g2', T0 - 1, T0 + 3), 1);
    assert.deepEqual(offsets((await b.claim(claimReq({ group: 'g2', seed: { mode: 'from', fromTime: T0 + 1 }, now: T0 + 4 })))[0]), [0, 1],
      'the stored subscription wins over a later request\'s seed');
    assert.equal(await b.admin.setSubscriptionFrom(DEFAULT_TENANT, 'nobody', T0, T0 + 5), 0);
  } },
  { name: 'prune removes a partition\'s prefix and raises its first offset; claims start after it', cursorCommit: false, async run(b) {
    await fill(b, 5);
    assert.deepEqual(await b.admin.prune(Q, [{ partition: 'p', end: 3 }, { partition: 'none', end: 1 }]), [{ partition: 'p', removed: 3, firstOffsetBefore: 0 }]);
    assert.equal((await b.readPartition(P))?.firstOffset, 3);
    assert.deepEqual(offsets((await b.claim(claimReq()))[0]), [3, 4]);
    assert.deepEqual(await b.admin.prune(Q, [{ partition: 'p', end: 2 }]), [], 'below the first offset: nothing');
    assert.deepEqual(await b.admin.prune(Q, [{ partition: 'p', end: 100 }]), [{ partition: 'p', removed: 2, firstOffsetBefore: 3 }], 'capped at the head');
    assert.deepEqual(await b.readPartition(P).then((v) => [v?.firstOffset, v?.headOffset]), [5, 5]);
  } },
  { name: 'KV rows: put, get, scan, delete, expiry prune; tenants do not see each other', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-000000000002';
    for (const [key, exp] of [['a', null], ['b', T0 + 5], ['c', null]] as const) {
      await b.kv.put(DEFAULT_TENANT, { ns: 'n', key, value: '1', version: 1, expiresAt: exp, updatedAt: T0 });
    }
    assert.equal(await b.kv.get(other, 'n', 'a'), undefined);
    assert.deepEqual((await b.kv.scan(DEFAULT_TENANT, { ns: 'n', prefix: '', limit: 10, now: T0 + 10 })).map((r) => r.key), ['a', 'c']);
    assert.equal(await b.kv.delete(DEFAULT_TENANT, 'n', 'a'), true);
    assert.equal(await b.kv.delete(DEFAULT_TENANT, 'n', 'a'), false);
    assert.equal(await b.kv.pruneExpired(T0 + 10, 10), 1);
  } },
  { name: 'lock permits: one holder at a time, free after release or expiry, tokens only grow', cursorCommit: false, async run(b) {
    const t1 = await b.locks.tryAcquire(DEFAULT_TENANT, 'L', 0, 'w1', T0 + 100, T0);
    assert.ok(t1 !== undefined);
    assert.equal(await b.locks.tryAcquire(DEFAULT_TENANT, 'L', 0, 'w2', T0 + 100, T0 + 1), undefined);
    const t2 = await b.locks.tryAcquire(DEFAULT_TENANT, 'L', 0, 'w2', T0 + 300, T0 + 200);
    assert.ok(t2 !== undefined && t2 > t1);
    assert.equal(await b.locks.release(DEFAULT_TENANT, 'L', 0, t1), false, 'a stale token frees nothing');
    assert.equal(await b.locks.release(DEFAULT_TENANT, 'L', 0, t2), true);
    const t3 = await b.locks.tryAcquire(DEFAULT_TENANT, 'L', 0, 'w3', T0 + 400, T0 + 201);
    assert.ok(t3 !== undefined && t3 > t2);
  } },
  { name: 'timers: put, get, due in time order, delete', cursorCommit: false, async run(b) {
    await b.timers.put(DEFAULT_TENANT, timer('late', T0 + 50));
    await b.timers.put(DEFAULT_TENANT, timer('early', T0 + 10));
    assert.deepEqual((await b.timers.due(T0 + 60, 10)).map((k) => k.timerKey), ['early', 'late']);
    assert.deepEqual((await b.timers.due(T0 + 20, 10)).map((k) => k.timerKey), ['early']);
    assert.equal(await b.timers.delete(DEFAULT_TENANT, 'q', 'early'), true);
    assert.equal(await b.timers.get(DEFAULT_TENANT, 'q', 'early'), undefined);
  } },
  { name: 'timers of two tenants: same key, separate rows; due yields each with its tenant', cursorCommit: false, async run(b) {
    const other = 'aaaaaaaa-0000-4000-8000-00000000000a';
    await b.timers.put(DEFAULT_TENANT, timer('k', T0 + 10));
    await b.timers.put(other, { ...timer('k', T0 + 20), txn: 'other' });
    assert.equal((await b.timers.get(other, 'q', 'k'))?.txn, 'other');
    assert.equal((await b.timers.get(other, 'q', 'k'))?.queue, 'q', 'the row names the queue as the tenant does');
    assert.deepEqual((await b.timers.list(other, 'q', undefined, 10)).map((t) => [t.queue, t.txn]), [['q', 'other']]);
    assert.deepEqual(await b.timers.due(T0 + 30, 10), [
      { tenant: DEFAULT_TENANT, queue: 'q', timerKey: 'k' }, { tenant: other, queue: 'q', timerKey: 'k' },
    ]);
    assert.equal(await b.timers.delete(other, 'q', 'k'), true);
    assert.notEqual(await b.timers.get(DEFAULT_TENANT, 'q', 'k'), undefined, 'the default tenant\'s timer of that key stays');
  } },
  { name: 'deleting a queue removes its own timers, not those another tenant keeps on a queue of the same name', cursorCommit: false, async run(b) {
    const other = 'aaaaaaaa-0000-4000-8000-00000000000b';
    await b.append({ key: P, items: [item('a')], dedupWindowMs: 0, now: T0 });
    await b.append({ key: { ...P, tenant: other }, items: [item('a')], dedupWindowMs: 0, now: T0 });
    await b.timers.put(DEFAULT_TENANT, timer('k', T0 + 10));
    await b.timers.put(other, { ...timer('k', T0 + 20), txn: 'other' });
    assert.equal(await b.admin.deleteQueue({ tenant: other, queue: 'q' }), true);
    assert.equal(await b.timers.get(other, 'q', 'k'), undefined, 'the deleted queue\'s timer goes with it');
    assert.notEqual(await b.timers.get(DEFAULT_TENANT, 'q', 'k'), undefined, 'the default tenant\'s timer on its own queue q stays');
  } },
  { name: 'purging a tenant\'s KV rows (locks included) and timers leaves the other tenants\' and raises the KV floor', cursorCommit: false, async run(b) {
    const gone = 'aaaaaaaa-0000-4000-8000-00000000000c';
    const kept = 'aaaaaaaa-0000-4000-8000-00000000000d';
    for (const t of [DEFAULT_TENANT, gone, kept]) {
      await b.kv.put(t, { ns: 'n', key: 'k', value: '1', version: t === gone ? 41 : 1, expiresAt: null, updatedAt: T0 });
      await b.timers.put(t, timer('k', T0 + 10));
      assert.notEqual(await b.locks.tryAcquire(t, 'L', 0, 'w', T0 + 1_000, T0), undefined);
    }
    assert.equal(await b.kv.purgeTenant(gone), 2, 'the KV row and the lock permit');
    assert.equal(await b.timers.purgeTenant(gone), 1);
    assert.equal(await b.kv.get(gone, 'n', 'k'), undefined);
    assert.equal(await b.timers.get(gone, 'q', 'k'), undefined);
    assert.ok((await b.kv.floor()) >= 41, 'a re-created key never reuses a purged version');
    for (const t of [DEFAULT_TENANT, kept]) {
      assert.notEqual(await b.kv.get(t, 'n', 'k'), undefined);
      assert.notEqual(await b.timers.get(t, 'q', 'k'), undefined);
      assert.equal(await b.locks.tryAcquire(t, 'L', 0, 'w2', T0 + 1_000, T0 + 1), undefined, 'its lock is still held');
    }
    assert.deepEqual([await b.kv.purgeTenant(gone), await b.timers.purgeTenant(gone)], [0, 0], 'a re-run removes nothing');
  } },
  { name: 'partition counts and stored payload bytes per tenant', cursorCommit: false, async run(b) {
    const other = 'aaaaaaaa-0000-4000-8000-00000000000e';
    await b.append({ key: P, items: [item('a', 'xxxx'), item('b', 'yy')], dedupWindowMs: 0, now: T0 });
    await b.append({ key: { ...P, partition: 'p2' }, items: [item('c', 'z')], dedupWindowMs: 0, now: T0 });
    await b.append({ key: { tenant: other, queue: 'q', partition: 'p' }, items: [item('a', '0123456789')], dedupWindowMs: 0, now: T0 });
    await b.admin.configureQueue({ tenant: other, queue: 'empty' }, { namespace: '', task: '', options: QUEUE_DEFAULTS }, T0);
    assert.deepEqual([...(await b.admin.partitionCounts(DEFAULT_TENANT))].sort(), [['q', 2]]);
    assert.deepEqual([...(await b.admin.partitionCounts(other))].sort(), [['empty', 0], ['q', 1]]);
    assert.equal(await b.admin.retainedBytes(DEFAULT_TENANT), 7);
    assert.equal(await b.admin.retainedBytes(other), 10);
    assert.equal(await b.admin.retainedBytes('aaaaaaaa-0000-4000-8000-00000000000f'), 0);
  } },
  { name: 'traces by message and by name, trace names with counts, with the true totals', cursorCommit: false, async run(b) {
    const { partitionId } = await b.append({ key: P, items: [item('a')], dedupWindowMs: 0, now: T0 });
    for (let i = 0; i < 3; i++) {
      await b.traces.add(Q, { partition: 'p', partitionId, transactionId: 'a', messageId: 'm-a', group: 'g', eventType: 'info', data: `{"i":${i}}`, workerId: null, names: ['n'], createdAt: T0 + i });
    }
    assert.deepEqual((await b.traces.byMessage(partitionId, 'a', 10)).map((t) => t.data), ['{"i":0}', '{"i":1}', '{"i":2}']);
    const page = await b.traces.byName(DEFAULT_TENANT, 'n', 1, 0);
    assert.equal(page.total, 3);
    assert.equal(page.rows.length, 1);
    const names = await b.traces.names(DEFAULT_TENANT, 10, 0);
    assert.deepEqual(names.rows.map((r) => [r.name, r.traceCount, r.messageCount, r.lastSeen]), [['n', 3, 1, T0 + 2]]);
    assert.equal(names.total, 1);
    const other = '00000000-0000-0000-0000-0000000000dd';
    assert.deepEqual(await b.traces.byName(other, 'n', 10, 0), { rows: [], total: 0 }, 'another tenant reads none of them');
    assert.deepEqual(await b.traces.names(other, 10, 0), { rows: [], total: 0 });
  } },
  { name: 'ack reads: offsets by transactionId, the group\'s cursor (at its start when it has none), the queue\'s options; lease holding', cursorCommit: false, async run(b) {
    const P2 = { ...Q, partition: 'p2' };
    await fill(b, 3);
    await b.append({ key: P2, items: [item('x'), item('y')], dedupWindowMs: 0, now: T0 });
    const partitionId = (await b.readPartition(P))!.partitionId;
    const partition2 = (await b.readPartition(P2))!.partitionId;
    assert.deepEqual(await b.readAckTargets([{ partitionId: 'no-such-partition', group: 'g', transactionIds: ['t0'] }]), [undefined]);
    const [before] = await b.readAckTargets([{ partitionId, group: 'g', transactionIds: ['t0'] }]);
    assert.deepEqual([before?.queue, before?.partition, before?.cursor], [Q, 'p', undefined], 'a group that never consumed the queue has no cursor');
    await b.claim(claimReq({ partition: 'p', batch: 2 }));
    await b.claim(claimReq({ group: 'late', partition: 'p', leaseId: 'L9', seed: { mode: 'from', fromTime: T0 + 5_000 } }));
    const [held, fresh, late] = await b.readAckTargets([
      { partitionId, group: 'g', transactionIds: ['t1', 'unknown', 't0'] },
      { partitionId: partition2, group: 'g', transactionIds: ['y'] },
      { partitionId: partition2, group: 'late', transactionIds: [] },
    ]);
    assert.deepEqual(held?.offsets, [1, undefined, 0]);
    assert.deepEqual([held?.cursor?.committedOffset, held?.cursor?.leaseId, held?.cursor?.deliveredUpTo], [0, 'L1', 2]);
    assert.equal(held?.options.retryLimit, QUEUE_DEFAULTS.retryLimit);
    assert.deepEqual([fresh?.offsets, fresh?.cursor?.committedOffset, fresh?.cursor?.leaseId], [[1], 0, null], 'no cursor yet: at the start of an all-messages group');
    assert.equal(late?.cursor?.committedOffset, 2, 'no cursor yet: a group subscribed from later starts after older messages');
    assert.equal(await b.leaseHeld('L1', T0 + 1), true);
    assert.equal(await b.leaseHeld('L9', T0 + 1), false, 'a claim that took nothing holds no lease');
    assert.equal(await b.leaseHeld('L1', T0 + 30_001), false, 'expired');
  } },
  { name: 'pop targets: a queue by name or by namespace/task, with the group\'s registered subscription; a claim with nothing ready is empty', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-000000000002';
    const cfg = (namespace: string, task: string, priority: number) => ({ namespace, task, options: { ...QUEUE_DEFAULTS, priority } });
    await b.admin.configureQueue({ ...Q, queue: 'a' }, cfg('ns', 'build', 1), T0);
    await b.admin.configureQueue({ ...Q, queue: 'b' }, cfg('ns', 'test', 5), T0);
    await b.admin.configureQueue({ ...Q, queue: 'c' }, cfg('elsewhere', 'build', 0), T0);
    await b.admin.configureQueue({ tenant: other, queue: 'd' }, cfg('ns', 'build', 0), T0);
    const names = async (sel: Parameters<QueueBackend['readPopTargets']>[2]) => (await b.readPopTargets(DEFAULT_TENANT, 'g', sel)).map((t) => t.queue).sort();
    assert.deepEqual(await names({ queue: 'a' }), ['a']);
    assert.deepEqual(await names({ queue: 'nope' }), []);
    assert.deepEqual(await names({ namespace: 'ns', task: undefined }), ['a', 'b']);
    assert.deepEqual(await names({ namespace: undefined, task: 'build' }), ['a', 'c'], 'the other tenant\'s queue is not listed');
    assert.deepEqual(await names({ namespace: 'ns', task: 'build' }), ['a']);
    assert.deepEqual(await names({ namespace: undefined, task: undefined }), []);
    const [before] = await b.readPopTargets(DEFAULT_TENANT, 'g', { queue: 'b' });
    assert.deepEqual([before?.config.options.priority, before?.config.namespace, before?.subscription], [5, 'ns', undefined]);
    await b.append({ key: { ...Q, queue: 'b', partition: 'p' }, items: [item('x')], dedupWindowMs: 0, now: T0 });
    const late = claimReq({ queue: { ...Q, queue: 'b' }, leaseId: null, conflation: true, seed: { mode: 'from', fromTime: T0 + 1, label: 'new' } });
    assert.deepEqual(await b.claim(late), [], 'the message is older than the subscription');
    const [after] = await b.readPopTargets(DEFAULT_TENANT, 'g', { queue: 'b' });
    assert.deepEqual(after?.subscription, { seed: { mode: 'from', fromTime: T0 + 1, label: 'new' }, conflation: true });
    assert.deepEqual(await b.claim({ ...late, now: T0 + 2 }), [], 'registered, nothing ready');
  } },
  { name: 'retention reads: queue options, prefixes by age, partitions with the groups\' lowest position, the first message after a time', cursorCommit: true, async run(b) {
    const P2 = { ...Q, partition: 'p2' };
    await fill(b, 3, T0);
    await b.append({ key: P, items: [item('late')], dedupWindowMs: 0, now: T0 + 10_000 });
    await b.append({ key: P2, items: [item('x')], dedupWindowMs: 0, now: T0 + 1 });
    assert.ok((await b.admin.queueOptions()).some((q) => q.queue.queue === 'q' && q.queue.tenant === DEFAULT_TENANT && q.options.retryLimit === QUEUE_DEFAULTS.retryLimit));
    const aged = await b.admin.agedPrefixes(Q, T0 + 5_000, 100);
    assert.equal(aged.rows, 4);
    assert.deepEqual(aged.prefixes.map((x) => [x.partition.partition, x.end]).sort(), [['p', 3], ['p2', 1]]);
    const limited = await b.admin.agedPrefixes(Q, T0 + 5_000, 2);
    assert.equal(limited.rows, 2, 'the oldest `limit` messages only');
    assert.deepEqual((await b.admin.agedPrefixes({ ...Q, queue: 'nope' }, T0 + 5_000, 10)), { prefixes: [], rows: 0 });
    const id = (await b.readPartition(P))!.partitionId;
    const [none] = await b.admin.retentionPartitions({ partitionIds: [id, 'no-such-partition'] });
    assert.deepEqual([none?.partition, none?.firstOffset, none?.headOffset, none?.consumedUpTo], ['p', 0, 4, undefined], 'no group: nothing consumed');
    await b.claim(claimReq({ partition: 'p', batch: 2 }));
    await b.commitCursor({ key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 2, retryCount: 0, release: true, now: T0 + 1 });
    await b.claim(claimReq({ group: 'g2', partition: 'p', leaseId: null }));
    assert.deepEqual((await b.admin.retentionPartitions({ partitionIds: [id] })).map((x) => x.consumedUpTo), [2], 'the lowest group position');
    assert.deepEqual((await b.admin.retentionPartitions({ consumedOn: Q })).map((x) => x.partition), ['p'], 'partitions with a cursor past the first offset');
    assert.deepEqual(await b.admin.firstAfter(P, 0, T0 + 5_000), { offset: 3, createdAt: T0 + 10_000 });
    assert.equal(await b.admin.firstAfter(P, 0, T0 + 20_000), undefined);
  } },
  { name: 'admin views: queues per tenant, a group\'s cursors, queue deletion', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-000000000002';
    await fill(b, 2);
    await b.append({ key: { tenant: other, queue: 'q', partition: 'p' }, items: [item('z')], dedupWindowMs: 0, now: T0 });
    assert.deepEqual(await b.admin.queues(DEFAULT_TENANT), [{ queue: 'q', partitions: 1, messages: 2 }]);
    assert.deepEqual(await b.admin.queues(other), [{ queue: 'q', partitions: 1, messages: 1 }], 'same name, another tenant');
    await b.claim(claimReq({ leaseId: null }));
    assert.deepEqual((await b.admin.cursors(Q, 'g')).map((c) => [c.partition, c.cursor.committedOffset]), [['p', 2]]);
    assert.equal(await b.admin.deleteQueue(Q), true);
    assert.equal(await b.admin.deleteQueue(Q), false);
    assert.equal(await b.readPartition(P), undefined);
    assert.equal((await b.readPartition({ tenant: other, queue: 'q', partition: 'p' }))?.headOffset, 1);
  } },
  { name: 'ephemeral declarations: put replaces per (tenant, queue), delete answers whether a row existed, list is capped per tenant', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-0000000000ee';
    await b.ephemeral.put({ tenant: DEFAULT_TENANT, queue: 'e1', options: '{}', updatedAt: T0 });
    await b.ephemeral.put({ tenant: DEFAULT_TENANT, queue: 'e1', options: '{"maxLength":2}', updatedAt: T0 + 1 });
    await b.ephemeral.put({ tenant: DEFAULT_TENANT, queue: 'e2', options: '{}', updatedAt: T0 });
    await b.ephemeral.put({ tenant: other, queue: 'e1', options: '{"policy":"dropOldest"}', updatedAt: T0 });
    const all = await b.ephemeral.list(10);
    assert.deepEqual(all.map((r) => [r.tenant, r.queue, r.options, r.updatedAt]), [
      [DEFAULT_TENANT, 'e1', '{"maxLength":2}', T0 + 1], [DEFAULT_TENANT, 'e2', '{}', T0], [other, 'e1', '{"policy":"dropOldest"}', T0],
    ]);
    assert.deepEqual((await b.ephemeral.list(1)).map((r) => [r.tenant, r.queue]), [[DEFAULT_TENANT, 'e1'], [other, 'e1']]);
    assert.equal(await b.ephemeral.delete(DEFAULT_TENANT, 'e1'), true);
    assert.equal(await b.ephemeral.delete(DEFAULT_TENANT, 'e1'), false);
    assert.deepEqual((await b.ephemeral.list(10)).map((r) => [r.tenant, r.queue]), [[DEFAULT_TENANT, 'e2'], [other, 'e1']]);
  } },
  { name: 'kafka topic records: bound to the live queue (none for a missing queue, gone with a deleted or re-created one), per tenant', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-0000000000ee';
    assert.equal(await b.kafka.putTopic(DEFAULT_TENANT, 'q', 8, {}, T0), false, 'no queue, no record');
    assert.deepEqual(await b.kafka.topics(DEFAULT_TENANT), []);
    const made = await b.admin.configureQueue(Q, { namespace: '', task: '', options: QUEUE_DEFAULTS }, T0);
    await b.admin.configureQueue({ tenant: other, queue: 'q' }, { namespace: '', task: '', options: QUEUE_DEFAULTS }, T0);
    assert.equal(await b.kafka.putTopic(DEFAULT_TENANT, 'q', 8, { 'retention.ms': '60000' }, T0), true);
    assert.equal(await b.kafka.putTopic(DEFAULT_TENANT, 'q', 12, { 'cleanup.policy': 'compact' }, T0 + 1), true, 'replaced');
    assert.equal(await b.kafka.putTopic(other, 'q', 3, {}, T0), true);
    assert.deepEqual(await b.kafka.topics(DEFAULT_TENANT), [{ topic: 'q', queueId: made.queueId, width: 12, configs: { 'cleanup.policy': 'compact' }, createdAt: T0 + 1 }]);
    assert.deepEqual((await b.kafka.topics(other)).map((r) => [r.topic, r.width]), [['q', 3]]);
    assert.equal(await b.admin.deleteQueue(Q), true);
    assert.deepEqual(await b.kafka.topics(DEFAULT_TENANT), [], 'the record of a deleted queue is not returned');
    await b.admin.configureQueue(Q, { namespace: '', task: '', options: QUEUE_DEFAULTS }, T0 + 2);
    assert.deepEqual(await b.kafka.topics(DEFAULT_TENANT), [], 'nor to a queue re-created under the same name');
    assert.equal(await b.kafka.putTopic(DEFAULT_TENANT, 'q', 4, {}, T0 + 3), true);
    assert.deepEqual((await b.kafka.topics(DEFAULT_TENANT)).map((r) => r.width), [4]);
    assert.equal(await b.kafka.deleteTopic(DEFAULT_TENANT, 'q'), true);
    assert.equal(await b.kafka.deleteTopic(DEFAULT_TENANT, 'q'), false);
    assert.deepEqual((await b.kafka.topics(other)).map((r) => r.width), [3], 'the other tenant keeps its record');
  } },
  { name: 'kafka commit metadata and group index: one write per commit, empty metadata removes, deleting a group or a topic removes its rows', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-0000000000ee';
    assert.deepEqual(await b.kafka.groups(DEFAULT_TENANT), []);
    await b.kafka.commitMeta(DEFAULT_TENANT, 'g1', [{ topic: 't', partition: 1, metadata: 'one' }, { topic: 't', partition: 0, metadata: 'zero' }, { topic: 'a', partition: 5, metadata: '' }], T0);
    await b.kafka.commitMeta(DEFAULT_TENANT, 'g1', [{ topic: 'a', partition: 2, metadata: 'a2' }], T0 + 1);
    await b.kafka.commitMeta(other, 'g1', [{ topic: 't', partition: 0, metadata: 'theirs' }], T0);
    assert.deepEqual(await b.kafka.offsetMeta(DEFAULT_TENANT, 'g1'), [
      { topic: 'a', partition: 2, metadata: 'a2' }, { topic: 't', partition: 0, metadata: 'zero' }, { topic: 't', partition: 1, metadata: 'one' },
    ]);
    await b.kafka.commitMeta(DEFAULT_TENANT, 'g1', [{ topic: 't', partition: 1, metadata: '' }, { topic: 't', partition: 0, metadata: 'zero2' }], T0 + 2);
    assert.deepEqual((await b.kafka.offsetMeta(DEFAULT_TENANT, 'g1')).map((m) => [m.topic, m.partition, m.metadata]), [['a', 2, 'a2'], ['t', 0, 'zero2']]);
    await b.kafka.indexGroup(DEFAULT_TENANT, 'g0', T0);
    await b.kafka.indexGroup(DEFAULT_TENANT, 'g0', T0 + 1);
    await b.kafka.commitMeta(DEFAULT_TENANT, 'g2', [], T0);
    assert.deepEqual(await b.kafka.groups(DEFAULT_TENANT), ['g0', 'g1', 'g2'], 'a commit indexes its group; indexing twice is one row');
    assert.deepEqual(await b.kafka.groups(other), ['g1']);
    assert.equal(await b.kafka.deleteTopic(DEFAULT_TENANT, 'a'), false, 'no topic record');
    assert.deepEqual((await b.kafka.offsetMeta(DEFAULT_TENANT, 'g1')).map((m) => m.topic), ['t'], 'but its commit metadata went');
    assert.equal(await b.kafka.deleteGroup(DEFAULT_TENANT, 'g1'), true);
    assert.equal(await b.kafka.deleteGroup(DEFAULT_TENANT, 'g1'), false);
    assert.deepEqual(await b.kafka.offsetMeta(DEFAULT_TENANT, 'g1'), []);
    assert.deepEqual(await b.kafka.groups(DEFAULT_TENANT), ['g0', 'g2']);
    assert.deepEqual(await b.kafka.offsetMeta(other, 'g1'), [{ topic: 't', partition: 0, metadata: 'theirs' }], 'other tenant untouched');
  } },
  { name: 'views: the model shows one tenant\'s queues, partitions, groups and cursors, and where a group subscribed from a time starts', cursorCommit: false, async run(b) {
    const other = '00000000-0000-0000-0000-0000000000dd';
    await fill(b, 3);
    await b.append({ key: { ...Q, partition: 'p2' }, items: [item('x0')], dedupWindowMs: 0, now: T0 });
    await b.append({ key: { ...Q, partition: 'p2' }, items: [item('x1'), item('x2')], dedupWindowMs: 0, now: T0 + 10_000 });
    await b.append({ key: { tenant: other, queue: 'elsewhere', partition: 'p' }, items: [item('o')], dedupWindowMs: 0, now: T0 });
    await b.claim(claimReq({ partition: 'p', batch: 2 }));
    await b.claim(claimReq({ group: 'late', partition: 'p', leaseId: 'L9', seed: { mode: 'from', fromTime: T0 + 5_000 }, now: T0 + 20_000 }));
    const m = await b.views.model(DEFAULT_TENANT);
    assert.deepEqual([...m.queues()].map((q) => q.name), ['q']);
    assert.equal(m.queue('elsewhere'), undefined, 'another tenant\'s queue is not in this model');
    const q = m.queue('q')!;
    assert.equal(q.tenant, DEFAULT_TENANT);
    assert.deepEqual([...q.partitions.values()].map((p) => [p.name, p.firstOffset, p.headOffset, p.lastMessageAt]), [['p', 0, 3, T0], ['p2', 0, 3, T0 + 10_000]]);
    const p = q.partitions.get('p')!;
    const p2 = q.partitions.get('p2')!;
    assert.equal(m.partitionById(p.id), p);
    assert.equal(m.partitionByPk(p2.pk), p2);
    assert.equal(p.queue, q);
    assert.deepEqual([...q.groups.keys()].sort(), ['g', 'late']);
    const g = q.groups.get('g')!;
    const c = g.cursors.get(p.pk)!;
    assert.deepEqual([c.materialized, c.committedOffset, c.leaseId, c.leaseExpiresAt, c.deliveredUpTo], [true, 0, 'L1', T0 + 30_000, 2]);
    assert.equal(g.cursors.get(p2.pk), undefined, 'no cursor where the group never claimed');
    const late = q.groups.get('late')!;
    assert.deepEqual([late.subscription.mode, late.subscription.fromTime], ['from', T0 + 5_000]);
    assert.equal(m.subscriptionStart(late, p2), 1, 'the first message created after the subscription time');
    assert.equal(m.subscriptionStart(g, p2), 0, 'subscribed to all: the first retained offset');
    const others = await b.views.model(other);
    assert.deepEqual([...others.queues()].map((x) => x.name), ['elsewhere']);
    assert.equal(others.partitionById(p.id), undefined, 'partitions are looked up within the tenant');
  } },
  { name: 'views: point reads (message ages, pages newest first, a message by transaction id, partition names, dead-letter depth, settings)', cursorCommit: true, async run(b) {
    await b.append({ key: P, items: [item('a')], dedupWindowMs: 0, now: T0 });
    await b.append({ key: P, items: [item('b'), item('c')], dedupWindowMs: 0, now: T0 + 1_000 });
    await b.append({ key: { ...Q, partition: 'p2' }, items: [item('d')], dedupWindowMs: 0, now: T0 + 500 });
    const m = await b.views.model(DEFAULT_TENANT);
    const q = m.queue('q')!;
    const p = q.partitions.get('p')!;
    const p2 = q.partitions.get('p2')!;
    assert.equal(await b.views.createdAtFrom(DEFAULT_TENANT, p.pk, 1), T0 + 1_000);
    assert.equal(await b.views.createdAtFrom(DEFAULT_TENANT, p.pk, 3), undefined);
    assert.equal(await b.views.createdAtFrom('00000000-0000-0000-0000-0000000000dd', p.pk, 0), undefined, 'another tenant reads nothing');
    const page = await b.views.listMessages(DEFAULT_TENANT, { queuePk: q.pk, limit: 3 });
    assert.deepEqual(page.map((r) => [r.transactionId, r.partitionPk, r.queuePk, r.payload]), [['c', p.pk, q.pk, '1'], ['b', p.pk, q.pk, '1'], ['d', p2.pk, q.pk, '1']]);
    const rest = await b.views.listMessages(DEFAULT_TENANT, { queuePk: q.pk, limit: 3, after: { createdAt: page[2]!.createdAt, partitionPk: p2.pk, offset: 0 } });
    assert.deepEqual(rest.map((r) => r.transactionId), ['a']);
    const onP = await b.views.listMessages(DEFAULT_TENANT, { queuePk: q.pk, partitionPk: p.pk, from: T0 + 1_000, limit: 10 });
    assert.deepEqual(onP.map((r) => r.offset), [2, 1]);
    assert.deepEqual((await b.views.findMessage(DEFAULT_TENANT, p.id, 'b', 0))?.offset, 1);
    assert.equal(await b.views.findMessage(DEFAULT_TENANT, p.id, 'b', T0 + 2_000), undefined, 'created before `since`');
    assert.deepEqual(await b.views.locate(DEFAULT_TENANT, p2.id), { tenant: DEFAULT_TENANT, queue: 'q', partition: 'p2' });
    assert.equal(await b.views.locate(DEFAULT_TENANT, 'no-such-partition'), undefined);
    assert.equal(await b.views.findMessage(DEFAULT_TENANT, 'no-such-partition', 'b', 0), undefined);
    await b.claim(claimReq({ partition: 'p' }));
    const dl = await b.commitCursor({
      key: { ...P, group: 'g' }, leaseId: 'L1', committedOffset: 1, retryCount: 0, release: true,
      deadLetter: { id: 'dl-1', offset: 0, error: 'boom', retryCount: 3 }, now: T0 + 2_000,
    });
    assert.equal(dl.applied, true);
    assert.deepEqual([...await b.views.dlqDepth(DEFAULT_TENANT)], [['q', 1]]);
    await b.admin.setSetting('maintenance.pop', 'true');
    assert.equal((await b.views.settings()).get('maintenance.pop'), 'true');
  } },
];

function timer(key: string, at: number) {
  return { queue: 'q', timerKey: key, partition: 'p', deliverAt: at, txn: key, messageId: `m-${key}`, payload: '1', encrypted: false, producerSub: null, attempts: 0, lastError: null, createdAt: T0, updatedAt: T0 };
}
