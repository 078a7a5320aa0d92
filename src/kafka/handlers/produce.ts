/**
 * Produce v3–9 (docs/kafka.md#produce): every RecordBatch v2 decoded (CRC-32C checked, the four
 * codecs under one budget per request), each record stored as one Queen message (the envelope,
 * src/kafka/mapping.ts), all partitions of the request appended in one broker push (one durable
 * unit) before the answer; up to `QUEEN_KAFKA_COALESCE` requests of one connection already read
 * are appended together ({@link produceMany}). `acks=0`: nothing is answered.
 */
import type { PushItem, PushResult } from '../../broker/messaging/push.js';
import type { ConnectionInfo, KafkaContext } from '../context.js';
import { isQueenError } from '../../errors.js';
import { ErrorCode } from '../errors.js';
import { envelopeText, visibleTopic } from '../mapping.js';
import { RawJson } from '../../util/json.js';
import type { ProducePartitionAnswer, ProduceRequestData } from '../protocol/produce.js';
import { BatchError, decodeBatches, DecodeBudget, type DecodedBatch } from '../protocol/records.js';
import type { Body, Handler } from './types.js';

interface Pending {
  topic: string;
  answer: ProducePartitionAnswer;
  /** Batches to append, with their first item index in the push. */
  batches: { batch: DecodedBatch; first: number }[];
}

function answer(index: number, error_code: number, error_message: string | null = null, base_offset = -1): ProducePartitionAnswer {
  return { index, error_code, base_offset, log_append_time_ms: -1, log_start_offset: -1, error_message };
}

/** One Produce request decoded and checked, with the items it will append. */
interface Prepared {
  acks: number;
  responses: { name: string; partition_responses: ProducePartitionAnswer[] }[];
  pending: Pending[];
  items: PushItem[];
  /** Idempotent (producer, topic, partition) keys whose windows this request's checks read. */
  sequenced: Set<string>;
  /** Answered without an append (a refusal of the whole request); null = acks=0, no answer. */
  early?: Body | null;
}

/**
 * Decodes and checks one request (auto-creating topics) without appending.
 * @throws Error from the topic catalog's store reads (the connection closes)
 */
async function prepare(ctx: KafkaContext, conn: ConnectionInfo, body: Body): Promise<Prepared> {
  const req = body as unknown as ProduceRequestData;
  const responses: Prepared['responses'] = [];
  const pending: Pending[] = [];
  const items: PushItem[] = [];
  const sequenced = new Set<string>();
  // Records declared and bytes decompressed, the whole request: HTTP push's limits
  // (QUEEN_MAX_PUSH_ITEMS, QUEEN_MAX_BODY_BYTES; docs/kafka.md#compression).
  const budget = new DecodeBudget(ctx.config.maxDecodedBytes, ctx.config.maxRecordsPerRequest);
  const refuse = (code: number, message: string | null): Prepared => ({
    acks: req.acks, responses, pending, items, sequenced,
    early: {
      responses: req.topic_data.map((t) => ({ name: t.name, partition_responses: t.partition_data.map((p) => answer(p.index, code, message)) })),
      throttle_time_ms: 0,
    },
  });
  if (req.acks !== 0 && req.acks !== 1 && req.acks !== -1) return refuse(ErrorCode.INVALID_REQUIRED_ACKS, `acks=${req.acks} is not 0, 1 or -1`);
  if (!conn.may('write-only')) return req.acks === 0 ? { acks: 0, responses, pending, items, sequenced, early: null } : refuse(ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'this credential may not produce (it needs write access)');
  if (req.transactional_id !== null) return refuse(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'transactions are not supported by this broker');

  for (const t of req.topic_data) {
    const out: ProducePartitionAnswer[] = [];
    responses.push({ name: t.name, partition_responses: out });
    let topic = visibleTopic(t.name) ? await ctx.topics.get(t.name) : undefined;
    if (!topic && visibleTopic(t.name)) {
      try {
        topic = await ctx.topics.create(t.name, ctx.config.defaultPartitions);
      } catch (e) {
        if (!isQueenError(e)) ctx.log.error({ err: e, topic: t.name }, 'kafka: topic auto-creation failed');
      }
    }
    for (const p of t.partition_data) {
      const a = answer(p.index, 0);
      out.push(a);
      if (!topic || p.index < 0 || p.index >= topic.width) {
        a.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        continue;
      }
      let batches: DecodedBatch[];
      try {
        batches = p.records === null ? [] : decodeBatches(p.records, budget);
      } catch (e) {
        if (!(e instanceof BatchError)) throw e;
        a.error_code = e.code;
        a.error_message = e.message;
        continue;
      }
      const bad = batches.find((b) => b.control || b.transactional);
      if (bad) {
        a.error_code = bad.control ? ErrorCode.INVALID_RECORD : ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        continue;
      }
      if (batches.some((b) => b.producerId !== batches[0]!.producerId)) {
        a.error_code = ErrorCode.INVALID_RECORD; // idempotent and plain batches, or two producers, in one partition entry
        a.error_message = 'one partition entry mixes producers';
        continue;
      }
      const entry: Pending = { topic: t.name, answer: a, batches: [] };
      const partition = String(p.index);
      for (const b of batches) {
        if (b.producerId >= 0) {
          sequenced.add(`${b.producerId}\u0000${t.name}\u0000${p.index}`);
          const seq = ctx.producers.check(b.producerId, b.producerEpoch, t.name, p.index, b.baseSequence, b.records.length);
          if (seq.kind === 'error') {
            a.error_code = seq.code;
            break;
          }
          if (seq.kind === 'duplicate') {
            if (entry.batches.length === 0 && a.base_offset < 0) a.base_offset = seq.baseOffset;
            continue;
          }
        }
        entry.batches.push({ batch: b, first: items.length });
        // The envelope as its stored text (RawJson: the push stores it verbatim, no stringify).
        for (const rec of b.records) items.push({ queue: t.name, partition, payload: new RawJson(envelopeText(rec)) });
      }
      if (a.error_code === 0) pending.push(entry);
    }
  }
  return { acks: req.acks, responses, pending, items, sequenced };
}

/** Fills the answers of `p` from the push results of its items (`results[i]` answers `p.items[i]`). */
function settle(ctx: KafkaContext, p: Prepared, results: readonly PushResult[]): void {
  for (const e of p.pending) {
    for (const { batch, first } of e.batches) {
      const offset = results[first]?.offset ?? -1;
      if (e.answer.base_offset < 0) e.answer.base_offset = offset;
      if (batch.producerId >= 0 && offset >= 0) {
        ctx.producers.appended(batch.producerId, batch.producerEpoch, e.topic, e.answer.index, batch.baseSequence, batch.records.length, offset);
      }
    }
  }
}

/** Marks every partition of `p` that had records to append as failed with the push's error. */
function fail(ctx: KafkaContext, p: Prepared, e: unknown): void {
  const tooLarge = isQueenError(e) && e.code === 'payload_too_large';
  if (!isQueenError(e)) ctx.log.error({ err: e }, 'kafka: produce failed');
  for (const entry of p.pending) {
    if (entry.batches.length === 0) continue;
    entry.answer.error_code = tooLarge ? ErrorCode.MESSAGE_TOO_LARGE : isQueenError(e) ? ErrorCode.REQUEST_TIMED_OUT : ErrorCode.UNKNOWN_SERVER_ERROR;
    entry.answer.error_message = (e as Error).message;
  }
}

/**
 * Appends the items of several prepared requests as one broker push (one durable unit). When that
 * push is refused (nothing was written: a push is all or nothing), each request is pushed alone so
 * one request's refusal (e.g. a payload too large) is not answered to the others.
 */
async function append(ctx: KafkaContext, conn: ConnectionInfo, group: Prepared[]): Promise<void> {
  const withItems = group.filter((p) => p.items.length > 0);
  if (withItems.length === 0) return;
  if (withItems.length > 1) {
    try {
      const results = await ctx.services.broker.push(withItems.flatMap((p) => p.items), conn.subject);
      let at = 0;
      for (const p of withItems) {
        settle(ctx, p, results.slice(at, at + p.items.length));
        at += p.items.length;
      }
      return;
    } catch {
      // Retried one by one below; each answers its own outcome.
    }
  }
  for (const p of withItems) {
    try {
      settle(ctx, p, await ctx.services.broker.push(p.items, conn.subject));
    } catch (e) {
      fail(ctx, p, e);
    }
  }
}

function answerOf(p: Prepared): Body | null {
  if (p.early !== undefined) return p.early;
  if (p.acks === 0) return null;
  return { responses: p.responses, throttle_time_ms: 0 } satisfies Body;
}

export const produce: Handler = async (ctx, conn, body) => {
  const p = await prepare(ctx, conn, body);
  if (p.early === undefined) await append(ctx, conn, [p]);
  return answerOf(p);
};

/**
 * Several Produce requests of one connection, already read (docs/kafka.md#produce,
 * `QUEEN_KAFKA_COALESCE`): their records appended as one store unit, answered in request order.
 * A request whose idempotent batches name a (producer, topic, partition) an earlier request of the
 * group also names starts a new group after that one is appended, so its sequence check sees the
 * earlier batch (pipelined idempotent producers send consecutive sequences).
 * @returns one answer per request, in order (null: acks=0, nothing to send)
 */
export async function produceMany(ctx: KafkaContext, conn: ConnectionInfo, bodies: readonly Body[]): Promise<(Body | null)[]> {
  const all: Prepared[] = [];
  let group: Prepared[] = [];
  const keys = new Set<string>();
  for (const body of bodies) {
    let p = await prepare(ctx, conn, body);
    if ([...p.sequenced].some((k) => keys.has(k))) {
      await append(ctx, conn, group);
      group = [];
      keys.clear();
      p = await prepare(ctx, conn, body); // checked again against the windows just appended
    }
    all.push(p);
    if (p.early !== undefined) continue;
    group.push(p);
    for (const k of p.sequenced) keys.add(k);
  }
  await append(ctx, conn, group);
  return all.map(answerOf);
}
