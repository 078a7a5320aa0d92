/**
 * The broker's views and pops are the default tenant's (docs/storage.md#operation-contract: one
 * backend serves every tenant, keys carry the tenant): a queue another tenant owns under the same
 * name, written through the operation contract, shows in no listing, is not popped, and keeps its
 * own messages when the default tenant's queue of that name is deleted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QUEUE_MODE } from '../../../src/broker/broker.js';
import { DEFAULT_TENANT } from '../../../src/storage/contract.js';
import { startTestServices } from '../../helpers/services.js';

const OTHER = '00000000-0000-0000-0000-000000000002';

test('another tenant\'s queue of the same name stays out of the default tenant\'s views, pops and deletes', async () => {
  const { services, clock, stop } = startTestServices();
  try {
    const { broker, views } = services;
    const item = (txn: string) => ({ messageId: `m-${txn}`, transactionId: txn, payload: '1', encrypted: false, traceId: null, producerSub: null });
    const now = clock.now();
    await broker.backend.append({ key: { tenant: OTHER, queue: 'shared', partition: 'p' }, items: [item('o1'), item('o2')], dedupWindowMs: 0, now });
    await broker.backend.append({ key: { tenant: OTHER, queue: 'only-other', partition: 'p' }, items: [item('o3')], dedupWindowMs: 0, now });
    await broker.push([{ queue: 'shared', payload: { mine: true } }], null);

    assert.deepEqual((await views.listQueues(DEFAULT_TENANT)).queues.map((q) => q.name), ['shared'], 'one queue listed: the default tenant\'s');
    assert.equal((await views.overview(DEFAULT_TENANT)).queues, 1);
    const popped = await broker.pop({
      queue: undefined, partition: undefined, namespace: 'only-other', task: undefined, group: QUEUE_MODE, batch: 10, partitions: 10,
      wait: false, timeoutMs: 0, autoAck: true, leaseSeconds: undefined, subscription: {},
    });
    assert.equal(popped, null, 'a discovery pop does not reach another tenant\'s queue');

    assert.equal((await broker.deleteQueue('shared')).deleted, true);
    assert.deepEqual(await broker.backend.admin.queues(OTHER), [{ queue: 'only-other', partitions: 1, messages: 1 }, { queue: 'shared', partitions: 1, messages: 2 }]);
    assert.deepEqual(await broker.backend.admin.queues(DEFAULT_TENANT), []);
  } finally {
    await stop();
  }
});
