/**
 * Route validators compile on their route's first request (src/http/schemas/validators.ts). So
 * that a schema Ajv refuses is still found before any request, the whole app is built here with
 * every validator compiled at boot; and a stand-in answers exactly as the compiled validator does.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/config/index.js';
import { buildApp } from '../../src/http/app.js';
import { attachRouteSchemas } from '../../src/http/schemas/index.js';
import { AJV_OPTIONS, RouteValidators, type CompileValidators } from '../../src/http/schemas/validators.js';
import { startTestServices } from '../helpers/services.js';

const apps: FastifyInstance[] = [];
after(async () => { await Promise.all(apps.map((a) => a.close())); });

test('every route of the broker app has validators that compile', async () => {
  const t = startTestServices();
  try {
    const app = await buildApp(loadConfig({ QUEEN_DATA_DIR: t.dataDir }), t.services, pino({ level: 'silent' }), { compileValidators: 'boot' });
    apps.push(app);
    await app.ready();
  } finally {
    await t.stop();
  }
});

/** An app with one tabled route `/r` (hand-validated body when `hand`), validators compiled `when`. */
async function small(when: CompileValidators, querystring: Record<string, unknown>, hand = false): Promise<FastifyInstance> {
  const validators = new RouteValidators(when);
  const app = Fastify({ ajv: AJV_OPTIONS, schemaController: { compilersFactory: { buildValidator: validators.factory() } } });
  apps.push(app);
  const body = hand ? { type: 'object', 'x-hand-validated': true } : { type: 'object', properties: { n: { type: 'integer' } } };
  attachRouteSchemas(app, { 'POST /r': { querystring, body, response: { 200: { type: 'object' } } } }, validators);
  app.post('/r', async (req) => ({ query: req.query, body: req.body }));
  return app;
}

const BAD = { type: 'object', properties: { n: { type: 'no-such-type' } } };
const GOOD = { type: 'object', properties: { limit: { type: 'string', pattern: '^[1-9][0-9]*$' } }, additionalProperties: false }; // query values are strings (no coercion)

for (const hand of [false, true]) {
  const kind = hand ? 'hand-validated body' : 'schema-validated body';
  test(`${kind}: a schema Ajv refuses stops the boot when compiled at boot, and answers 500 on first use otherwise`, async () => {
    await assert.rejects(async () => { await (await small("boot", BAD, hand)).ready(); }, /no-such-type|schema is invalid|unknown type/i);
    const lazy = await small('first-use', BAD, hand);
    await lazy.ready();
    assert.equal((await lazy.inject({ method: 'POST', url: '/r?n=1', payload: {} })).statusCode, 500);
  });

  test(`${kind}: compiled on first use, validators answer as when compiled at boot`, async () => {
    const [boot, lazy] = [await small('boot', GOOD, hand), await small('first-use', GOOD, hand)];
    await Promise.all([boot.ready(), lazy.ready()]);
    const requests = [
      { url: '/r?limit=0', payload: {} }, // outside the pattern
      { url: '/r?limit=5&x=1', payload: {} }, // unknown parameter
      { url: '/r?limit=5', payload: { n: 'seven' } }, // body: wrong type (ignored when hand-validated)
      { url: '/r?limit=5', payload: { n: 7 } },
      { url: '/r?limit=abc', payload: {} },
      { url: '/r', payload: [] }, // body: not an object
    ];
    for (const r of requests) {
      const [a, b] = [await boot.inject({ method: 'POST', ...r }), await lazy.inject({ method: 'POST', ...r })];
      assert.equal(b.statusCode, a.statusCode, `${r.url} ${JSON.stringify(r.payload)}: ${b.body}`);
      assert.equal(b.body, a.body, `${r.url} ${JSON.stringify(r.payload)}`);
    }
    // The stand-ins do validate: a request outside the schema is refused, one inside it passes.
    assert.equal((await lazy.inject({ method: 'POST', url: '/r?limit=0', payload: {} })).statusCode, 400);
    assert.equal((await lazy.inject({ method: 'POST', url: '/r?limit=5', payload: { n: 7 } })).statusCode, 200);
  });
}
