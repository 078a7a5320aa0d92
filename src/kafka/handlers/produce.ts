/**
 * Produce v3–9 (docs/kafka.md#produce): every RecordBatch v2 decoded (CRC-32C checked, the four
 * codecs under one budget per request), each record stored as one Queen message (the envelope,
 * src/kafka/mapping.ts), all partitions of the request appended in one broker push (one durable
 * unit) before the answer. `acks=0`: nothing is answered.
 */
import type { PushItem } from '../../broker/messaging/push.js';
import { isQueenError } from '../../errors.js';
import { ErrorCode } from '../errors.js';
import { envelopeText, visibleTopic } from '../mapping.js';
import { RawJson } from '../../util/json.js';
import type { ProducePartitionAnswer, ProduceRequestData } from '../protocol/produce.js';
import { BatchError, decodeBatches, DecodeBudget, type DecodedBatch } from '../protocol/records.js';
import type { Body, Handler } from './types.js';

/** Decompressed bytes one request may carry (docs/kafka.md#compression). */
export const DECODE_BYTES_BUDGET = 100 * 1024 * 1024;
/** Records one request may declare. */
export const DECODE_RECORDS_BUDGET = 1_000_000;

interface Pending {
  topic: string;
  answer: ProducePartitionAnswer;
  /** Batches to append, with their first item index in the push. */
  batches: { batch: DecodedBatch; first: number }[];
}

function answer(index: number, error_code: number, error_message: string | null = null, base_offset = -1): ProducePartitionAnswer {
  return { index, error_code, base_offset, log_append_time_ms: -1, log_start_offset: -1, error_message };
}

export const produce: Handler = async (ctx, conn, body) => {
  const req = body as unknown as ProduceRequestData;
  const responses: { name: string; partition_responses: ProducePartitionAnswer[] }[] = [];
  const pending: Pending[] = [];
  const items: PushItem[] = [];
  const budget = new DecodeBudget(DECODE_BYTES_BUDGET, DECODE_RECORDS_BUDGET);
  const refuse = (code: number, message: string | null) => ({
    responses: req.topic_data.map((t) => ({ name: t.name, partition_responses: t.partition_data.map((p) => answer(p.index, code, message)) })),
    throttle_time_ms: 0,
  });
  if (req.acks !== 0 && req.acks !== 1 && req.acks !== -1) return refuse(ErrorCode.INVALID_REQUIRED_ACKS, `acks=${req.acks} is not 0, 1 or -1`);
  if (!conn.may('write-only')) return req.acks === 0 ? null : refuse(ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'this credential may not produce (it needs write access)');
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
      for (const b of batches) {
        if (b.producerId >= 0) {
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
        const partition = String(p.index);
        // The envelope as its stored text (RawJson: the push stores it verbatim, no stringify).
        for (const rec of b.records) items.push({ queue: t.name, partition, payload: new RawJson(envelopeText(rec)) });
      }
      if (a.error_code === 0) pending.push(entry);
    }
  }

  if (items.length > 0) {
    try {
      const results = await ctx.services.broker.push(items, conn.subject);
      for (const e of pending) {
        for (const { batch, first } of e.batches) {
          const offset = results[first]?.offset ?? -1;
          if (e.answer.base_offset < 0) e.answer.base_offset = offset;
          if (batch.producerId >= 0 && offset >= 0) {
            ctx.producers.appended(batch.producerId, batch.producerEpoch, e.topic, e.answer.index, batch.baseSequence, batch.records.length, offset);
          }
        }
      }
    } catch (e) {
      const tooLarge = isQueenError(e) && e.code === 'payload_too_large';
      if (!isQueenError(e)) ctx.log.error({ err: e }, 'kafka: produce failed');
      for (const p of pending) {
        if (p.batches.length === 0) continue;
        p.answer.error_code = tooLarge ? ErrorCode.MESSAGE_TOO_LARGE : isQueenError(e) ? ErrorCode.REQUEST_TIMED_OUT : ErrorCode.UNKNOWN_SERVER_ERROR;
        p.answer.error_message = (e as Error).message;
      }
    }
  }
  if (req.acks === 0) return null;
  return { responses, throttle_time_ms: 0 } satisfies Body;
};
