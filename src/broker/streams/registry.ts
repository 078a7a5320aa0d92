/**
 * Registering a streaming query (docs/streams.md#register): one id per (tenant, name); the same
 * `config_hash` keeps the state, another one is refused unless the caller asks for a reset,
 * which wipes the query's state rows.
 */
import type { StreamQueryRow, StreamsSubStore } from '../../storage/contract.js';
import { newId } from '../../util/ids.js';

/** A registration request, validated (non-empty name, source queue and hash). */
export interface RegisterInput {
  tenant: string;
  name: string;
  sourceQueue: string;
  /** `""` is stored as null. */
  sinkQueue: string | null;
  configHash: string;
  reset: boolean;
}

/** The answer of a registration (docs/streams.md#register): `fresh` on a new name, `reset` when the state was wiped. */
export type RegisterResult =
  | { success: true; query_id: string; name: string; config_hash: string; fresh: boolean; reset: boolean }
  | { success: false; mismatch: true; query_id: string; name: string; error: string };

/**
 * Registers or re-registers a query.
 * @param now epoch ms
 * @returns the stored query, or `mismatch` (nothing written) when the hash changed without `reset`
 */
export async function registerQuery(store: StreamsSubStore, input: RegisterInput, now: number): Promise<RegisterResult> {
  const { outcome, row } = await store.register({ ...input, newId: newId(), now });
  if (outcome === 'mismatch') {
    return {
      success: false, mismatch: true, query_id: row.id, name: row.name,
      error: `config_hash mismatch: operator chain changed for queryId '${row.name}'. Pass reset:true to wipe existing state, or use a new queryId.`,
    };
  }
  return { success: true, query_id: row.id, name: row.name, config_hash: row.configHash, fresh: outcome === 'created', reset: outcome === 'reset' };
}

/** A query as the dashboard lists it, with its state rows per source partition. */
export interface QueryView {
  query_id: string;
  name: string;
  source_queue: string;
  sink_queue: string | null;
  config_hash: string;
  created_at: string;
  updated_at: string;
  partitions: { partition_id: string; rows: number }[];
}

/** The tenant's queries (at most `limit`, by name) with their state row counts per partition. */
export async function listQueries(store: StreamsSubStore, tenant: string, limit: number): Promise<QueryView[]> {
  const rows: StreamQueryRow[] = await store.queries(tenant, limit);
  const out: QueryView[] = [];
  for (const r of rows) {
    out.push({
      query_id: r.id, name: r.name, source_queue: r.sourceQueue, sink_queue: r.sinkQueue, config_hash: r.configHash,
      created_at: new Date(r.createdAt).toISOString(), updated_at: new Date(r.updatedAt).toISOString(),
      partitions: (await store.stateCounts(tenant, r.id)).map((c) => ({ partition_id: c.partitionId, rows: c.rows })),
    });
  }
  return out;
}
