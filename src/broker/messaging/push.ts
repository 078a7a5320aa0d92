/**
 * Push: append messages to partitions (auto-creating queues and partitions), with dedup of
 * `transactionId` per partition inside the queue's `dedupWindowSeconds`, including repeats inside
 * one request (docs/http-api.md#push). Planned first (no writes), then applied, so a transaction
 * can refuse the whole unit before anything is written.
 */
import { QueenError } from '../../errors.js';
import type { StoredPayload, StoreTx } from '../../storage/store.js';
import { newId } from '../../util/ids.js';
import { stringifyClientJson } from '../../util/json.js';
import type { Engine } from './engine.js';
import { QUEUE_DEFAULTS } from '../../model/options.js';
import type { PartitionState } from './state.js';

/** One message to append, as the push body and transaction push ops carry it. */
export interface PushItem {
  queue: string;
  partition?: string | undefined;
  /** A JSON value; numbers a JS number would alter are `RawJson` (src/util/json.ts). */
  payload: unknown;
  transactionId?: string | undefined;
  traceId?: string | null | undefined;
  /**
   * Server-internal: the id already announced for this message (a spooled push answered
   * `buffered`). Never taken from a request body.
   */
  messageId?: string | undefined;
}

/** Per-item answer, in the wire's mixed casing (docs/http-api.md#push). */
export interface PushResult {
  index: number;
  message_id: string;
  transaction_id: string;
  queueName: string;
  partition: string;
  status: 'queued' | 'duplicate' | 'buffered' | 'failed';
  offset?: number;
  error?: string;
}

interface Planned {
  index: number;
  queue: string;
  partition: string;
  transactionId: string;
  messageId: string;
  traceId: string | null;
  stored: { payload: StoredPayload; encrypted: boolean };
  /** Existing message in the store with this transactionId inside the window. */
  duplicateOf?: { id: string; offset: number };
  /** Earlier item of the same request with the same (queue, partition, transactionId). */
  repeatOf?: number;
}

export interface PushPlan {
  items: Planned[];
  producerSub: string | null;
}

/**
 * Validates and plans a push without writing.
 * @param producerSub the caller's JWT `sub` (never taken from the body)
 * @throws QueenError `name_too_long`, `payload_too_large`, `encryption_unavailable`
 */
export function planPush(engine: Engine, tx: StoreTx, items: readonly PushItem[], producerSub: string | null, now: number): PushPlan {
  const planned: Planned[] = [];
  const seen = new Map<string, number>();
  const maxPayload = engine.config.limits.maxPayloadBytes;
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    const queue = item.queue;
    const partition = item.partition ?? 'Default';
    engine.checkName('queue', queue);
    engine.checkName('partition', partition);
    const json = stringifyClientJson(item.payload === undefined ? null : item.payload);
    if (json.length > maxPayload && Buffer.byteLength(json, 'utf8') > maxPayload) {
      throw new QueenError('payload_too_large', `items[${index}].payload exceeds ${maxPayload} bytes`);
    }
    const q = engine.queues.get(queue);
    const messageId = item.messageId ?? newId();
    const explicitTxn = item.transactionId !== undefined && item.transactionId !== '';
    const transactionId = explicitTxn ? item.transactionId! : messageId;
    engine.checkName('transactionId', transactionId);
    if (typeof item.traceId === 'string') engine.checkName('traceId', item.traceId);
    const p: Planned = {
      index, queue, partition, transactionId, messageId,
      traceId: typeof item.traceId === 'string' && item.traceId !== '' ? item.traceId : null,
      stored: engine.codec.encode(q?.options.encryptionEnabled ?? false, json),
    };
    if (explicitTxn) {
      const key = `${queue}\u0000${partition}\u0000${transactionId}`;
      const first = seen.get(key);
      if (first !== undefined) {
        p.repeatOf = first;
      } else {
        seen.set(key, index);
        const window = (q?.options ?? QUEUE_DEFAULTS).dedupWindowSeconds;
        const part = q?.partitions.get(partition);
        if (part && window > 0) {
          const hit = tx.findByTransactionId(part.pk, transactionId, now - window * 1000);
          if (hit) p.duplicateOf = { id: hit.id, offset: hit.offset };
        }
      }
    }
    planned.push(p);
  }
  return { items: planned, producerSub };
}

/** True when some planned item duplicates a message already stored (transactions refuse this). */
export function hasStoredDuplicate(plan: PushPlan): Planned | undefined {
  return plan.items.find((p) => p.duplicateOf !== undefined);
}

/**
 * Writes a planned push. Wake-ups of parked consumers are scheduled after the commit.
 * @returns one result per planned item, in request order
 */
export function applyPush(engine: Engine, tx: StoreTx, plan: PushPlan, now: number): PushResult[] {
  const results: PushResult[] = [];
  const touched = new Set<PartitionState>();
  for (const p of plan.items) {
    const base = { index: p.index, transaction_id: p.transactionId, queueName: p.queue, partition: p.partition };
    if (p.repeatOf !== undefined) {
      const first = results[p.repeatOf]!;
      results.push({ ...base, message_id: first.message_id, status: 'duplicate', ...(first.offset !== undefined ? { offset: first.offset } : {}) });
      continue;
    }
    if (p.duplicateOf) {
      results.push({ ...base, message_id: p.duplicateOf.id, status: 'duplicate', offset: p.duplicateOf.offset });
      continue;
    }
    const q = engine.ensureQueue(tx, p.queue, now);
    const part = engine.ensurePartition(tx, q, p.partition, now);
    engine.notePartition(part);
    const offset = part.headOffset;
    const createdAt = Math.max(now, part.lastMessageAt ?? 0);
    tx.insertMessage(q.pk, {
      partitionPk: part.pk, offset, id: p.messageId, transactionId: p.transactionId, payload: p.stored.payload,
      encrypted: p.stored.encrypted, traceId: p.traceId, producerSub: plan.producerSub, createdAt,
    });
    part.headOffset = offset + 1;
    part.lastMessageAt = createdAt;
    touched.add(part);
    results.push({ ...base, message_id: p.messageId, status: 'queued', offset });
  }
  for (const part of touched) tx.updatePartitionHead(part.pk, part.headOffset, part.lastMessageAt!);
  if (touched.size > 0) tx.afterCommit(() => { for (const part of touched) engine.partitionGrew(part); });
  return results;
}
