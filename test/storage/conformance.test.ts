/**
 * The Store contract's behavioural suite (docs/storage.md#store-contract: one suite, every backend). It runs on SQLite
 * now; a PostgreSQL backend joins the `backends` list unchanged.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { QUEUE_DEFAULTS } from '../../src/model/options.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { NO_DELIVERIES } from '../../src/storage/attempts.js';
import type { MessageRow, Store, StoreTx } from '../../src/storage/store.js';
import { tempDir } from '../helpers/broker.js';
import { DEFAULT_TENANT, type QueueBackend } from '../../src/storage/contract.js';
import { openSqliteBackend } from './sqlite-backend.js';
import { contractCases } from './contract-cases.js';
import { streamsCases } from './streams-cases.js';

/** Backends of the operation contract (src/storage/contract.ts); each case gets a fresh one. */
const contractBackends: { name: string; open(dir: string): QueueBackend }[] = [
  { name: 'sqlite (engine indexes over SQL, every tenant)', open: (dir) => openSqliteBackend(dir) },
];

for (const backend of contractBackends) {
  describe(`operation contract: ${backend.name}`, () => {
    for (const c of [...contractCases, ...streamsCases]) {
      test(c.name, async () => {
        const b = backend.open(path.join(tempDir(), 'data'));
        try {
          await c.run(b);
        } finally {
          await b.close();
        }
      });
    }
  });
}

interface Backend {
  name: string;
  open(dir: string): Store;
}

const backends: Backend[] = [
  { name: 'sqlite', open: (dir) => SqliteStore.open({ dataDir: dir, sync: 'normal' }) },
];

function msg(partitionPk: number, offset: number, over: Partial<MessageRow> = {}): MessageRow {
  return {
    partitionPk, offset, id: `m-${partitionPk}-${offset}`, transactionId: `t-${offset}`, payload: JSON.stringify({ offset }),
    encrypted: false, traceId: null, producerSub: null, createdAt: 1_000 + offset * 10, ...over,
  };
}

async function withStore(b: Backend, fn: (s: Store, dir: string) => Promise<void>): Promise<void> {
  const dir = path.join(tempDir(), 'data');
  const s = b.open(dir);
  try {
    await fn(s, dir);
  } finally {
    await s.close();
  }
}

async function seedQueue(s: Store): Promise<{ queuePk: number; partitionPk: number }> {
  return s.run((tx: StoreTx) => {
    const queuePk = tx.insertQueue({ id: 'q-1', tenant: DEFAULT_TENANT, name: 'q', namespace: '', task: '', options: { ...QUEUE_DEFAULTS }, createdAt: 1 });
    const partitionPk = tx.insertPartition({ id: 'p-1', queuePk, name: 'Default', headOffset: 0, firstOffset: 0, lastMessageAt: null, createdAt: 1 });
    return { queuePk, partitionPk };
  });
}

for (const backend of backends) {
  describe(`Store conformance: ${backend.name}`, () => {
    test('appended messages read back in offset order, from any offset, with a limit', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        await s.run((tx) => { for (let o = 0; o < 10; o++) tx.insertMessage(queuePk, msg(partitionPk, o)); });
        assert.deepEqual(s.readMessages(partitionPk, 3, 4).map((m) => m.offset), [3, 4, 5, 6]);
        assert.equal(s.readMessage(partitionPk, 9)?.payload.toString(), JSON.stringify({ offset: 9 }));
        assert.equal(s.readMessages(partitionPk, 10, 5).length, 0);
      });
    });

    test('a unit of work that throws is rolled back alone; the rest of its group commit stands', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        const ok1 = s.run((tx) => tx.insertMessage(queuePk, msg(partitionPk, 0)));
        const bad = s.run((tx) => {
          tx.insertMessage(queuePk, msg(partitionPk, 1));
          throw new Error('refused');
        });
        const ok2 = s.run((tx) => tx.insertMessage(queuePk, msg(partitionPk, 2)));
        await ok1;
        await assert.rejects(bad, /refused/);
        await ok2;
        assert.deepEqual(s.readMessages(partitionPk, 0, 10).map((m) => m.offset), [0, 2]);
      });
    });

    test('a unit that throws runs its rollback hooks at once, newest first, before the next unit of the batch', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        const seen: string[] = [];
        const bad = s.run((tx) => {
          tx.onRollback(() => seen.push('first'));
          tx.onRollback(() => seen.push('second'));
          tx.insertMessage(queuePk, msg(partitionPk, 0));
          throw new Error('after');
        });
        const ok = s.run((tx) => { seen.push('next unit'); tx.onRollback(() => seen.push('never')); });
        await assert.rejects(bad, /after/);
        await ok;
        assert.deepEqual(seen, ['second', 'first', 'next unit']);
        assert.equal(s.readMessages(partitionPk, 0, 10).length, 0);
      });
    });

    test('afterCommit hooks run once the unit is durable, and never for a failed unit', async () => {
      await withStore(backend, async (s) => {
        const seen: string[] = [];
        await s.run((tx) => tx.afterCommit(() => seen.push('ok')));
        await assert.rejects(s.run((tx) => { tx.afterCommit(() => seen.push('bad')); throw new Error('x'); }));
        assert.deepEqual(seen, ['ok']);
      });
    });

    test('a transactionId resolves to its newest message inside the window', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        await s.run((tx) => {
          tx.insertMessage(queuePk, msg(partitionPk, 0, { transactionId: 'same' }));
          tx.insertMessage(queuePk, msg(partitionPk, 1, { transactionId: 'other' }));
          tx.insertMessage(queuePk, msg(partitionPk, 2, { transactionId: 'same' }));
        });
        assert.equal(s.findByTransactionId(partitionPk, 'same', 0)?.offset, 2);
        assert.equal(s.findByTransactionId(partitionPk, 'same', 1_021), undefined, 'created before the window');
        assert.equal(s.offsetByTransactionId(partitionPk, 'same'), 2, 'the ack lookup: newest offset, no time bound');
        assert.equal(s.offsetByTransactionId(partitionPk, 'other'), 1);
        assert.equal(s.offsetByTransactionId(partitionPk, 'missing'), undefined);
        assert.equal(s.offsetByTransactionId(partitionPk + 1, 'same'), undefined, 'another partition');
      });
    });

    test('firstOffsetAfter finds the first message created after a time (binary search over offsets)', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        await s.run((tx) => { for (let o = 0; o < 100; o++) tx.insertMessage(queuePk, msg(partitionPk, o)); });
        assert.equal(s.firstOffsetAfter(partitionPk, 0, 1_000 + 37 * 10), 38);
        assert.equal(s.firstOffsetAfter(partitionPk, 0, 0), 0);
        assert.equal(s.firstOffsetAfter(partitionPk, 0, 1_000 + 99 * 10), undefined);
      });
    });

    test('cursors, subscriptions and settings survive a reopen (snapshot)', async () => {
      const b = backend;
      const dir = path.join(tempDir(), 'data');
      let s = b.open(dir);
      const { queuePk, partitionPk } = await seedQueue(s);
      await s.run((tx) => {
        const counts = { deliveryCount: 3, attemptSplit: 7, deliveryCountFromSplit: 2, deliveredMax: 9 };
        tx.upsertCursor({ partitionPk, group: 'g', committedOffset: 5, leaseId: 'L', leaseExpiresAt: 99, deliveredUpTo: 7, retryCount: 2, ...counts, deliveryCount: 1 });
        tx.upsertCursor({ partitionPk, group: 'g', committedOffset: 6, leaseId: null, leaseExpiresAt: null, deliveredUpTo: 7, retryCount: 0, ...counts });
        tx.upsertSubscription({ queuePk, group: 'g', mode: 'from', fromTime: 123, label: 'new', createdAt: 5, conflation: true });
        tx.updatePartitionHead(partitionPk, 8, 456);
        tx.setSetting('k', 'v');
      });
      await s.close();
      s = b.open(dir);
      try {
        const snap = s.loadSnapshot();
        assert.deepEqual(snap.cursors, [{
          partitionPk, group: 'g', committedOffset: 6, leaseId: null, leaseExpiresAt: null, deliveredUpTo: 7, retryCount: 0,
          deliveryCount: 3, attemptSplit: 7, deliveryCountFromSplit: 2, deliveredMax: 9,
        }]);
        assert.equal(snap.subscriptions[0]?.fromTime, 123);
        assert.equal(snap.subscriptions[0]?.conflation, true);
        assert.equal(snap.partitions[0]?.headOffset, 8);
        assert.equal(snap.partitions[0]?.lastMessageAt, 456);
        assert.equal(snap.settings.get('k'), 'v');
      } finally {
        await s.close();
      }
    });

    test('dead letters list newest first with filters, count per queue, and delete once', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        await s.run((tx) => {
          for (let i = 0; i < 3; i++) {
            tx.insertDlq({
              id: `d${i}`, queuePk, queue: 'q', partitionPk, partition: 'Default', partitionId: 'p-1', group: i === 2 ? 'other' : 'g',
              messageId: `m${i}`, transactionId: `t${i}`, offset: i, payload: '1', encrypted: false, traceId: null, producerSub: null,
              error: 'boom', retryCount: 3, createdAt: 1, failedAt: 100 + i,
            });
          }
        });
        assert.deepEqual(s.listDlq({ limit: 10, offset: 0 }).map((d) => d.id), ['d2', 'd1', 'd0']);
        assert.deepEqual(s.listDlq({ group: 'g', limit: 10, offset: 0 }).map((d) => d.id), ['d1', 'd0']);
        assert.deepEqual(s.listDlq({ from: 101, to: 101, limit: 10, offset: 0 }).map((d) => d.id), ['d1']);
        assert.equal(s.countDlq(queuePk), 3);
        assert.equal(s.countDlqMatching({ queue: 'q' }), 3, 'the true total, whatever the page');
        assert.equal(s.countDlqMatching({ group: 'g', from: 101 }), 1);
        assert.equal(s.countDlqMatching({ queue: 'other-queue' }), 0);
        assert.equal(await s.run((tx) => tx.deleteDlq('d1')), true);
        assert.equal(await s.run((tx) => tx.deleteDlq('d1')), false);
        assert.equal(s.countDlq(), 2);
      });
    });

    test('deleting a queue removes everything under it', async () => {
      await withStore(backend, async (s) => {
        const { queuePk, partitionPk } = await seedQueue(s);
        await s.run((tx) => {
          tx.insertMessage(queuePk, msg(partitionPk, 0));
          tx.upsertCursor({ partitionPk, group: 'g', committedOffset: 1, leaseId: null, leaseExpiresAt: null, deliveredUpTo: null, retryCount: 0, ...NO_DELIVERIES });
        });
        await s.run((tx) => tx.deleteQueue(queuePk));
        const snap = s.loadSnapshot();
        assert.equal(snap.queues.length, 0);
        assert.equal(snap.partitions.length, 0);
        assert.equal(snap.cursors.length, 0);
        assert.equal(s.readMessages(partitionPk, 0, 10).length, 0);
      });
    });
  });
}
