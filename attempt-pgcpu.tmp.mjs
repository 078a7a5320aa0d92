// ad-hoc: broker CPU and PostgreSQL backend CPU per message of pop+ack, for one build
import pg from 'pg';
import os from 'node:os';
import { startBroker } from './dist/test/helpers/broker.js';
import { request } from './dist/bench/http.js';
import { cpuSeconds } from './dist/bench/proc.js';
const [main, batch = '100', total = '30000'] = process.argv.slice(2);
const name = `queen_attempt_cpu_${process.pid}`;
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = `postgres://postgres@127.0.0.1:5432/${name}`;
const b = await startBroker({ main, env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: url, LOG_LEVEL: 'info' } });
try {
  const PAYLOAD = { orderId: 12345, note: 'x'.repeat(120) };
  for (let sent = 0; sent < Number(total); sent += 1000) await request(b.url, 'POST', '/api/v1/push', { items: Array.from({ length: 1000 }, (_, i) => ({ queue: 'cpu', partition: `p${i % 16}`, payload: PAYLOAD })) });
  const pids = async () => (await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).rows.map((r) => r.pid);
  const dbCpu = (ps) => ps.reduce((s, p) => s + cpuSeconds(p), 0);
  const before = await pids();
  const d0 = dbCpu(before), b0 = cpuSeconds(b.proc.pid);
  let consumed = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (;;) {
      const p = await request(b.url, 'GET', `/api/v1/pop/queue/cpu?batch=${batch}`);
      if (p.status === 204) return;
      const msgs = p.body.messages;
      const last = msgs[msgs.length - 1];
      await request(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId });
      consumed += msgs.length;
    }
  }));
  const after = await pids();
  const d1 = dbCpu(before), b1 = cpuSeconds(b.proc.pid);
  const same = before.filter((p) => after.includes(p)).length;
  console.log(`batch ${batch}: broker ${((b1 - b0) * 1e6 / consumed).toFixed(1)} µs/msg, postgres backends ${((d1 - d0) * 1e6 / consumed).toFixed(1)} µs/msg (${same}/${before.length} backends kept); load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  await b.stop();
  await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
}
