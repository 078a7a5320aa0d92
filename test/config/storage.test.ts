import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { ConfigError } from '../../src/config/env.js';
import { loadStorageConfig } from '../../src/config/storage.js';

function fails(env: Record<string, string>, re: RegExp, secret?: string): void {
  assert.throws(() => loadStorageConfig(env), (e: unknown) => {
    assert.ok(e instanceof ConfigError, 'ConfigError');
    assert.match(e.message, re);
    if (secret) assert.ok(!e.message.includes(secret), 'the secret is never echoed');
    return true;
  });
}

test('QUEEN_STORAGE: sqlite by default; postgres with Queen\'s PG_* defaults', () => {
  assert.deepEqual(loadStorageConfig({}), { kind: 'sqlite' });
  assert.deepEqual(loadStorageConfig({ QUEEN_STORAGE: 'postgres' }),
    { kind: 'postgres', pg: { host: 'localhost', port: 5432, user: 'postgres', database: 'postgres', ssl: false, max: 20, recheckMs: 1000, notifyMode: 'after', idleInTransactionTimeoutMs: 10_000 } });
  fails({ QUEEN_STORAGE: 'mysql' }, /QUEEN_STORAGE="mysql" is not one of sqlite, postgres/);
  fails({ PG_PORT: '99999' }, /PG_PORT=99999 is out of range/); // validated with either backend
});

test('PG_* variables, the PG_DB alias, TLS and the pool size are read and validated', () => {
  const c = loadStorageConfig({ QUEEN_STORAGE: 'PostgreSQL', PG_HOST: 'db', PG_PORT: '6543', PG_USER: 'u', PG_PASSWORD: 'hunter2',
    PG_DB: 'queen', PG_USE_SSL: 'true', PG_SSL_REJECT_UNAUTHORIZED: 'false', DB_POOL_SIZE: '5' });
  assert.equal(c.kind, 'postgres');
  if (c.kind !== 'postgres') return;
  assert.deepEqual({ ...c.pg }, { host: 'db', port: 6543, user: 'u', database: 'queen', ssl: { rejectUnauthorized: false }, max: 5, recheckMs: 1000, notifyMode: 'after', idleInTransactionTimeoutMs: 10_000 });
  assert.equal(c.pg.password, 'hunter2');
  assert.ok(!inspect(c, { depth: 5 }).includes('hunter2') && !JSON.stringify(c).includes('hunter2'), 'the password does not print');
  assert.equal(loadStorageConfig({ QUEEN_STORAGE: 'postgres', PG_DATABASE: 'a', PG_DB: 'b' }).kind === 'postgres' &&
    (loadStorageConfig({ QUEEN_STORAGE: 'postgres', PG_DATABASE: 'a', PG_DB: 'b' }) as { pg: { database: string } }).pg.database, 'a', 'PG_DATABASE wins over its alias');
  fails({ QUEEN_STORAGE: 'postgres', PG_PORT: 'x' }, /PG_PORT="x" is not an integer/);
  fails({ QUEEN_STORAGE: 'postgres', DB_POOL_SIZE: '0' }, /DB_POOL_SIZE=0 is out of range/);
  fails({ QUEEN_STORAGE: 'postgres', PG_USE_SSL: 'maybe' }, /PG_USE_SSL="maybe" is not a boolean/);
});

test('DATABASE_URL is taken as given, checked for its scheme, and never printed', () => {
  const url = 'postgres://u:s3cret@db:5432/queen';
  const c = loadStorageConfig({ QUEEN_STORAGE: 'postgres', DATABASE_URL: url });
  assert.ok(c.kind === 'postgres' && c.pg.connectionString === url);
  assert.ok(!inspect(c, { depth: 5 }).includes('s3cret') && !JSON.stringify(c).includes('s3cret'));
  fails({ QUEEN_STORAGE: 'postgres', DATABASE_URL: 'mysql://u:s3cret@db/x' }, /DATABASE_URL has the scheme "mysql:"/, 's3cret');
  fails({ QUEEN_STORAGE: 'postgres', DATABASE_URL: 'not a url s3cret' }, /DATABASE_URL is not a URL/, 's3cret');
  const l = loadStorageConfig({ QUEEN_STORAGE: 'postgres', QUEEN_PG_LISTEN_URL: 'postgresql://u:s3cret@db-direct/queen' });
  assert.ok(l.kind === 'postgres' && l.pg.listenUrl === 'postgresql://u:s3cret@db-direct/queen' && !JSON.stringify(l).includes('s3cret'));
  fails({ QUEEN_PG_LISTEN_URL: 'http://x' }, /QUEEN_PG_LISTEN_URL has the scheme "http:"/);
});
