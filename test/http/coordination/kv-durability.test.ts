/** KV and lock state answered 200 survives SIGKILL; versions keep growing after a restart. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startBroker } from '../../helpers/broker.js';
import { call } from '../../helpers/http.js';

describe('KV durability', () => {
  test('rows, versions, expiry and lock permits survive SIGKILL right after the answer', async () => {
    const b = await startBroker();
    const w = await call(b.url, 'POST', '/api/v1/kv', [
      { op: 'put', ns: 'app', key: 'cfg/a', value: { on: true }, forever: true },
      { op: 'put', ns: 'app', key: 'cfg/a', value: { on: false }, forever: true },
      { op: 'put', ns: 'app', key: 'gone', value: 1, forever: true },
      { op: 'delete', ns: 'app', key: 'gone' },
      { op: 'incr', ns: 'app', key: 'ctr', delta: 41, ttlSeconds: 3600 },
    ]);
    assert.equal(w.body.ok, true);
    const lock = await call(b.url, 'POST', '/api/v1/locks', [{ op: 'acquire', name: 'leader', ttlSeconds: 60, owner: 'n1' }]);
    assert.equal(lock.body.results[0].acquired, true);
    await b.kill();
    const b2 = await startBroker({ dataDir: b.dataDir });
    try {
      const r = await call(b2.url, 'POST', '/api/v1/kv', [
        { op: 'get', ns: 'app', key: 'cfg/a' },
        { op: 'incr', ns: 'app', key: 'ctr', ttlSeconds: 3600 },
        { op: 'putIfAbsent', ns: 'app', key: 'gone', value: 2, forever: true },
      ]);
      const x = r.body.results;
      assert.deepEqual([x[0].value, x[0].version], [{ on: false }, 2]);
      assert.equal(x[1].value, 42);
      assert.ok(x[2].version > w.body.results[2].version, 'the version floor survived: a deleted key does not reuse its version');
      const held = await call(b2.url, 'POST', '/api/v1/locks', [{ op: 'acquire', name: 'leader', ttlSeconds: 60, owner: 'n2' }, { op: 'get', name: 'leader' }]);
      assert.deepEqual([held.body.results[0].acquired, held.body.results[1].holders[0].owner], [false, 'n1']);
    } finally {
      await b2.stop();
    }
  });
});
