/**
 * A cursor commit without a lease on a partition where the group has no cursor yet, racing another
 * node's first claim of that partition and its ack (src/storage/postgres/log-ops.ts `commitIn`): the
 * commit is checked against the cursor the other node created, not against the group's start, so it
 * cannot set the cursor back over messages already acked (they would be delivered again).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PgBackend } from '../../src/storage/postgres/backend.js';
import { DEFAULT_TENANT, type ClaimRequest } from '../../src/storage/contract.js';
import { afterTxStatements, openPostgresBackend } from './postgres-backend.js';

const T0 = 1_700_000_000_000;
const Q = { tenant: DEFAULT_TENANT, queue: 'cursor-race' };
const item = (txn: string) => ({ messageId: `m-${txn}`, transactionId: txn, payload: `"${txn}"`, encrypted: false, traceId: null, producerSub: null });
const claimReq = (over: Partial<ClaimRequest>): ClaimRequest => ({ queue: Q, group: 'g', maxPartitions: 1, batch: 10, leaseId: 'L', leaseMs: 30_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now: T0, ...over });
const LOCK_CURSOR = 'SELECT * FROM queen.consumers WHERE partition_id = $1 AND consumer_group = $2 FOR UPDATE';

let b: PgBackend;
before(async () => { b = await openPostgresBackend(); });
after(async () => { await b.close(); });

test('a lease-less commit that found no cursor is refused once another node created the cursor and acked past its start', async () => {
  await b.append({ key: { ...Q, partition: 'a' }, items: ['a0', 'a1', 'a2'].map(item), dedupWindowMs: 0, now: T0 });
  await b.append({ key: { ...Q, partition: 'b' }, items: [item('b0')], dedupWindowMs: 0, now: T0 });
  // The group exists (its first claim, on b); on a it has no cursor yet.
  assert.equal((await b.claim(claimReq({ partition: 'b', leaseId: 'L0' }))).length, 1);

  // Hold the lease-less commit right after its cursor lookup on a found nothing.
  let reached!: () => void;
  const atGate = new Promise<void>((r) => (reached = r));
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let armed = true;
  const restore = afterTxStatements(b, async (sql, r) => {
    if (armed && sql === LOCK_CURSOR && r.rows.length === 0) {
      armed = false;
      reached();
      await gate;
    }
  });
  const stale = b.commitCursor({ key: { ...Q, partition: 'a', group: 'g' }, leaseId: null, ifCommittedOffset: 0, committedOffset: 1, retryCount: 0, release: false, now: T0 + 1 });
  await atGate;
  restore();

  // Meanwhile another node claims a for the first time and acks all three.
  const [claimed] = await b.claim(claimReq({ partition: 'a', leaseId: 'L1', now: T0 + 2 }));
  assert.deepEqual(claimed!.messages.map((m) => m.offset), [0, 1, 2]);
  const acked = await b.commitCursor({ key: { ...Q, partition: 'a', group: 'g' }, leaseId: 'L1', ifCommittedOffset: 0, committedOffset: 3, retryCount: 0, release: true, now: T0 + 3 });
  assert.equal(acked.applied, true);

  open();
  const r = await stale;
  assert.equal(r.applied, false, 'the commit was decided on offset 0; the cursor is at 3 now');
  assert.equal((await b.readCursor({ ...Q, partition: 'a', group: 'g' }))?.committedOffset, 3, 'the acks stand: nothing is delivered again');
});
