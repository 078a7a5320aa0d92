/**
 * A consumer process for postgres-kill.test.ts: `node pg-consumer-child.js <database url> <name>`
 * claims batches of the queue `q` (partition `p`, group `g`) with short leases on its own
 * PostgreSQL backend and commits them; after each applied commit it prints `{"acked":[offsets]}`.
 * Exits 0 after 40 empty claims in a row; without arguments it does nothing.
 */
import { DEFAULT_TENANT } from '../../src/storage/contract.js';
import { PgBackend } from '../../src/storage/postgres/backend.js';

const [url, name] = process.argv.slice(2);

/** The consumer loop (see the module comment). */
async function consume(url: string, name: string): Promise<void> {
  const b = await PgBackend.open({ pool: { connectionString: url, max: 2 }, serverId: name, listen: false });
  const P = { tenant: DEFAULT_TENANT, queue: 'q', partition: 'p' };
  let idle = 0;
  let n = 0;
  while (idle < 40) {
    const leaseId = `${name}-${++n}`;
    const now = Date.now();
    const [got] = await b.claim({ queue: { tenant: P.tenant, queue: P.queue }, group: 'g', maxPartitions: 1, batch: 5, leaseId, leaseMs: 400,
      delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now });
    if (!got) {
      idle++;
      await new Promise((r) => setTimeout(r, 25));
      continue;
    }
    idle = 0;
    const offsets = got.messages.map((m) => m.offset);
    const r = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId, committedOffset: offsets[offsets.length - 1]! + 1, retryCount: 0, release: true, now: Date.now() });
    if (r.applied) process.stdout.write(JSON.stringify({ acked: offsets }) + '\n');
  }
  await b.close();
}

// `node --test dist/test/` also loads this file, without arguments: then it does nothing.
if (url !== undefined && name !== undefined) await consume(url, name);
