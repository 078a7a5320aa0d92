/**
 * Trace events on messages (docs/http-api.md#traces): consumers record processing events against a
 * message address; operators list them per message, per trace name, and the names themselves.
 * Answers use the reference's snake_case keys.
 */
import { QueenError } from '../../errors.js';
import { checkNameText } from '../../util/names.js';
import type { TraceRow } from '../../storage/ops.js';
import { RawJson, stringifyClientJson } from '../../util/json.js';
import { iso } from '../../util/time.js';
import type { Broker } from '../broker.js';
import { QUEUE_MODE } from '../../model/subscription.js';

/** Names per event, and bytes per name. */
const MAX_NAMES = 32;
const MAX_NAME_BYTES = 256;
/** Events returned per message. */
const MAX_PER_MESSAGE = 1000;

export interface TraceInput {
  transactionId: string;
  partitionId: string;
  consumerGroup?: string | null | undefined;
  traceNames?: unknown;
  eventType?: string | null | undefined;
  data: unknown;
  workerId?: string | null | undefined;
}

function names(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  const out: string[] = [];
  for (const n of list) {
    if (typeof n !== 'string') throw new QueenError('invalid_request', 'traceNames must be a string or an array of strings');
    const t = n.trim();
    if (t === '') continue;
    if (Buffer.byteLength(t, 'utf8') > MAX_NAME_BYTES) throw new QueenError('invalid_request', `a trace name exceeds ${MAX_NAME_BYTES} bytes`);
    checkNameText('traceNames', t);
    if (!out.includes(t)) out.push(t);
  }
  if (out.length > MAX_NAMES) throw new QueenError('invalid_request', `at most ${MAX_NAMES} trace names per event`);
  return out;
}

/**
 * Records one event on a message of `tenant` (another tenant's partition id: `message_not_found`).
 * @throws QueenError `invalid_request`, `payload_too_large`, `name_too_long`, `invalid_name` (consumer group,
 *   worker id, event type, trace names), `message_not_found` (with `success:false`)
 */
export async function recordTrace(broker: Broker, tenant: string, input: TraceInput): Promise<{ success: true; traceId: string }> {
  const traceNames = names(input.traceNames);
  const data = stringifyClientJson(input.data);
  if (data.length > broker.config.limits.maxPayloadBytes) throw new QueenError('payload_too_large', 'trace data too large');
  const group = input.consumerGroup || QUEUE_MODE;
  broker.checkName('consumerGroup', group);
  if (input.workerId) broker.checkName('workerId', input.workerId);
  if (input.eventType) broker.checkName('eventType', input.eventType);
  const views = broker.backend.views;
  const p = await views.locate(tenant, input.partitionId);
  const live = p ? await views.findMessage(tenant, input.partitionId, input.transactionId, 0) : undefined;
  const dead = p && !live ? await broker.backend.dlq.findByAddress(input.partitionId, input.transactionId) : undefined;
  if (!p || (!live && !dead)) throw new QueenError('message_not_found', undefined, { success: false });
  const id = await broker.backend.traces.add({ tenant: p.tenant, queue: p.queue }, {
    partition: p.partition, partitionId: input.partitionId, transactionId: input.transactionId,
    messageId: live?.id ?? dead?.messageId ?? null, group, eventType: input.eventType || 'info', data,
    workerId: input.workerId ?? null, names: traceNames, createdAt: broker.clock.now(),
  });
  if (id === undefined) throw new QueenError('message_not_found', undefined, { success: false }); // its queue was deleted meanwhile
  return { success: true, traceId: id };
}

/** One trace event as answered (the reference's snake_case keys; `created_at` ISO-8601, `data` as recorded). */
export interface TraceView {
  id: string;
  event_type: string;
  data: RawJson;
  consumer_group: string;
  worker_id: string | null;
  created_at: string;
  trace_names: string[];
}

/** An event of {@link tracesByName}, with the message it is about. */
export interface NamedTraceView extends TraceView {
  transaction_id: string;
  partition_id: string;
  queue_name: string;
  partition_name: string;
  message_id: string | null;
}

/** `GET /api/v1/traces/by-name/:traceName`: one page and the true total. */
export interface TracesByName {
  traces: NamedTraceView[];
  total: number;
  pagination: { limit: number; offset: number };
}

/** `GET /api/v1/traces/names`: one page of names with counts (`last_seen` ISO-8601). */
export interface TraceNamesPage {
  trace_names: { trace_name: string; trace_count: number; message_count: number; last_seen: string }[];
  total: number;
  pagination: { limit: number; offset: number };
}

function view(t: TraceRow): TraceView {
  return {
    id: t.id, event_type: t.eventType, data: new RawJson(t.data), consumer_group: t.group, worker_id: t.workerId,
    created_at: iso(t.createdAt), trace_names: t.names,
  };
}

/** Events of one message of `tenant`, oldest first; none when the partition is another tenant's. */
export async function tracesOfMessage(broker: Broker, tenant: string, partitionId: string, transactionId: string): Promise<{ traces: TraceView[] }> {
  if (!await broker.backend.views.locate(tenant, partitionId)) return { traces: [] };
  return { traces: (await broker.backend.traces.byMessage(partitionId, transactionId, MAX_PER_MESSAGE)).map(view) };
}

/** Events of `tenant`'s messages carrying `name`, newest first. */
export async function tracesByName(broker: Broker, tenant: string, name: string, limit: number, offset: number): Promise<TracesByName> {
  const { rows, total } = await broker.backend.traces.byName(tenant, name, limit, offset);
  return {
    traces: rows.map((t) => ({
      ...view(t), transaction_id: t.transactionId, partition_id: t.partitionId, queue_name: t.queue, partition_name: t.partition,
      message_id: t.messageId,
    })),
    total, pagination: { limit, offset },
  };
}

/** Trace names of `tenant`'s messages with their counts. */
export async function traceNames(broker: Broker, tenant: string, limit: number, offset: number): Promise<TraceNamesPage> {
  const { rows, total } = await broker.backend.traces.names(tenant, limit, offset);
  return {
    trace_names: rows.map((r) => ({ trace_name: r.name, trace_count: r.traceCount, message_count: r.messageCount, last_seen: iso(r.lastSeen) })),
    total, pagination: { limit, offset },
  };
}
