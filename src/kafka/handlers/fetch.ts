/**
 * Fetch v4–6 and ListOffsets v1–5 (docs/kafka.md#fetch): reads take no lease and move no cursor;
 * each partition's messages go out as one uncompressed RecordBatch v2. A fetch with fewer bytes
 * than `min_bytes` parks until a push lands on a requested queue or `max_wait_ms` passes (cap 30 s).
 */
import { ErrorCode } from '../errors.js';
import { fromPayload, visibleTopic } from '../mapping.js';
import type { FetchPartitionAnswer, FetchRequestData } from '../protocol/fetch.js';
import type { ListOffsetsRequestData } from '../protocol/list-offsets.js';
import { encodeBatch, recordSize, type KafkaRecord } from '../protocol/records.js';
import type { KafkaContext } from '../context.js';
import type { Handler } from './types.js';

/** Ceiling of one fetch answer, bytes. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** Longest long poll, ms. */
const MAX_WAIT_MS = 30_000;
/** Messages read per partition per fetch at most. */
const MAX_RECORDS_PER_PARTITION = 5000;
/** An empty record set (librdkafka refuses a null one). */
const EMPTY = Buffer.alloc(0);

async function fetchOnce(ctx: KafkaContext, req: FetchRequestData, allowed: boolean): Promise<{ responses: { topic: string; partitions: FetchPartitionAnswer[] }[]; bytes: number; failed: boolean }> {
  let budget = Math.min(MAX_RESPONSE_BYTES, req.max_bytes > 0 ? req.max_bytes : MAX_RESPONSE_BYTES);
  let bytes = 0;
  let failed = false;
  const responses: { topic: string; partitions: FetchPartitionAnswer[] }[] = [];
  // Each distinct (topic, partition) is read and answered once, at its first mention, as Kafka
  // keys a fetch by partition (one partition named 2,000 times used to be read 2,000 times).
  const seen = new Set<string>();
  for (const t of req.topics) {
    const wanted = t.partitions.filter((p) => {
      const k = `${t.topic}\u0000${p.partition}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    if (wanted.length === 0) continue;
    const partitions: FetchPartitionAnswer[] = [];
    responses.push({ topic: t.topic, partitions });
    const topic = visibleTopic(t.topic) ? await ctx.topics.get(t.topic) : undefined;
    // Every partition's bounds in one read (a fetch names up to the whole width).
    const bounds = new Map((topic ? await ctx.services.logs.partitions(t.topic) ?? [] : []).map((x) => [x.name, x]));
    for (const p of wanted) {
      const a: FetchPartitionAnswer = {
        partition_index: p.partition, error_code: 0, high_watermark: -1, last_stable_offset: -1, log_start_offset: -1, aborted_transactions: [], records: EMPTY,
      };
      partitions.push(a);
      if (!allowed) {
        a.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED;
        failed = true;
        continue;
      }
      if (!topic || p.partition < 0 || p.partition >= topic.width) {
        a.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        failed = true;
        continue;
      }
      const name = String(p.partition);
      const b = bounds.get(name) ?? { headOffset: 0, firstOffset: 0 };
      a.high_watermark = b.headOffset;
      a.last_stable_offset = b.headOffset;
      a.log_start_offset = b.firstOffset;
      if (p.fetch_offset < b.firstOffset || p.fetch_offset > b.headOffset) {
        a.error_code = ErrorCode.OFFSET_OUT_OF_RANGE;
        failed = true;
        continue;
      }
      if (p.fetch_offset === b.headOffset || (budget <= 0 && bytes > 0)) continue;
      const limit = Math.min(p.partition_max_bytes > 0 ? p.partition_max_bytes : budget, budget);
      const entries = await ctx.services.logs.read(t.topic, name, p.fetch_offset, MAX_RECORDS_PER_PARTITION, Math.max(1, limit));
      if (entries.length === 0) continue;
      const records: KafkaRecord[] = [];
      let size = 0;
      for (const e of entries) {
        const rec = fromPayload(e.json, e.offset, e.createdAt);
        const s = recordSize(rec);
        if (records.length > 0 && size + s > limit) break;
        if (records.length === 0 && bytes > 0 && s > budget) break; // only the response's first record may exceed
        size += s;
        records.push(rec);
      }
      if (records.length === 0) continue;
      a.records = encodeBatch(records).finish();
      bytes += a.records.length;
      budget -= a.records.length;
    }
  }
  return { responses, bytes, failed };
}

export const fetch: Handler = async (ctx, conn, body) => {
  const req = body as unknown as FetchRequestData;
  const deadline = Date.now() + Math.min(Math.max(req.max_wait_ms, 0), MAX_WAIT_MS);
  const queues = req.topics.map((t) => t.topic);
  for (;;) {
    const generation = ctx.wakeups.generation(queues);
    const r = await fetchOnce(ctx, req, conn.may('read-only'));
    const left = deadline - Date.now();
    // min_bytes 0 answers at once, as in Kafka; any partition error releases the poll.
    if (r.failed || r.bytes >= req.min_bytes || left <= 0 || ctx.wakeups.stopped) return { throttle_time_ms: 0, responses: r.responses };
    await ctx.wakeups.wait(queues, left, generation);
  }
};

export const listOffsets: Handler = async (ctx, conn, body) => {
  const allowed = conn.may('read-only');
  const req = body as unknown as ListOffsetsRequestData;
  const topics = [];
  for (const t of req.topics) {
    const topic = visibleTopic(t.name) ? await ctx.topics.get(t.name) : undefined;
    const partitions = [];
    for (const p of t.partitions) {
      const a = { partition_index: p.partition_index, error_code: 0, timestamp: -1, offset: -1, leader_epoch: -1 };
      partitions.push(a);
      if (!allowed || !topic || p.partition_index < 0 || p.partition_index >= topic.width) {
        a.error_code = allowed ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.TOPIC_AUTHORIZATION_FAILED;
        continue;
      }
      const name = String(p.partition_index);
      const b = await ctx.services.logs.bounds(t.name, name);
      if (p.timestamp === -1) {
        a.offset = b.headOffset;
      } else if (p.timestamp === -2) {
        a.offset = b.firstOffset;
      } else {
        // The first record appended at or after the time; never the one before (docs/kafka.md#list-offsets).
        const hit = await ctx.services.logs.firstAtOrAfter(t.name, name, p.timestamp);
        if (hit) {
          a.offset = hit.offset;
          a.timestamp = hit.createdAt;
        }
      }
    }
    topics.push({ name: t.name, partitions });
  }
  return { throttle_time_ms: 0, topics };
};
