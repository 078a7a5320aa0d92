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

/** Distinct row limits one {@link LimitedSelect} writes into SQL text before it binds the rest. */
export const MAX_LITERAL_LIMITS = 32;

/**
 * A `SELECT … LIMIT n` whose `n` is written into the SQL text, one prepared statement per
 * distinct `n` (up to {@link MAX_LITERAL_LIMITS}; further limits share one `LIMIT ?` statement).
 *
 * Why (docs/architecture.md#hot-paths): SQLite marks a parameter bound in `LIMIT` as one the query plan depends on
 * (`sqlite3ExprIsInteger` sets the statement's `expmask` bit; see `sqlite3.c` of the SQLite
 * amalgamation that better-sqlite3 vendors under `deps/sqlite3/`), so every bind of it expires
 * the statement and the next step compiles it again, even when the value did not change.
 * better-sqlite3 binds on every call, so a `LIMIT ?` read is compiled on every call: measured
 * with SQLite 3.53 on this project's machine, a one-row read by primary-key range took 9.2 µs
 * with `LIMIT ?` and 3.0 µs with `LIMIT 1` (the pop path's message read, once per claimed
 * partition).
 */
export class LimitedSelect {
  private readonly byLimit = new Map<number, Statement>();
  private generic: Statement | undefined;

  /**
   * @param sql a SELECT without its LIMIT clause; its positional `?` parameters are bound by {@link all}
   * @param raw rows as arrays (better-sqlite3 `raw(true)`) instead of objects
   */
  constructor(private readonly db: Db, private readonly sql: string, private readonly raw = false) {}

  /**
   * The rows of the SELECT with `params` bound, at most `limit` of them.
   * @param limit a non-negative integer (another number goes to SQLite as a bound `LIMIT ?`)
   * @throws SqliteError when the SQL does not compile or a parameter cannot be bound
   */
  all(limit: number, ...params: unknown[]): unknown[] {
    let st = this.byLimit.get(limit);
    if (st === undefined) {
      if (Number.isSafeInteger(limit) && limit >= 0 && this.byLimit.size < MAX_LITERAL_LIMITS) {
        st = this.db.prepare(`${this.sql} LIMIT ${limit}`);
        if (this.raw) st.raw(true);
        this.byLimit.set(limit, st);
      } else {
        if (this.generic === undefined) {
          this.generic = this.db.prepare(`${this.sql} LIMIT ?`);
          if (this.raw) this.generic.raw(true);
        }
        return this.generic.all(...params, limit);
      }
    }
    return st.all(...params);
  }

  /** How many statements with a literal limit are prepared (for tests of the bound). */
  get literalCount(): number {
    return this.byLimit.size;
  }
}
