/**
 * The official JS client's Streams API (queen-mq/queen: clients/client-js, client-v2, unchanged),
 * run from outside the repository against a Queen-TS broker this script starts and SIGKILLs
 * (docs/compat.md#streams-under-sigkill): a tumbling 1 s count from a source queue (2 partitions,
 * `leaseTime` LEASE_S so a batch whose cycle died with the broker is redelivered within the run)
 * into a sink queue. Halfway through the input the broker is killed with SIGKILL and restarted on
 * the same data directory. The producer pushes one message per request with a transactionId, so a
 * push retried after the kill is deduplicated. At the end the input is read back under another
 * group, counts per (partition, window) are computed from each message's createdAt and compared
 * with the sink: no window twice, none lost, every count right.
 *
 * Usage: npx tsc -p tsconfig.json && QUEEN_CLIENT_DIR=<client-js folder> node scripts/compat/streams-kill.mjs
 * Env: N (messages, default 600), QPORT (broker port, default 16715), LEASE_S (default 10).
 * Prints PASS or FAIL and a JSON summary; exit code 0 on PASS.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const clientDir = process.env.QUEEN_CLIENT_DIR;
if (!clientDir) { console.error('set QUEEN_CLIENT_DIR to the clients/client-js folder of the reference repository'); process.exit(2); }
const { Queen, Stream } = await import(pathToFileURL(path.join(clientDir, 'client-v2/index.js')).href);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PORT = Number(process.env.QPORT ?? 16715);
const URL = `http://127.0.0.1:${PORT}`;
const N = Number(process.env.N ?? 600);
const PARTS = ['pa', 'pb'];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-streams-kill-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let broker;
async function start() {
  broker = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], { env: { ...process.env, PORT: String(PORT), QUEEN_DATA_DIR: dataDir, QUEEN_BIND_ADDR: '127.0.0.1', LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (;;) { try { if ((await fetch(`${URL}/health`)).ok) return; } catch {} await sleep(100); }
}
async function http(method, p, body) {
  const r = await fetch(URL + p, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
}
await start();
const src = `kt-src-${Date.now()}`; const sink = `kt-sink-${Date.now()}`;
const client = new Queen({ urls: [URL] });
await client.queue(src).config({ leaseTime: Number(process.env.LEASE_S ?? 10) }).create(); await client.queue(sink).create();
const handle = await Stream.from(client.queue(src))
  .windowTumbling({ seconds: 1, idleFlushMs: 1000 })
  .aggregate({ count: () => 1 })
  .map((v, ctx) => ({ count: v.count, windowStart: ctx.windowStart, partition: ctx.partition }))
  .to(client.queue(sink))
  .run({ queryId: `kt-q-${Date.now()}`, url: URL, batchSize: 20, reset: true });
let killed = false;
for (let i = 0; i < N; i++) {
  if (!killed && i === N / 2) {
    broker.kill('SIGKILL'); killed = true; console.log(`SIGKILL at message ${i}`);
    await new Promise((r) => broker.once('exit', r)); await start(); console.log('restarted');
  }
  const item = { queue: src, partition: PARTS[i % PARTS.length], transactionId: `m-${i}`, payload: { i } };
  for (;;) { try { const r = await http('POST', '/api/v1/push', { items: [item] }); if (r.status === 201) break; } catch {} await sleep(200); }
  await sleep(10);
}
// Expected per (partition, window) from the input's createdAt (read back under another group).
const expected = new Map(); let seen = 0;
for (;;) {
  const r = await http('GET', `/api/v1/pop/queue/${src}?batch=1000&consumerGroup=verify&autoAck=true`);
  if (r.status === 204) break;
  for (const m of r.body.messages) { const ws = Math.floor(Date.parse(m.createdAt) / 1000) * 1000; const k = `${m.partition}|${ws}`; expected.set(k, (expected.get(k) ?? 0) + 1); seen++; }
}
const got = []; const deadline = Date.now() + 90_000;
while (Date.now() < deadline) {
  const r = await http('GET', `/api/v1/pop/queue/${sink}?batch=1000&consumerGroup=verify&autoAck=true`);
  if (r.status !== 204) got.push(...r.body.messages.map((m) => m.data));
  if (got.reduce((a, d) => a + d.count, 0) >= N) break;
  if (r.status === 204) await sleep(500);
}
await sleep(3000); // anything emitted twice late
for (;;) { const r = await http('GET', `/api/v1/pop/queue/${sink}?batch=1000&consumerGroup=verify&autoAck=true`); if (r.status === 204) break; got.push(...r.body.messages.map((m) => m.data)); }
await handle.stop();
const emitted = new Map(); const dups = [];
for (const d of got) { const k = `${d.partition}|${d.windowStart}`; if (emitted.has(k)) dups.push(k); emitted.set(k, d.count); }
const lost = [...expected.keys()].filter((k) => !emitted.has(k));
const wrong = [...expected].filter(([k, c]) => emitted.has(k) && emitted.get(k) !== c);
const extra = [...emitted.keys()].filter((k) => !expected.has(k));
console.log(JSON.stringify({ input: N, inputReadBack: seen, windowsExpected: expected.size, sinkMessages: got.length, sinkCountTotal: got.reduce((a, d) => a + d.count, 0), duplicates: dups, lost, wrongCounts: wrong.map(([k, c]) => [k, c, emitted.get(k)]), extra, runnerErrors: handle.metrics().errorsTotal }));
const pass = dups.length === 0 && lost.length === 0 && wrong.length === 0 && extra.length === 0 && seen === N;
console.log(pass ? 'PASS' : 'FAIL');
broker.kill('SIGTERM');
process.exit(pass ? 0 : 1);
