/**
 * Per-tenant activity series on the proxy's /metrics/prometheus (docs/proxy.md#metrics): requests
 * by route class, request bytes, the last request's time and parked long-polls, each labelled with
 * the cluster's broker tenant; a client-sent `x-queen-tenant` does not move a request to another
 * tenant's series.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call } from '../helpers/http.js';
import { waitFor, within } from '../helpers/wait.js';
import { bootstrap, cp, CP_TOKEN, startProxied, withKey } from './helpers.js';

const metrics = async (url: string) => (await within(call(url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN }), 10_000, 'metrics')).text;
/** The value of series `name{labels}` in `text`, undefined when absent. */
const value = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('per-tenant activity series', () => {
  test('each tenant has its own series; a forged x-queen-tenant changes nothing', async () => {
    const b = await startProxied();
    try {
      const started = Math.floor(Date.now() / 1000);
      const acme = await bootstrap(b.url, 'acme-act');
      const beta = await bootstrap(b.url, 'beta-act');
      const A = (await cp(b.url, 'GET', `/api/cp/clusters/${acme.slug}`)).body.broker_tenant_uuid as string;
      const B = (await cp(b.url, 'GET', `/api/cp/clusters/${beta.slug}`)).body.broker_tenant_uuid as string;
      assert.notEqual(A, B);
      const body = { items: [{ queue: 'act', payload: { hello: 'world' } }] };
      const p = await within(withKey(b.url, acme.key, 'POST', '/api/v1/push', body, { 'x-queen-tenant': B }), 10_000, 'push');
      assert.equal(p.status, 201);
      assert.equal((await within(withKey(b.url, beta.key, 'GET', '/api/v1/resources/queues'), 10_000, 'list')).status, 200);
      let text = await metrics(b.url);
      assert.equal(value(text, 'queen_proxy_tenant_requests_total', `tenant="${A}",class="produce"`), 1);
      assert.equal(value(text, 'queen_proxy_tenant_requests_total', `tenant="${B}",class="produce"`), undefined, 'the forged header moved nothing');
      assert.ok((value(text, 'queen_proxy_tenant_requests_total', `tenant="${B}",class="read"`) ?? 0) >= 1);
      assert.equal(value(text, 'queen_proxy_tenant_request_bytes_total', `tenant="${A}"`), Buffer.byteLength(JSON.stringify(body)));
      assert.equal(value(text, 'queen_proxy_tenant_request_bytes_total', `tenant="${B}"`), undefined);
      const last = value(text, 'queen_proxy_tenant_last_request_timestamp_seconds', `tenant="${A}"`)!;
      assert.ok(last >= started - 1 && last <= Math.floor(Date.now() / 1000) + 1, `last request ${last}`);
      // parked long-polls: up while parked, down once answered
      const parked = within(withKey(b.url, acme.key, 'GET', '/api/v1/pop/queue/empty-act?wait=true&timeout=20000'), 30_000, 'parked pop');
      await waitFor(async () => value(await metrics(b.url), 'queen_proxy_tenant_parked_pops', `tenant="${A}"`) === 1, { what: 'one parked pop of A', timeoutMs: 10_000 });
      text = await metrics(b.url);
      assert.equal(value(text, 'queen_proxy_tenant_parked_pops', `tenant="${B}"`), undefined);
      assert.equal((await within(withKey(b.url, acme.key, 'POST', '/api/v1/push', { items: [{ queue: 'empty-act', payload: 1 }] }), 10_000, 'push')).status, 201);
      assert.equal((await parked).status, 200);
      await waitFor(async () => value(await metrics(b.url), 'queen_proxy_tenant_parked_pops', `tenant="${A}"`) === 0, { what: 'no parked pop of A', timeoutMs: 10_000 });
      assert.equal(value(await metrics(b.url), 'queen_proxy_tenant_requests_total', `tenant="${A}",class="consume"`), 1);
    } finally {
      await b.stop();
    }
  });
});
