/**
 * RecordBatch v2 (magic 2) read and write (docs/kafka.md#records-and-messages): CRC-32C checked
 * on read and computed on write, the four codecs decompressed under one byte budget per request
 * checked before allocating (a tiny zstd frame can claim gigabytes; an lz4 frame is walked in full
 * first, lz4.ts). Fetch answers are always written uncompressed.
 */
import { isUtf8 } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import { crc32c } from '@node-rs/crc32';
import { decompress as zstdDecompress } from 'fzstd';
import * as snappy from 'snappyjs';
import { lz4Decompress, Lz4FrameError } from './lz4.js';
import { Reader } from './reader.js';
import { Writer } from './writer.js';

/** One record header; a null value is kept distinct from an empty one. */
export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

/** One record, offsets absolute. */
export interface KafkaRecord {
  offset: number;
  /** CreateTime, epoch ms (−1 when the producer sent none). */
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
}

/** A decoded batch: what Produce needs to decide on it. */
export interface DecodedBatch {
  baseOffset: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  transactional: boolean;
  control: boolean;
  records: KafkaRecord[];
}

/** Why a batch was refused: Kafka error codes (docs/kafka.md#error-codes). */
export class BatchError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

export const CORRUPT_MESSAGE = 2;
export const MESSAGE_TOO_LARGE = 10;
export const INVALID_TIMESTAMP = 32;
export const UNSUPPORTED_FOR_MESSAGE_FORMAT = 43;
/** A record the broker refuses to store as sent (a header key that is not UTF-8). */
export const INVALID_RECORD = 87;

/** A per-request decompression budget (bytes and records), shared by every batch of the request. */
export class DecodeBudget {
  constructor(public bytes: number, public records: number) {}

  take(bytes: number, records: number): void {
    if (bytes > this.bytes || records > this.records) throw new BatchError(MESSAGE_TOO_LARGE, 'batch exceeds the decompression budget');
    this.bytes -= bytes;
    this.records -= records;
  }
}

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);

/** Frame_Content_Size of a zstd frame, or undefined when the header omits it. */
function zstdContentSize(b: Uint8Array): number | undefined {
  if (b.length < 6 || b[0] !== 0x28 || b[1] !== 0xb5 || b[2] !== 0x2f || b[3] !== 0xfd) throw new BatchError(CORRUPT_MESSAGE, 'not a zstd frame');
  const fhd = b[4]!;
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  const dictFlag = fhd & 3;
  let pos = 5 + (single ? 0 : 1) + [0, 1, 2, 4][dictFlag]!;
  const size = fcsFlag === 0 ? (single ? 1 : 0) : [1, 2, 4, 8][fcsFlag]!;
  if (size === 0) return undefined;
  if (pos + size > b.length) throw new BatchError(CORRUPT_MESSAGE, 'short zstd header');
  let v = 0;
  for (let i = 0; i < size; i++) v += b[pos++]! * 2 ** (8 * i);
  return size === 2 ? v + 256 : v;
}

function snappyBlock(block: Uint8Array, budget: DecodeBudget): Buffer {
  const out = snappy.uncompress(block, budget.bytes);
  budget.take(out.length, 0);
  return Buffer.from(out.buffer, out.byteOffset, out.length);
}

/**
 * Decompresses `data` of codec `codec` (attribute bits 0–2) under `budget`.
 * @throws BatchError MESSAGE_TOO_LARGE over budget, CORRUPT_MESSAGE on bad data
 */
export function decompress(codec: number, data: Buffer, budget: DecodeBudget): Buffer {
  try {
    switch (codec) {
      case 1: {
        const out = gunzipSync(data, { maxOutputLength: Math.max(1, budget.bytes) });
        budget.take(out.length, 0);
        return out;
      }
      case 2: {
        if (data.length >= 16 && data.subarray(0, 8).equals(XERIAL_MAGIC)) {
          const parts: Buffer[] = [];
          const r = new Reader(data, 16);
          while (r.remaining > 0) parts.push(snappyBlock(r.raw(r.int32()), budget));
          return Buffer.concat(parts);
        }
        return snappyBlock(data, budget);
      }
      case 3: {
        // The frame is walked in full first (lz4.ts), its exact size charged before allocating.
        return lz4Decompress(data, (bytes) => budget.take(bytes, 0));
      }
      case 4: {
        const declared = zstdContentSize(data);
        if (declared !== undefined) budget.take(declared, 0);
        const out = zstdDecompress(data, declared !== undefined ? new Uint8Array(declared) : undefined);
        if (declared === undefined) budget.take(out.length, 0);
        return Buffer.from(out.buffer, out.byteOffset, out.length);
      }
      default:
        throw new BatchError(CORRUPT_MESSAGE, `unknown compression codec ${codec}`);
    }
  } catch (e) {
    if (e instanceof BatchError) throw e;
    if (e instanceof Lz4FrameError) throw new BatchError(CORRUPT_MESSAGE, e.message);
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE' || /too big|exceeds/i.test(err.message)) throw new BatchError(MESSAGE_TOO_LARGE, 'batch exceeds the decompression budget');
    throw new BatchError(CORRUPT_MESSAGE, `cannot decompress: ${err.message}`);
  }
}

function readRecord(r: Reader, baseOffset: number, baseTimestamp: number): KafkaRecord {
  const len = r.varint();
  const end = r.offset + len;
  if (len < 0 || end > r.buf.length) throw new BatchError(CORRUPT_MESSAGE, 'record length out of bounds');
  r.int8(); // attributes (unused)
  const tsDelta = r.varlong();
  const offDelta = r.varint();
  const kl = r.varint();
  // Views into the request's frame, not copies: the produce path turns them into base64 at once.
  const key = kl < 0 ? null : r.raw(kl);
  const vl = r.varint();
  const value = vl < 0 ? null : r.raw(vl);
  const hc = r.varint();
  if (hc < 0 || hc > r.remaining) throw new BatchError(CORRUPT_MESSAGE, `header count ${hc} out of bounds`);
  const headers: RecordHeader[] = [];
  for (let i = 0; i < hc; i++) {
    const kl = r.varint();
    if (kl < 0) throw new BatchError(CORRUPT_MESSAGE, `header key length ${kl} is negative`);
    const keyBytes = r.raw(kl);
    // A header key is a string, stored as text: bytes that are not UTF-8 would come back as U+FFFD.
    if (!isUtf8(keyBytes)) throw new BatchError(INVALID_RECORD, 'a header key is not valid UTF-8');
    const hk = keyBytes.toString('utf8');
    const hl = r.varint();
    headers.push({ key: hk, value: hl < 0 ? null : r.raw(hl) });
  }
  if (r.offset !== end) throw new BatchError(CORRUPT_MESSAGE, 'record length does not match its fields');
  const timestamp = baseTimestamp === -1 ? -1 : baseTimestamp + tsDelta;
  // Times are kept as JS numbers (epoch ms): one past 2^53 would not come back as sent.
  if (!Number.isSafeInteger(timestamp)) throw new BatchError(INVALID_TIMESTAMP, `CreateTime ${timestamp} is not a time in epoch ms this broker can keep exactly (beyond ±2^53)`);
  return { offset: baseOffset + offDelta, timestamp, key, value, headers };
}

/**
 * Reads every batch of one partition's `records` field. Keys, values and header values are views
 * into `data` (or into the decompressed body), not copies: a caller that keeps them past the
 * request copies them.
 * @throws BatchError UNSUPPORTED_FOR_MESSAGE_FORMAT (magic ≠ 2), CORRUPT_MESSAGE (CRC, bounds, count),
 *   MESSAGE_TOO_LARGE (budget), INVALID_TIMESTAMP (a CreateTime beyond ±2^53 ms)
 */
export function decodeBatches(data: Buffer, budget: DecodeBudget): DecodedBatch[] {
  const out: DecodedBatch[] = [];
  const r = new Reader(data);
  try {
    while (r.remaining > 0) {
      if (r.remaining < 61) throw new BatchError(CORRUPT_MESSAGE, 'truncated batch');
      const baseOffset = r.int64();
      const length = r.int32();
      const end = r.offset + length;
      if (length < 49 || end > data.length) throw new BatchError(CORRUPT_MESSAGE, 'batch length out of bounds');
      r.int32(); // partition leader epoch
      const magic = r.int8();
      if (magic !== 2) throw new BatchError(UNSUPPORTED_FOR_MESSAGE_FORMAT, `message format v${magic} is not supported (RecordBatch v2 only)`);
      const crc = r.uint32();
      if (crc32c(data.subarray(r.offset, end)) !== crc) throw new BatchError(CORRUPT_MESSAGE, 'CRC-32C mismatch');
      const attributes = r.int16();
      r.int32(); // last offset delta
      const baseTimestamp = r.int64();
      r.int64(); // max timestamp
      const producerId = r.int64();
      const producerEpoch = r.int16();
      const baseSequence = r.int32();
      const count = r.int32();
      if (count < 0) throw new BatchError(CORRUPT_MESSAGE, 'negative record count');
      budget.take(0, count);
      const codec = attributes & 7;
      let body = data.subarray(r.offset, end);
      if (codec !== 0) body = decompress(codec, body, budget);
      else budget.take(0, 0);
      const br = new Reader(body);
      const records: KafkaRecord[] = [];
      for (let i = 0; i < count; i++) records.push(readRecord(br, baseOffset, baseTimestamp));
      // Kafka refuses a batch whose records are not exactly its declared count (CorruptRecordException).
      if (br.remaining !== 0) throw new BatchError(CORRUPT_MESSAGE, `the batch declares ${count} records and holds more`);
      out.push({ baseOffset, producerId, producerEpoch, baseSequence, transactional: (attributes & 0x10) !== 0, control: (attributes & 0x20) !== 0, records });
      r.offset = end;
    }
  } catch (e) {
    if (e instanceof BatchError) throw e;
    throw new BatchError(CORRUPT_MESSAGE, (e as Error).message);
  }
  return out;
}

function sizeOfBytes(b: Buffer | null): number {
  return b === null ? 1 : varintSize(b.length) + b.length;
}

function varintSize(v: number): number {
  let z = v >= 0 ? v * 2 : -v * 2 - 1;
  let n = 1;
  while (z >= 0x80) {
    z = Math.floor(z / 128);
    n++;
  }
  return n;
}

/** Approximate encoded size of one record, bytes (Fetch budgets). */
export function recordSize(rec: KafkaRecord): number {
  let n = 24 + sizeOfBytes(rec.key) + sizeOfBytes(rec.value);
  for (const h of rec.headers) n += 5 + Buffer.byteLength(h.key) + sizeOfBytes(h.value);
  return n;
}

/**
 * Writes `records` (contiguous, ascending offsets) as one uncompressed RecordBatch v2: CreateTime,
 * leader epoch −1, no producer id, CRC-32C over attributes..end.
 */
export function encodeBatch(records: readonly KafkaRecord[], w: Writer = new Writer(1024)): Writer {
  const first = records[0]!;
  const baseTs = first.timestamp;
  let maxTs = baseTs;
  for (const rec of records) if (rec.timestamp > maxTs) maxTs = rec.timestamp;
  const start = w.length;
  w.int64(first.offset).int32(0).int32(-1).int8(2);
  const crcAt = w.length;
  w.uint32(0);
  const crcFrom = w.length;
  w.int16(0).int32(records[records.length - 1]!.offset - first.offset).int64(baseTs).int64(maxTs)
    .int64(-1).int16(-1).int32(-1).int32(records.length);
  const body = new Writer(256);
  for (const rec of records) {
    body.int8(0).varlong(rec.timestamp - baseTs).varint(rec.offset - first.offset);
    if (rec.key === null) body.varint(-1);
    else body.varint(rec.key.length).raw(rec.key);
    if (rec.value === null) body.varint(-1);
    else body.varint(rec.value.length).raw(rec.value);
    body.varint(rec.headers.length);
    for (const h of rec.headers) {
      const hk = Buffer.from(h.key, 'utf8');
      body.varint(hk.length).raw(hk);
      if (h.value === null) body.varint(-1);
      else body.varint(h.value.length).raw(h.value);
    }
    const bytes = body.finish();
    w.varint(bytes.length).raw(bytes);
    body.reset();
  }
  w.patchInt32(start + 8, w.length - start - 12);
  w.patchUint32(crcAt, crc32c(w.slice(crcFrom)));
  return w;
}
