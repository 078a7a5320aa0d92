/** Locks and semaphores (docs/http-api.md#locks) over real HTTP: permits are KV rows in `queen-locks`. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
let n = 0;
const lockName = () => `lock-${Date.now().toString(36)}-${n++}`;
const locks = (ops: unknown) => call(b.url, 'POST', '/api/v1/locks', ops);
const one = async (op: unknown) => {
  const r = await locks({ operations: [op] });
  assert.equal(r.status, 200, r.text);
  return r.body.results[0];
};

before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

describe('locks', () => {
  test('acquire, contend, renew (new token), release', async () => {
    const name = lockName();
    const a = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w1' });
    assert.deepEqual([a.acquired, a.slot, a.owner], [true, 0, 'w1']);
    assert.equal(typeof a.token, 'number');
    assert.deepEqual(a.guard, { op: 'check', ns: 'queen-locks', key: `${name}#0`, expect: a.token, required: true });
    assert.deepEqual(a.holders.map((h: any) => [h.slot, h.owner]), [[0, 'w1']]);

    const again = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w1' });
    assert.deepEqual([again.acquired, again.already, again.token], [true, true, a.token], 'the holder re-acquiring gets its permit back');

    const c = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w2' });
    assert.deepEqual([c.acquired, c.reason, c.token], [false, 'held', null]);

    const kvRow = await call(b.url, 'POST', '/api/v1/kv', [{ op: 'get', ns: 'queen-locks', key: `${name}#0` }]);
    assert.deepEqual([kvRow.body.results[0].found, kvRow.body.results[0].version, kvRow.body.results[0].value.owner], [true, a.token, 'w1']);

    const r = await one({ op: 'renew', name, token: a.token, ttlSeconds: 60 });
    assert.equal(r.renewed, true);
    assert.ok(r.token > a.token, 'a renew hands out a new, larger token');
    const stale = await one({ op: 'renew', name, token: a.token, ttlSeconds: 60 });
    assert.deepEqual([stale.renewed, stale.reason], [false, 'lost']);

    // the old guard now fails a KV call; the new one passes
    const oldGuard = await call(b.url, 'POST', '/api/v1/kv', [a.guard, { op: 'put', ns: 'fenced', key: name, value: 1, forever: true }]);
    assert.deepEqual([oldGuard.body.ok, oldGuard.body.reason, oldGuard.body.kvReason], [false, 'kv_precondition', 'version']);
    const newGuard = await call(b.url, 'POST', '/api/v1/kv', [r.guard, { op: 'put', ns: 'fenced', key: name, value: 1, forever: true }]);
    assert.equal(newGuard.body.ok, true);

    assert.deepEqual([(await one({ op: 'release', name, token: a.token })).released, (await one({ op: 'release', name, token: a.token })).reason], [false, 'lost']);
    const rel = await one({ op: 'release', name, token: r.token });
    assert.deepEqual([rel.released, rel.holders], [true, []]);
    const g = await one({ op: 'get', name });
    assert.deepEqual([g.held, g.holders], [false, []]);
    const next = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w2' });
    assert.equal(next.acquired, true);
    assert.ok(next.token > r.token, 'tokens are fencing tokens across holders');
  });

  test('semaphore: limit slots, and a full semaphore refuses', async () => {
    const name = lockName();
    const got = [];
    for (let i = 0; i < 3; i++) got.push(await one({ op: 'acquire', name, ttlSeconds: 30, owner: `w${i}`, limit: 3 }));
    assert.deepEqual(got.map((x) => [x.acquired, x.slot]), [[true, 0], [true, 1], [true, 2]]);
    const full = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w9', limit: 3 });
    assert.deepEqual([full.acquired, full.reason, full.holders.length], [false, 'held', 3]);
    await one({ op: 'release', name, token: got[1].token, slot: 1 });
    const refill = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w9', limit: 3 });
    assert.deepEqual([refill.acquired, refill.slot], [true, 1]);
    const g = await one({ op: 'get', name });
    assert.deepEqual(g.holders.map((h: any) => [h.slot, h.owner]), [[0, 'w0'], [1, 'w9'], [2, 'w2']]);
    // a lock whose name continues with '#' is a different lock
    const other = await one({ op: 'acquire', name: `${name}#x`, ttlSeconds: 30 });
    assert.equal(other.acquired, true);
    assert.equal((await one({ op: 'get', name })).holders.length, 3);
  });

  test('an expired permit is free again', async () => {
    const name = lockName();
    const a = await one({ op: 'acquire', name, ttlSeconds: 1, owner: 'w1' });
    assert.equal(a.acquired, true);
    assert.equal((await one({ op: 'acquire', name, ttlSeconds: 1, owner: 'w2' })).acquired, false);
    const expiresAt = Date.parse(a.expiresAt);
    assert.ok(Number.isFinite(expiresAt), `acquire answered expiresAt ${a.expiresAt}`);
    await waitFor(() => Date.now() > expiresAt, { what: "the clock to pass w1's permit expiry" });
    assert.equal((await one({ op: 'get', name })).held, false);
    const late = await one({ op: 'renew', name, token: a.token, ttlSeconds: 30 });
    assert.deepEqual([late.renewed, late.reason], [false, 'lost']);
    const b2 = await one({ op: 'acquire', name, ttlSeconds: 30, owner: 'w2' });
    assert.equal(b2.acquired, true);
    assert.ok(b2.token > a.token);
  });

  test('bad input is 400 locks_bad_request', async () => {
    const bad: unknown[] = [
      {}, { operations: [] }, [{ op: 'grab', name: 'x' }], [{ op: 'acquire', name: '', ttlSeconds: 5 }],
      [{ op: 'acquire', name: 'x' }], [{ op: 'acquire', name: 'x', ttlSeconds: 0 }], [{ op: 'acquire', name: 'x', ttlSeconds: 5, limit: 0 }],
      [{ op: 'acquire', name: 'x', ttlSeconds: 5, limit: 1025 }], [{ op: 'renew', name: 'x', ttlSeconds: 5 }],
      [{ op: 'release', name: 'x', token: 'abc' }], [{ op: 'acquire', name: 'x', ttlSeconds: 5, owner: 7 }],
    ];
    for (const body of bad) {
      const r = await locks(body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.code, 'locks_bad_request', JSON.stringify(body));
    }
  });
});

describe('locks under contention', () => {
  test('24 workers taking and giving back one lock: every call gets a definite answer and the lock is never held twice', async () => {
    const name = lockName();
    let holding = 0;
    let most = 0;
    let turns = 0;
    const statuses = new Map<number, number>();
    await Promise.all(Array.from({ length: 24 }, async (_, w) => {
      for (let tries = 0; tries < 2000; tries++) { // until this worker has held it once
        const a = await locks({ operations: [{ op: 'acquire', name, ttlSeconds: 30, owner: `w${w}` }] });
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        if (a.status !== 200 || !a.body.results[0].acquired) continue;
        holding++;
        most = Math.max(most, holding);
        turns++;
        const seen = await locks({ operations: [{ op: 'get', name }] }); // hold it across a round trip
        assert.deepEqual(seen.body.results[0].holders.map((h: { owner: string }) => h.owner), [`w${w}`]);
        holding--; // before the release is sent: nobody else may be granted the lock until it commits
        const r = await locks({ operations: [{ op: 'release', name, token: a.body.results[0].token }] });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        assert.equal(r.body.results[0].released, true, r.text);
        return;
      }
    }));
    assert.deepEqual([...statuses.keys()], [200], `every call answered 200: ${JSON.stringify([...statuses])}`);
    assert.equal(most, 1);
    assert.equal(turns, 24, 'every worker held the lock once');
  });
});
