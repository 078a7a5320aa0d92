/**
 * Streaming queries and their operator state on SQLite (docs/streams.md#storage): the
 * {@link StreamsSubStore} reads and registration, and the cycle's `streamState` unit op, each on
 * the store's connection and group commit (one transaction with the cycle's appends and cursor
 * commit, docs/streams.md#cycle).
 */
import type { Database as Db } from 'better-sqlite3';
import type { StreamQueryRow, StreamStateRow, StreamStateUnitOp, StreamsSubStore } from '../contract.js';
import { UnitRefused } from '../refused.js';
import { prep } from './prepared.js';
import type { Row } from './rows.js';


function queryOf(r: Row): StreamQueryRow {
  return {
    id: r.id as string, tenant: r.tenant_id as string, name: r.name as string, sourceQueue: r.source_queue as string,
    sinkQueue: (r.sink_queue as string | null) ?? null, configHash: r.config_hash as string,
    createdAt: r.created_at as number, updatedAt: r.updated_at as number,
  };
}

function queryRow(db: Db, tenant: string, id: string): StreamQueryRow | undefined {
  const r = prep(db, 'SELECT * FROM streams_queries WHERE tenant_id = ? AND id = ?').get(tenant, id) as Row | undefined;
  return r ? queryOf(r) : undefined;
}

/**
 * Applies a cycle's state rider inside the running store unit.
 * @param index the op's position in its unit (named by a refusal)
 * @throws UnitRefused when the query is not the tenant's, or (`requireRows`) a delete finds no row
 */
export function applyStreamState(db: Db, o: StreamStateUnitOp, index: number): { done: boolean } {
  if (!queryRow(db, o.tenant, o.queryId)) throw new UnitRefused(index);
  const upsert = prep(db, `INSERT INTO streams_state (query_id, partition_id, key, value, window_end, updated_at) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = excluded.value, window_end = excluded.window_end, updated_at = excluded.updated_at`);
  const del = prep(db, 'DELETE FROM streams_state WHERE query_id = ? AND partition_id = ? AND key = ?');
  for (const s of o.ops) {
    if (s.type === 'upsert') {
      upsert.run(o.queryId, o.partitionId, s.key, s.value, s.windowEnd, o.now);
    } else if (del.run(o.queryId, o.partitionId, s.key).changes === 0 && o.requireRows) {
      throw new UnitRefused(index);
    }
  }
  return { done: true };
}

/**
 * The streams sub-store over one connection.
 * @param db the store's connection (reads outside units)
 * @param atomic runs a write as one unit of the store's group commit
 */
export function sqliteStreamsStore(db: Db, atomic: <T>(fn: (db: Db) => T) => Promise<T>): StreamsSubStore {
  return {
    register: (req) => atomic((d) => {
      const r = prep(d, 'SELECT * FROM streams_queries WHERE tenant_id = ? AND name = ?').get(req.tenant, req.name) as Row | undefined;
      if (!r) {
        prep(d, `INSERT INTO streams_queries (id, tenant_id, name, source_queue, sink_queue, config_hash, created_at, updated_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(req.newId, req.tenant, req.name, req.sourceQueue, req.sinkQueue, req.configHash, req.now, req.now);
        return { outcome: 'created' as const, row: queryRow(d, req.tenant, req.newId)! };
      }
      const existing = queryOf(r);
      const same = existing.configHash === req.configHash;
      if (!same && !req.reset) return { outcome: 'mismatch' as const, row: existing };
      if (!same) prep(d, 'DELETE FROM streams_state WHERE query_id = ?').run(existing.id);
      prep(d, 'UPDATE streams_queries SET source_queue = ?, sink_queue = ?, config_hash = ?, updated_at = ? WHERE id = ?')
        .run(req.sourceQueue, req.sinkQueue, req.configHash, req.now, existing.id);
      return { outcome: same ? 'updated' as const : 'reset' as const, row: queryRow(d, req.tenant, existing.id)! };
    }),
    query: (tenant, id) => Promise.resolve(queryRow(db, tenant, id)),
    queries: (tenant, limit) => Promise.resolve(
      (prep(db, 'SELECT * FROM streams_queries WHERE tenant_id = ? ORDER BY name LIMIT ?').all(tenant, limit) as Row[]).map(queryOf)),
    readState: (tenant, queryId, partitionId, f) => {
      if (!queryRow(db, tenant, queryId)) return Promise.resolve([]);
      const where = ['query_id = ?', 'partition_id = ?'];
      const args: unknown[] = [queryId, partitionId];
      if (f.keys && f.keys.length > 0) {
        where.push(`key IN (SELECT value FROM json_each(?))`);
        args.push(JSON.stringify(f.keys));
      }
      if (f.keyPrefix) {
        where.push('key >= ? AND substr(key, 1, length(?)) = ?'); // literal: no LIKE wildcards
        args.push(f.keyPrefix, f.keyPrefix, f.keyPrefix);
      }
      if (f.ripeAtOrBefore !== undefined) {
        where.push('window_end IS NOT NULL AND window_end <= ?');
        args.push(f.ripeAtOrBefore);
      }
      const rows = prep(db, `SELECT key, value, updated_at FROM streams_state WHERE ${where.join(' AND ')} ORDER BY key`).all(...args) as Row[];
      return Promise.resolve(rows.map((r): StreamStateRow => ({ key: r.key as string, value: r.value as string, updatedAt: r.updated_at as number })));
    },
    stateCounts: (tenant, queryId) => {
      if (!queryRow(db, tenant, queryId)) return Promise.resolve([]);
      const rows = prep(db, 'SELECT partition_id, count(*) AS n FROM streams_state WHERE query_id = ? GROUP BY partition_id ORDER BY partition_id').all(queryId) as Row[];
      return Promise.resolve(rows.map((r) => ({ partitionId: r.partition_id as string, rows: r.n as number })));
    },
  };
}
