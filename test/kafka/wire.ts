/**
 * A raw Kafka client for tests that real clients cannot express (negative cases, exact bytes):
 * requests written and responses read with the broker's own message shapes
 * (src/kafka/protocol/), over a real socket. Also builds RecordBatch v2 with any codec, producer
 * id and sequence.
 */
import net from 'node:net';
import { crc32c } from '@node-rs/crc32';
import { APIS } from '../../src/kafka/protocol/apis.js';
import { Reader } from '../../src/kafka/protocol/reader.js';
import { readStruct, writeStruct } from '../../src/kafka/protocol/schema.js';
import { Writer } from '../../src/kafka/protocol/writer.js';

export type Body = Record<string, unknown>;

/** One connection; `request` sends a frame and resolves with the decoded response body. */
export class WireClient {
  private buf = Buffer.alloc(0);
  private waiting: ((frame: Buffer) => void)[] = [];
  private correlation = 1;
  closed: Promise<void>;
  isClosed = false;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 4 && this.buf.length >= 4 + this.buf.readInt32BE(0)) {
        const n = this.buf.readInt32BE(0);
        const frame = this.buf.subarray(4, 4 + n);
        this.buf = this.buf.subarray(4 + n);
        this.waiting.shift()?.(frame);
      }
    });
    this.closed = new Promise((r) => socket.once('close', () => { this.isClosed = true; r(); }));
    socket.on('error', () => undefined);
  }

  static async connect(port: number): Promise<WireClient> {
    const s = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => { s.once('connect', resolve); s.once('error', reject); });
    return new WireClient(s);
  }

  /** The next frame received (without its length). */
  nextFrame(): Promise<Buffer> {
    return new Promise((r) => this.waiting.push(r));
  }

  /** Sends raw bytes. */
  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Frames a request: header v1 (v2 when flexible) and the body written with the API's shape. */
  encode(apiKey: number, version: number, body: Body, clientId = 'wire-test'): { frame: Buffer; correlationId: number } {
    const spec = APIS.get(apiKey);
    const flexible = spec !== undefined && version >= spec.flexibleFrom;
    const correlationId = this.correlation++;
    const w = new Writer();
    w.int32(0).int16(apiKey).int16(version).int32(correlationId).nullableString(clientId);
    if (flexible) w.uvarint(0);
    if (spec) writeStruct(spec.request, w, body, version, flexible);
    const frame = Buffer.from(w.finish());
    frame.writeInt32BE(frame.length - 4, 0);
    return { frame, correlationId };
  }

  /** Sends a request and decodes its response with the API's response shape. */
  async request(apiKey: number, version: number, body: Body): Promise<Body> {
    const { frame } = this.encode(apiKey, version, body);
    const answer = this.nextFrame();
    this.send(frame);
    const raw = await Promise.race([answer, this.closed.then(() => { throw new Error('connection closed'); })]);
    const spec = APIS.get(apiKey)!;
    const flexible = version >= spec.flexibleFrom;
    const r = new Reader(raw);
    r.int32(); // correlation id
    if (flexible && apiKey !== 18) r.skipTaggedFields();
    return readStruct(spec.response, r, version, flexible);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** One record to put in a test batch. */
export interface TestRecord {
  key?: Buffer | null;
  value: Buffer | null;
  headers?: { key: string; value: Buffer | null }[];
  timestampDelta?: number;
}

/** The record section of a batch, uncompressed. */
export function recordsBody(records: TestRecord[]): Buffer {
  const w = new Writer();
  records.forEach((r, i) => {
    const b = new Writer();
    b.int8(0).varlong(r.timestampDelta ?? 0).varint(i);
    if (r.key == null) b.varint(-1);
    else b.varint(r.key.length).raw(r.key);
    if (r.value === null) b.varint(-1);
    else b.varint(r.value.length).raw(r.value);
    b.varint(r.headers?.length ?? 0);
    for (const h of r.headers ?? []) {
      const k = Buffer.from(h.key);
      b.varint(k.length).raw(k);
      if (h.value === null) b.varint(-1);
      else b.varint(h.value.length).raw(h.value);
    }
    const bytes = b.finish();
    w.varint(bytes.length).raw(bytes);
  });
  return Buffer.from(w.finish());
}

/** A RecordBatch v2 around `body` (already compressed when `codec` ≠ 0). */
export function batch(opts: { count: number; body: Buffer; codec?: number; producerId?: number; producerEpoch?: number; baseSequence?: number; baseTimestamp?: number; attributes?: number; magic?: number }): Buffer {
  const w = new Writer();
  w.int64(0).int32(0).int32(-1).int8(opts.magic ?? 2);
  const crcAt = w.length;
  w.uint32(0);
  const from = w.length;
  w.int16((opts.codec ?? 0) | (opts.attributes ?? 0)).int32(opts.count - 1).int64(opts.baseTimestamp ?? 1790000000000).int64(opts.baseTimestamp ?? 1790000000000)
    .int64(opts.producerId ?? -1).int16(opts.producerEpoch ?? -1).int32(opts.baseSequence ?? -1).int32(opts.count).raw(opts.body);
  const out = Buffer.from(w.finish());
  out.writeInt32BE(out.length - 12, 8);
  out.writeUInt32BE(crc32c(out.subarray(from)) >>> 0, crcAt);
  return out;
}

/** A Produce v7 request body for one partition. */
export function produceBody(topic: string, partition: number, records: Buffer, acks = -1): Body {
  return { transactional_id: null, acks, timeout_ms: 10_000, topic_data: [{ name: topic, partition_data: [{ index: partition, records }] }] };
}

/** The first partition answer of a Produce response. */
export function producePartition(res: Body): { error_code: number; base_offset: number } {
  const t = (res.responses as { partition_responses: { error_code: number; base_offset: number }[] }[])[0]!;
  return t.partition_responses[0]!;
}
