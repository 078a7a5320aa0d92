/**
 * The codec (docs/kafka.md#the-codec) against bytes from real clients: request frames captured
 * from kafkajs and kcat are read with the broker's shapes, and the broker's Fetch answers are read
 * back with kafkajs's own response decoder. Primitives, the envelope and the decompression budget
 * are checked directly.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import { envelopeText, fromPayload } from '../../src/kafka/mapping.js';
import { APIS } from '../../src/kafka/protocol/apis.js';
import { readHeaderRest, readHeaderStart } from '../../src/kafka/protocol/header.js';
import { Reader } from '../../src/kafka/protocol/reader.js';
import { BatchError, decodeBatches, DecodeBudget, encodeBatch } from '../../src/kafka/protocol/records.js';
import { readStruct, writeStruct } from '../../src/kafka/protocol/schema.js';
import { Writer } from '../../src/kafka/protocol/writer.js';
import * as captured from './captured.js';

const require = createRequire(import.meta.url);
const kafkajsFetchV6 = require('kafkajs/src/protocol/requests/fetch/v6/response') as {
  decode(raw: Buffer): Promise<{ responses: { topicName: string; partitions: { partition: number; highWatermark: string; messages: { offset: string; key: Buffer | null; value: Buffer | null; timestamp: string; headers: Record<string, Buffer | Buffer[]> }[] }[] }[] }>;
};

/** Reads a captured frame: header and body with the API's request shape. */
function readFrame(hex: string): { apiKey: number; apiVersion: number; clientId: string | null; body: Record<string, unknown> } {
  const frame = Buffer.from(hex, 'hex');
  assert.equal(frame.readInt32BE(0), frame.length - 4, 'length prefix');
  const r = new Reader(frame, 4);
  const h = readHeaderStart(r);
  const spec = APIS.get(h.apiKey)!;
  const flexible = h.apiVersion >= spec.flexibleFrom;
  const clientId = readHeaderRest(r, flexible);
  const body = readStruct(spec.request, r, h.apiVersion, flexible);
  assert.equal(r.remaining, 0, 'the whole frame is consumed');
  return { ...h, clientId, body };
}

describe('codec: captured client requests', () => {
  test('kafkajs ApiVersions v2 and kcat ApiVersions v3 (flexible, software name and version)', () => {
    assert.deepEqual(readFrame(captured.KafkajsApiVersionsV2).clientId, 'capture');
    const kcat = readFrame(captured.KcatApiVersionsV3);
    assert.equal(kcat.apiVersion, 3);
    assert.deepEqual(kcat.body, { client_software_name: 'librdkafka', client_software_version: '2.0.2' });
  });

  test('Metadata v6 (kafkajs) and v4 (kcat) name the topic and allow auto-creation', () => {
    for (const hex of [captured.KafkajsMetadataV6, captured.KcatMetadataV4]) {
      const m = readFrame(hex);
      assert.deepEqual(m.body.topics, [{ name: 'cap' }]);
      assert.equal(m.body.allow_auto_topic_creation, true);
    }
  });

  test('kafkajs Produce v7 with gzip: keys, a repeated header, a null key, CreateTime', () => {
    const p = readFrame(captured.KafkajsProduceV7Gzip);
    assert.equal(p.body.acks, -1);
    const data = (p.body.topic_data as { name: string; partition_data: { index: number; records: Buffer }[] }[])[0]!;
    assert.equal(data.name, 'cap');
    const [b] = decodeBatches(data.partition_data[0]!.records, new DecodeBudget(1 << 20, 100));
    assert.equal(b!.records.length, 2);
    const [r1, r2] = b!.records;
    assert.equal(r1!.key!.toString(), 'k1');
    assert.equal(r1!.value!.toString(), '{"a":1}');
    assert.deepEqual(r1!.headers.map((h) => [h.key, h.value!.toString()]), [['trace', 't-1'], ['trace', 't-2']]);
    assert.equal(r1!.timestamp, 1790000000001);
    assert.equal(r2!.key, null);
    assert.equal(r2!.timestamp, 1790000000002);
    assert.deepEqual([r1!.offset, r2!.offset], [0, 1]);
  });

  test('kcat Produce v7 (librdkafka): one keyed record', () => {
    const p = readFrame(captured.KcatProduceV7);
    const data = (p.body.topic_data as { partition_data: { index: number; records: Buffer }[] }[])[0]!;
    assert.equal(data.partition_data[0]!.index, 2);
    const recs = decodeBatches(data.partition_data[0]!.records, new DecodeBudget(1 << 20, 100)).flatMap((x) => x.records);
    assert.deepEqual(recs.map((r) => [r.key?.toString(), r.value?.toString()]), [['kk', '{"kcat":1}']]);
  });

  test('a batch with a flipped byte fails its CRC-32C', () => {
    const p = readFrame(captured.KafkajsProduceV7);
    const records = Buffer.from((p.body.topic_data as { partition_data: { records: Buffer }[] }[])[0]!.partition_data[0]!.records);
    records[records.length - 2] ^= 1;
    assert.throws(() => decodeBatches(records, new DecodeBudget(1 << 20, 100)), (e: unknown) => e instanceof BatchError && e.code === 2);
  });
});

describe('codec: answers read by kafkajs', () => {
  test('a Fetch v6 answer with one batch decodes in kafkajs with keys, values, headers and timestamps', async () => {
    const batchBytes = encodeBatch([
      { offset: 41, timestamp: 1790000000000, key: Buffer.from('k'), value: Buffer.from('v1'), headers: [{ key: 'h', value: Buffer.from('a') }, { key: 'h', value: Buffer.from('b') }] },
      { offset: 42, timestamp: 1790000000500, key: null, value: null, headers: [] },
    ]).finish();
    const w = new Writer();
    writeStruct(APIS.get(1)!.response, w, {
      throttle_time_ms: 0,
      responses: [{ topic: 't', partitions: [{ partition_index: 3, error_code: 0, high_watermark: 43, last_stable_offset: 43, log_start_offset: 0, aborted_transactions: [], records: batchBytes }] }],
    }, 6, false);
    const decoded = await kafkajsFetchV6.decode(Buffer.from(w.finish()));
    const p = decoded.responses[0]!.partitions[0]!;
    assert.equal(p.partition, 3);
    assert.equal(p.highWatermark, '43');
    assert.deepEqual(p.messages.map((m) => [m.offset, m.key?.toString() ?? null, m.value?.toString() ?? null, m.timestamp]), [
      ['41', 'k', 'v1', '1790000000000'],
      ['42', null, null, '1790000000500'],
    ]);
    assert.deepEqual((p.messages[0]!.headers.h as Buffer[]).map(String), ['a', 'b']);
  });
});

describe('codec: primitives', () => {
  test('zigzag varints and varlongs have the wire bytes of the Kafka spec', () => {
    const cases: [number, string][] = [[0, '00'], [-1, '01'], [1, '02'], [-64, '7f'], [64, '8001'], [150, 'ac02']];
    for (const [v, hex] of cases) {
      assert.equal(Buffer.from(new Writer().varint(v).finish()).toString('hex'), hex, `varint ${v}`);
      assert.equal(new Reader(Buffer.from(hex, 'hex')).varint(), v);
    }
    for (const v of [0, -1, 63, -64, 64, 1790000000000, -1790000000000, 2 ** 48 - 1, -(2 ** 48), 2 ** 48, 2 ** 52, -(2 ** 52)]) assert.equal(new Reader(Buffer.from(new Writer().varlong(v).finish())).varlong(), v);
  });

  test('compact strings and arrays: null and empty are distinct; a short frame throws', () => {
    const w = new Writer().compactNullableString(null).compactNullableString('').compactNullableString('é');
    const r = new Reader(Buffer.from(w.finish()));
    assert.deepEqual([r.compactNullableString(), r.compactNullableString(), r.compactNullableString()], [null, '', 'é']);
    assert.throws(() => new Reader(Buffer.from([0, 5, 0x61])).string(), /too short/);
    assert.throws(() => new Reader(Buffer.from([0, 0, 0, 9])).arrayLength(false), /array of 9/);
  });
});

describe('codec: envelope', () => {
  test('a record becomes the envelope h,k,t,v in that order and comes back byte-exact', () => {
    const rec = { key: Buffer.from([0, 255]), value: Buffer.from('{"orderId":8891}'), timestamp: 1790948151426, headers: [{ key: 'trace', value: Buffer.from('123') }, { key: 'trace', value: null }] };
    const env = envelopeText(rec);
    assert.equal(env, '{"h":[{"k":"trace","v":"MTIz"},{"k":"trace","v":null}],"k":"AP8=","t":1790948151426,"v":"eyJvcmRlcklkIjo4ODkxfQ=="}');
    const back = fromPayload(env, 7, 1);
    assert.deepEqual(back, { offset: 7, ...rec });
    assert.equal(envelopeText({ key: null, value: null, timestamp: -1, headers: [] }), '{"k":null,"v":null}');
    const odd = envelopeText({ key: Buffer.alloc(0), value: Buffer.from('x'), timestamp: 0, headers: [{ key: 'quote"back\\slash\u2028é', value: Buffer.alloc(0) }] });
    assert.deepEqual(JSON.parse(odd), { h: [{ k: 'quote"back\\slash\u2028é', v: '' }], k: '', t: 0, v: 'eA==' }, 'header names are escaped, empty key is "" not null');
    assert.deepEqual(fromPayload(odd, 0, 1).headers, [{ key: 'quote"back\\slash\u2028é', value: Buffer.alloc(0) }]);
  });

  test('anything that is not exactly an envelope is served as its JSON text with a null key', () => {
    for (const json of ['{"k":"AA==","v":"AA==","x":1}', '{"k":"AA==","v":"not base64!"}', '{"v":"AA=="}', '[1,2]', '"text"', '{"k":"AA==","v":"AA==","t":"soon"}']) {
      const r = fromPayload(json, 0, 5);
      assert.equal(r.key, null, json);
      assert.equal(r.value!.toString(), json);
      assert.equal(r.timestamp, 5);
    }
  });
});

describe('codec: decompression budget', () => {
  test('a gzip batch over the budget is MESSAGE_TOO_LARGE before it is held in memory', () => {
    const big = Buffer.alloc(4 * 1024 * 1024);
    const w = new Writer();
    w.int64(0).int32(0).int32(-1).int8(2);
    const crcAt = w.length;
    w.uint32(0);
    const z = gzipSync(big);
    w.int16(1).int32(0).int64(0).int64(0).int64(-1).int16(-1).int32(-1).int32(1).raw(z);
    const bytes = Buffer.from(w.finish());
    bytes.writeInt32BE(bytes.length - 12, 8);
    const { crc32c } = require('@node-rs/crc32') as { crc32c: (b: Buffer) => number };
    bytes.writeUInt32BE(crc32c(bytes.subarray(crcAt + 4)) >>> 0, crcAt);
    assert.throws(() => decodeBatches(bytes, new DecodeBudget(1024 * 1024, 100)), (e: unknown) => e instanceof BatchError && e.code === 10);
  });
});
