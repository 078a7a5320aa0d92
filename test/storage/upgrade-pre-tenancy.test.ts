/**
 * Upgrade: a data directory written by an older release boots with this build, all its messages,
 * cursors, dead letters and KV rows under the default tenant, poppable and ackable, and invisible to
 * any other tenant (docs/proxy.md#tenancy, docs/storage.md#schema). The fixtures are real data
 * directories written by those releases (test/fixtures/make-pre-tenancy-datadir.ts says how and
 * what they hold); each test boots a copy.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { sqliteOnly, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURES = path.resolve(here, '../../../test/fixtures');
const OTHER = { 'x-queen-tenant': 'aaaaaaaa-0000-4000-8000-00000000000a' };
const TENANCY = { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' };

type Msg = { data: Record<string, number>; transactionId: string; partitionId: string; leaseId: string };

async function pop(b: BrokerHandle, p: string, headers: Record<string, string> = {}): Promise<Msg[]> {
  const r = await call(b.url, 'GET', p, undefined, headers);
  assert.ok(r.status === 200 || r.status === 204, `${p}: ${r.status} ${r.text}`);
  return r.status === 204 ? [] : r.body.messages;
}

async function ackAll(b: BrokerHandle, msgs: Msg[], consumerGroup?: string): Promise<void> {
  const r = await call(b.url, 'POST', '/api/v1/ack/batch', {
    acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed', ...(consumerGroup ? { consumerGroup } : {}) })),
  });
  assert.equal(r.status, 200, r.text);
  assert.ok((r.body as { success: boolean }[]).every((a) => a.success), r.text);
}

const data = (msgs: Msg[], field: string) => msgs.map((m) => m.data[field]);

describe('a data directory of an older release boots after the upgrade', () => {
  for (const [rev, what] of [['66585c0', 'before any tenant column'], ['22fc3c1', 'before request tenancy']] as const) {
    test(`${rev} (${what}): messages, cursors, dead letters and KV rows are the default tenant's, poppable and ackable`, sqliteOnly('a SQLite data directory'), async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `queen-upgrade-${rev}-`));
      fs.cpSync(path.join(FIXTURES, `datadir-${rev}`), dataDir, { recursive: true });
      let b = await startBroker({ dataDir, env: TENANCY });
      try {
        const queues = (await call(b.url, 'GET', '/api/v1/resources/queues')).body.queues.map((q: { name: string }) => q.name).sort();
        assert.deepEqual(queues, ['fragile', 'orders']);
        assert.deepEqual((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, OTHER)).body.queues, [], 'another tenant sees none of them');

        // cursors: billing acked p1 0–3, queue mode acked p2 0–2
        const billing = await pop(b, '/api/v1/pop/queue/orders/partition/p1?batch=100&consumerGroup=billing');
        assert.deepEqual(data(billing, 'n'), [4, 5, 6, 7, 8, 9]);
        await ackAll(b, billing, 'billing');
        const qmP2 = await pop(b, '/api/v1/pop/queue/orders/partition/p2?batch=100');
        assert.deepEqual(data(qmP2, 'n'), [3, 4]);
        await ackAll(b, qmP2);
        const qmP1 = await pop(b, '/api/v1/pop/queue/orders/partition/p1?batch=100');
        assert.deepEqual(data(qmP1, 'n'), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'queue mode never consumed p1');
        await ackAll(b, qmP1);
        assert.deepEqual(await pop(b, '/api/v1/pop/queue/orders?batch=100', OTHER), [], 'another tenant\'s queue of that name is empty');

        // dead letters
        const dlq = await call(b.url, 'GET', '/api/v1/dlq?queue=fragile');
        assert.deepEqual(dlq.body.messages.map((m: { data: { f: number }; errorMessage: string }) => [m.data.f, m.errorMessage]).sort(), [[0, 'poison'], [1, 'poison']]);
        assert.equal((await call(b.url, 'GET', '/api/v1/dlq?queue=fragile', undefined, OTHER)).body.messages.length, 0);
        const replay = await call(b.url, 'POST', `/api/v1/dlq/${dlq.body.messages.find((m: { data: { f: number } }) => m.data.f === 0).id}/replay`);
        assert.equal(replay.status, 200, replay.text);
        const g = await pop(b, '/api/v1/pop/queue/fragile?batch=100&consumerGroup=g');
        assert.deepEqual(data(g, 'f').sort(), [0, 2], 'the unconsumed message and the replayed dead letter');
        await ackAll(b, g, 'g');

        // KV
        const kv = await call(b.url, 'GET', '/api/v1/kv/settings/mode');
        assert.deepEqual([kv.body.found, kv.body.value], [true, 'blue'], kv.text);
        assert.equal((await call(b.url, 'GET', '/api/v1/kv/settings/mode', undefined, OTHER)).body.found, false);

        // the upgraded directory boots again with the acks above kept
        assert.equal(await b.stop(), 0, b.output());
        b = await startBroker({ dataDir, env: TENANCY });
        assert.deepEqual(await pop(b, '/api/v1/pop/queue/orders/partition/p1?batch=100&consumerGroup=billing'), []);
        assert.deepEqual(await pop(b, '/api/v1/pop/queue/orders/partition/p2?batch=100'), []);
        assert.equal((await call(b.url, 'GET', '/api/v1/dlq?queue=fragile')).body.messages.length, 1, 'the replayed dead letter is gone, the other stays');
      } finally {
        await b.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});
