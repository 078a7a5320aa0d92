/**
 * The route schemas are the contract: every route has one (a route without one is reported and
 * the broker refuses to boot), `/openapi.json` is a valid OpenAPI 3 document generated from them,
 * docs/openapi.json is that document (regenerate with `npm run openapi`), and the human page is
 * self-contained and public.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import Fastify from 'fastify';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { OPENAPI_FILE, render } from '../../scripts/openapi.js';
import { attachRouteSchemas, ROUTE_SCHEMAS } from '../../src/http/schemas/index.js';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';

let b: BrokerHandle;
let doc: any;
before(async () => {
  b = await startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: 'openapi-test-secret-0123456789abcdef' } });
  const r = await call(b.url, 'GET', '/openapi.json');
  assert.equal(r.status, 200, `public without a token: ${r.text}`);
  doc = r.body;
});
after(async () => { await b.stop(); });

describe('every route has a schema', () => {
  test('a route missing from the table is reported; a tabled one is not', async () => {
    const app = Fastify();
    const coverage = attachRouteSchemas(app, { 'GET /known': { response: { 200: { type: 'object' } } } });
    app.get('/known', async () => ({}));
    app.get('/unknown', async () => ({}));
    app.post('/own', { schema: { body: { type: 'object' } } }, async () => ({}));
    await app.ready();
    assert.deepEqual(coverage.missing().filter((r) => !r.startsWith('HEAD')), ['GET /unknown']);
    await app.close();
  });

  test('every operation of the document has parameters for its path and a documented answer', () => {
    const ops = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => [m, p, op] as const));
    assert.ok(ops.length >= 70, `${ops.length} operations`);
    for (const [m, p, op] of ops) {
      const names = [...p.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]);
      const declared = (op.parameters ?? []).filter((x: any) => x.in === 'path').map((x: any) => x.name);
      assert.deepEqual(declared.sort(), names.sort(), `${m} ${p}: path parameters`);
      const ok = Object.keys(op.responses).filter((s) => /^2/.test(s));
      assert.ok(ok.length > 0 && ok.every((s) => op.responses[s].description !== 'Default Response'), `${m} ${p}: a documented 2xx answer`);
      assert.ok(op.summary, `${m} ${p}: summary`);
    }
    const tabled = Object.entries(ROUTE_SCHEMAS).filter(([, s]) => !s.hide).length;
    assert.equal(ops.length, tabled, 'every tabled route is in the document, and nothing else');
  });
});

describe('the OpenAPI document', () => {
  test('validates as OpenAPI 3', async () => {
    assert.match(doc.openapi, /^3\./);
    await SwaggerParser.validate(structuredClone(doc));
  });

  test('docs/openapi.json is the generated document (run `npm run openapi` after changing a schema)', () => {
    const committed = fs.readFileSync(OPENAPI_FILE, 'utf8');
    assert.equal(committed, render(doc), 'docs/openapi.json drifted from the route schemas: run `npm run openapi`');
  });

  test('the page is public, self-contained (no external asset) and reads the document', async () => {
    const r = await call(b.url, 'GET', '/openapi');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/html/);
    assert.match(r.text, /openapi\.json/);
    assert.doesNotMatch(r.text, /(src|href)=["']?(https?:)?\/\//, 'no CDN or external asset');
  });
});
