/**
 * The proxy sub-store contract (src/storage/proxy.ts) on both backends: one script of operations
 * runs against `SqliteProxyStore` (a fresh proxy.db) and `PgProxyStore` (a fresh database, its
 * in-memory copy), and every answer is compared: lookups, orderings, unique-key conflicts, the
 * tenant delete cascade, revocation once, the deny-list prune, the operations log. The PostgreSQL
 * store is then reopened (a second node's view, loaded from the tables) and must answer the same.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { PgBackend } from '../../src/storage/postgres/backend.js';
import { PgProxyStore } from '../../src/storage/postgres/proxy.js';
import { ProxyConflict, type ProxyStore } from '../../src/storage/proxy.js';
import { SqliteProxyStore } from '../../src/storage/sqlite/proxy.js';
import { freshDatabase } from './postgres-backend.js';

const silent = { warn: () => undefined, error: () => undefined };
const T1 = { id: 't1', slug: 'acme', name: 'Acme', status: 'active' as const, createdAt: 1 };
const T2 = { id: 't2', slug: 'beta', name: 'Beta', status: 'active' as const, createdAt: 2 };
const cluster = (id: string, slug: string, tenantId: string, plan = 'dev') => ({
  id, slug, tenantId, plan, cell: 'local', status: 'active' as const, overrides: '{}', brokerTenantUuid: `uuid-${id}`, createdAt: 3,
});
const user = (id: string, email: string, tenantId: string) => ({ id, email, tenantId, passwordHash: null, isOperator: false, createdAt: 4 });
const key = (id: string, clusterId: string, hash: string, createdAt: number) => ({
  id, clusterId, name: `k-${id}`, keyHash: hash.repeat(64).slice(0, 64), scopes: ['produce', 'read'], revokedAt: null, lastUsedAt: null, createdAt,
});

/** Runs the script on `s`; returns everything it observed. */
async function script(s: ProxyStore): Promise<unknown[]> {
  const seen: unknown[] = [];
  const conflict = (fn: () => void) => {
    try {
      fn();
      seen.push('no conflict');
    } catch (e) {
      seen.push(e instanceof ProxyConflict ? 'conflict' : `other: ${(e as Error).message}`);
    }
  };
  s.insertTenant(T1);
  s.insertTenant(T2);
  conflict(() => s.insertTenant({ ...T1, id: 't3' }));
  s.insertCluster(cluster('c2', 'zeta', 't1', 'free'));
  s.insertCluster(cluster('c1', 'alpha', 't1'));
  s.insertCluster(cluster('c3', 'mid', 't2'));
  conflict(() => s.insertCluster(cluster('c9', 'alpha', 't2')));
  s.insertUser(user('u1', 'bob@acme.test', 't1'));
  s.insertUser(user('u2', 'al@acme.test', 't1'));
  s.insertUser(user('u3', 'cy@beta.test', 't2'));
  conflict(() => s.insertUser(user('u9', 'bob@acme.test', 't1')));
  s.setClusterRole('u1', 'c1', 'viewer');
  s.setClusterRole('u1', 'c1', 'admin');
  s.setClusterRole('u2', 'c1', 'producer');
  s.setClusterRole('u1', 'c2', 'consumer');
  s.setClusterRole('u3', 'c3', 'admin');
  s.insertKey(key('k2', 'c1', 'b', 20));
  s.insertKey(key('k1', 'c1', 'a', 10));
  s.insertKey(key('k3', 'c3', 'c', 30));
  conflict(() => s.insertKey(key('k9', 'c2', 'a', 40)));
  s.setClusterStatus('c2', 'push_blocked');
  s.setClusterOverrides('c2', '{"max_queues":3}');
  s.setTenantStatus('t2', 'grace');
  s.setUserPassword('u2', '$2a$10$hash');
  s.upsertPlan({ code: 'dev', limits: '{}', features: '{"kv":true}' });
  s.upsertPlan({ code: 'dev', limits: '{"max_queues":9}', features: '{}' });
  s.putS3Settings({ clusterId: 'c1', settings: '{"bucket":"b"}', sealedSecret: Buffer.from([1, 2, 3]), updatedAt: 5 });
  s.revokeToken('jti-old', 100);
  s.revokeToken('jti-new', 10_000);
  s.logOperation('one', '{}', 1);
  s.logOperation('two', '{"a":1}', 2);
  await s.settled?.();
  seen.push(s.revokeKey('k1', 50), s.revokeKey('k1', 60), s.revokeKey('nope', 70));
  s.touchKey('k2', 55);
  seen.push(s.deleteClusterRole('u2', 'c1'), s.deleteClusterRole('u2', 'c1'));
  seen.push(s.pruneRevokedTokens(1000));
  seen.push(s.isTokenRevoked('jti-old', 50), s.isTokenRevoked('jti-new', 50), s.isTokenRevoked('jti-new', 20_000));
  await s.settled?.();
  seen.push(...observe(s));
  s.deleteTenant('t2');
  seen.push(s.deleteUser('u2'), s.deleteUser('u2'), s.deleteS3Settings('c1'), s.deleteS3Settings('c1'));
  await s.settled?.();
  seen.push(...observe(s));
  return seen;
}

/** Every read of the contract over the script's ids. */
function observe(s: ProxyStore): unknown[] {
  return [
    s.tenantBySlug('acme'), s.tenantById('t2'), s.tenantBySlug('none'),
    s.clusters(), s.clusters('free'), s.clustersOfTenant('t1'), s.clusterBySlug('mid'), s.clusterById('c2'),
    s.userByEmail('bob@acme.test'), s.userById('u2'), s.userById('u3'),
    s.roleOf('u1', 'c1'), s.roleOf('u2', 'c1'), s.rolesOfUser('u1'), s.membersOfCluster('c1'), s.membersOfCluster('c3'),
    s.keyByHash('a'.repeat(64)), s.keyById('k2'), s.keysOfCluster('c1'), s.keysOfCluster('c3'),
    s.plan('dev'), s.plan('none'), s.s3Settings('c1'), s.operations(10),
  ];
}

const dirs: string[] = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

test('the PostgreSQL proxy store answers every call of the contract as the SQLite one, and a second node loads the same state', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-proxy-conf-'));
  dirs.push(dir);
  const sqlite = SqliteProxyStore.open(dir);
  const expected = await script(sqlite);
  sqlite.close();

  const db = await freshDatabase();
  const backend = await PgBackend.open({ pool: { connectionString: db.url, max: 4 }, listen: false });
  try {
    const pg = await PgProxyStore.open(backend.db, silent, 50);
    const got = await script(pg);
    assert.deepEqual(got, expected);
    const second = await PgProxyStore.open(backend.db, silent, 50);
    assert.deepEqual(observe(second), observe(pg), 'a node that loads the tables sees what the writer sees');
    pg.close();
    second.close();
  } finally {
    await backend.close();
    await db.drop();
  }
});
