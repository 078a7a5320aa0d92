/**
 * Far due times leave the broker idle. Node runs a `setTimeout` longer than 2^31−1 ms after 1 ms
 * (with a `TimeoutOverflowWarning`), so an uncapped delay becomes a hot loop that re-arms every
 * millisecond until the due time. Each case below sets up the largest value the API accepts for one
 * due-time user (lease, delayed processing, window buffer, retry delay, timer horizon, KV TTL), all
 * on one broker (each on its own queue or namespace), then checks over one 2 s idle window that no
 * warning was printed and that the process's CPU time (utime + stime from /proc/<pid>/stat) barely
 * moved. One overflowing due time is enough to break the budget, so sharing the window loses no
 * case; the failure message names every case armed in it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { b64json } from '../coordination/timer-helpers.js';

const INT32 = 2_147_483_647;
/** Observation window (ms): long enough for a 1 ms re-arm loop to cost hundreds of ms of CPU. */
const IDLE_MS = 2000;
/**
 * CPU the broker may spend while idle over {@link IDLE_MS}, in ms. Generous (background jobs,
 * GC cost tens of ms); a 1 ms re-arm loop measured about 350 ms.
 */
const IDLE_CPU_BUDGET_MS = 150;

const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux

/** utime + stime of `pid`, ms. */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** Polls `/health` until `ms` have passed (the broker must keep answering while we watch). */
async function idleFor(b: BrokerHandle, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const r = await fetch(`${b.url}/health`);
    assert.equal(r.status, 200);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function assertIdle(b: BrokerHandle, what: string): Promise<void> {
  const pid = b.proc.pid!;
  const before = cpuMs(pid);
  await idleFor(b, IDLE_MS);
  const spent = cpuMs(pid) - before;
  assert.doesNotMatch(b.output(), /TimeoutOverflowWarning/, `${what}: a timer overflowed`);
  assert.ok(spent < IDLE_CPU_BUDGET_MS, `${what}: ${spent} ms of CPU over ${IDLE_MS} ms of idle (budget ${IDLE_CPU_BUDGET_MS} ms)`);
}

async function configure(b: BrokerHandle, q: string, options: Record<string, unknown>): Promise<void> {
  const r = await call(b.url, 'POST', '/api/v1/configure', { queue: q, options });
  assert.equal(r.status, 200, r.text);
}

async function push(b: BrokerHandle, q: string, n = 1): Promise<void> {
  const r = await call(b.url, 'POST', '/api/v1/push', { items: Array.from({ length: n }, (_, i) => ({ queue: q, payload: { i } })) });
  assert.equal(r.status, 201, r.text);
}

async function pop(b: BrokerHandle, q: string, qs = 'batch=10'): Promise<any> {
  const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?${qs}`);
  assert.ok(r.status === 200 || r.status === 204, r.text);
  return r.status === 204 ? null : r.body;
}

describe('the largest accepted due times leave the broker idle', () => {
  let b: BrokerHandle;
  before(async () => {
    b = await startBroker();
  });
  after(async () => {
    await b?.stop();
  });

  test('every due-time user armed at its largest value at once, then one idle window', async (t) => {
    await t.test('leaseTime 2^31−1 s', async () => {
      const q = uniqueName('lease');
      await configure(b, q, { leaseTime: INT32 });
      await push(b, q, 2);
      const got = await pop(b, q, 'batch=1');
      assert.equal(got.messages.length, 1, 'one message leased under the longest lease');
    });

    await t.test('delayedProcessing 2^31−1 s', async () => {
      const q = uniqueName('delay');
      await configure(b, q, { delayedProcessing: INT32 });
      await push(b, q);
      assert.equal(await pop(b, q), null, 'the message is not visible yet');
    });

    await t.test('windowBuffer 2^31−1 s', async () => {
      const q = uniqueName('window');
      await configure(b, q, { windowBuffer: INT32 });
      await push(b, q);
      assert.equal(await pop(b, q), null, 'the window has not elapsed');
    });

    await t.test('retryDelay 2^31−1 ms with a failed delivery', async () => {
      const q = uniqueName('retry');
      await configure(b, q, { retryDelay: INT32, retryLimit: 5 });
      await push(b, q);
      const got = await pop(b, q);
      const m = got.messages[0];
      const r = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'failed' });
      assert.equal(r.status, 200, r.text);
    });

    await t.test('a timer at the 90-day horizon', async () => {
      const q = uniqueName('timer');
      const r = await call(b.url, 'POST', '/api/v1/timers', {
        operations: [{ op: 'schedule', queue: q, timerKey: 'far', delayMs: 90 * 24 * 3600 * 1000, txn: 'far-1', payload: b64json({ n: 1 }) }],
      });
      assert.equal(r.status, 200, r.text);
    });

    await t.test('a KV row with the longest TTL (ten years)', async () => {
      const ns = uniqueName('kv');
      const r = await call(b.url, 'POST', '/api/v1/kv', [{ op: 'put', ns, key: 'far', value: 1, ttlSeconds: 10 * 365 * 24 * 3600 }]);
      assert.equal(r.status, 200, r.text);
    });

    await assertIdle(b, 'leaseTime, delayedProcessing, windowBuffer, retryDelay, timer horizon and KV TTL armed together');
  });
});
