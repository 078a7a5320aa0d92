/**
 * librdkafka clients against a real broker, run as subprocesses (docs/kafka.md#tested-clients):
 * kcat (produce with keys, consume from the beginning, the 1024-partition listing, a group whose
 * lag shows natively, a native push read by partition) and confluent-kafka-python (an idempotent
 * lz4 producer of 10000 records and a group that reads them exactly once; zstd). Both are Debian
 * packages installed by .ci/run; the tests are skipped where they are missing.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { call, uniqueName } from '../helpers/http.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';

const PYTHON = '/usr/bin/python3';

function available(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

const haveKcat = available('kcat', ['-V']);
const havePython = available(PYTHON, ['-c', 'import confluent_kafka']);

/** Runs a command to completion; rejects on a non-zero exit or after `timeoutMs`. */
function run(cmd: string, args: string[], input = '', timeoutMs = 90_000): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => { if (stderr.length < 20_000) stderr += d.toString(); });
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`${cmd} timed out:\n${stderr}`)); }, timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${stderr.slice(0, 4000)}`));
    });
    p.stdin.end(input);
  });
}

const PY_SCRIPT = String.raw`
import sys, json, time
from confluent_kafka import Producer, Consumer
bootstrap, topic, codec, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
p = Producer({'bootstrap.servers': bootstrap, 'enable.idempotence': True, 'compression.type': codec, 'linger.ms': 5})
errors = []
def delivered(err, msg):
    if err: errors.append(str(err))
for i in range(n):
    p.produce(topic, key=str(i % 7).encode(), value=json.dumps({'i': i}).encode(), on_delivery=delivered)
    if i % 1000 == 0: p.poll(0)
unflushed = p.flush(60)
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'g-' + topic, 'auto.offset.reset': 'earliest', 'allow.auto.create.topics': True})
c.subscribe([topic])
seen = []
deadline = time.time() + 90
while len(seen) < n and time.time() < deadline:
    m = c.poll(1.0)
    if m is None or m.error(): continue
    seen.append(json.loads(m.value())['i'])
# A little longer: anything read twice would show up now.
end = time.time() + 2
while time.time() < end:
    m = c.poll(0.2)
    if m is not None and not m.error(): seen.append(json.loads(m.value())['i'])
c.close()
print(json.dumps({'errors': errors[:5], 'unflushed': unflushed, 'seen': len(seen), 'distinct': len(set(seen)), 'complete': sorted(set(seen)) == list(range(n))}))
`;

describe('librdkafka clients', () => {
  let b: KafkaBroker;
  before(async () => { b = await startKafkaBroker(); });
  after(async () => { await b?.stop(); });

  test('kcat: keyed produce, consume from the beginning, listing, a group, a native push by partition', { skip: !haveKcat && 'kcat is not installed' }, async () => {
    const topic = uniqueName('kcat-orders');
    await run('kcat', ['-P', '-b', b.bootstrap, '-t', topic, '-K:'], 'k1:{"a":1}\nk2:{"a":2}\nk1:{"a":3}\n');
    const out = await run('kcat', ['-C', '-b', b.bootstrap, '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '%p %o %k %s\n']);
    const lines = out.stdout.trim().split('\n').map((l) => l.split(' '));
    assert.equal(lines.length, 3);
    const k1 = lines.filter((l) => l[2] === 'k1');
    assert.equal(k1.length, 2);
    assert.equal(k1[0]![0], k1[1]![0], 'both k1 records in one partition');
    assert.deepEqual(k1.map((l) => [l[1], l[3]]), [['0', '{"a":1}'], ['1', '{"a":3}']]);

    const listing = await run('kcat', ['-L', '-b', b.bootstrap, '-t', topic]);
    assert.match(listing.stdout, /with 1024 partitions/);

    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${topic}/partition/${k1[0]![0]}?batch=10&wait=false`);
    assert.equal(pop.status, 200);
    assert.deepEqual(pop.body.messages.map((m: { data: { k: string; v: string } }) => [Buffer.from(m.data.k, 'base64').toString(), Buffer.from(m.data.v, 'base64').toString()]),
      [['k1', '{"a":1}'], ['k1', '{"a":3}']]);

    const group = uniqueName('billing');
    await run('kcat', ['-b', b.bootstrap, '-G', group, '-o', 'beginning', '-e', '-q', topic]);
    const groups = await call(b.url, 'GET', '/api/v1/consumer-groups');
    const row = (groups.body as { name: string; totalLag: number }[]).find((g) => g.name === group);
    assert.ok(row, 'the kcat group is a Queen consumer group');
    assert.equal(row.totalLag, 0);

    const push = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: topic, partition: '307', payload: { native: true } }] });
    assert.equal(push.status, 201);
    const read = await run('kcat', ['-C', '-b', b.bootstrap, '-t', topic, '-p', '307', '-o', '0', '-e', '-q', '-f', '%o|%k|%s\n']);
    assert.equal(read.stdout, '0||{"native":true}\n');
  });

  test('confluent-kafka-python: an idempotent lz4 producer of 10000 records, read exactly once by a group; zstd', { skip: !havePython && 'python3-confluent-kafka is not installed' }, async () => {
    for (const [codec, n] of [['lz4', 10_000], ['zstd', 1000]] as const) {
      const topic = uniqueName(`ck-${codec}`);
      const out = await run(PYTHON, ['-c', PY_SCRIPT, b.bootstrap, topic, codec, String(n)], '', 150_000);
      const r = JSON.parse(out.stdout.trim().split('\n').pop()!) as { errors: string[]; unflushed: number; seen: number; distinct: number; complete: boolean };
      assert.deepEqual(r, { errors: [], unflushed: 0, seen: n, distinct: n, complete: true }, codec);
    }
  });
});
