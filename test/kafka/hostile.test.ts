/**
 * Hostile input on the Kafka port (docs/kafka.md#limits-on-hostile-input): frames and batches no
 * real client sends, each answered with the error code a Kafka broker gives — never a crash, a
 * stalled event loop, or silently lost or altered data. Raw sockets, one real broker.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { API } from '../../src/kafka/protocol/apis.js';
import { decodeBatches, DecodeBudget, type KafkaRecord } from '../../src/kafka/protocol/records.js';
import { Writer } from '../../src/kafka/protocol/writer.js';
import { call, uniqueName } from '../helpers/http.js';
import { within } from '../helpers/wait.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';
import { batch, produceBody, producePartition, recordsBody, WireClient, type Body } from './wire.js';

/** An lz4 frame header (FLG 0x64, BD 0x40: 64 KiB blocks, content checksum) with its HC byte. */
const LZ4_HEAD = Buffer.from('04224d186440a7', 'hex');

/** `lz4 -BX -BD --content-size` of two records (k1 / "lz4-cli-one" ×3, null / "two"): lz4js misread such frames. */
const LZ4_CLI_CHECKSUMS = Buffer.from('04224d187c403600000000000000dc25000000ff0556000000046b31466c7a342d636c692d6f6e65200c0004b00012000002010674776f00b5297ff10000000054b9bc3d', 'hex');

function le32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

describe('Kafka hostile input', () => {
  let b: KafkaBroker;
  let c: WireClient;
  before(async () => {
    b = await startKafkaBroker({ env: { QUEEN_KAFKA_MAX_REQUEST_BYTES: String(64 * 1024 * 1024) } });
    c = await WireClient.connect(b.kafkaPort);
  });
  after(async () => {
    c?.close();
    await b?.stop();
  });

  async function createTopic(topic: string, partitions = 1): Promise<void> {
    const res = await c.request(API.CreateTopics, 4, { topics: [{ name: topic, num_partitions: partitions, replication_factor: 1, assignments: [], configs: [] }], timeout_ms: 1000, validate_only: false });
    assert.equal((res.topics as Body[])[0]!.error_code, 0);
  }

  async function fetchAll(topic: string, partition = 0): Promise<{ hw: number; records: KafkaRecord[] }> {
    const res = await c.request(API.Fetch, 6, {
      replica_id: -1, max_wait_ms: 0, min_bytes: 0, max_bytes: 1 << 20, isolation_level: 0,
      topics: [{ topic, partitions: [{ partition, fetch_offset: 0, log_start_offset: -1, partition_max_bytes: 1 << 20 }] }],
    });
    const p = (res.responses as { partitions: { high_watermark: number; records: Buffer }[] }[])[0]!.partitions[0]!;
    const records = p.records.length > 0 ? decodeBatches(p.records, new DecodeBudget(1 << 30, 1 << 20)).flatMap((x) => x.records) : [];
    return { hw: p.high_watermark, records };
  }

  test('lz4 frames whose blocks claim more than they hold, or decode past the block size, answer CORRUPT_MESSAGE at once', async () => {
    const topic = uniqueName('lz4bomb');
    await createTopic(topic);
    const frames: [string, Buffer][] = [
      // The tester's 14 bytes: one compressed block claiming 2 GiB, holding 3 bytes (lz4js spun ~72 s on it).
      ['block of 2 GiB holding 3 bytes', Buffer.from('04224d186440a7ffffff7f010203', 'hex')],
      ['uncompressed block of 2 GiB holding 3 bytes', Buffer.concat([LZ4_HEAD, le32(0xffffffff), Buffer.from('010203', 'hex')])],
      // A 20 KiB block of one literal and a match length of ~5 MiB: far past the 64 KiB block size.
      ['match length past the block size', Buffer.concat([LZ4_HEAD, le32(20_003), Buffer.from([0x1f, 0x41, 0x01, 0x00]), Buffer.alloc(19_998, 0xff), Buffer.from([0x00]), le32(0), le32(0)])],
      ['match offset before the output', Buffer.concat([LZ4_HEAD, le32(5), Buffer.from([0x10, 0x41, 0x09, 0x00, 0x00]), le32(0), le32(0)])],
    ];
    for (const [what, body] of frames) {
      const res = await within(c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body, codec: 3 }))), 10_000, `the answer to an lz4 frame with ${what}`);
      assert.equal(producePartition(res).error_code, 2, what);
    }
    const health = await within(fetch(`${b.url}/health`), 10_000, 'GET /health');
    assert.equal(health.status, 200);
    assert.equal((await fetchAll(topic)).hw, 0, 'nothing was written');
  });

  test('an lz4 frame with block checksums, content size and content checksum (lz4 CLI) is stored record by record', async () => {
    const topic = uniqueName('lz4cli');
    await createTopic(topic);
    const res = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 2, body: LZ4_CLI_CHECKSUMS, codec: 3 })));
    assert.deepEqual(producePartition(res), { ...producePartition(res), error_code: 0, base_offset: 0 });
    const got = await fetchAll(topic);
    assert.deepEqual(got.records.map((r) => [r.key?.toString() ?? null, r.value?.toString()]), [['k1', 'lz4-cli-one lz4-cli-one lz4-cli-one'], [null, 'two']]);
  });

  test('Metadata naming one 100,000-partition topic 300 times answers it once (it used to build it 300 times and run out of heap)', async () => {
    const topic = uniqueName('wide');
    await createTopic(topic, 100_000);
    const res = await within(c.request(API.Metadata, 1, { topics: Array.from({ length: 300 }, () => ({ name: topic })) }), 30_000, 'the Metadata answer');
    const topics = res.topics as { name: string; error_code: number; partitions: unknown[] }[];
    assert.deepEqual(topics.map((t) => [t.name, t.error_code, t.partitions.length]), [[topic, 0, 100_000]]);
  });

  test('a Metadata answer holds 200,000 partitions at most: topics past that answer LEADER_NOT_AVAILABLE with no partitions', async () => {
    const names = [uniqueName('w1'), uniqueName('w2'), uniqueName('w3')];
    for (const n of names) await createTopic(n, 90_000);
    const res = await c.request(API.Metadata, 4, { topics: [...names, names[0]!].map((name) => ({ name })), allow_auto_topic_creation: false });
    const topics = res.topics as { name: string; error_code: number; partitions: unknown[] }[];
    assert.deepEqual(topics.map((t) => [t.name, t.error_code, t.partitions.length]), [[names[0], 0, 90_000], [names[1], 0, 90_000], [names[2], 5, 0]]);
    // Named alone, the third is served in full.
    const alone = await c.request(API.Metadata, 4, { topics: [{ name: names[2]! }], allow_auto_topic_creation: false });
    assert.equal((alone.topics as { partitions: unknown[] }[])[0]!.partitions.length, 90_000);
  });

  test('a 40 MB frame whose length prefix arrives split (3 bytes, then 64 KB writes) costs the broker linear work', async () => {
    const size = 40 * 1024 * 1024;
    // A Produce v3 header and one partition for an internal topic (answered without decoding), padded.
    const own = await WireClient.connect(b.kafkaPort);
    try {
      const { frame } = own.encode(API.Produce, 3, produceBody('__pad', 0, Buffer.alloc(size)));
      const before = brokerCpuMs(b.proc.pid!);
      const answer = own.nextFrame();
      own.send(frame.subarray(0, 3));
      await new Promise<void>((r) => own.socket.write(Buffer.alloc(0), () => r()));
      for (let at = 3; at < frame.length; at += 64 * 1024) {
        if (!own.socket.write(frame.subarray(at, Math.min(frame.length, at + 64 * 1024)))) await new Promise((r) => own.socket.once('drain', r));
      }
      await within(answer, 60_000, 'the answer to the 40 MB frame');
      const spent = brokerCpuMs(b.proc.pid!) - before;
      // Accumulating linearly is well under a CPU second; concatenating every chunk on every data
      // event copied ~13 GB for this frame.
      assert.ok(spent < 4000, `the broker spent ${spent} ms of CPU on one 40 MB frame`);
    } finally {
      own.close();
    }
  });

  test('a gzip batch of more records than QUEEN_MAX_PUSH_ITEMS (10,000) answers MESSAGE_TOO_LARGE before decompressing; 10,000 are stored', async () => {
    const topic = uniqueName('many');
    await createTopic(topic);
    const over = gzipSync(recordsBody(Array.from({ length: 10_001 }, () => ({ value: null }))));
    const res = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 10_001, body: over, codec: 1 })));
    assert.equal(producePartition(res).error_code, 10);
    assert.equal((await fetchAll(topic)).hw, 0, 'nothing was written');
    // Split over two partitions of one request, the limit is the request's.
    const half = batch({ count: 5001, body: gzipSync(recordsBody(Array.from({ length: 5001 }, () => ({ value: null })))), codec: 1 });
    const two = await c.request(API.Produce, 7, { transactional_id: null, acks: -1, timeout_ms: 10_000, topic_data: [{ name: topic, partition_data: [{ index: 0, records: half }, { index: 0, records: half }] }] });
    const answers = (two.responses as { partition_responses: { error_code: number }[] }[])[0]!.partition_responses.map((p) => p.error_code);
    assert.deepEqual(answers, [0, 10]);
    const at = gzipSync(recordsBody(Array.from({ length: 4999 }, () => ({ value: null }))));
    assert.equal(producePartition(await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 4999, body: at, codec: 1 })))).error_code, 0);
    assert.equal((await fetchAll(topic)).hw, 10_000);
  });

  test('a batch whose records do not match its declared count answers CORRUPT_MESSAGE and stores nothing', async () => {
    const topic = uniqueName('count');
    await createTopic(topic);
    const two = recordsBody([{ value: Buffer.from('a') }, { value: Buffer.from('b') }]);
    const one = recordsBody([{ value: Buffer.from('a') }]);
    for (const [what, count, body, codec] of [['count 1, 2 records', 1, two, 0], ['count 0, 1 record', 0, one, 0], ['count 1, 2 records, gzip', 1, gzipSync(two), 1], ['count 3, 2 records', 3, two, 0]] as const) {
      const res = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count, body, codec })));
      assert.equal(producePartition(res).error_code, 2, what);
    }
    assert.equal((await fetchAll(topic)).hw, 0, 'nothing was written');
  });

  test('a header key that is not UTF-8, a negative header count or key length are refused, never stored altered', async () => {
    const topic = uniqueName('hdr');
    await createTopic(topic);
    /** One record (value "v") whose header section is `headers`, written as is. */
    const withHeaders = (headers: (w: Writer) => void): Buffer => {
      const r = new Writer();
      r.int8(0).varlong(0).varint(0).varint(-1).varint(1).raw(Buffer.from('v'));
      headers(r);
      const bytes = r.finish();
      return Buffer.from(new Writer().varint(bytes.length).raw(bytes).finish());
    };
    for (const [what, body, code] of [
      ['key bytes ff c3', withHeaders((w) => w.varint(1).varint(2).raw(Buffer.from([0xff, 0xc3])).varint(1).raw(Buffer.from('x'))), 87],
      ['header count -3', withHeaders((w) => w.varint(-3)), 2],
      ['header key length -2', withHeaders((w) => w.varint(1).varint(-2).varint(1).raw(Buffer.from('x'))), 2],
    ] as const) {
      const res = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body })));
      assert.equal(producePartition(res).error_code, code, what);
    }
    assert.equal((await fetchAll(topic)).hw, 0, 'nothing was written');
    const ok = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: withHeaders((w) => w.varint(1).varint(1).raw(Buffer.from('\u00fcber', 'utf8').subarray(0, 1)).varint(-1)) })));
    assert.equal(producePartition(ok).error_code, 87, 'a key cut inside a UTF-8 sequence is not UTF-8 either');
    const good = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: withHeaders((w) => w.varint(1).varint(5).raw(Buffer.from('\u00fcber', 'utf8')).varint(-1)) })));
    assert.equal(producePartition(good).error_code, 0);
    const [rec] = (await fetchAll(topic)).records;
    assert.deepEqual(rec!.headers.map((h) => [Buffer.from(h.key, 'utf8').toString('hex'), h.value]), [[Buffer.from('\u00fcber', 'utf8').toString('hex'), null]]);
  });

  test('negative lengths other than -1 close the connection as protocol errors; Metadata names past 10,000 are answered INVALID_REQUEST, not dropped', async () => {
    /** A Metadata v1 frame: header (api 3, v1, correlation 7, client_id of `clientIdLength`), then `rest`. */
    const metadataFrame = (clientIdLength: number, rest: Buffer) => {
      const body = Buffer.concat([Buffer.from([0, 3, 0, 1, 0, 0, 0, 7]), Buffer.from([(clientIdLength >> 8) & 0xff, clientIdLength & 0xff]), rest]);
      const len = Buffer.alloc(4);
      len.writeInt32BE(body.length);
      return Buffer.concat([len, body]);
    };
    const int32 = (n: number) => { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; };
    for (const [what, frame] of [['topics array length -5', metadataFrame(0, int32(-5))], ['client_id length -2', metadataFrame(0xfffe, int32(-1))]] as const) {
      const w = await WireClient.connect(b.kafkaPort);
      w.send(frame);
      await w.closed;
      assert.ok(w.isClosed, what);
    }
    const names = Array.from({ length: 10_001 }, (_, i) => ({ name: `none-${i}` }));
    const res = await c.request(API.Metadata, 4, { topics: names, allow_auto_topic_creation: false });
    const topics = res.topics as Body[];
    assert.equal(topics.length, 10_001, 'every distinct name is answered');
    assert.deepEqual([topics[9_999]!.error_code, topics[10_000]!.name, topics[10_000]!.error_code], [3, 'none-10000', 42]);
  });

  test('a CreateTime past 2^53 ms answers INVALID_TIMESTAMP; a stored envelope with such a time is still served as its record', async () => {
    const topic = uniqueName('ts');
    await createTopic(topic);
    for (const ts of [1796279552878000000, 2 ** 53 + 2, 2 ** 62]) {
      const res = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: recordsBody([{ key: Buffer.from('k'), value: Buffer.from('v') }]), baseTimestamp: ts })));
      assert.equal(producePartition(res).error_code, 32, `CreateTime ${ts}`);
    }
    assert.equal((await fetchAll(topic)).hw, 0, 'nothing was written');
    // An envelope whose t does not fit (written by an earlier build, or pushed natively) keeps its key, value and headers.
    const payload = JSON.parse('{"h":[{"k":"trace","v":"MTIz"}],"k":"aw==","t":1796279552878000000,"v":"dg=="}') as unknown;
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '0', payload }] })).status, 201);
    const [rec] = (await fetchAll(topic)).records;
    assert.deepEqual([rec!.key?.toString(), rec!.value?.toString(), rec!.headers.map((h) => [h.key, h.value?.toString()])], ['k', 'v', [['trace', '123']]]);
  });

  test('a Fetch naming one partition 2,000 times reads it once: each distinct partition is answered once', async () => {
    const topic = uniqueName('fdup');
    await createTopic(topic);
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '0', payload: { pad: 'p'.repeat(10_000) } }] })).status, 201);
    const part = { partition: 0, fetch_offset: 0, log_start_offset: -1, partition_max_bytes: 1 << 20 };
    const res = await c.request(API.Fetch, 6, {
      replica_id: -1, max_wait_ms: 0, min_bytes: 0, max_bytes: 32 << 20, isolation_level: 0,
      topics: [{ topic, partitions: Array.from({ length: 2000 }, () => part) }, { topic, partitions: [part] }],
    });
    const answered = (res.responses as { partitions: { partition_index: number; records: Buffer }[] }[]).flatMap((t) => t.partitions);
    assert.equal(answered.length, 1, 'one answer for the one distinct partition');
    assert.ok(answered[0]!.records.length > 10_000, 'it carries the record');
  });
});

/** CPU time (user + system) of process `pid` so far, ms (/proc/<pid>/stat, 100 ticks a second). */
function brokerCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
