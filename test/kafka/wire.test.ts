/**
 * The Kafka port over a raw socket (docs/kafka.md): the version gate, frame caps, name rules, the
 * four codecs, CRC and format refusals, acks=0, the idempotent producer, OffsetCommit edges and
 * ListOffsets by time — cases real clients do not send on purpose.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { compress as lz4Compress } from 'lz4js';
import { compress as snappyCompress } from 'snappyjs';
import { gzipSync } from 'node:zlib';
import { API, APIS } from '../../src/kafka/protocol/apis.js';
import { decodeBatches, DecodeBudget, type KafkaRecord } from '../../src/kafka/protocol/records.js';
import { Reader } from '../../src/kafka/protocol/reader.js';
import { readStruct } from '../../src/kafka/protocol/schema.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';
import { batch, produceBody, producePartition, recordsBody, WireClient, type Body } from './wire.js';

/** A zstd frame (made with the zstd CLI) of two records: key z1 / {"codec":"zstd","n":1}, key null / second. */
const ZSTD_TWO_RECORDS = Buffer.from('KLUv/SQsYQEAPAAAAAR6MSx7ImNvZGVjIjoienN0ZCIsIm4iOjF9ABgAAAIBDHNlY29uZAB9hh60', 'base64');

/** A zstd frame header declaring 2 GiB of content, then one empty raw block. */
const ZSTD_CLAIMS_2GB = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0]), Buffer.from([0, 0, 0, 0x80, 0, 0, 0, 0]), Buffer.from([0x01, 0x00, 0x00])]);

function xerial(chunks: Buffer[]): Buffer {
  const head = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
  return Buffer.concat([head, ...chunks.flatMap((c) => {
    const z = Buffer.from(snappyCompress(c));
    const len = Buffer.alloc(4);
    len.writeInt32BE(z.length);
    return [len, z];
  })]);
}

describe('Kafka wire', () => {
  let b: KafkaBroker;
  let c: WireClient;
  before(async () => {
    b = await startKafkaBroker();
    c = await WireClient.connect(b.kafkaPort);
  });
  after(async () => {
    c?.close();
    await b?.stop();
  });

  async function fetchAll(topic: string, partition: number, offset = 0): Promise<{ error: number; hw: number; records: KafkaRecord[] }> {
    const res = await c.request(API.Fetch, 6, {
      replica_id: -1, max_wait_ms: 0, min_bytes: 0, max_bytes: 1 << 20, isolation_level: 0,
      topics: [{ topic, partitions: [{ partition, fetch_offset: offset, log_start_offset: -1, partition_max_bytes: 1 << 20 }] }],
    });
    const p = (res.responses as { partitions: { error_code: number; high_watermark: number; records: Buffer }[] }[])[0]!.partitions[0]!;
    const records = p.records.length > 0 ? decodeBatches(p.records, new DecodeBudget(1 << 30, 1 << 20)).flatMap((x) => x.records) : [];
    return { error: p.error_code, hw: p.high_watermark, records };
  }

  async function createTopic(topic: string, partitions = 4): Promise<void> {
    const res = await c.request(API.CreateTopics, 4, { topics: [{ name: topic, num_partitions: partitions, replication_factor: 1, assignments: [], configs: [] }], timeout_ms: 1000, validate_only: false });
    assert.equal((res.topics as Body[])[0]!.error_code, 0);
  }

  test('ApiVersions lists the version table; v4 answers UNSUPPORTED_VERSION in a v0 body', async () => {
    const res = await c.request(API.ApiVersions, 3, { client_software_name: 'wire', client_software_version: '1' });
    const keys = res.api_keys as { api_key: number; min_version: number; max_version: number }[];
    assert.deepEqual(keys.find((k) => k.api_key === API.Fetch), { api_key: 1, min_version: 4, max_version: 6 });
    assert.deepEqual(keys.find((k) => k.api_key === API.Produce), { api_key: 0, min_version: 3, max_version: 9 });
    const { frame } = c.encode(API.ApiVersions, 4, {});
    const answer = c.nextFrame();
    c.send(frame);
    const r = new Reader(await answer);
    r.int32();
    assert.equal(r.int16(), 35);
    assert.equal(r.int32(), 1);
    assert.deepEqual([r.int16(), r.int16(), r.int16()], [18, 0, 3]);
  });

  test('Fetch v7 (fetch sessions) and an unknown API key close the connection without an answer', async () => {
    for (const [key, version] of [[API.Fetch, 7], [99, 0]] as const) {
      const w = await WireClient.connect(b.kafkaPort);
      let answered = false;
      void w.nextFrame().then(() => (answered = true));
      w.send(w.encode(key, version, {}).frame);
      await w.closed;
      assert.equal(answered, false);
    }
  });

  test('a frame claiming more than 100 MiB closes the connection', async () => {
    const w = await WireClient.connect(b.kafkaPort);
    const head = Buffer.alloc(4);
    head.writeInt32BE(200 * 1024 * 1024);
    w.send(head);
    await w.closed;
    assert.ok(w.isClosed);
  });

  test('a frame shorter than a request header (0, 1 or 7 bytes) closes the connection as a protocol error, not an error-level log', async () => {
    for (const frame of [Buffer.from('00000000', 'hex'), Buffer.from('0000000100', 'hex'), Buffer.from('00000007' + '00'.repeat(7), 'hex')]) {
      const w = await WireClient.connect(b.kafkaPort);
      w.send(frame);
      await w.closed;
      assert.ok(w.isClosed, frame.toString('hex'));
    }
    const c2 = await WireClient.connect(b.kafkaPort);
    assert.ok((await c2.request(API.ApiVersions, 0, {})).api_keys, 'the port still serves');
    c2.close();
    assert.doesNotMatch(b.output(), /"level":50[^\n]*kafka: request failed/, 'no error-level line for a short frame');
  });

  test('__consumer_offsets does not exist and an illegal name is INVALID_TOPIC_EXCEPTION in Metadata only', async () => {
    const res = await c.request(API.Metadata, 9, { topics: [{ name: '__consumer_offsets' }, { name: 'bad name!' }], allow_auto_topic_creation: true });
    assert.deepEqual((res.topics as Body[]).map((t) => t.error_code), [3, 17]);
    const p = await c.request(API.Produce, 7, produceBody('__consumer_offsets', 0, batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]) })));
    assert.equal(producePartition(p).error_code, 3);
    const q = await call(b.url, 'GET', '/api/v1/resources/queues/__consumer_offsets');
    assert.equal(q.status, 404, 'no queue was created');
  });

  test('snappy (xerial with several chunks, and raw), lz4 and zstd batches are stored record by record', async () => {
    const topic = uniqueName('codecs');
    await createTopic(topic);
    const one = recordsBody([{ key: Buffer.from('s1'), value: Buffer.from('snappy-one') }, { value: Buffer.from('snappy-two') }]);
    // Two xerial chunks that only together form the record section.
    const cut = 7;
    const cases: [number, Buffer, number][] = [
      [2, xerial([one.subarray(0, cut), one.subarray(cut)]), 2],
      [2, Buffer.from(snappyCompress(one)), 2],
      [3, Buffer.from(lz4Compress(one)), 2],
      [4, ZSTD_TWO_RECORDS, 2],
      [1, gzipSync(one), 2],
    ];
    let expected = 0;
    for (const [codec, body, count] of cases) {
      const res = producePartition(await c.request(API.Produce, 7, produceBody(topic, 1, batch({ count, body, codec }))));
      assert.deepEqual([res.error_code, res.base_offset], [0, expected], `codec ${codec}`);
      expected += count;
    }
    const got = await fetchAll(topic, 1);
    assert.equal(got.records.length, expected);
    const values = got.records.map((r) => r.value?.toString());
    assert.deepEqual(values.slice(0, 2), ['snappy-one', 'snappy-two']);
    assert.deepEqual(values.slice(6, 8), ['{"codec":"zstd","n":1}', 'second']);
    assert.equal(got.records[6]!.key?.toString(), 'z1');
  });

  test('a zstd batch claiming 2 GiB answers MESSAGE_TOO_LARGE and nothing is written', async () => {
    const topic = uniqueName('zbomb');
    await createTopic(topic);
    const res = await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: ZSTD_CLAIMS_2GB, codec: 4 })));
    assert.equal(producePartition(res).error_code, 10);
    assert.equal((await fetchAll(topic, 0)).hw, 0);
  });

  test('a bad CRC is CORRUPT_MESSAGE, magic 1 UNSUPPORTED_FOR_MESSAGE_FORMAT, a control batch INVALID_RECORD, a bad acks INVALID_REQUIRED_ACKS', async () => {
    const topic = uniqueName('refusals');
    await createTopic(topic);
    const good = batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]) });
    const corrupt = Buffer.from(good);
    corrupt[corrupt.length - 1] ^= 0xff;
    assert.equal(producePartition(await c.request(API.Produce, 7, produceBody(topic, 0, corrupt))).error_code, 2);
    assert.equal(producePartition(await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]), magic: 1 })))).error_code, 43);
    assert.equal(producePartition(await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]), attributes: 0x20 })))).error_code, 87);
    assert.equal(producePartition(await c.request(API.Produce, 7, produceBody(topic, 0, good, 2))).error_code, 21);
    assert.equal((await fetchAll(topic, 0)).hw, 0, 'nothing was written');
  });

  test('on a listener without SASL, SaslHandshake and SaslAuthenticate answer ILLEGAL_SASL_STATE and the connection stays', async () => {
    const own = await WireClient.connect(b.kafkaPort);
    try {
      const hs = await own.request(API.SaslHandshake, 1, { mechanism: 'PLAIN' });
      assert.equal(hs.error_code, 34);
      const auth = await own.request(API.SaslAuthenticate, 1, { auth_bytes: Buffer.from('\u0000svc\u0000secret-token') });
      assert.deepEqual([auth.error_code, auth.error_message], [34, 'this listener has no SASL (QUEEN_KAFKA_SASL is unset)']);
      const meta = await own.request(API.Metadata, 9, { topics: [], allow_auto_topic_creation: false });
      assert.ok(Array.isArray(meta.brokers), 'the connection is kept and serves the next request');
      assert.ok(!b.output().includes('secret-token'), 'the password is not logged');
    } finally {
      own.close();
    }
  });

  test('pipelined Produce requests are appended as one store unit and answered in order; pipelined idempotent batches of one partition keep their sequence', async () => {
    const a = uniqueName('coalesce-a');
    const z = uniqueName('coalesce-z');
    await createTopic(a, 2);
    await createTopic(z, 1);
    const own = await WireClient.connect(b.kafkaPort);
    const pushes = async () => (await call(b.url, 'GET', '/metrics')).body.push.requests as number;
    const pipeline = async (frames: { frame: Buffer; correlationId: number }[]) => {
      const answers = frames.map(() => own.nextFrame());
      own.send(Buffer.concat(frames.map((f) => f.frame))); // one write: the broker reads them together
      const raws = await Promise.all(answers);
      return raws.map((raw, i) => {
        const r = new Reader(raw);
        assert.equal(r.int32(), frames[i]!.correlationId, 'answers in request order');
        return producePartition(readStruct(APIS.get(API.Produce)!.response, r, 7, false));
      });
    };
    try {
      const one = (topic: string, partition: number, v: string) => own.encode(API.Produce, 7, produceBody(topic, partition, batch({ count: 1, body: recordsBody([{ value: Buffer.from(v) }]) })));
      let before = await pushes();
      const plain = await pipeline([one(a, 0, 'a0'), one(a, 1, 'b0'), one(z, 0, 'z0'), one(a, 0, 'a1')]);
      assert.deepEqual(plain.map((p) => [p.error_code, p.base_offset]), [[0, 0], [0, 0], [0, 0], [0, 1]]);
      assert.equal(await pushes() - before, 1, 'four requests, one broker push');
      assert.deepEqual((await fetchAll(a, 0)).records.map((r) => r.value?.toString()), ['a0', 'a1']);

      const init = await own.request(API.InitProducerId, 1, { transactional_id: null, transaction_timeout_ms: 60000 });
      const pid = init.producer_id as number;
      const idem = (seq: number) => own.encode(API.Produce, 7, produceBody(z, 0, batch({
        count: 2, body: recordsBody([0, 1].map((i) => ({ value: Buffer.from(`i${seq + i}`) }))), producerId: pid, producerEpoch: 0, baseSequence: seq,
      })));
      before = await pushes();
      const sequenced = await pipeline([idem(0), idem(2), one(a, 1, 'b1')]);
      assert.deepEqual(sequenced.map((p) => [p.error_code, p.base_offset]), [[0, 1], [0, 3], [0, 1]], 'the second batch follows the first (no OUT_OF_ORDER)');
      assert.equal(await pushes() - before, 2, 'the second idempotent batch of the partition waits for the first; the plain one rides with it');
      assert.deepEqual((await fetchAll(z, 0)).records.map((r) => r.value?.toString()), ['z0', 'i0', 'i1', 'i2', 'i3']);
    } finally {
      own.close();
    }
  });

  test('a pipelined Produce outside the version window closes the connection after the requests before it are answered', async () => {
    const topic = uniqueName('coalesce-gate');
    await createTopic(topic, 1);
    const own = await WireClient.connect(b.kafkaPort);
    const body = produceBody(topic, 0, batch({ count: 1, body: recordsBody([{ value: Buffer.from('kept') }]) }));
    const good = own.encode(API.Produce, 7, body);
    const answer = own.nextFrame();
    own.send(Buffer.concat([good.frame, own.encode(API.Produce, 2, body).frame]));
    const raw = await answer;
    assert.equal(raw.readInt32BE(0), good.correlationId);
    await own.closed;
    assert.deepEqual((await fetchAll(topic, 0)).records.map((r) => r.value?.toString()), ['kept']);
  });

  test('acks=0 writes without an answer; the next request is answered in order', async () => {
    const topic = uniqueName('acks0');
    await createTopic(topic);
    c.send(c.encode(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: recordsBody([{ value: Buffer.from('quiet') }]) }), 0)).frame);
    const got = await fetchAll(topic, 0);
    assert.equal(got.records[0]?.value?.toString(), 'quiet');
  });

  test('idempotent producer: a resend answers the original offset, a gap is OUT_OF_ORDER, an old epoch INVALID_PRODUCER_EPOCH, unknown state is accepted', async () => {
    const topic = uniqueName('idem');
    await createTopic(topic);
    const init = await c.request(API.InitProducerId, 1, { transactional_id: null, transaction_timeout_ms: 60000 });
    assert.equal(init.error_code, 0);
    const pid = init.producer_id as number;
    const send = (seq: number, epoch = 0, count = 2, producerId = pid) => c.request(API.Produce, 7, produceBody(topic, 0, batch({
      count, body: recordsBody(Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`s${seq + i}`) }))), producerId, producerEpoch: epoch, baseSequence: seq,
    })));
    const first = producePartition(await send(0));
    assert.deepEqual([first.error_code, first.base_offset], [0, 0]);
    const resend = producePartition(await send(0));
    assert.deepEqual([resend.error_code, resend.base_offset], [0, 0], 'the original offset');
    assert.equal((await fetchAll(topic, 0)).hw, 2, 'the resend wrote nothing');
    assert.equal(producePartition(await send(2)).base_offset, 2);
    assert.equal(producePartition(await send(9)).error_code, 45, 'a gap inside a held window');
    assert.equal(producePartition(await send(0)).base_offset, 0, 'a remembered batch, still');
    const bumped = await c.request(API.InitProducerId, 3, { transactional_id: null, transaction_timeout_ms: 60000, producer_id: pid, producer_epoch: 0 });
    assert.equal(bumped.producer_epoch, 1);
    assert.equal(producePartition(await send(4, 1)).error_code, 0);
    assert.equal(producePartition(await send(6, 0)).error_code, 47, 'an older epoch');
    const mixed = Buffer.concat([batch({ count: 1, body: recordsBody([{ value: Buffer.from('m') }]), producerId: pid, producerEpoch: 1, baseSequence: 6 }), batch({ count: 1, body: recordsBody([{ value: Buffer.from('p') }]) })]);
    assert.equal(producePartition(await c.request(API.Produce, 7, produceBody(topic, 0, mixed))).error_code, 87, 'idempotent and plain batches in one entry');
    // A producer this broker holds no state for (a restart, an eviction) may start at any sequence.
    assert.equal(producePartition(await send(17, 3, 1, 987654321)).error_code, 0);
    assert.equal((await fetchAll(topic, 0)).hw, 7);
  });

  test('OffsetCommit: 0, 1 and the high watermark are stored as asked, above it is clamped to it', async () => {
    const topic = uniqueName('commits');
    const group = uniqueName('g');
    await createTopic(topic, 2);
    await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 3, body: recordsBody([0, 1, 2].map((i) => ({ value: Buffer.from(`m${i}`) }))) })));
    const commit = async (offset: number) => {
      const res = await c.request(API.OffsetCommit, 6, { group_id: group, generation_id: -1, member_id: '', topics: [{ name: topic, partitions: [{ partition_index: 0, committed_offset: offset, committed_leader_epoch: -1, committed_metadata: null }] }] });
      return ((res.topics as Body[])[0]!.partitions as Body[])[0]!.error_code;
    };
    const fetched = async () => {
      const res = await c.request(API.OffsetFetch, 7, { group_id: group, topics: [{ name: topic, partition_indexes: [0, 1] }], require_stable: false });
      return ((res.topics as Body[])[0]!.partitions as Body[]).map((p) => p.committed_offset);
    };
    assert.deepEqual(await fetched(), [-1, -1]);
    for (const [asked, stored] of [[0, 0], [1, 1], [3, 3], [10, 3]] as const) {
      assert.equal(await commit(asked), 0);
      assert.deepEqual(await fetched(), [stored, -1], `commit ${asked}`);
    }
    assert.equal(await commit(-1), 0);
    assert.deepEqual(await fetched(), [-1, -1], 'a commit of -1 removes the position');
    assert.equal(await commit(-2), 28);
    assert.equal(await commit(3), 0);
    const groups = await call(b.url, 'GET', '/api/v1/consumer-groups');
    const row = (groups.body as { name: string; queueName: string; totalLag: number }[]).find((g) => g.name === group);
    assert.equal(row?.totalLag, 0, 'the Queen group sees the Kafka commit');
  });

  test('ListOffsets by time answers the first record at or after the time, never the one before', async () => {
    const topic = uniqueName('times');
    await createTopic(topic, 1);
    const produce = (v: string) => c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 1, body: recordsBody([{ value: Buffer.from(v) }]) })));
    const lookup = async (timestamp: number) => {
      const res = await c.request(API.ListOffsets, 5, { replica_id: -1, isolation_level: 0, topics: [{ name: topic, partitions: [{ partition_index: 0, current_leader_epoch: -1, timestamp }] }] });
      return ((res.topics as Body[])[0]!.partitions as Body[])[0]! as { offset: number; timestamp: number; error_code: number };
    };
    await produce('a');
    const first = await lookup(0);
    assert.equal(first.offset, 0);
    const t0 = first.timestamp;
    await waitFor(() => Date.now() > t0 + 2, { what: 'the clock to pass the first append' });
    await produce('b');
    const second = await lookup(t0 + 1);
    assert.equal(second.offset, 1, 'the record after the time, not the one before');
    assert.ok(second.timestamp > t0);
    assert.deepEqual([(await lookup(-1)).offset, (await lookup(-2)).offset], [2, 0]);
    const none = await lookup(Date.now() + 3_600_000);
    assert.deepEqual([none.offset, none.timestamp, none.error_code], [-1, -1, 0]);
  });

  test('Fetch beyond the high watermark is OFFSET_OUT_OF_RANGE; an index beyond the width UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const topic = uniqueName('ranges');
    await createTopic(topic, 2);
    assert.equal((await fetchAll(topic, 0, 5)).error, 1);
    assert.equal((await fetchAll(topic, 2, 0)).error, 3);
  });

  test('the first record of a fetch is sent whole even when larger than partition_max_bytes; the next one waits', async () => {
    const topic = uniqueName('big');
    await createTopic(topic, 1);
    const big = Buffer.alloc(4096, 0x61);
    await c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 2, body: recordsBody([{ value: big }, { value: big }]) })));
    const res = await c.request(API.Fetch, 6, {
      replica_id: -1, max_wait_ms: 0, min_bytes: 1, max_bytes: 100, isolation_level: 0,
      topics: [{ topic, partitions: [{ partition: 0, fetch_offset: 0, log_start_offset: -1, partition_max_bytes: 100 }] }],
    });
    const p = (res.responses as { partitions: { records: Buffer }[] }[])[0]!.partitions[0]!;
    const records = decodeBatches(p.records, new DecodeBudget(1 << 30, 1 << 20)).flatMap((x) => x.records);
    assert.equal(records.length, 1);
    assert.equal(records[0]!.value!.length, 4096);
  });

  test('min_bytes 0 answers at once; min_bytes 1 parks until a push', async () => {
    const topic = uniqueName('minbytes');
    await createTopic(topic, 1);
    const fetchReq = (minBytes: number) => ({
      replica_id: -1, max_wait_ms: 30_000, min_bytes: minBytes, max_bytes: 1 << 20, isolation_level: 0,
      topics: [{ topic, partitions: [{ partition: 0, fetch_offset: 0, log_start_offset: -1, partition_max_bytes: 1 << 20 }] }],
    });
    // Inside the 30 s long-poll window: an answer within 10 s means the fetch did not park.
    const quick = await Promise.race([c.request(API.Fetch, 6, fetchReq(0)), new Promise<'parked'>((r) => setTimeout(() => r('parked'), 10_000).unref())]);
    assert.notEqual(quick, 'parked');
    const w = await WireClient.connect(b.kafkaPort);
    let done = false;
    const parked = w.request(API.Fetch, 6, fetchReq(1)).then((r) => { done = true; return r; });
    await waitFor(async () => (await call(b.url, 'GET', '/metrics/prometheus')).status === 200, { what: 'a metrics read (lets the fetch park)' });
    assert.equal(done, false, 'parked while the partition is empty');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '0', payload: { wake: 1 } }] });
    const res = await Promise.race([parked, new Promise<'parked'>((r) => setTimeout(() => r('parked'), 10_000).unref())]);
    assert.notEqual(res, 'parked', 'the push woke the fetch');
    w.close();
  });

  test('Prometheus counts Kafka connections, requests per API and errors per code', async () => {
    const res = await fetch(`${b.url}/metrics/prometheus`);
    const text = await res.text();
    assert.match(text, /queen_kafka_connections \d+/);
    assert.match(text, /queen_kafka_requests_total\{api="Produce"\} \d+/);
    assert.match(text, /queen_kafka_errors_total\{code="10"\} \d+/);
  });
});

describe('Kafka connection limits', () => {
  let b: KafkaBroker;
  before(async () => { b = await startKafkaBroker({ env: { QUEEN_KAFKA_MAX_CONNECTIONS: '16', QUEEN_KAFKA_IDLE_TIMEOUT_MS: '1000' } }); });
  after(async () => { await b?.stop(); });

  test('connections past QUEEN_KAFKA_MAX_CONNECTIONS are closed at accept; idle ones after the idle timeout', async () => {
    const open: WireClient[] = [];
    for (let i = 0; i < 16; i++) {
      const w = await WireClient.connect(b.kafkaPort);
      await w.request(API.ApiVersions, 0, {});
      open.push(w);
    }
    const extra = await WireClient.connect(b.kafkaPort);
    await extra.closed;
    assert.ok(extra.isClosed, 'the 17th connection is closed');
    // Idle: none of the 16 sends anything more; each is closed by the broker.
    await Promise.all(open.map((w) => w.closed));
    assert.ok(open.every((w) => w.isClosed));
    const fresh = await WireClient.connect(b.kafkaPort);
    const res = await fresh.request(API.ApiVersions, 0, {});
    assert.equal(res.error_code, 0, 'a slot is free again');
    fresh.close();
  });
});
