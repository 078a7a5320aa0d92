/**
 * Unmodified kafkajs against a real broker (docs/kafka.md#tested-clients): produce with keys,
 * repeated headers and gzip; a consumer group from the beginning; commit, broker restart, resume;
 * a rebalance when a third consumer joins; createTopics / fetchTopicOffsets / deleteTopics; a
 * native push read by Kafka and a Kafka record popped natively.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import kafkajs, { type Consumer, type EachMessagePayload, type Kafka as KafkaClient } from 'kafkajs';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';

const { Kafka, CompressionTypes, logLevel } = kafkajs;

function client(b: KafkaBroker): KafkaClient {
  return new Kafka({ clientId: 'queen-test', brokers: [b.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 3 } });
}

interface Seen {
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  headers: Record<string, unknown>;
  timestamp: string;
}

function record(p: EachMessagePayload): Seen {
  const m = p.message;
  return { partition: p.partition, offset: m.offset, key: m.key?.toString() ?? null, value: m.value?.toString() ?? null, headers: m.headers ?? {}, timestamp: m.timestamp };
}

/** Runs `consumer` until `n` messages were seen; returns them. */
async function consume(consumer: Consumer, topic: string, n: number, autoCommit = true): Promise<Seen[]> {
  const seen: Seen[] = [];
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ autoCommit, eachMessage: async (p) => { seen.push(record(p)); } });
  await waitFor(() => seen.length >= n, { timeoutMs: 60_000, what: `${n} messages on ${topic}` });
  return seen;
}

describe('kafkajs', () => {
  let b: KafkaBroker;
  let kafka: KafkaClient;
  before(async () => {
    process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
    b = await startKafkaBroker();
    kafka = client(b);
  });
  after(async () => { await b?.stop(); });

  test('keys, repeated headers and gzip come back identical to a group reading from the beginning', async () => {
    const topic = uniqueName('kjs-orders');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    const sent = await producer.send({
      topic, compression: CompressionTypes.GZIP,
      messages: [
        { key: 'k1', value: '{"a":1}', headers: { trace: ['t-1', 't-2'], other: 'x' }, timestamp: '1790000000001' },
        { key: 'k2', value: 'plain text', timestamp: '1790000000002' },
        { key: 'k1', value: '{"a":3}', timestamp: '1790000000003' },
        { key: null, value: null, timestamp: '1790000000004' },
      ],
    });
    await producer.disconnect();
    assert.ok(sent.every((r) => r.errorCode === 0));
    const consumer = kafka.consumer({ groupId: uniqueName('g') });
    await consumer.connect();
    const seen = await consume(consumer, topic, 4);
    await consumer.disconnect();
    const k1 = seen.filter((s) => s.key === 'k1');
    assert.equal(k1.length, 2);
    assert.equal(k1[0]!.partition, k1[1]!.partition, 'one key, one partition');
    assert.deepEqual(k1.map((s) => [s.offset, s.value]), [['0', '{"a":1}'], ['1', '{"a":3}']].map(([o, v]) => [String(Number(o) + Number(k1[0]!.offset)), v]));
    const first = k1[0]!;
    assert.deepEqual((first.headers.trace as Buffer[]).map(String), ['t-1', 't-2'], 'a repeated header keeps both values in order');
    assert.equal(String(first.headers.other), 'x');
    assert.equal(first.timestamp, '1790000000001');
    const k2 = seen.find((s) => s.key === 'k2')!;
    assert.equal(k2.value, 'plain text');
    assert.equal(k2.timestamp, '1790000000002');
    const tomb = seen.find((s) => s.key === null)!;
    assert.equal(tomb.value, null, 'a null value stays null');
  });

  test('a Kafka record is popped natively as its envelope', async () => {
    const topic = uniqueName('kjs-native-pop');
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'customer-1', value: '{"orderId":8891}', partition: 0, headers: { h: 'v' }, timestamp: '1790000000000' }] });
    await producer.disconnect();
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${topic}/partition/0?batch=10&wait=false`);
    assert.equal(pop.status, 200);
    const data = pop.body.messages[0].data;
    assert.deepEqual(data, {
      h: [{ k: 'h', v: Buffer.from('v').toString('base64') }],
      k: Buffer.from('customer-1').toString('base64'),
      t: 1790000000000,
      v: Buffer.from('{"orderId":8891}').toString('base64'),
    });
  });

  test('a native push is read by a Kafka consumer as the JSON text with a null key', async () => {
    const topic = uniqueName('kjs-native-push');
    const push = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '2', payload: { a: 1, s: 'x' } }] });
    assert.equal(push.status, 201);
    const consumer = kafka.consumer({ groupId: uniqueName('g') });
    await consumer.connect();
    const seen = await consume(consumer, topic, 1);
    await consumer.disconnect();
    assert.equal(seen[0]!.partition, 2);
    assert.equal(seen[0]!.key, null);
    assert.deepEqual(JSON.parse(seen[0]!.value!), { a: 1, s: 'x' });
  });

  test('a long-polling Kafka consumer is woken by a native push', async () => {
    const topic = uniqueName('kjs-wake');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();
    // The fetch parks up to 30 s; the message must arrive well inside that, so the push woke it.
    const consumer = kafka.consumer({ groupId: uniqueName('g'), maxWaitTimeInMs: 30_000 });
    await consumer.connect();
    const seen: Seen[] = [];
    await consumer.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((r) => consumer.on(consumer.events.GROUP_JOIN, () => r()));
    await consumer.run({ eachMessage: async (p) => { seen.push(record(p)); } });
    await joined;
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '0', payload: { woke: true } }] });
    await waitFor(() => seen.length === 1, { timeoutMs: 15_000, what: 'the pushed message' });
    // The disconnect waits for the fetch parked now; one more push ends it.
    const disconnected = consumer.disconnect();
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '0', payload: { woke: 2 } }] });
    await disconnected;
    assert.deepEqual(JSON.parse(seen[0]!.value!), { woke: true });
  });

  test('createTopics, metadata, fetchTopicOffsets, deleteTopics', async () => {
    const topic = uniqueName('kjs-admin');
    const admin = kafka.admin();
    await admin.connect();
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 8 }] }), true);
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    assert.equal(meta.topics[0]!.partitions.length, 8);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ value: 'a', partition: 5 }, { value: 'b', partition: 5 }] });
    await producer.disconnect();
    const offsets = await admin.fetchTopicOffsets(topic);
    const p5 = offsets.find((o) => o.partition === 5)!;
    assert.deepEqual([p5.low, p5.high], ['0', '2']);
    assert.deepEqual([offsets.find((o) => o.partition === 0)!.high], ['0']);
    await assert.rejects(admin.createTopics({ topics: [{ topic }], validateOnly: false }).then((created) => { if (!created) throw new Error('exists'); }));
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
    const q = await call(b.url, 'GET', `/api/v1/resources/queues/${topic}`);
    assert.equal(q.status, 404, 'deleteTopics deletes the queue');
  });

  test('two consumers split the partitions and a third joining triggers a rebalance', async () => {
    const topic = uniqueName('kjs-rebalance');
    const groupId = uniqueName('g');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] });
    await admin.disconnect();
    const assigned = new Map<Consumer, number[]>();
    const consumers: Consumer[] = [];
    const add = async () => {
      const c = kafka.consumer({ groupId, heartbeatInterval: 500 });
      consumers.push(c);
      c.on(c.events.GROUP_JOIN, (e) => { assigned.set(c, (e.payload.memberAssignment[topic] ?? []).slice().sort((x, y) => x - y)); });
      await c.connect();
      await c.subscribe({ topic, fromBeginning: true });
      await c.run({ eachMessage: async () => undefined });
    };
    const split = (n: number) => {
      if (assigned.size !== n) return false;
      const all = [...assigned.values()].flat().sort((x, y) => x - y);
      return all.join() === '0,1,2,3,4,5' && [...assigned.values()].every((a) => a.length === 6 / n);
    };
    try {
      await add();
      await add();
      await waitFor(() => split(2), { timeoutMs: 60_000, what: 'two consumers with 3 partitions each' });
      await add();
      await waitFor(() => split(3), { timeoutMs: 60_000, what: 'three consumers with 2 partitions each' });
      const desc = await call(b.url, 'GET', '/api/v1/consumer-groups');
      assert.equal(desc.status, 200);
    } finally {
      for (const c of consumers) await c.disconnect();
    }
  });

  test('describeGroups, listGroups, deleteGroups (refused while members live) and describeConfigs', async () => {
    const topic = uniqueName('kjs-groups');
    const groupId = uniqueName('g');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '86400000' }] }] });
    const configs = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
    const entries = configs.resources[0]!.configEntries;
    assert.equal(entries.find((e) => e.configName === 'retention.ms')?.configValue, '86400000');
    assert.equal(entries.find((e) => e.configName === 'min.insync.replicas')?.configValue, '1');
    const consumer = kafka.consumer({ groupId });
    await consumer.connect();
    const seen = await (async () => {
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic, messages: [{ value: 'x', partition: 0 }] });
      await producer.disconnect();
      return consume(consumer, topic, 1);
    })();
    assert.equal(seen.length, 1);
    const described = await admin.describeGroups([groupId]);
    assert.equal(described.groups[0]!.state, 'Stable');
    assert.equal(described.groups[0]!.members.length, 1);
    assert.equal(described.groups[0]!.protocolType, 'consumer');
    await assert.rejects(admin.deleteGroups([groupId]), (e: { groups?: { errorCode: number }[] }) => e.groups?.[0]?.errorCode === 68);
    await consumer.disconnect();
    const listed = await admin.listGroups();
    assert.ok(listed.groups.some((g) => g.groupId === groupId));
    const deleted = await admin.deleteGroups([groupId]);
    assert.equal(deleted[0]!.errorCode, 0);
    await admin.disconnect();
    const groups = await call(b.url, 'GET', '/api/v1/consumer-groups');
    assert.ok(!(groups.body as { name: string }[]).some((g) => g.name === groupId), 'the Queen group is gone');
  });

  test('committed offsets survive a broker restart and the group resumes after them', async () => {
    const topic = uniqueName('kjs-resume');
    const groupId = uniqueName('g');
    const setup = kafka.admin();
    await setup.connect();
    await setup.createTopics({ topics: [{ topic, numPartitions: 3 }] });
    await setup.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [0, 1, 2, 3, 4].map((i) => ({ value: `m${i}`, partition: 0 })) });
    await producer.disconnect();
    const c1 = kafka.consumer({ groupId });
    await c1.connect();
    const seen: Seen[] = [];
    await c1.subscribe({ topic, fromBeginning: true });
    await c1.run({ autoCommit: false, eachMessage: async (p) => { seen.push(record(p)); } });
    await waitFor(() => seen.length >= 5, { timeoutMs: 60_000, what: 'five messages' });
    await c1.commitOffsets([{ topic, partition: 0, offset: '3' }]); // m0..m2 consumed
    await c1.disconnect();
    const groups = await call(b.url, 'GET', '/api/v1/consumer-groups');
    const row = (groups.body as { name: string; queueName: string; totalLag: number }[]).find((g) => g.name === groupId && g.queueName === topic);
    assert.equal(row?.totalLag, 2, 'the Kafka group is the Queen group, its lag visible natively');

    const { dataDir, port, kafkaPort } = b;
    await b.stop();
    b = await startKafkaBroker({ dataDir, port, kafkaPort });
    kafka = client(b);
    const admin = kafka.admin();
    await admin.connect();
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.disconnect();
    assert.equal(meta.topics[0]!.partitions.length, 3, 'the width CreateTopics gave survives the restart');
    const c2 = kafka.consumer({ groupId });
    await c2.connect();
    const again = await consume(c2, topic, 2);
    await c2.disconnect();
    assert.deepEqual(again.map((s) => s.value), ['m3', 'm4'], 'resumes after the committed record');
  });
});
