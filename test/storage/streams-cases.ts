/**
 * The streams part of the operation contract (src/storage/contract.ts `StreamsSubStore` and the
 * `streamState` unit op, docs/streams.md#storage) as backend-neutral cases: conformance.test.ts
 * runs them on SQLite, conformance-postgres.test.ts on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { DEFAULT_TENANT, type QueueBackend, type StreamStateOp, type UnitOp } from '../../src/storage/contract.js';
import type { ContractCase } from './contract-cases.js';

const T0 = 1_700_000_000_000;
const OTHER = '00000000-0000-0000-0000-0000000000ee';
const PART = '0193f0c5-0000-7000-8000-000000000001';
const ids = (n: number) => `0193f0c4-0000-7000-8000-${String(n).padStart(12, '0')}`;

async function registered(b: QueueBackend, name = 'q', hash = 'h1', tenant = DEFAULT_TENANT, id = ids(1)) {
  return b.streams.register({ tenant, name, sourceQueue: 'src', sinkQueue: 'sink', configHash: hash, reset: false, newId: id, now: T0 });
}

const stateOp = (queryId: string, ops: StreamStateOp[], requireRows = false, tenant = DEFAULT_TENANT): UnitOp =>
  ({ op: 'streamState', tenant, queryId, partitionId: PART, ops, requireRows, now: T0 + 5 });
const upsert = (key: string, value: string, windowEnd: number | null = null): StreamStateOp => ({ type: 'upsert', key, value, windowEnd });

export const streamsCases: ContractCase[] = [
  { name: 'streams: one id per (tenant, name); same hash updates, another hash is a mismatch unless reset, which wipes the state', cursorCommit: false, async run(b) {
    const r1 = await registered(b);
    assert.equal(r1.outcome, 'created');
    assert.equal(r1.row.id, ids(1));
    const r2 = await b.streams.register({ tenant: DEFAULT_TENANT, name: 'q', sourceQueue: 'src2', sinkQueue: null, configHash: 'h1', reset: false, newId: ids(2), now: T0 + 1 });
    assert.deepEqual([r2.outcome, r2.row.id, r2.row.sourceQueue, r2.row.sinkQueue, r2.row.updatedAt], ['updated', ids(1), 'src2', null, T0 + 1]);
    assert.deepEqual((await b.unit([stateOp(ids(1), [upsert('k', '{"a":1}')])])).committed, true);
    const r3 = await registered(b, 'q', 'h2');
    assert.deepEqual([r3.outcome, r3.row.configHash], ['mismatch', 'h1']);
    assert.equal((await b.streams.readState(DEFAULT_TENANT, ids(1), PART, {})).length, 1, 'a mismatch writes nothing');
    const r4 = await b.streams.register({ tenant: DEFAULT_TENANT, name: 'q', sourceQueue: 'src', sinkQueue: 'sink', configHash: 'h2', reset: true, newId: ids(3), now: T0 + 2 });
    assert.deepEqual([r4.outcome, r4.row.id, r4.row.configHash], ['reset', ids(1), 'h2']);
    assert.deepEqual(await b.streams.readState(DEFAULT_TENANT, ids(1), PART, {}), []);
    const other = await registered(b, 'q', 'h1', OTHER, ids(4));
    assert.deepEqual([other.outcome, other.row.id], ['created', ids(4)], 'names are per tenant');
    assert.equal(await b.streams.query(OTHER, ids(1)), undefined, "another tenant's query is unknown");
    assert.deepEqual((await b.streams.queries(DEFAULT_TENANT, 10)).map((q) => q.id), [ids(1)]);
  } },
  { name: 'streams: a unit with the state rider, an append and a refused commit writes nothing; a committed one writes all', cursorCommit: false, async run(b) {
    await registered(b);
    const key = { tenant: DEFAULT_TENANT, queue: 'sink', partition: 'Default' };
    const append: UnitOp = { op: 'append', request: { key, items: [{ messageId: 'm1', transactionId: 't1', payload: '{"count":1}', encrypted: false, traceId: null, producerSub: null }], dedupWindowMs: 0, now: T0 } };
    const refused = await b.unit([stateOp(ids(1), [upsert('k', '{"acc":1}')]), append, { op: 'leaseHeld', leaseId: 'nobody', now: T0 }]);
    assert.equal(refused.committed, false);
    assert.deepEqual(await b.streams.readState(DEFAULT_TENANT, ids(1), PART, {}), []);
    assert.equal((await b.readPartition(key))?.headOffset ?? 0, 0, 'the append was rolled back');
    const ok = await b.unit([stateOp(ids(1), [upsert('k', '{"acc":1}'), upsert('j', '{}'), { type: 'delete', key: 'j' }]), append]);
    assert.equal(ok.committed, true);
    assert.deepEqual((await b.streams.readState(DEFAULT_TENANT, ids(1), PART, {})).map((r) => [r.key, r.value, r.updatedAt]), [['k', '{"acc":1}', T0 + 5]]);
    assert.equal((await b.readPartition(key))?.headOffset, 1);
  } },
  { name: 'streams: the rider is refused for an unknown query, and (requireRows) for a delete that finds no row', cursorCommit: false, async run(b) {
    await registered(b);
    assert.deepEqual(await b.unit([stateOp(ids(9), [upsert('k', '1')])]), { committed: false, failedIndex: 0 });
    assert.deepEqual(await b.unit([stateOp(ids(1), [upsert('k', '1')], false, OTHER)]), { committed: false, failedIndex: 0 }, "another tenant's query");
    assert.equal((await b.unit([stateOp(ids(1), [upsert('k', '1')])])).committed, true);
    assert.equal((await b.unit([stateOp(ids(1), [{ type: 'delete', key: 'k' }], true)])).committed, true);
    assert.deepEqual(await b.unit([stateOp(ids(1), [{ type: 'delete', key: 'k' }], true)]), { committed: false, failedIndex: 0 });
    assert.equal((await b.unit([stateOp(ids(1), [{ type: 'delete', key: 'k' }], false)])).committed, true, 'without requireRows a missing row is fine');
  } },
  { name: 'streams: state reads filter by keys, a literal prefix and windowEnd at most the bound, ordered by key, with counts per partition', cursorCommit: false, async run(b) {
    await registered(b);
    const ok = await b.unit([stateOp(ids(1), [
      upsert('w\u001fa', '{"windowEnd":100}', 100), upsert('w\u001fb', '{"windowEnd":200.5}', 200.5), upsert('w\u001fc', '{"windowEnd":"100"}'),
      upsert('w%x', '{"windowEnd":1}', 1), upsert('w_y', '{}'), upsert('v', '{"windowEnd":1}', 1),
    ])]);
    assert.equal(ok.committed, true);
    const keys = async (f: Parameters<QueueBackend['streams']['readState']>[3]) => (await b.streams.readState(DEFAULT_TENANT, ids(1), PART, f)).map((r) => r.key);
    assert.deepEqual(await keys({}), ['v', 'w\u001fa', 'w\u001fb', 'w\u001fc', 'w%x', 'w_y']);
    assert.deepEqual(await keys({ ripeAtOrBefore: 150 }), ['v', 'w\u001fa', 'w%x']);
    assert.deepEqual(await keys({ ripeAtOrBefore: 1000, keyPrefix: 'w\u001f' }), ['w\u001fa', 'w\u001fb']);
    assert.deepEqual(await keys({ keyPrefix: 'w%' }), ['w%x'], '% is literal');
    assert.deepEqual(await keys({ keyPrefix: 'w_' }), ['w_y'], '_ is literal');
    assert.deepEqual(await keys({ keys: ['w_y', 'nope', 'v'] }), ['v', 'w_y']);
    assert.deepEqual(await b.streams.readState(OTHER, ids(1), PART, {}), [], "another tenant reads nothing");
    assert.deepEqual(await b.streams.stateCounts(DEFAULT_TENANT, ids(1)), [{ partitionId: PART, rows: 6 }]);
  } },
];
