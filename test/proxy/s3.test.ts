/**
 * S3 settings through the control plane (docs/proxy.md#s3-settings): `PUT|GET|DELETE
 * /api/cp/clusters/:slug/s3` over a real proxy. The secret is stored sealed with
 * QUEEN_ENCRYPTION_KEY (read back from proxy.db in the data directory: no clear text there, an
 * envelope that names the key), never answered and never logged; without a key a secret is
 * refused `409 encryption_required`; validation `400 invalid`, `404 cluster_unknown`, the token
 * checked before the body, every call idempotent, the settings kept across a restart.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { after, before, describe, test } from 'node:test';
import { ON_POSTGRES, sqliteOnly, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { bootstrap, cp, CP_TOKEN, startProxied, type Tenant } from './helpers.js';

const SECRET = `s3-secret-${randomBytes(12).toString('hex')}`;
const SETTINGS = { bucket: 'acme-archive', region: 'eu-west-1', endpoint: 'https://s3.example.test', prefix: 'queen/', access_key_id: 'AKIAEXAMPLE123', force_path_style: true };

/** The stored row of a cluster in `<dataDir>/proxy.db` (read-only). */
function storedRow(dataDir: string, clusterId: string): { settings: string; sealed_secret: Buffer | null } | undefined {
  const db = new Database(path.join(dataDir, 'proxy.db'), { readonly: true });
  try {
    return db.prepare('SELECT settings, sealed_secret FROM s3_settings WHERE cluster_id = ?').get(clusterId) as { settings: string; sealed_secret: Buffer | null } | undefined;
  } finally {
    db.close();
  }
}

/** Every file of the data directory, concatenated (what a stolen volume shows). */
function dataDirBytes(dir: string): Buffer {
  const parts: Buffer[] = [];
  for (const f of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (f.isFile()) parts.push(fs.readFileSync(path.join(f.parentPath, f.name)));
  }
  return Buffer.concat(parts);
}

describe('S3 settings of a cluster (control plane)', () => {
  let b: BrokerHandle;
  let t: Tenant;
  const key = randomBytes(32).toString('hex');

  before(async () => {
    b = await startProxied({ QUEEN_ENCRYPTION_KEY: key });
    t = await bootstrap(b.url, uniqueName('s3').toLowerCase());
  });
  after(async () => { await b?.stop(); });

  test('PUT stores, GET shows the fields and secret_access_key_set but never the secret; a repeat is idempotent', async () => {
    const none = await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`);
    assert.equal(none.status, 200);
    assert.deepEqual(none.body, { cluster_id: t.clusterId, slug: t.slug, configured: false, secret_access_key_set: false });

    const put = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, { ...SETTINGS, secret_access_key: SECRET });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.configured, true);
    assert.equal(put.body.secret_access_key_set, true);
    assert.ok(!put.text.includes(SECRET), 'the answer never holds the secret');
    const again = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, { ...SETTINGS, secret_access_key: SECRET });
    assert.equal(again.status, 200);

    const got = await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`);
    assert.equal(got.status, 200);
    assert.ok(!got.text.includes(SECRET));
    const { updated_at: _u, ...shown } = got.body;
    assert.deepEqual(shown, { cluster_id: t.clusterId, slug: t.slug, configured: true, ...SETTINGS, secret_access_key_set: true });
    assert.equal(got.body.secret_access_key, undefined);
    // by cluster id too
    assert.equal((await cp(b.url, 'GET', `/api/cp/clusters/${t.clusterId}/s3`)).body.bucket, 'acme-archive');
  });

  test('the secret is sealed in proxy.db under the configured key, and appears in no file of the data directory nor in the log', sqliteOnly('reads proxy.db; the PostgreSQL row is checked in pg-shared-state.test.ts'), async () => {
    const row = storedRow(b.dataDir, t.clusterId);
    assert.ok(row?.sealed_secret, 'a sealed secret is stored');
    assert.equal(row.sealed_secret[0], 1, 'envelope version 1');
    assert.equal(row.sealed_secret.length, 1 + 4 + 12 + Buffer.byteLength(JSON.stringify(SECRET)) + 16, 'header, nonce, ciphertext, tag');
    assert.equal(JSON.parse(row.settings).secret_access_key, undefined);
    assert.ok(!dataDirBytes(b.dataDir).includes(SECRET), 'no clear secret in any file of the data directory (WAL included)');
    assert.ok(!b.output().includes(SECRET), 'no secret in the log');
  });

  test('a PUT without secret_access_key keeps the stored secret; null removes it', sqliteOnly('reads proxy.db'), async () => {
    const keep = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, { ...SETTINGS, prefix: 'other/' });
    assert.equal(keep.status, 200);
    assert.equal(keep.body.prefix, 'other/');
    assert.equal(keep.body.secret_access_key_set, true);
    const before = storedRow(b.dataDir, t.clusterId)!.sealed_secret!;
    await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, SETTINGS);
    assert.deepEqual(storedRow(b.dataDir, t.clusterId)!.sealed_secret, before, 'the same sealed bytes are kept');
    const cleared = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, { ...SETTINGS, secret_access_key: null });
    assert.equal(cleared.body.secret_access_key_set, false);
    assert.equal(storedRow(b.dataDir, t.clusterId)!.sealed_secret, null);
    await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, { ...SETTINGS, secret_access_key: SECRET });
  });

  test('validation: 400 invalid with the field named; nothing stored changes', async () => {
    const stored = () => (ON_POSTGRES ? undefined : storedRow(b.dataDir, t.clusterId));
    const cases: [unknown, RegExp][] = [
      [{}, /bucket is required/],
      [{ ...SETTINGS, bucket: 'Bad_Bucket' }, /bucket must be/],
      [{ ...SETTINGS, bucket: 'ab' }, /bucket must be/],
      [{ ...SETTINGS, region: 'EU WEST' }, /region must be/],
      [{ ...SETTINGS, endpoint: 'ftp://x.test' }, /endpoint must be an http/],
      [{ ...SETTINGS, endpoint: 'https://user:pw@x.test' }, /without credentials/],
      [{ ...SETTINGS, endpoint: 'not a url' }, /endpoint must be/],
      [{ ...SETTINGS, force_path_style: 'yes' }, /force_path_style must be a boolean/],
      [{ ...SETTINGS, prefix: 'a\u0001b' }, /prefix must not hold control characters/],
      [{ ...SETTINGS, secret_access_key: 42 }, /secret_access_key must be/],
      [{ ...SETTINGS, secret_access_key: 'has space' }, /secret_access_key must be printable/],
      [{ ...SETTINGS, access_key_id: null, secret_access_key: 'abc' }, /secret_access_key needs access_key_id/],
      [{ ...SETTINGS, secretAccessKey: 'abc' }, /unknown field secretAccessKey/],
      [[SETTINGS], /body must be a JSON object|must be object/],
    ];
    const before = stored();
    const shown = (await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`)).body;
    for (const [body, message] of cases) {
      const r = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${r.text}`);
      assert.equal(r.body.code, 'invalid');
      assert.match(r.body.error, message);
    }
    const bad = await fetch(`${b.url}/api/cp/clusters/${t.slug}/s3`, { method: 'PUT', headers: { 'x-queen-cp-token': CP_TOKEN, 'content-type': 'application/json' }, body: '{"bucket":' });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { code: string }).code, 'invalid');
    assert.deepEqual(stored(), before, 'refused PUTs change nothing stored');
    assert.deepEqual((await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`)).body, shown, 'nor what is shown');
  });

  test('an unknown cluster is 404 cluster_unknown on PUT, GET and DELETE', async () => {
    for (const method of ['PUT', 'GET', 'DELETE']) {
      const r = await cp(b.url, method, '/api/cp/clusters/no-such-cluster/s3', method === 'PUT' ? SETTINGS : undefined);
      assert.equal(r.status, 404, `${method}: ${r.text}`);
      assert.equal(r.body.code, 'cluster_unknown');
    }
  });

  test('the control-plane token is checked from the head, before the body: 401 without it (the 404 without QUEEN_PROXY_CP_TOKEN: proxy.test.ts)', async () => {
    for (const method of ['PUT', 'GET', 'DELETE']) {
      const r = await cp(b.url, method, `/api/cp/clusters/${t.slug}/s3`, method === 'PUT' ? SETTINGS : undefined, 'wrong-token');
      assert.equal(r.status, 401);
      assert.equal(r.body.code, 'unauthorized');
    }
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(b.port, '127.0.0.1');
      let text = '';
      s.on('data', (d) => (text += d.toString()));
      s.on('close', () => resolve(text));
      s.on('error', () => undefined);
      s.write(`PUT /api/cp/clusters/${t.slug}/s3 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n`);
    });
    assert.match(answer, /^HTTP\/1\.1 401 /, 'refused from the head; the 50 MB body is never awaited');
    assert.equal((await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`)).body.secret_access_key_set, true, 'nothing changed');
  });

  test('the settings and the sealed secret survive a restart; DELETE removes them and a repeat answers deleted:false', async () => {
    await b.stop();
    b = await startProxied({ QUEEN_ENCRYPTION_KEY: key }, b.dataDir);
    const got = await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`);
    assert.equal(got.body.bucket, SETTINGS.bucket);
    assert.equal(got.body.secret_access_key_set, true);
    const del = await cp(b.url, 'DELETE', `/api/cp/clusters/${t.slug}/s3`);
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, { cluster_id: t.clusterId, slug: t.slug, deleted: true });
    const again = await cp(b.url, 'DELETE', `/api/cp/clusters/${t.slug}/s3`);
    assert.deepEqual(again.body, { cluster_id: t.clusterId, slug: t.slug, deleted: false });
    assert.equal((await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`)).body.configured, false);
    if (!ON_POSTGRES) assert.equal(storedRow(b.dataDir, t.clusterId), undefined);
  });
});

describe('S3 settings without QUEEN_ENCRYPTION_KEY', () => {
  let b: BrokerHandle;
  let t: Tenant;
  before(async () => {
    b = await startProxied();
    t = await bootstrap(b.url, uniqueName('s3nokey').toLowerCase());
  });
  after(async () => { await b?.stop(); });

  test('a secret is refused 409 encryption_required and nothing is stored; settings without a secret are stored', async () => {
    const r = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, { ...SETTINGS, secret_access_key: SECRET });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.body.code, 'encryption_required');
    assert.match(r.body.error, /QUEEN_ENCRYPTION_KEY/);
    assert.equal((await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/s3`)).body.configured, false);
    assert.ok(!dataDirBytes(b.dataDir).includes(SECRET));
    const plain = await cp(b.url, 'PUT', `/api/cp/clusters/${t.slug}/s3`, SETTINGS);
    assert.equal(plain.status, 200);
    assert.equal(plain.body.secret_access_key_set, false);
  });
});
