/**
 * The proxy's upstream budget (docs/proxy.md#forwarding): a request the broker does not start
 * answering within its budget gets `504 {"code":"upstream_timeout"}` from the proxy; a long-poll pop
 * gets `min(its timeout, QUEEN_PROXY_LONGPOLL_MAX_MS) + QUEEN_PROXY_LONGPOLL_MARGIN_MS`, never the
 * shorter request budget, and a cut long-poll claims nothing.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor, within } from '../helpers/wait.js';
import { bootstrap, CP_TOKEN, startProxied, withKey } from './helpers.js';

const parked = async (url: string): Promise<number> => {
  const m = /^queen_parked_consumers (\d+)$/m.exec((await call(url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN })).text);
  if (!m) throw new Error('queen_parked_consumers missing');
  return Number(m[1]);
};

describe('upstream budget', () => {
  test('a long-poll longer than QUEEN_PROXY_LONGPOLL_MAX_MS is cut with 504 upstream_timeout and claims nothing', async () => {
    const b = await startProxied({ QUEEN_PROXY_LONGPOLL_MAX_MS: '300', QUEEN_PROXY_LONGPOLL_MARGIN_MS: '300' });
    try {
      const t = await bootstrap(b.url, 'slow');
      const q = uniqueName('lp');
      const r = await within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=60000`), 20_000, 'the cut long-poll');
      assert.equal(r.status, 504);
      assert.equal(r.body.code, 'upstream_timeout');
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
      await waitFor(async () => (await parked(b.url)) === 0, { what: 'the cut pop is no longer parked', timeoutMs: 10_000 });
      const pushed = await within(withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] }), 10_000, 'push');
      assert.equal(pushed.status, 201, pushed.text);
      const got = await within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}`), 10_000, 'pop');
      assert.equal(got.status, 200, 'the message was not claimed by the cut long-poll');
      assert.deepEqual(got.body.messages.map((m: { data: unknown }) => m.data), [{ n: 1 }]);
      const m = await call(b.url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN });
      assert.match(m.text, /queen_proxy_upstream_timeouts_total\{tenant="[0-9a-f-]+"\} 1/);
      assert.match(b.output(), /did not answer within the budget/);
    } finally {
      await b.stop();
    }
  });

  test('a long-poll is not cut by the shorter request budget; a stalled request is', async () => {
    const b = await startProxied({ QUEEN_PROXY_REQUEST_TIMEOUT_MS: '300', QUEEN_PROXY_LONGPOLL_MARGIN_MS: '2000' });
    try {
      const t = await bootstrap(b.url, 'patient');
      const q = uniqueName('lp');
      const empty = await within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=1200`), 20_000, 'the long-poll');
      assert.equal(empty.status, 204, 'the pop ran its own 1.2 s timeout, past the 300 ms request budget');
      const waiting = within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=10000`), 20_000, 'the parked long-poll');
      await waitFor(async () => (await parked(b.url)) === 1, { what: 'one parked pop', timeoutMs: 10_000 });
      await new Promise((r) => setTimeout(r, 500)); // past the request budget on purpose: the parked pop must outlive it
      assert.equal((await within(withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 7 }] }), 10_000, 'push')).status, 201);
      const got = await waiting;
      assert.equal(got.status, 200, got.text);
      // A push whose body never arrives: the broker cannot answer; the proxy does, within its budget.
      const raw = await within(new Promise<string>((resolve, reject) => {
        const u = new URL(b.url);
        const s = connect(Number(u.port), u.hostname, () => {
          s.write(`POST /api/v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"items":`);
        });
        let text = '';
        s.on('data', (d) => { text += d.toString(); });
        s.on('end', () => resolve(text));
        s.on('close', () => resolve(text));
        s.on('error', reject);
      }), 15_000, 'the stalled push');
      assert.match(raw, /^HTTP\/1\.1 504 /);
      assert.match(raw, /"code":"upstream_timeout"/);
    } finally {
      await b.stop();
    }
  });
});
