/**
 * A broker must never hang on its log output (docs/operations.md#logs): a parent that stops
 * reading the broker's stdout, or goes away, must neither stop the broker from serving nor keep
 * it from exiting on SIGTERM. Real broker processes; the "reader" is this test process, which
 * pauses (or destroys) its end of the child's stdout socket.
 *
 * Log volume comes from requests the broker logs one line each: with `JWT_ALGORITHM=auto` and an
 * unparseable `JWT_PUBLIC_KEY`, every RS256 token is answered 500 `invalid_rsa_pem` and logged at
 * error level (src/auth/index.ts).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { describe, it } from 'node:test';
import { runBrokerExpectingExit, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { bearer, hsKey, mint, request, rsaKeys } from '../helpers/jwt.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'log-backpressure-secret-'.padEnd(40, 'x');
const ENV = {
  JWT_ENABLED: 'true',
  JWT_ALGORITHM: 'auto',
  JWT_SECRET: SECRET,
  JWT_PUBLIC_KEY: 'not a pem',
  // A small buffer so that a few hundred lines past the socket's own buffer overflow it.
  QUEEN_LOG_BUFFER_BYTES: '65536',
};
/** Generous bound on exiting after SIGTERM (the shutdown grace is 10 s). */
const EXIT_BOUND_MS = 15_000;

const admin = () => mint('HS256', hsKey(SECRET), { sub: 'log-test', roles: ['admin'] });
const rs256 = () => mint('RS256', rsaKeys().privateKey, { sub: 'log-test', roles: ['admin'] });

/** The broker's `queen_log_lines_dropped_total`, or undefined while the series is absent. */
async function droppedLines(url: string): Promise<number | undefined> {
  const r = await request(url, 'GET', '/metrics/prometheus');
  assert.equal(r.status, 200, r.text);
  const m = /^queen_log_lines_dropped_total (\d+)/m.exec(r.text);
  return m ? Number(m[1]) : undefined;
}

/**
 * Sends requests that each log one line until the broker reports dropped log lines.
 * @returns the dropped count seen
 */
async function floodUntilDropped(url: string): Promise<number> {
  const bad = bearer(await rs256());
  const timeoutMs = 90_000;
  // Each round stops at the deadline too: a broker that answers slowly fails the wait within
  // about its timeout instead of running a round of 300 requests past the file timeout.
  const deadline = Date.now() + timeoutMs;
  return waitFor(async () => {
    await Promise.all(Array.from({ length: 10 }, async () => {
      for (let i = 0; i < 30 && Date.now() < deadline; i++) {
        const r = await request(url, 'GET', '/api/v1/resources/queues', bad);
        assert.equal(r.status, 500, r.text);
        assert.equal(r.json?.code, 'invalid_rsa_pem', r.text);
      }
    }));
    const n = await droppedLines(url);
    return n !== undefined && n > 0 ? n : undefined;
  }, { what: 'the broker to count dropped log lines', timeoutMs, intervalMs: 1 });
}

/** Push one message and pop it back, each answer bounded in time (request's 15 s timeout). */
async function pushAndPop(url: string): Promise<void> {
  const auth = bearer(await admin());
  const queue = uniqueName('logs');
  const payload = { n: 1, text: 'still serving' };
  const pushed = await request(url, 'POST', '/api/v1/push', auth, JSON.stringify({ items: [{ queue, payload }] }));
  assert.equal(pushed.status, 201, pushed.text);
  const popped = await request(url, 'GET', `/api/v1/pop/queue/${queue}?wait=false`, auth);
  assert.equal(popped.status, 200, popped.text);
  assert.deepEqual(popped.json.messages.map((m: { data: unknown }) => m.data), [payload]);
}

/** Resolves with the exit code, or rejects (after SIGKILL) when the process outlives `ms`. */
async function exitWithin(proc: ChildProcess, ms: number, output: () => string): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  let t: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((r) => proc.once('exit', (c) => r(c))),
    new Promise<'stuck'>((r) => (t = setTimeout(() => r('stuck'), ms))),
  ]);
  clearTimeout(t);
  if (code === 'stuck') {
    proc.kill('SIGKILL');
    throw new Error(`broker did not exit within ${ms} ms of SIGTERM:\n${output().slice(-2000)}`);
  }
  return code;
}

async function cleanup(b: BrokerHandle | undefined): Promise<void> {
  if (b !== undefined && b.proc.exitCode === null && b.proc.signalCode === null) await b.kill();
}

describe('log output that nobody reads', () => {
  for (const format of ['json', 'pretty'] as const) {
    it(`${format}: a full stdout pipe neither stops serving nor blocks SIGTERM; dropped lines are counted`, async () => {
      let b: BrokerHandle | undefined;
      try {
        b = await startBroker({ env: { ...ENV, LOG_FORMAT: format } });
        b.proc.stdout!.pause(); // the reader stops reading: the socket fills, then the broker's buffer
        const dropped = await floodUntilDropped(b.url);
        assert.ok(dropped > 0);
        await pushAndPop(b.url);
        b.proc.kill('SIGTERM'); // still unread: the final flush must give up, not wait forever
        assert.equal(await exitWithin(b.proc, EXIT_BOUND_MS, () => b!.output()), 0, b.output().slice(-2000));
      } finally {
        await cleanup(b);
      }
    });
  }

  it('a reader that catches up gets one warning with the dropped count, then the log goes on', async () => {
    let b: BrokerHandle | undefined;
    try {
      b = await startBroker({ env: ENV });
      b.proc.stdout!.pause();
      const dropped = await floodUntilDropped(b.url);
      b.proc.stdout!.resume();
      const warning = await waitFor(() => b!.output().split('\n').find((l) => l.includes('log lines dropped')), {
        what: 'the dropped-lines warning', timeoutMs: 20_000,
      });
      const rec = JSON.parse(warning) as { level: number; dropped: number; msg: string };
      assert.equal(rec.level, 40, warning);
      assert.ok(rec.dropped >= dropped, `warning says ${rec.dropped}, the counter said ${dropped} before`);
      // Logging resumes: a fresh logged request shows up after the warning.
      const before = b.output().length;
      const r = await request(b.url, 'GET', '/api/v1/resources/queues', bearer(await rs256()));
      assert.equal(r.status, 500);
      await waitFor(() => b!.output().slice(before).includes('invalid_rsa_pem'), { what: 'a log line after the warning' });
      // Every line the reader got is whole (nothing torn by the drops).
      for (const line of b.output().split('\n').filter((l) => l.startsWith('{'))) JSON.parse(line);
      assert.equal(await b.stop(), 0);
    } finally {
      await cleanup(b);
    }
  });
});

describe('log output whose reader went away', () => {
  it('SIGTERM, then the reader goes: the broker exits', async () => {
    let b: BrokerHandle | undefined;
    try {
      b = await startBroker({ env: { LOG_LEVEL: 'info' } });
      b.proc.kill('SIGTERM'); // as a parent that signals its child and exits at once
      b.proc.stdout!.destroy();
      b.proc.stderr!.destroy();
      assert.equal(await exitWithin(b.proc, EXIT_BOUND_MS, () => b!.output()), 0);
    } finally {
      await cleanup(b);
    }
  });

  it('the reader goes: logged requests hit EPIPE, the broker keeps serving, counts the lost lines, exits on SIGTERM', async () => {
    let b: BrokerHandle | undefined;
    try {
      b = await startBroker({ env: ENV });
      b.proc.stdout!.destroy();
      b.proc.stderr!.destroy();
      const bad = bearer(await rs256());
      // The first logged line meets EPIPE and stops the output; later lines are counted as dropped.
      await waitFor(async () => {
        const r = await request(b!.url, 'GET', '/api/v1/resources/queues', bad);
        assert.equal(r.status, 500, r.text);
        return ((await droppedLines(b!.url)) ?? 0) > 0;
      }, { what: 'lines dropped after EPIPE', timeoutMs: 30_000 });
      await pushAndPop(b.url);
      b.proc.kill('SIGTERM');
      assert.equal(await exitWithin(b.proc, EXIT_BOUND_MS, () => b!.output()), 0);
    } finally {
      await cleanup(b);
    }
  });
});

describe('QUEEN_LOG_BUFFER_BYTES', () => {
  it('a value below 16 KiB or not an integer stops the boot naming the range', async () => {
    for (const v of ['1000', '8MiB']) {
      const r = await runBrokerExpectingExit({ QUEEN_LOG_BUFFER_BYTES: v });
      assert.equal(r.code, 1, r.output);
      assert.match(r.output, /fatal: QUEEN_LOG_BUFFER_BYTES=.* \(expected 16384\.\.1073741824\)/, r.output);
    }
  });
});
