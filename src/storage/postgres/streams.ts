/**
 * Streaming queries and their operator state on PostgreSQL (docs/streams.md#storage): the
 * {@link StreamsSubStore} and the cycle's `streamState` unit op, which runs in the unit's
 * transaction (with the cycle's appends and cursor commit) under a transaction-scoped advisory
 * lock on (query, partition), so concurrent cycles of one partition are serialised.
 */
import type { StreamQueryRow, StreamStateRow, StreamStateUnitOp, StreamsSubStore } from '../contract.js';
import { UnitRefused } from '../refused.js';
import { exec, q, type PgDb, type Row, type Tx } from './db.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function queryOf(r: Row): StreamQueryRow {
  return {
    id: r.id as string, tenant: r.tenant_id as string, name: r.name as string, sourceQueue: r.source_queue as string,
    sinkQueue: (r.sink_queue as string | null) ?? null, configHash: r.config_hash as string,
    createdAt: r.created_at_ms as number, updatedAt: r.updated_at_ms as number,
  };
}

/**
 * Applies a cycle's state rider in the unit's transaction.
 * @param index the op's position in its unit (named by a refusal)
 * @throws UnitRefused when the query is not the tenant's, or (`requireRows`) a delete finds no row
 */
export async function applyStreamStatePg(t: Tx, o: StreamStateUnitOp, index: number): Promise<{ done: boolean }> {
  if (!UUID.test(o.queryId) || !UUID.test(o.partitionId)) throw new UnitRefused(index);
  await q(t, 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`streams\u001f${o.queryId}\u001f${o.partitionId}`]);
  const found = await q(t, 'SELECT 1 FROM queen.streams_queries WHERE tenant_id = $1 AND id = $2 FOR SHARE', [o.tenant, o.queryId]);
  if (found.length === 0) throw new UnitRefused(index);
  for (const s of o.ops) {
    if (s.type === 'upsert') {
      await exec(t, `INSERT INTO queen.streams_state (query_id, partition_id, key, value, window_end, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = $4, window_end = $5, updated_at_ms = $6`,
      [o.queryId, o.partitionId, s.key, s.value, s.windowEnd, o.now]);
    } else {
      const n = await exec(t, 'DELETE FROM queen.streams_state WHERE query_id = $1 AND partition_id = $2 AND key = $3', [o.queryId, o.partitionId, s.key]);
      if (n === 0 && o.requireRows) throw new UnitRefused(index);
    }
  }
  return { done: true };
}

/** The streams sub-store on the pool. */
export function pgStreamsStore(db: PgDb): StreamsSubStore {
  const queryRow = async (tenant: string, id: string): Promise<StreamQueryRow | undefined> => {
    if (!UUID.test(id)) return undefined;
    const r = await db.rows('SELECT * FROM queen.streams_queries WHERE tenant_id = $1 AND id = $2', [tenant, id]);
    return r[0] ? queryOf(r[0]) : undefined;
  };
  return {
    register: (req) => db.tx(async (t) => {
      const inserted = await q(t, `INSERT INTO queen.streams_queries (id, tenant_id, name, source_queue, sink_queue, config_hash, created_at_ms, updated_at_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (tenant_id, name) DO NOTHING RETURNING *`,
      [req.newId, req.tenant, req.name, req.sourceQueue, req.sinkQueue, req.configHash, req.now]);
      if (inserted[0]) return { outcome: 'created' as const, row: queryOf(inserted[0]) };
      const existing = queryOf((await q(t, 'SELECT * FROM queen.streams_queries WHERE tenant_id = $1 AND name = $2 FOR UPDATE', [req.tenant, req.name]))[0]!);
      const same = existing.configHash === req.configHash;
      if (!same && !req.reset) return { outcome: 'mismatch' as const, row: existing };
      if (!same) await exec(t, 'DELETE FROM queen.streams_state WHERE query_id = $1', [existing.id]);
      const row = await q(t, `UPDATE queen.streams_queries SET source_queue = $2, sink_queue = $3, config_hash = $4, updated_at_ms = $5 WHERE id = $1 RETURNING *`,
        [existing.id, req.sourceQueue, req.sinkQueue, req.configHash, req.now]);
      return { outcome: same ? 'updated' as const : 'reset' as const, row: queryOf(row[0]!) };
    }),
    query: queryRow,
    queries: async (tenant, limit) =>
      (await db.rows('SELECT * FROM queen.streams_queries WHERE tenant_id = $1 ORDER BY name LIMIT $2', [tenant, limit])).map(queryOf),
    readState: async (tenant, queryId, partitionId, f) => {
      if (!UUID.test(partitionId) || !await queryRow(tenant, queryId)) return [];
      const where = ['query_id = $1', 'partition_id = $2'];
      const args: unknown[] = [queryId, partitionId];
      if (f.keys && f.keys.length > 0) {
        args.push(f.keys);
        where.push(`key = ANY($${args.length}::text[])`);
      }
      if (f.keyPrefix) {
        args.push(f.keyPrefix);
        where.push(`left(key, length($${args.length})) = $${args.length}`); // literal: no LIKE wildcards
      }
      if (f.ripeAtOrBefore !== undefined) {
        args.push(f.ripeAtOrBefore);
        where.push(`window_end <= $${args.length}`);
      }
      const rows = await db.rows(`SELECT key, value, updated_at_ms FROM queen.streams_state WHERE ${where.join(' AND ')} ORDER BY key`, args);
      return rows.map((r): StreamStateRow => ({ key: r.key as string, value: r.value as string, updatedAt: r.updated_at_ms as number }));
    },
    stateCounts: async (tenant, queryId) => {
      if (!await queryRow(tenant, queryId)) return [];
      const rows = await db.rows(`SELECT partition_id::text AS partition_id, count(*)::int AS n FROM queen.streams_state WHERE query_id = $1
                                   GROUP BY partition_id ORDER BY partition_id`, [queryId]);
      return rows.map((r) => ({ partitionId: r.partition_id as string, rows: r.n as number }));
    },
  };
}
