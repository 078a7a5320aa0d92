/**
 * Message inspection and dead-letter administration (docs/http-api.md#messages, docs/http-api.md#dead-letters): listings with
 * keyset pagination, one message by address, deletes of dead letters, replay of a dead letter into
 * a live partition, and the per-queue dead-letter purge.
 *
 * Listing order is newest first by (createdAt, partition, offset); the page token encodes the last
 * key returned, so a page never skips or repeats a row that existed when the listing started,
 * however many messages arrive meanwhile (new ones land before the first page).
 */
import { QueenError } from '../../errors.js';
import type { ListedMessage, MessageKey } from '../../storage/ops.js';
import type { DlqRow, StoredPayload } from '../../storage/store.js';
import { RawJson } from '../../util/json.js';
import { iso, isoOrNull } from '../../util/time.js';
import type { Activity } from './activity.js';
import type { Broker } from '../broker.js';
import { optionsView } from './resources.js';
import { groupPosition, partitionLag, readingGroups, type ViewReads } from '../messaging/positions.js';
import { planPush, pushAppends, pushResults, queueOptionsOf, type PushResult } from '../messaging/push.js';
import { type AppendResult, type DlqSubStore, type ViewGroup as GroupState, type ViewPartition as PartitionState, type ViewQueue as QueueState } from '../../storage/contract.js';
import type { PayloadCodec } from '../../model/codec.js';
import type { QueueOptions } from '../../model/options.js';
import { QUEUE_MODE } from '../../model/subscription.js';
import { queueSlot } from '../../model/tenancy.js';

/** Rows read at most per listing request when a `status` filter discards rows. */
const STATUS_SCAN_CAP = 5000;
/** Dead letters removed per unit of work by a purge. */
const PURGE_STEP = 1000;

export type MessageStatus = 'pending' | 'processing' | 'completed';

/** One message of a listing (`data` and its alias `payload`: the client's JSON, null when it failed authentication). */
export interface ListedMessageView {
  id: string;
  transactionId: string;
  partitionId: string;
  partition: string;
  queue: string;
  data: RawJson | null;
  payload: RawJson | null;
  traceId: string | null;
  producerSub: string | null;
  /** ISO-8601. */
  createdAt: string;
  offset: number;
  status: MessageStatus;
  isEncrypted: boolean;
  /** `payload_integrity_failed` when the stored payload did not decrypt. */
  error?: string;
}

/** `GET /api/v1/messages`: one keyset page (`nextCursor` null on the last). */
export interface MessagePage {
  messages: ListedMessageView[];
  pagination: { limit: number; nextCursor: string | null; hasMore: boolean };
}

/** A group's view of one message in {@link MessageDetail}. */
export interface MessageGroupStatus {
  name: string;
  status: MessageStatus;
  leaseExpiresAt: string | null;
}

/** `GET /api/v1/messages/:partitionId/:transactionId` (times ISO-8601). */
export interface MessageDetail {
  id: string;
  transactionId: string;
  data: RawJson | null;
  payload: RawJson | null;
  traceId: string | null;
  producerSub: string | null;
  createdAt: string;
  partitionId: string;
  partition: string;
  isEncrypted: boolean;
  queue: string;
  /** `<queue>/<partition>`. */
  queuePath: string;
  namespace: string;
  task: string;
  offset: number;
  status: MessageStatus | 'dead_letter';
  errorMessage: string | null;
  retryCount: number;
  leaseExpiresAt: string | null;
  queueConfig: QueueOptions;
  mode: { hasQueueMode: boolean; busGroupsCount: number; type: 'bus' | 'queue' };
  consumerGroups: MessageGroupStatus[];
  /** Set when only the dead letter remains (retention removed the live message). */
  liveMessageRemoved?: true;
  error?: string;
}

/** Answer of {@link deleteDeadLetter}. */
export interface DeadLetterDeleted {
  success: true;
  partitionId: string;
  transactionId: string;
  deleted: number;
  message: string;
}

/** Answer of {@link replayDeadLetter}: `moved`, or `duplicate` when a replay of it is already stored. */
export interface ReplayResult {
  success: true;
  result: 'moved' | 'duplicate';
  queue: string;
  partition: string;
  consumerGroup: string;
  dlqId: string;
  originalTransactionId: string;
  /** The push result of the replayed message (wire casing of docs/http-api.md#push). */
  replayedAs: {
    index: number;
    message_id: string;
    transaction_id: string;
    queueName: string;
    status: PushResult['status'];
    offset: number | null;
  };
  dlqRowRemoved: boolean;
}

/** Answer of {@link purgeDeadLetters}. */
export interface PurgeResult {
  success: true;
  deleted: number;
  queue: string;
  consumerGroup: string | null;
}

export interface MessageListQuery {
  queue?: string | undefined;
  partition?: string | undefined;
  namespace?: string | undefined;
  task?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
  status?: MessageStatus | undefined;
  limit: number;
  /** Opaque page token from a previous answer. */
  cursor?: string | undefined;
}

/** Encodes a listing key as an opaque URL-safe token. */
export function encodeCursor(k: MessageKey): string {
  return Buffer.from(`${k.createdAt}.${k.partitionPk}.${k.offset}`, 'utf8').toString('base64url');
}

/** @throws QueenError `invalid_request` for a token this broker did not issue */
export function decodeCursor(token: string): MessageKey {
  const m = /^(\d{1,16})\.(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!m) throw new QueenError('invalid_request', 'cursor is not a page token issued by this broker');
  return { createdAt: Number(m[1]), partitionPk: Number(m[2]), offset: Number(m[3]) };
}

function keyOf(m: ListedMessage): MessageKey {
  return { createdAt: m.createdAt, partitionPk: m.partitionPk, offset: m.offset };
}

/** Listing order: newer first. Negative when `a` comes before `b`. */
function compareKeys(a: MessageKey, b: MessageKey): number {
  return b.createdAt - a.createdAt || b.partitionPk - a.partitionPk || b.offset - a.offset;
}

/** The stored payload as its exact JSON text, or null with the integrity error. */
function decodePayload(codec: PayloadCodec, payload: StoredPayload, encrypted: boolean): { data: RawJson | null; error?: string } {
  try {
    return { data: new RawJson(codec.decode(payload, encrypted)) };
  } catch {
    return { data: null, error: 'payload_integrity_failed' };
  }
}

/**
 * Status of an offset of `p` over the queue's readers, its named groups or else its queue-mode
 * group (`readingGroups`; cached per group and partition): completed once every reader is past it.
 */
class StatusResolver {
  private readonly cache = new Map<string, { position: number; leaseEnd: number }>();
  constructor(private readonly v: ViewReads, private readonly now: number) {}

  status(p: PartitionState, offset: number): MessageStatus {
    const groups = readingGroups(p.queue);
    if (groups.length === 0) return 'pending';
    let done = 0;
    let processing = false;
    for (const g of groups) {
      const s = this.standing(g, p);
      if (offset < s.position) done++;
      else if (offset < s.leaseEnd) processing = true;
    }
    if (done === groups.length) return 'completed';
    return processing ? 'processing' : 'pending';
  }

  private standing(g: GroupState, p: PartitionState): { position: number; leaseEnd: number } {
    const k = `${g.name}\u0000${p.pk}`;
    let s = this.cache.get(k);
    if (!s) {
      const l = partitionLag(this.v, g, p, this.now);
      s = { position: l.position, leaseEnd: l.position + l.processing };
      this.cache.set(k, s);
    }
    return s;
  }
}

function targetQueues(v: ViewReads, q: MessageListQuery): QueueState[] {
  if (q.queue !== undefined) {
    const queue = v.model.queue(q.queue);
    if (!queue) throw new QueenError('queue_not_found');
    return [queue];
  }
  return [...v.model.queues()].filter((x) => (!q.namespace || x.namespace === q.namespace) && (!q.task || x.task === q.task));
}

/**
 * `GET /api/v1/messages`: one page, newest first.
 * @throws QueenError `queue_not_found`, `partition_not_found`, `invalid_request`
 */
export async function listMessages(v: ViewReads, codec: PayloadCodec, q: MessageListQuery, now: number): Promise<MessagePage> {
  if (q.partition !== undefined && q.queue === undefined) throw new QueenError('invalid_request', 'partition needs queue');
  if (q.from !== undefined && q.to !== undefined && q.from > q.to) throw new QueenError('invalid_request', 'from must not be after to');
  const queues = targetQueues(v, q);
  let partition: PartitionState | undefined;
  if (q.partition !== undefined) {
    partition = queues[0]!.partitions.get(q.partition);
    if (!partition) throw new QueenError('partition_not_found');
  }
  const resolver = new StatusResolver(v, now);
  let after = q.cursor !== undefined ? decodeCursor(q.cursor) : undefined;
  const out: ListedMessageView[] = [];
  let scanned = 0;
  let more = true;
  let last: MessageKey | undefined;
  while (out.length < q.limit && scanned < STATUS_SCAN_CAP) {
    const want = q.status === undefined ? q.limit - out.length : Math.min(STATUS_SCAN_CAP - scanned, Math.max(q.limit * 2, 100));
    // One page per queue, merged: O(queues × want) rows, each query an index range.
    const rows: ListedMessage[] = [];
    for (const queue of queues) {
      rows.push(...await v.store.listMessages(v.tenant, {
        queuePk: queue.pk, partitionPk: partition?.pk, from: q.from, to: q.to, after, limit: want,
      }));
    }
    rows.sort((a, b) => compareKeys(keyOf(a), keyOf(b)));
    const page = rows.slice(0, want);
    let i = 0;
    while (i < page.length && out.length < q.limit) {
      const m = page[i++]!;
      scanned++;
      last = keyOf(m);
      const p = v.model.partitionByPk(m.partitionPk);
      if (!p) continue;
      const status = resolver.status(p, m.offset);
      if (q.status === undefined || status === q.status) out.push(render(codec, p, m, status));
    }
    if (i < page.length) break; // page filled mid-way: more rows follow `last`
    if (page.length < want) {
      more = false;
      break;
    }
    after = last;
  }
  const nextCursor = more && last !== undefined ? encodeCursor(last) : null;
  return {
    messages: out,
    pagination: { limit: q.limit, nextCursor, hasMore: nextCursor !== null },
  };
}

/** One row of `GET /api/v1/status/queues/:queue/messages` (the reference's shape; `createdAt` ISO-8601). */
export interface QueueMessageRow {
  id: string;
  transactionId: string;
  partitionId: string;
  /** `<queue>/<partition>`. */
  queuePath: string;
  queue: string;
  partition: string;
  status: MessageStatus;
  createdAt: string;
}

/**
 * Deepest `offset` {@link queueMessages} pages to: each skipped row is read and its payload decoded,
 * so `offset` + `limit` stays within two pages of `GET /api/v1/messages` (1,000 rows each).
 */
export const QUEUE_MESSAGES_MAX_OFFSET = 1000;

/**
 * `GET /api/v1/status/queues/:queue/messages`: the queue's messages newest first, `limit` of them
 * after skipping `offset`, as the reference's status route answers (queen-mq/queen:
 * lib/schema/procedures/009_status.sql, `get_queue_messages_v1`); `[]` for a queue that does not
 * exist. Read through {@link listMessages}' keyset pages, so an offset costs the rows it skips.
 * @param limit 1…1000; @param offset 0…{@link QUEUE_MESSAGES_MAX_OFFSET}
 */
export async function queueMessages(v: ViewReads, codec: PayloadCodec, queue: string, limit: number, offset: number, now: number): Promise<QueueMessageRow[]> {
  if (!v.model.queue(queue)) return [];
  const rows: QueueMessageRow[] = [];
  let skip = offset;
  let cursor: string | undefined;
  while (rows.length < limit) {
    const page = await listMessages(v, codec, { queue, limit: Math.min(1000, skip + limit - rows.length), cursor }, now);
    for (const m of page.messages) {
      if (skip > 0) {
        skip--;
        continue;
      }
      if (rows.length === limit) break;
      rows.push({ id: m.id, transactionId: m.transactionId, partitionId: m.partitionId, queuePath: `${m.queue}/${m.partition}`, queue: m.queue, partition: m.partition, status: m.status, createdAt: m.createdAt });
    }
    if (page.pagination.nextCursor === null) break;
    cursor = page.pagination.nextCursor;
  }
  return rows;
}

function render(codec: PayloadCodec, p: PartitionState, m: ListedMessage, status: MessageStatus): ListedMessageView {
  const d = decodePayload(codec, m.payload, m.encrypted);
  return {
    id: m.id, transactionId: m.transactionId, partitionId: p.id, partition: p.name, queue: p.queue.name,
    data: d.data, payload: d.data, traceId: m.traceId, producerSub: m.producerSub, createdAt: iso(m.createdAt),
    offset: m.offset, status, isEncrypted: m.encrypted, ...(d.error ? { error: d.error } : {}),
  };
}

/**
 * `GET /api/v1/messages/:partitionId/:transactionId`: the live message (or its newest dead letter).
 * @throws QueenError `message_not_found`
 */
export async function getMessage(
  v: ViewReads, codec: PayloadCodec, dlqStore: DlqSubStore, partitionId: string, transactionId: string, now: number,
): Promise<MessageDetail> {
  const p = v.model.partitionById(partitionId);
  const dlq = p ? await dlqStore.findByAddress(partitionId, transactionId) : undefined;
  const live = p ? await v.store.findMessage(v.tenant, partitionId, transactionId, 0) : undefined;
  if (!p || (!live && !dlq)) throw new QueenError('message_not_found');
  const q = p.queue;
  const groups = [...q.groups.values()];
  const consumerGroups = live
    ? groups.map((g): MessageGroupStatus => {
      const l = partitionLag(v, g, p, now);
      const consumed = live.offset < groupPosition(v, g, p);
      return { name: g.name, status: consumed ? 'completed' : live.offset < l.position + l.processing ? 'processing' : 'pending', leaseExpiresAt: isoOrNull(l.leaseExpiresAt) };
    })
    : [];
  const status: MessageDetail['status'] = dlq ? 'dead_letter' : live ? new StatusResolver(v, now).status(p, live.offset) : 'dead_letter';
  const src = live ?? dlq!;
  const d = decodePayload(codec, src.payload, src.encrypted);
  const busGroups = groups.filter((g) => g.name !== QUEUE_MODE).length;
  const qmLag = q.groups.get(QUEUE_MODE) ? partitionLag(v, q.groups.get(QUEUE_MODE)!, p, now) : undefined;
  return {
    id: live?.id ?? dlq!.messageId, transactionId, data: d.data, payload: d.data, traceId: src.traceId, producerSub: src.producerSub,
    createdAt: iso(src.createdAt), partitionId: p.id, partition: p.name, isEncrypted: src.encrypted, queue: q.name,
    queuePath: `${q.name}/${p.name}`, namespace: q.namespace, task: q.task, offset: live?.offset ?? dlq!.offset, status,
    errorMessage: dlq?.error ?? null, retryCount: dlq?.retryCount ?? (q.groups.get(QUEUE_MODE)?.cursors.get(p.pk)?.retryCount ?? 0),
    leaseExpiresAt: isoOrNull(qmLag?.leaseExpiresAt ?? null), queueConfig: optionsView(q.options),
    mode: { hasQueueMode: q.groups.has(QUEUE_MODE), busGroupsCount: busGroups, type: busGroups > 0 ? 'bus' : 'queue' },
    consumerGroups, ...(live ? {} : { liveMessageRemoved: true }), ...(d.error ? { error: d.error } : {}),
  };
}

/**
 * `DELETE /api/v1/messages/:partitionId/:transactionId`: deletes the address's dead letters
 * (live messages are immutable) when the partition is `tenant`'s.
 * @throws QueenError `message_not_found` (with `success:false`)
 */
export async function deleteDeadLetter(
  broker: Broker, activity: Activity, tenant: string, partitionId: string, transactionId: string,
): Promise<DeadLetterDeleted> {
  const owned = await broker.backend.views.locate(tenant, partitionId) !== undefined; // another tenant's address: not found
  const r = owned ? await broker.backend.dlq.deleteByAddress(partitionId, transactionId) : { deleted: 0, queue: undefined };
  if (r.deleted === 0 || r.queue === undefined) throw new QueenError('message_not_found', undefined, { success: false, partitionId, transactionId });
  activity.dlqChanged(queueSlot(tenant, r.queue), -r.deleted);
  return { success: true, partitionId, transactionId, deleted: r.deleted, message: 'Dead letter deleted' };
}

/** Where a replay puts the message (defaults: the dead letter's own queue and partition). */
export interface ReplayTarget {
  queue?: string | undefined;
  partition?: string | undefined;
}

/** A replay of the same dead letter already stored in the target partition inside its dedup window (`windowMs`; 0 = off). */
async function storedReplay(
  broker: Broker, tenant: string, transactionId: string, queue: string, partition: string, windowMs: number, now: number,
): Promise<{ id: string; offset: number } | undefined> {
  if (windowMs <= 0) return undefined;
  const p = await broker.backend.readPartition({ tenant, queue, partition });
  return p ? broker.backend.views.findMessage(tenant, p.partitionId, transactionId, now - windowMs) : undefined;
}

/**
 * Decides and runs a replay as one unit of the operation contract: the push (refusing a
 * duplicate) and the dead letter's deletion (refused when another replay took it); a replay
 * already stored is answered as the duplicate without a unit.
 */
async function moveDeadLetter(
  broker: Broker, tenant: string, find: () => Promise<DlqRow | undefined>, target: ReplayTarget,
): Promise<{ row: DlqRow; result: PushResult; dlqRowRemoved: boolean } | undefined> {
  for (let attempt = 1; ; attempt++) {
    const row = await find();
    if (!row) return undefined;
    const now = broker.clock.now();
    const decoded = decodePayload(broker.codec, row.payload, row.encrypted);
    if (decoded.error) throw new QueenError('payload_integrity_failed', undefined, { success: false, dlqRowRemoved: false });
    const queue = target.queue ?? row.queue;
    const partition = target.partition ?? row.partition;
    const items = [{ queue, partition, payload: decoded.data, transactionId: `dlq:${row.id}`, brokerTransactionId: true, traceId: row.traceId }];
    const plan = planPush(broker, await queueOptionsOf(broker.backend, items, tenant), items, row.producerSub, tenant);
    const stored = await storedReplay(broker, tenant, plan.items[0]!.transactionId, queue, partition, plan.items[0]!.dedupWindowMs, now);
    if (stored) {
      // The row was read before a concurrent replay committed (the push and the row's removal
      // commit together): read it again, so that replay is the only one answered as moved.
      if (!await find()) return undefined;
      const base = { index: 0, transaction_id: plan.items[0]!.transactionId, queueName: queue, partition };
      return { row, result: { ...base, message_id: stored.id, status: 'duplicate', offset: stored.offset }, dlqRowRemoved: false };
    }
    const appends = pushAppends(plan, now);
    for (const a of appends.ops) a.request.refuseDuplicates = true;
    const unit = await broker.backend.unit([...appends.ops, { op: 'dlqDelete', id: row.id }]);
    if (unit.committed) return { row, result: pushResults(plan, appends, unit.results.slice(0, appends.ops.length) as AppendResult[])[0]!, dlqRowRemoved: true };
    if (unit.failedIndex === appends.ops.length) return undefined; // another replay took it
    if (attempt >= 8) throw new QueenError('storage_error', 'replay kept racing other commits (8 attempts)');
  }
}

/**
 * Moves a dead letter back into a live partition in one unit of work: push with transactionId
 * `dlq:<id>` (so a second replay dedupes) and delete the dead letter. Exactly once: the row and
 * the push commit together. `find` must answer `tenant`'s dead letters only; the message goes
 * back into `tenant`'s queue.
 * @throws QueenError `dlq_not_found` (`result:"gone"`), `maintenance_mode`
 */
export async function replayDeadLetter(
  broker: Broker, activity: Activity, tenant: string, find: () => Promise<DlqRow | undefined>, target: ReplayTarget, pushBlocked: boolean,
): Promise<ReplayResult> {
  if (pushBlocked) {
    throw new QueenError('maintenance_mode', 'push maintenance is on: replay refused, try again when it is off', { success: false, result: 'maintenance' });
  }
  const out = await moveDeadLetter(broker, tenant, find, target);
  if (!out) throw new QueenError('dlq_not_found', undefined, { success: false, result: 'gone' });
  const { row, result, dlqRowRemoved } = out;
  if (dlqRowRemoved) activity.dlqChanged(queueSlot(tenant, row.queue), -1);
  if (result.status === 'queued') {
    broker.counters.pushMessages++;
    activity.pushed([result], broker.clock.now(), tenant);
  }
  return {
    success: true, result: result.status === 'queued' ? 'moved' : 'duplicate', queue: result.queueName, partition: result.partition,
    consumerGroup: row.group, dlqId: row.id, originalTransactionId: row.transactionId,
    replayedAs: {
      index: 0, message_id: result.status === 'queued' ? result.message_id : '00000000-0000-0000-0000-000000000000',
      transaction_id: result.transaction_id, queueName: result.queueName, status: result.status, offset: result.offset ?? null,
    },
    dlqRowRemoved,
  };
}

/**
 * `DELETE /api/v1/dlq?queue=`: purges the dead letters of `tenant`'s queue (optionally one group), in steps of
 * {@link PURGE_STEP} rows per unit of work so a large purge never stalls other requests.
 * @throws QueenError `queue_not_found`
 */
export async function purgeDeadLetters(
  broker: Broker, activity: Activity, tenant: string, queue: string, group: string | undefined,
): Promise<PurgeResult> {
  const key = { tenant, queue };
  if (!await broker.backend.admin.readQueue(key)) throw new QueenError('queue_not_found', undefined, { success: false });
  let deleted = 0;
  for (;;) {
    const n = await broker.backend.dlq.purge(key, group, PURGE_STEP);
    deleted += n;
    activity.dlqChanged(queueSlot(tenant, queue), -n);
    if (n < PURGE_STEP) break;
  }
  return { success: true, deleted, queue, consumerGroup: group ?? null };
}
