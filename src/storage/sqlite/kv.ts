/**
 * SQLite implementation of {@link KvStore}. Shares the connection of {@link SqliteStore}: writes
 * run inside the callback of `store.run`, so they join its transaction and group commit.
 * Table `kv` is keyed by `(ns, key)`; `kv_by_expiry` (partial, rows that expire) serves the sweep;
 * `kv_meta` holds the version floor (see ../kv.ts).
 */
import type { Database as Db, Statement } from 'better-sqlite3';
import type { KvRow, KvScan, KvStore } from '../kv.js';
import type { Row } from './rows.js';

function toKv(r: Row): KvRow {
  return {
    ns: r.ns as string,
    key: r.key as string,
    value: r.value as string,
    version: r.version as number,
    expiresAt: (r.expires_at as number | null) ?? null,
    updatedAt: r.updated_at as number,
  };
}

/**
 * The smallest string above every string starting with `prefix`, in SQLite's byte order
 * (UTF-8 keeps code point order): the last character plus one. Undefined where that character
 * has no plain successor (surrogates, U+D7FF, U+FFFF); the scan then filters without an upper bound.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  const last = prefix.charCodeAt(prefix.length - 1);
  if (last >= 0xd7ff && last <= 0xdfff) return undefined;
  if (last >= 0xffff) return undefined;
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}

/** KV rows on the SQLite connection (see the module comment). */
export class SqliteKv implements KvStore {
  private readonly s: Record<string, Statement>;
  private readonly scans = new Map<string, Statement>();

  constructor(private readonly db: Db) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      get: p('SELECT * FROM kv WHERE ns = ? AND key = ?'),
      put: p(`INSERT INTO kv (ns, key, value, version, expires_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = excluded.version,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at`),
      del: p('DELETE FROM kv WHERE ns = ? AND key = ? RETURNING version'),
      prune: p(`DELETE FROM kv WHERE (ns, key) IN
                  (SELECT ns, key FROM kv INDEXED BY kv_by_expiry WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)
                RETURNING version`),
      nextExpiry: p('SELECT min(expires_at) AS t FROM kv WHERE expires_at IS NOT NULL'),
      floor: p('SELECT floor FROM kv_meta WHERE id = 0'),
      raise: p('UPDATE kv_meta SET floor = max(floor, ?) WHERE id = 0'),
      nextNs: p('SELECT ns FROM kv WHERE ns > ? ORDER BY ns LIMIT 1'),
      countNs: p('SELECT count(*) AS n FROM kv WHERE ns = ?'),
    };
  }

  getRow(ns: string, key: string): KvRow | undefined {
    const r = this.s.get!.get(ns, key) as Row | undefined;
    return r ? toKv(r) : undefined;
  }

  scan(q: KvScan): KvRow[] {
    const hi = prefixUpperBound(q.prefix);
    const where = ['ns = @ns', '(expires_at IS NULL OR expires_at > @now)'];
    const args: Record<string, unknown> = { ns: q.ns, now: q.now, limit: q.limit };
    if (q.prefix !== '') {
      where.push('key >= @prefix');
      args.prefix = q.prefix;
      if (hi !== undefined) {
        where.push('key < @hi');
        args.hi = hi;
      } else {
        where.push('substr(key, 1, length(@prefix)) = @prefix');
      }
    }
    if (q.after !== undefined) {
      where.push('key > @after');
      args.after = q.after;
    }
    const sql = `SELECT * FROM kv WHERE ${where.join(' AND ')} ORDER BY key LIMIT @limit`;
    let st = this.scans.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.scans.set(sql, st);
    }
    return (st.all(args) as Row[]).map(toKv);
  }

  namespaces(after: string, limit: number): { ns: string; keys: number }[] {
    const out: { ns: string; keys: number }[] = [];
    let cur = after;
    while (out.length < limit) {
      const r = this.s.nextNs!.get(cur) as Row | undefined;
      if (!r) break;
      cur = r.ns as string;
      out.push({ ns: cur, keys: (this.s.countNs!.get(cur) as Row).n as number });
    }
    return out;
  }

  nextExpiry(): number | undefined {
    const t = (this.s.nextExpiry!.get() as Row).t as number | null;
    return t ?? undefined;
  }

  floor(): number {
    return ((this.s.floor!.get() as Row | undefined)?.floor as number | undefined) ?? 0;
  }

  putRow(row: KvRow): void {
    this.s.put!.run(row.ns, row.key, row.value, row.version, row.expiresAt, row.updatedAt);
  }

  deleteRow(ns: string, key: string): boolean {
    const r = this.s.del!.get(ns, key) as Row | undefined;
    if (!r) return false;
    this.s.raise!.run(r.version as number);
    return true;
  }

  pruneExpired(now: number, limit: number): number {
    const rows = this.s.prune!.all(now, limit) as Row[];
    let top = 0;
    for (const r of rows) top = Math.max(top, r.version as number);
    if (rows.length > 0) this.s.raise!.run(top);
    return rows.length;
  }
}
