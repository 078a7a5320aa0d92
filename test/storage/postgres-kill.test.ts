/**
 * Consumer processes on one PostgreSQL database, SIGKILLed at random moments
 * (docs/storage.md#postgresql-backend): every message ends up acknowledged, no offset is
 * acknowledged twice (two processes never held live leases over the same messages), each
 * acknowledged batch is a contiguous run of offsets, and the group's cursor ends at the head.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DEFAULT_TENANT } from '../../src/storage/contract.js';
import { PgBackend } from '../../src/storage/postgres/backend.js';
import { waitFor } from '../helpers/wait.js';
import { freshDatabase } from './postgres-backend.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pg-consumer-child.js');
const N = 400;

test('consumers SIGKILLed at random: everything acknowledged once, in contiguous batches; the cursor ends at the head', async () => {
  const db = await freshDatabase();
  const b = await PgBackend.open({ pool: { connectionString: db.url, max: 2 }, listen: false });
  const batches: number[][] = [];
  const children = new Set<ChildProcess>();
  const start = (name: string) => {
    const c = spawn(process.execPath, [CHILD, db.url, name], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    c.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        batches.push((JSON.parse(buf.slice(0, i)) as { acked: number[] }).acked);
        buf = buf.slice(i + 1);
      }
    });
    children.add(c);
    c.once('exit', () => children.delete(c));
    return c;
  };
  try {
    const P = { tenant: DEFAULT_TENANT, queue: 'q', partition: 'p' };
    for (let i = 0; i < N; i += 100) {
      await b.append({ key: P, items: Array.from({ length: 100 }, (_, k) => ({ messageId: `m${i + k}`, transactionId: `t${i + k}`, payload: '1', encrypted: false, traceId: null, producerSub: null })), dedupWindowMs: 0, now: Date.now() });
    }
    for (let i = 0; i < 3; i++) start(`c${i}`);
    for (let kill = 0; kill < 3; kill++) {
      const seen = batches.length;
      await waitFor(() => batches.length > seen + 3, { what: 'more acknowledged batches', timeoutMs: 60_000 });
      const victims = [...children];
      victims[Math.floor(Math.random() * victims.length)]?.kill('SIGKILL');
      start(`r${kill}`);
    }
    await waitFor(() => children.size === 0, { what: 'every consumer done', timeoutMs: 120_000, intervalMs: 100 });
    const all = batches.flat().sort((x, y) => x - y);
    assert.equal(new Set(all).size, all.length, 'no offset acknowledged twice');
    for (const batch of batches) assert.deepEqual(batch, batch.map((_, k) => batch[0]! + k), 'a batch is a contiguous run');
    assert.equal((await b.readCursor({ ...P, group: 'g' }))?.committedOffset, N, 'everything consumed');
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await b.close();
    await db.drop();
  }
});
