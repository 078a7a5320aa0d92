/**
 * Push: append messages to partitions (auto-creating queues and partitions), with dedup of
 * `transactionId` per partition inside the queue's `dedupWindowSeconds`, including repeats inside
 * one request (docs/http-api.md#push). Planned first (no writes: validation, encoding, repeats) on
 * the queues' options read through the contract (one read per queue named in the request), then
 * applied as the operation contract's appends (src/storage/contract.ts), which assign offsets and
 * probe the dedup window; a transaction's appends refuse a duplicate so the whole unit is refused.
 */
import { QueenError } from '../../errors.js';
import type { AppendRequest, AppendResult, QueueBackend, UnitOp } from '../../storage/contract.js';
import { DEFAULT_TENANT } from '../../storage/contract.js';
import type { PayloadCodec } from '../../model/codec.js';
import type { StoredPayload } from '../../storage/store.js';
import { newId } from '../../util/ids.js';
import { stringifyClientJson } from '../../util/json.js';
import { checkNameText } from '../../util/names.js';
import { QUEUE_DEFAULTS, type QueueOptions } from '../../model/options.js';

/** What planning a push needs besides the queues' options: the payload limit, the name rules, the codec (the Broker is one). */
export interface PushContext {
  /** QUEEN_MAX_PAYLOAD_BYTES. */
  readonly maxPayloadBytes: number;
  /** @throws QueenError `name_too_long`, `invalid_name` */
  checkName(kind: string, name: string): void;
  readonly codec: PayloadCodec;
}

/** The options of the queues a request names, by name; undefined for a queue that does not exist yet (defaults apply). */
export type QueueOptionsByName = ReadonlyMap<string, QueueOptions | undefined>;

/**
 * Reads the options of every queue `items` name through the contract (one read per distinct queue).
 * @param tenant the queues' tenant (default: the default tenant)
 * @throws QueenError `invalid_name` for a queue name with a NUL or a lone surrogate
 */
export async function queueOptionsOf(
  backend: QueueBackend, items: readonly { queue: string }[], tenant: string = DEFAULT_TENANT,
): Promise<QueueOptionsByName> {
  const out = new Map<string, QueueOptions | undefined>();
  for (const it of items) {
    if (out.has(it.queue)) continue;
    checkNameText('queue', it.queue); // before the read: PostgreSQL refuses a NUL in a parameter
    out.set(it.queue, (await backend.admin.readQueue({ tenant, queue: it.queue }))?.options);
  }
  return out;
}

/**
 * The dedup window of `queue`, ms, for items with a caller-named transactionId (0: dedup off).
 * @param options the options of the queues a request names ({@link queueOptionsOf})
 */
export function dedupWindowMsOf(options: QueueOptionsByName, queue: string): number {
  return (options.get(queue) ?? QUEUE_DEFAULTS).dedupWindowSeconds * 1000;
}

/**
 * What an item repeats an earlier item of its request by (docs/http-api.md#dedup): its queue,
 * partition and caller-named transactionId. Only items of a queue whose dedup window is on
 * ({@link dedupWindowMsOf}) are repeats.
 */
export function repeatKey(queue: string, partition: string, transactionId: string): string {
  return `${queue}\u0000${partition}\u0000${transactionId}`; // names never hold NUL
}

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
  /**
   * Server-internal: `transactionId` was made by the broker (a DLQ replay's `dlq:<dead letter id>`),
   * so the name rules for client text (`QUEEN_MAX_NAME_BYTES`) do not apply to it. Never taken
   * from a request body.
   */
  brokerTransactionId?: boolean | undefined;
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
  /** The partition's public id and the message's trace id (null: none), on a queued item (as the reference's push answer). */
  partition_id?: string;
  trace_id?: string | null;
  /** On a `buffered` item, as the reference's answer during push maintenance: the queue, and the caller's transactionId when it named one. */
  queue?: string;
  transactionId?: string;
  error?: string;
}

interface Planned {
  index: number;
  queue: string;
  partition: string;
  transactionId: string;
  messageId: string;
  traceId: string | null;
  /** The caller named the transactionId (only those are deduplicated). */
  explicit: boolean;
  stored: { payload: StoredPayload; encrypted: boolean };
  /** The queue's dedup window, ms, for an item with a caller-named transactionId; 0 otherwise. */
  dedupWindowMs: number;
  /** Earlier item of the same request with the same (queue, partition, transactionId), in a queue whose dedup window is on. */
  repeatOf?: number;
}

export interface PushPlan {
  items: Planned[];
  producerSub: string | null;
  /** The tenant whose queues the items go to. */
  tenant: string;
}

/**
 * Validates and plans a push without reading the store; repeats inside the request are marked.
 * @param options the options of the queues `items` name ({@link queueOptionsOf})
 * @param producerSub the caller's JWT `sub` (never taken from the body)
 * @param tenant the tenant whose queues the items name (default: the default tenant)
 * @throws QueenError `name_too_long`, `payload_too_large`, `encryption_unavailable`
 */
export function planPush(ctx: PushContext, options: QueueOptionsByName, items: readonly PushItem[], producerSub: string | null, tenant: string = DEFAULT_TENANT): PushPlan {
  const planned: Planned[] = [];
  const seen = new Map<string, number>();
  const maxPayload = ctx.maxPayloadBytes;
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    const queue = item.queue;
    const partition = item.partition ?? 'Default';
    ctx.checkName('queue', queue);
    ctx.checkName('partition', partition);
    const json = stringifyClientJson(item.payload === undefined ? null : item.payload);
    if (json.length > maxPayload && Buffer.byteLength(json, 'utf8') > maxPayload) {
      throw new QueenError('payload_too_large', `items[${index}].payload exceeds ${maxPayload} bytes`);
    }
    const q = options.get(queue);
    const messageId = item.messageId ?? newId();
    const explicitTxn = item.transactionId !== undefined && item.transactionId !== '';
    const transactionId = explicitTxn ? item.transactionId! : messageId;
    // Only a client's text is held to the name rules: an id the broker made (a 36-byte UUID, or a
    // replay's 40-byte `dlq:<id>`) must not fail a push when QUEEN_MAX_NAME_BYTES is below its length.
    if (explicitTxn && item.brokerTransactionId !== true) ctx.checkName('transactionId', transactionId);
    if (typeof item.traceId === 'string') ctx.checkName('traceId', item.traceId);
    const p: Planned = {
      index, queue, partition, transactionId, messageId, explicit: explicitTxn,
      traceId: typeof item.traceId === 'string' && item.traceId !== '' ? item.traceId : null,
      stored: ctx.codec.encode(q?.encryptionEnabled ?? false, json),
      dedupWindowMs: explicitTxn ? dedupWindowMsOf(options, queue) : 0,
    };
    if (p.dedupWindowMs > 0) { // a window of 0 turns dedup off, for repeats inside the request too
      const key = repeatKey(queue, partition, transactionId);
      const first = seen.get(key);
      if (first !== undefined) {
        p.repeatOf = first;
      } else {
        seen.set(key, index);
      }
    }
    planned.push(p);
  }
  return { items: planned, producerSub, tenant };
}

/**
 * Appends a planned push as one unit of the operation contract (its appends, all or nothing);
 * parked consumers are woken by the appends' hints after the commit.
 * @returns one result per planned item, in request order
 * @throws QueenError `storage_error` when the unit was refused (appends carry no condition: never expected)
 */
export async function appendPush(backend: QueueBackend, plan: PushPlan, now: number): Promise<PushResult[]> {
  const appends = pushAppends(plan, now);
  const unit = await backend.unit(appends.ops);
  if (!unit.committed) throw new QueenError('storage_error', 'a unit of appends was refused');
  return pushResults(plan, appends, unit.results as AppendResult[]);
}

/** A push as the contract's append ops, with where each planned item's answer is. */
export interface PushAppends {
  ops: Extract<UnitOp, { op: 'append' }>[];
  /** Per planned item: [op index, item index in that op], or undefined (a repeat). */
  slots: ([number, number] | undefined)[];
}

/**
 * The appends of a planned push: all items of one partition (and dedup window) go in one append,
 * in request order within it; the appends follow the order in which their partitions first appear.
 * Only items with a caller-named transactionId carry the queue's dedup window (ms). One append per
 * partition, not per run of consecutive items: a push of 100 items rotating over 16 partitions is
 * 16 appends (16 partition-head updates), not 100.
 */
export function pushAppends(plan: PushPlan, now: number): PushAppends {
  const ops: PushAppends['ops'] = [];
  const slots: PushAppends['slots'] = [];
  const byKey = new Map<string, { index: number; request: AppendRequest }>();
  for (const p of plan.items) {
    if (p.repeatOf !== undefined) {
      slots.push(undefined);
      continue;
    }
    const dedupWindowMs = p.dedupWindowMs;
    const key = `${p.queue}\u0000${p.partition}\u0000${dedupWindowMs}`; // names never hold NUL
    let group = byKey.get(key);
    if (!group) {
      group = { index: ops.length, request: { key: { tenant: plan.tenant, queue: p.queue, partition: p.partition }, items: [], dedupWindowMs, now } };
      byKey.set(key, group);
      ops.push({ op: 'append', request: group.request });
    }
    const last = group.request;
    slots.push([group.index, last.items.length]);
    last.items.push({
      messageId: p.messageId, transactionId: p.transactionId, payload: p.stored.payload, encrypted: p.stored.encrypted,
      traceId: p.traceId, producerSub: plan.producerSub,
    });
  }
  return { ops, slots };
}

/**
 * The answers of a push from its appends' results (`results[i]` answers `appends.ops[i]`).
 * @returns one result per planned item, in request order
 */
export function pushResults(plan: PushPlan, appends: PushAppends, results: readonly AppendResult[]): PushResult[] {
  const out: PushResult[] = [];
  plan.items.forEach((p, i) => {
    if (p.repeatOf !== undefined) {
      const first = out[p.repeatOf]!;
      const d: PushResult = { index: p.index, transaction_id: p.transactionId, queueName: p.queue, partition: p.partition, message_id: first.message_id, status: 'duplicate' };
      if (first.offset !== undefined) d.offset = first.offset;
      out.push(d);
      return;
    }
    const [op, k] = appends.slots[i]!;
    const r = results[op]!;
    const o = r.outcomes[k]!;
    const answer: PushResult = { index: p.index, transaction_id: p.transactionId, queueName: p.queue, partition: p.partition, message_id: o.messageId, status: o.status, offset: o.offset };
    if (o.status === 'queued') {
      answer.partition_id = r.partitionId;
      answer.trace_id = p.traceId;
    }
    out.push(answer);
  });
  return out;
}
