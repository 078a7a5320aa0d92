/**
 * The appends of one group-commit batch (backend.ts) in a fixed number of statements, whatever the
 * number of partitions (docs/storage.md#postgresql-backend, group commit): the queues resolved in
 * one query, every target partition row created when missing and locked in one statement in
 * ascending id order (the per-partition write serialiser between nodes, taken in one order by every
 * node), the dedup probes of the partitions whose queue deduplicates, then one INSERT of all
 * messages and one UPDATE of all partition heads. Same outcomes as log-ops.ts `appendIn` applied
 * one request after another.
 */
import { randomUUID } from 'node:crypto';
import type { AppendOutcome, AppendRequest, AppendResult } from '../contract.js';
import { clockOf, exec, msToTs, payloadBytes, q, type Row, type Tx } from './db.js';
import { appendIn, ensureQueue, storedWithin, type StoredDuplicate } from './log-ops.js';

const LOCK = `
  SELECT p.id, p.queue_id, p.name, p.next_offset, p.last_message_at_ms
    FROM queen.partitions p JOIN unnest($1::uuid[], $2::text[]) AS k(qid, name) ON p.queue_id = k.qid AND p.name = k.name
   ORDER BY p.id FOR UPDATE OF p`;

/**
 * Appends `reqs` inside `t` (see the module comment); results in the order of `reqs`. Requests
 * naming one partition twice are applied one after another by `appendIn` instead. Message times
 * and the dedup window follow the transaction's clock (`clockOf`: the database's when the backend
 * follows it), as `appendIn`'s do.
 */
export async function appendBatch(t: Tx, callerReqs: AppendRequest[]): Promise<AppendResult[]> {
  const reqs = callerReqs.map((r) => ({ ...r, now: clockOf(t, r.now) }));
  const keyOf = (r: AppendRequest) => JSON.stringify([r.key.tenant, r.key.queue, r.key.partition]);
  if (new Set(reqs.map(keyOf)).size !== reqs.length || reqs.some((r) => r.refuseDuplicates === true)) {
    const out: AppendResult[] = [];
    for (const r of reqs) out.push(await appendIn(t, r, 0));
    return out;
  }
  const queueKey = (tenant: string, queue: string) => JSON.stringify([tenant, queue]);
  const wantedQueues = [...new Map(reqs.map((r) => [queueKey(r.key.tenant, r.key.queue), r])).values()];
  const queueIds = new Map((await q(t, `SELECT id, tenant_id, name FROM queen.queues
                                          WHERE (tenant_id, name) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
  [wantedQueues.map((r) => r.key.tenant), wantedQueues.map((r) => r.key.queue)])).map((r) => [queueKey(r.tenant_id as string, r.name as string), r.id as string]));
  for (const r of wantedQueues) {
    const k = queueKey(r.key.tenant, r.key.queue);
    if (!queueIds.has(k)) queueIds.set(k, await ensureQueue(t, r.key.tenant, r.key.queue, r.now));
  }
  const qidOf = (r: AppendRequest) => queueIds.get(queueKey(r.key.tenant, r.key.queue))!;
  const partKey = (qid: string, name: string) => `${qid}\u0000${name}`;
  const lock = async (rs: AppendRequest[]) => q(t, LOCK, [rs.map(qidOf), rs.map((r) => r.key.partition)]);
  const rows = new Map((await lock(reqs)).map((p) => [partKey(p.queue_id as string, p.name as string), p]));
  const missing = reqs.filter((r) => !rows.has(partKey(qidOf(r), r.key.partition)));
  if (missing.length > 0) {
    await exec(t, `INSERT INTO queen.partitions (id, queue_id, name, created_at)
                   SELECT u.id, u.qid, u.name, ${msToTs('u.at')} FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bigint[]) AS u(id, qid, name, at)
                   ON CONFLICT (queue_id, name) DO NOTHING`,
    [missing.map(() => randomUUID()), missing.map(qidOf), missing.map((r) => r.key.partition), missing.map((r) => r.now)]);
    for (const p of await lock(missing)) rows.set(partKey(p.queue_id as string, p.name as string), p);
  }
  const cols = {
    pid: [] as string[], offset: [] as number[], id: [] as string[], txn: [] as string[], trace: [] as (string | null)[],
    sub: [] as (string | null)[], payload: [] as Buffer[], enc: [] as boolean[], at: [] as number[],
  };
  const heads = { id: [] as string[], head: [] as number[], at: [] as number[] };
  const results: AppendResult[] = [];
  for (const req of reqs) {
    const p = rows.get(partKey(qidOf(req), req.key.partition)) as Row;
    const partitionId = p.id as string;
    let head = p.next_offset as number;
    const start = head;
    const createdAt = Math.max(req.now, (p.last_message_at_ms as number | null) ?? 0);
    const stored = await storedWithin(t, partitionId, req);
    const seen = new Map<string, StoredDuplicate>();
    const outcomes: AppendOutcome[] = req.items.map((it) => {
      if (req.dedupWindowMs > 0) {
        const dup = seen.get(it.transactionId) ?? stored.get(it.transactionId);
        if (dup) return { status: 'duplicate', ...dup };
      }
      const offset = head++;
      cols.pid.push(partitionId); cols.offset.push(offset); cols.id.push(it.messageId); cols.txn.push(it.transactionId);
      cols.trace.push(it.traceId); cols.sub.push(it.producerSub); cols.payload.push(payloadBytes(it.payload)); cols.enc.push(it.encrypted);
      cols.at.push(createdAt);
      seen.set(it.transactionId, { offset, messageId: it.messageId });
      return { status: 'queued', offset, messageId: it.messageId };
    });
    if (head !== start) {
      heads.id.push(partitionId); heads.head.push(head); heads.at.push(createdAt);
      t.hints.push({ tenant: req.key.tenant, queue: req.key.queue, partitions: [req.key.partition], visibleAt: null });
    }
    results.push({ partitionId, outcomes, headOffset: head });
  }
  if (cols.pid.length > 0) {
    await exec(t, `INSERT INTO queen.messages (partition_id, "offset", id, transaction_id, trace_id, producer_sub, payload, encrypted, created_at)
                   SELECT u.p, u.o, u.i, u.t, u.tr, u.ps, u.pl, u.e, ${msToTs('u.c')}
                     FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::boolean[], $9::bigint[])
                          AS u(p, o, i, t, tr, ps, pl, e, c)`,
    [cols.pid, cols.offset, cols.id, cols.txn, cols.trace, cols.sub, cols.payload, cols.enc, cols.at]);
    await exec(t, `UPDATE queen.partitions p SET next_offset = u.h, last_message_at_ms = u.c, last_activity_ms = GREATEST(p.last_activity_ms, u.c)
                     FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS u(id, h, c) WHERE p.id = u.id`, [heads.id, heads.head, heads.at]);
  }
  return results;
}
