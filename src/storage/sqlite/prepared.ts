/**
 * Prepared statements cached per connection, by SQL text: each statement is prepared once per
 * `better-sqlite3` database handle and reused (the sub-stores and the streams store share it).
 */
import type { Database as Db, Statement } from 'better-sqlite3';

const statements = new WeakMap<Db, Map<string, Statement>>();

/**
 * The prepared statement for `sql` on `db`, prepared on first use.
 * @throws SqliteError when `sql` does not compile
 */
export function prep(db: Db, sql: string): Statement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map<string, Statement>()));
  let st = m.get(sql);
  if (!st) m.set(sql, (st = db.prepare(sql)));
  return st;
}
