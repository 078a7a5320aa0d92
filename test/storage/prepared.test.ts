/**
 * LimitedSelect (src/storage/sqlite/prepared.ts): the limit written into the SQL text must give
 * exactly the rows a bound `LIMIT ?` gives, for every limit, on both of its paths (a statement per
 * literal limit up to MAX_LITERAL_LIMITS, then the shared bound one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { LimitedSelect, MAX_LITERAL_LIMITS } from '../../src/storage/sqlite/prepared.js';

function db() {
  const d = new Database(':memory:');
  d.exec('CREATE TABLE m (p INTEGER NOT NULL, o INTEGER NOT NULL, body TEXT, PRIMARY KEY (p, o))');
  const ins = d.prepare('INSERT INTO m VALUES (?, ?, ?)');
  d.transaction(() => { for (let p = 0; p < 3; p++) for (let o = 0; o < 50; o++) ins.run(p, o, `p${p}o${o}`); })();
  return d;
}

const SQL = 'SELECT p, o, body FROM m WHERE p = ? AND o >= ? ORDER BY o';

test('every limit answers the rows of LIMIT ?, on the literal and on the shared path', () => {
  const d = db();
  const bound = d.prepare(`${SQL} LIMIT ?`);
  const s = new LimitedSelect(d, SQL);
  const limits = [0, 1, 2, 7, 49, 50, 51, 1000, ...Array.from({ length: MAX_LITERAL_LIMITS + 5 }, (_, i) => 100 + i), 1, 7, -1];
  for (const limit of limits) {
    for (const [p, from] of [[0, 0], [1, 10], [2, 49], [2, 50], [9, 0]] as const) {
      assert.deepEqual(s.all(limit, p, from), bound.all(p, from, limit), `limit ${limit}, partition ${p} from ${from}`);
    }
  }
  assert.equal(s.literalCount, MAX_LITERAL_LIMITS, 'distinct literal limits stop at the bound; the rest share LIMIT ?');
  assert.equal(s.all(1, 1, 10).length, 1, 'a limit seen first keeps its statement after the bound was reached');
  assert.deepEqual(s.all(MAX_LITERAL_LIMITS + 500, 0, 0), bound.all(0, 0, MAX_LITERAL_LIMITS + 500));
});

test('a limit that is not a non-negative integer goes to SQLite bound, with SQLite answering as for LIMIT ?', () => {
  const d = db();
  const bound = d.prepare(`${SQL} LIMIT ?`);
  const s = new LimitedSelect(d, SQL);
  assert.deepEqual(s.all(-1, 0, 45), bound.all(0, 45, -1), 'a negative limit means no limit');
  assert.equal(s.all(-1, 0, 45).length, 5);
  assert.equal(s.literalCount, 0, 'negative limits are not written into the text');
  assert.throws(() => s.all(2.5, 0, 0), (e: Error) => { assert.throws(() => bound.all(0, 0, 2.5), { message: e.message }); return true; });
  assert.equal(s.literalCount, 0);
});

test('raw mode answers arrays in column order', () => {
  const d = db();
  const s = new LimitedSelect(d, SQL, true);
  assert.deepEqual(s.all(2, 1, 3), [[1, 3, 'p1o3'], [1, 4, 'p1o4']]);
  assert.deepEqual(new LimitedSelect(d, SQL).all(1, 1, 3), [{ p: 1, o: 3, body: 'p1o3' }]);
});
