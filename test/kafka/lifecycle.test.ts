/**
 * The Kafka port's lifetime and durable side tables (docs/kafka.md#storage, #configuration):
 * `GET /status` carries the kafka block; commit metadata, topic widths and the group index survive
 * a restart; a topic record an earlier build kept in KV moves into `kafka_topics` at boot; a Kafka
 * group's lag shows in `/api/v1/consumer-groups`; SIGTERM answers a parked Fetch and ends the
 * connection (FIN) before the store closes.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { API } from '../../src/kafka/protocol/apis.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';
import { batch, produceBody, producePartition, recordsBody, WireClient, type Body } from './wire.js';

async function createTopic(c: WireClient, topic: string, partitions: number): Promise<void> {
  const res = await c.request(API.CreateTopics, 4, { topics: [{ name: topic, num_partitions: partitions, replication_factor: 1, assignments: [], configs: [] }], timeout_ms: 1000, validate_only: false });
  assert.equal((res.topics as Body[])[0]!.error_code, 0);
}

async function width(c: WireClient, topic: string): Promise<number> {
  const res = await c.request(API.Metadata, 9, { topics: [{ name: topic }], allow_auto_topic_creation: false });
  const t = (res.topics as Body[])[0]!;
  assert.equal(t.error_code, 0, `metadata of ${topic}`);
  return (t.partitions as Body[]).length;
}

async function commit(c: WireClient, group: string, topic: string, partition: number, offset: number, metadata: string | null): Promise<number> {
  const res = await c.request(API.OffsetCommit, 6, { group_id: group, generation_id: -1, member_id: '', topics: [{ name: topic, partitions: [{ partition_index: partition, committed_offset: offset, committed_leader_epoch: -1, committed_metadata: metadata }] }] });
  return ((res.topics as Body[])[0]!.partitions as Body[])[0]!.error_code as number;
}

async function committed(c: WireClient, group: string, topic: string, partitions: number[]): Promise<[number, string][]> {
  const res = await c.request(API.OffsetFetch, 7, { group_id: group, topics: [{ name: topic, partition_indexes: partitions }], require_stable: false });
  return ((res.topics as Body[])[0]!.partitions as Body[]).map((p) => [p.committed_offset as number, p.metadata as string]);
}

describe('Kafka port lifecycle', () => {
  const brokers: KafkaBroker[] = [];
  const clients: WireClient[] = [];
  after(async () => {
    for (const c of clients) c.close();
    for (const b of brokers) await b.stop();
  });
  const start = async (opts: { dataDir?: string; kafkaPort?: number } = {}) => {
    const b = await startKafkaBroker(opts);
    brokers.push(b);
    const c = await WireClient.connect(b.kafkaPort);
    clients.push(c);
    return { b, c };
  };
  const restart = async (b: KafkaBroker) => {
    assert.equal(await b.stop(), 0);
    brokers.splice(brokers.indexOf(b), 1);
    return start({ dataDir: b.dataDir, kafkaPort: b.kafkaPort });
  };

  test('GET /status carries the kafka block: mode, bound and advertised address, open connections', async () => {
    const { b } = await start();
    const extra = await WireClient.connect(b.kafkaPort);
    clients.push(extra);
    const status = await waitFor(async () => {
      const r = await call(b.url, 'GET', '/status');
      return r.status === 200 && (r.body as { kafka?: { connections: number } }).kafka?.connections === 2 ? r.body : undefined;
    }, { what: 'two connections in /status' });
    assert.deepEqual(status, { status: 'ok', engine: 'sqlite', kafka: { mode: 'in-process', listen: b.bootstrap, advertised: b.bootstrap, connections: 2 } });
    extra.close();
    await waitFor(async () => (await call(b.url, 'GET', '/status')).body.kafka.connections === 1, { what: 'the closed connection to leave /status' });
  });

  test('commit metadata, topic width and the group survive a restart; /api/v1/consumer-groups shows the Kafka group\'s lag', async () => {
    const first = await start();
    const topic = uniqueName('side');
    const group = uniqueName('g');
    await createTopic(first.c, topic, 3);
    const p = await first.c.request(API.Produce, 7, produceBody(topic, 0, batch({ count: 5, body: recordsBody([0, 1, 2, 3, 4].map((i) => ({ value: Buffer.from(`m${i}`) }))) })));
    assert.equal(producePartition(p).error_code, 0);
    assert.equal(await commit(first.c, group, topic, 0, 2, 'checkpoint-A'), 0);
    assert.deepEqual(await committed(first.c, group, topic, [0, 1]), [[2, 'checkpoint-A'], [-1, '']]);
    const groups = await call(first.b.url, 'GET', '/api/v1/consumer-groups');
    const row = (groups.body as { name: string; totalLag: number; topics?: string[] }[]).find((g) => g.name === group);
    assert.equal(row?.totalLag, 3, 'five records, the group committed 2: lag 3');
    const detail = await call(first.b.url, 'GET', `/api/v1/consumer-groups/${encodeURIComponent(group)}`);
    assert.equal(detail.status, 200);

    const { c } = await restart(first.b);
    assert.equal(await width(c, topic), 3, 'the width CreateTopics recorded (not the default 1024)');
    assert.deepEqual(await committed(c, group, topic, [0]), [[2, 'checkpoint-A']], 'position and metadata back from the store');
    const listed = await c.request(API.ListGroups, 4, { states_filter: [] });
    assert.ok((listed.groups as Body[]).some((g) => g.group_id === group && g.group_state === 'Empty'), 'the group is listed after the restart');

    assert.equal(await commit(c, group, topic, 0, -1, null), 0);
    assert.deepEqual(await committed(c, group, topic, [0]), [[-1, '']], 'a commit of -1 removes position and metadata');
    const del = await c.request(API.DeleteTopics, 4, { topic_names: [topic], timeout_ms: 1000 });
    assert.equal(((del.responses as Body[])[0]!).error_code, 0);
    const gone = await c.request(API.DeleteGroups, 2, { groups_names: [group] });
    assert.equal(((gone.results as Body[])[0]!).error_code, 0);
    const again = await c.request(API.DeleteGroups, 2, { groups_names: [group] });
    assert.equal(((again.results as Body[])[0]!).error_code, 69, 'GROUP_ID_NOT_FOUND once deleted');
  });

  test('a topic record an earlier build kept in the KV namespace queen.kafka.topics moves into kafka_topics at boot', async () => {
    const first = await start();
    const topic = uniqueName('legacy');
    assert.equal((await call(first.b.url, 'POST', '/api/v1/configure', { queue: topic, options: {} })).status, 200);
    const put = await call(first.b.url, 'PUT', `/api/v1/kv/queen.kafka.topics/${topic}`, { value: { width: 7, configs: { 'retention.ms': '-1' } }, forever: true });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const second = await restart(first.b);
    assert.equal(await width(second.c, topic), 7, 'the width from the legacy record');
    const kv = await call(second.b.url, 'GET', `/api/v1/kv/queen.kafka.topics/${topic}`);
    assert.equal(kv.body.found, false, 'the KV record was moved, not copied');
    const third = await restart(second.b);
    assert.equal(await width(third.c, topic), 7, 'and read from kafka_topics after another restart');
  });

  test('SIGTERM: a parked Fetch is answered, the connection ended (FIN) and the port closed before the store', async () => {
    const { b, c } = await start();
    const topic = uniqueName('term');
    await createTopic(c, topic, 1);
    const { frame, correlationId } = c.encode(API.Fetch, 6, {
      replica_id: -1, max_wait_ms: 25_000, min_bytes: 1, max_bytes: 1 << 20, isolation_level: 0,
      topics: [{ topic, partitions: [{ partition: 0, fetch_offset: 0, log_start_offset: -1, partition_max_bytes: 1 << 20 }] }],
    });
    const answer = c.nextFrame();
    let ended = false;
    c.socket.once('end', () => { ended = true; });
    c.send(frame);
    await waitFor(async () => /^queen_kafka_fetches_parked 1$/m.test((await call(b.url, 'GET', '/metrics/prometheus')).text ?? ''), { what: 'the fetch to park' });
    const code = b.stop();
    const raw = await answer;
    assert.equal(raw.readInt32BE(0), correlationId, 'the parked fetch was answered');
    await c.closed;
    assert.equal(ended, true, 'the broker ended the connection (FIN), not a reset');
    assert.equal(await code, 0);
    brokers.splice(brokers.indexOf(b), 1);
    const lines = b.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; connections?: number });
    const kafkaStopped = lines.findIndex((l) => l.msg === 'queen-kafka stopped');
    const stopped = lines.findIndex((l) => l.msg === 'stopped');
    assert.ok(kafkaStopped >= 0 && stopped > kafkaStopped, 'the Kafka port closed before the services and the store');
    assert.equal(lines[kafkaStopped]!.connections, 1);
  });
});
