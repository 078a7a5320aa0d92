/**
 * The proxy's state on PostgreSQL (docs/proxy.md#state-on-postgresql): two broker processes with
 * the embedded proxy on one database share tenants and keys. A key issued through node A's control
 * plane works on node B; revoked on A, it is refused on B within the stated bound (the version poll,
 * 1 s, plus one reload); a tenant bootstrapped on B is known to A; S3 settings and a cluster status
 * set on one node are seen on the other; no `proxy.db` is written in either data directory; the
 * state survives both nodes restarting.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { freshDatabase } from '../storage/postgres-backend.js';
import { bootstrap, cp, CP_TOKEN, issueKey, withKey, type Tenant } from './helpers.js';

/** The bound the docs state for a change made on one node to hold on another (poll 1 s + reload), with room for a loaded machine. */
const BOUND_MS = 1000 + 4000;

describe('proxy state shared through PostgreSQL by two nodes', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let a: BrokerHandle;
  let b: BrokerHandle;
  let t: Tenant;
  const encKey = randomBytes(32).toString('hex');
  const env = (id: string): Record<string, string> => ({
    QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, QUEEN_SERVER_ID: id, QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_CP_TOKEN: CP_TOKEN,
    QUEEN_EDGE_RATE: '100000', QUEEN_EDGE_BURST: '100000', QUEEN_ENCRYPTION_KEY: encKey,
  });

  before(async () => {
    db = await freshDatabase();
    a = await startBroker({ env: env('proxy-a') });
    b = await startBroker({ env: env('proxy-b') });
    t = await bootstrap(a.url, uniqueName('shared').toLowerCase());
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await db?.drop();
  });

  test('a key issued on node A works on node B; revoked on A, B refuses it within the bound', async () => {
    const { key, id } = await issueKey(a.url, t.clusterId, ['produce', 'consume']);
    const queue = uniqueName('q');
    const pushed = await waitFor(async () => {
      const r = await withKey(b.url, key, 'POST', '/api/v1/push', { items: [{ queue, payload: { n: 1 } }] });
      return r.status === 201 ? r : undefined;
    }, { what: 'the key issued on A to work on B', timeoutMs: BOUND_MS });
    assert.equal(pushed.status, 201);
    const popped = await withKey(a.url, key, 'GET', `/api/v1/pop/queue/${queue}?autoAck=true`);
    assert.equal(popped.status, 200, 'one database: the message pushed through B pops through A');
    assert.deepEqual(popped.body.messages[0].data, { n: 1 });

    const revoked = await cp(a.url, 'DELETE', `/api/cp/keys/${id}`);
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal((await withKey(a.url, key, 'GET', `/api/v1/pop/queue/${queue}`)).status, 401, 'at once on the node that revoked it');
    const refused = await waitFor(async () => {
      const r = await withKey(b.url, key, 'GET', `/api/v1/pop/queue/${queue}`);
      return r.status === 401 ? r : undefined;
    }, { what: 'node B to refuse the key revoked on A', timeoutMs: BOUND_MS });
    assert.equal(refused.body.code, 'unauthorized');
    // and it stays refused
    assert.equal((await withKey(b.url, key, 'POST', '/api/v1/push', { items: [{ queue, payload: { n: 2 } }] })).status, 401);
  });

  test('a tenant bootstrapped on B is known on A; its S3 settings and a cluster status set on A are seen on B', async () => {
    const other = await bootstrap(b.url, uniqueName('fromb').toLowerCase());
    await waitFor(async () => (await cp(a.url, 'GET', `/api/cp/clusters/${other.slug}`)).status === 200, { what: 'A to know the cluster made on B', timeoutMs: BOUND_MS });
    const again = await cp(a.url, 'POST', '/api/cp/bootstrap', { tenant: other.slug, email: `admin@${other.slug}.test` });
    assert.equal(again.status, 200);
    assert.equal(again.body.api_key, null, 'idempotent across nodes: the re-run on A issues no second key');

    const put = await cp(a.url, 'PUT', `/api/cp/clusters/${other.slug}/s3`, { bucket: 'shared-bucket', access_key_id: 'AKIASHARED', secret_access_key: 'sealed-on-a' });
    assert.equal(put.status, 200, put.text);
    const seen = await waitFor(async () => {
      const r = await cp(b.url, 'GET', `/api/cp/clusters/${other.slug}/s3`);
      return r.body?.configured === true ? r : undefined;
    }, { what: 'B to see the S3 settings stored on A', timeoutMs: BOUND_MS });
    assert.equal(seen.body.bucket, 'shared-bucket');
    assert.equal(seen.body.secret_access_key_set, true);
    assert.ok(!seen.text.includes('sealed-on-a'));
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const row = (await c.query('SELECT settings, sealed_secret FROM queen.proxy_s3_settings WHERE cluster_id = $1', [other.clusterId])).rows[0] as { settings: string; sealed_secret: Buffer };
      assert.equal(row.sealed_secret[0], 1, 'stored as an envelope (version 1)');
      assert.ok(!row.sealed_secret.includes('sealed-on-a') && !row.settings.includes('sealed-on-a'), 'no clear secret in the database');
    } finally {
      await c.end();
    }

    assert.equal((await cp(a.url, 'PUT', `/api/cp/clusters/${other.clusterId}/status`, { status: 'suspended' })).status, 200);
    await waitFor(async () => (await withKey(b.url, other.key, 'GET', '/api/v1/pop/queue/x')).status === 403,
      { what: 'B to refuse the suspended cluster', timeoutMs: BOUND_MS });
  });

  test('a write PostgreSQL refuses is answered 503 unavailable, not 2xx, after the node loaded the row that won', async () => {
    // A tenant written straight into the database, behind node A's back: A's copy does not hold it
    // until its next poll, so A's own insert of the same slug reaches PostgreSQL and is refused.
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      let refused: { slug: string; id: string } | undefined;
      for (let i = 0; i < 5 && !refused; i++) {
        const slug = uniqueName('race').toLowerCase();
        const id = `00000000-0000-4000-8000-${randomBytes(6).toString('hex')}`;
        await c.query('INSERT INTO queen.proxy_tenants VALUES ($1, $2, $3, $4, $5)', [id, slug, slug, 'active', Date.now()]);
        const r = await cp(a.url, 'POST', '/api/cp/tenants', { slug });
        if (r.status === 503) {
          assert.equal(r.body.code, 'unavailable');
          refused = { slug, id };
        } else {
          assert.equal(r.status, 200, `the poll had loaded it first: an existing tenant (${r.text})`);
        }
      }
      assert.ok(refused, 'one of five inserts raced the poll');
      // The 503 left only after A loaded the database's rows: the very next call sees the one that won.
      const after = await cp(a.url, 'POST', '/api/cp/tenants', { slug: refused.slug });
      assert.equal(after.status, 200, after.text);
      assert.equal(after.body.id, refused.id, 'the row in the database, not the refused one');
      assert.equal(after.body.created, false);
    } finally {
      await c.end();
    }
  });

  test('no proxy.db in either data directory; the state survives both nodes restarting', async () => {
    for (const n of [a, b]) assert.ok(!fs.existsSync(path.join(n.dataDir, 'proxy.db')), `${n.dataDir} holds no proxy.db`);
    const { key } = await issueKey(b.url, t.clusterId, ['read']);
    await a.stop();
    await b.stop();
    a = await startBroker({ env: env('proxy-a'), dataDir: a.dataDir });
    b = await startBroker({ env: env('proxy-b'), dataDir: b.dataDir });
    for (const n of [a, b]) {
      assert.equal((await withKey(n.url, key, 'GET', '/api/v1/resources/queues')).status, 200, 'the key issued before the restart');
      assert.equal((await cp(n.url, 'GET', `/api/cp/clusters/${t.slug}`)).status, 200);
    }
  });
});

describe('two nodes of one database booting together with the same QUEEN_PROXY_BOOTSTRAP_TENANT', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const nodes: BrokerHandle[] = [];
  before(async () => { db = await freshDatabase(); });
  after(async () => {
    for (const n of nodes) await n.stop();
    await db?.drop();
  });

  test('both boot, name the same tenant and cluster, and accept the bootstrap key', async () => {
    const apiKey = `qk_test_${randomBytes(32).toString('base64url')}`;
    const env = (id: string): Record<string, string> => ({
      QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, QUEEN_SERVER_ID: id, QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_CP_TOKEN: CP_TOKEN,
      QUEEN_PROXY_BOOTSTRAP_TENANT: 'together', QUEEN_PROXY_BOOTSTRAP_API_KEY: apiKey,
    });
    nodes.push(...await Promise.all([startBroker({ env: env('boot-a') }), startBroker({ env: env('boot-b') })]));
    const ready = nodes.map((n) => {
      const line = n.output().split('\n').find((l) => l.includes('proxy bootstrap tenant ready'));
      assert.ok(line, `bootstrap line in:\n${n.output()}`);
      return JSON.parse(line) as { tenantId: string; clusterId: string };
    });
    assert.equal(ready[0]!.tenantId, ready[1]!.tenantId, 'one tenant, whichever node created it');
    assert.equal(ready[0]!.clusterId, ready[1]!.clusterId);
    for (const n of nodes) {
      assert.equal((await withKey(n.url, apiKey, 'GET', '/api/v1/resources/queues')).status, 200);
      const clusters = (await cp(n.url, 'GET', '/api/cp/clusters')).body.clusters as { slug: string }[];
      assert.deepEqual(clusters.map((c) => c.slug), ['together']);
    }
  });
});
