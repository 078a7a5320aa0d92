/**
 * SASL/PLAIN on the Kafka port (docs/kafka.md#sasl-plain): the password is a Queen bearer token
 * checked like an HTTP request's. Every case of the rules: a good token, a bad signature (58 with
 * the 401 text), a write-only token (58 mentioning read), a SCRAM handshake (33), a non-SASL first
 * frame (closed, no answer), a bad authzid (58), ILLEGAL_SASL_STATE, handshake v0 raw tokens, the
 * 64 KiB pre-authentication cap, a token that expires closing the connection, no token in any log
 * line, and kafkajs end to end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import kafkajs from 'kafkajs';
import { API } from '../../src/kafka/protocol/apis.js';
import { authenticatePlain } from '../../src/kafka/sasl.js';
import { QueenError } from '../../src/errors.js';
import { uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { flipSignatureBit, hsKey, mint, nowSec } from '../helpers/jwt.js';
import { produceThenConsume, startKafkaBroker, type KafkaBroker } from './helpers.js';
import { batch, produceBody, producePartition, recordsBody, WireClient, type Body } from './wire.js';

const SECRET = 'kafka-sasl-test-secret-0123456789abcdef';
const { Kafka, logLevel } = kafkajs;

function plain(authzid: string, user: string, password: string): Buffer {
  return Buffer.from(`${authzid}\u0000${user}\u0000${password}`, 'utf8');
}

describe('SASL/PLAIN', () => {
  let b: KafkaBroker;
  const tokens: string[] = [];
  const token = async (claims: Record<string, unknown>) => {
    const t = await mint('HS256', hsKey(SECRET), { sub: 'svc-kafka', ...claims });
    tokens.push(t);
    return t;
  };
  before(async () => {
    b = await startKafkaBroker({
      env: { QUEEN_KAFKA_SASL: 'plain', QUEEN_KAFKA_SASL_RECHECK_MS: '300', JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET, JWT_CLOCK_SKEW: '0' },
    });
  });
  after(async () => { await b?.stop(); });

  async function authenticate(c: WireClient, bytes: Buffer): Promise<Body> {
    const hs = await c.request(API.SaslHandshake, 1, { mechanism: 'PLAIN' });
    assert.equal(hs.error_code, 0);
    return c.request(API.SaslAuthenticate, 1, { auth_bytes: bytes });
  }

  test('the boot warns that PLAIN runs without TLS', () => {
    assert.match(b.output(), /QUEEN_KAFKA_SASL=plain without TLS/);
    assert.match(b.output(), /"sasl":"plain"/);
  });

  test('a valid token is admitted; then Metadata is served and a second authentication is ILLEGAL_SASL_STATE', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const res = await authenticate(c, plain('', 'svc', await token({ role: 'read-write' })));
    assert.deepEqual([res.error_code, res.session_lifetime_ms], [0, 0]);
    const meta = await c.request(API.Metadata, 9, { topics: null, allow_auto_topic_creation: false });
    assert.equal((meta.brokers as Body[]).length, 1);
    const again = await c.request(API.SaslAuthenticate, 1, { auth_bytes: plain('', 'svc', 'x') });
    assert.equal(again.error_code, 34);
    assert.equal(again.error_message, 'this connection has already authenticated');
    assert.equal(c.isClosed, false, 'the connection is kept');
    c.close();
  });

  test('a token with a wrong signature answers 58 with the 401 text, then the connection closes', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const bad = flipSignatureBit(await token({ role: 'read-write' }));
    tokens.push(bad);
    const res = await authenticate(c, plain('', 'svc', bad));
    assert.equal(res.error_code, 58);
    assert.match(String(res.error_message), /HTTP 401/);
    assert.ok(!String(res.error_message).includes(bad));
    await c.closed;
  });

  test('a write-only token answers 58 saying it needs read', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const res = await authenticate(c, plain('', 'svc', await token({ role: 'write-only' })));
    assert.equal(res.error_code, 58);
    assert.match(String(res.error_message), /HTTP 403/);
    assert.match(String(res.error_message), /read/);
    await c.closed;
  });

  test('a SCRAM handshake answers UNSUPPORTED_SASL_MECHANISM with PLAIN offered', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const res = await c.request(API.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' });
    assert.equal(res.error_code, 33);
    assert.deepEqual(res.mechanisms, ['PLAIN']);
    c.close();
  });

  test('a first frame that is not SASL closes the connection without an answer', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    let answered = false;
    void c.nextFrame().then(() => (answered = true));
    c.send(c.encode(API.Metadata, 9, { topics: null, allow_auto_topic_creation: false }).frame);
    await c.closed;
    assert.equal(answered, false);
  });

  test('SaslAuthenticate without a handshake closes the connection', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    c.send(c.encode(API.SaslAuthenticate, 1, { auth_bytes: plain('', 'svc', 'x') }).frame);
    await c.closed;
    assert.ok(c.isClosed);
  });

  test('an authzid other than the username, or a malformed message, answers 58 without the password', async () => {
    const t = await token({ role: 'read-write' });
    for (const bytes of [plain('other', 'svc', t), Buffer.from(`svc\u0000${t}`), plain('', '', t)]) {
      const c = await WireClient.connect(b.kafkaPort);
      const res = await authenticate(c, bytes);
      assert.equal(res.error_code, 58);
      assert.ok(!String(res.error_message).includes(t), 'the message never carries the password');
      await c.closed;
    }
    const c = await WireClient.connect(b.kafkaPort);
    const same = await authenticate(c, plain('svc', 'svc', t));
    assert.equal(same.error_code, 0, 'authzid equal to the username is accepted');
    c.close();
  });

  test('handshake v0: the next frame is the raw PLAIN message, answered with an empty frame', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const hs = await c.request(API.SaslHandshake, 0, { mechanism: 'PLAIN' });
    assert.equal(hs.error_code, 0);
    const msg = plain('', 'svc', await token({ role: 'read-only' }));
    const head = Buffer.alloc(4);
    head.writeInt32BE(msg.length);
    const answer = c.nextFrame();
    c.send(Buffer.concat([head, msg]));
    assert.equal((await answer).length, 0);
    const meta = await c.request(API.Metadata, 1, { topics: null });
    assert.equal((meta.brokers as Body[])[0]!.node_id, 0);
    c.close();
  });

  test('before authentication a frame over 64 KiB closes the connection', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const head = Buffer.alloc(4);
    head.writeInt32BE(64 * 1024 + 1);
    c.send(head);
    await c.closed;
    assert.ok(c.isClosed);
  });

  test('a connection whose token expires is closed', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const res = await authenticate(c, plain('', 'svc', await token({ role: 'read-write', exp: nowSec() + 2 })));
    assert.equal(res.error_code, 0);
    await c.closed;
    assert.ok(c.isClosed);
  });

  test('each API needs its access level: read-only may not produce or commit, read-write may not delete topics', async () => {
    const topic = uniqueName('levels');
    const rw = await WireClient.connect(b.kafkaPort);
    assert.equal((await authenticate(rw, plain('', 'svc', await token({ role: 'read-write' })))).error_code, 0);
    const created = await rw.request(API.CreateTopics, 4, { topics: [{ name: topic, num_partitions: 1, replication_factor: 1, assignments: [], configs: [] }], timeout_ms: 1000, validate_only: false });
    assert.equal((created.topics as Body[])[0]!.error_code, 0);
    const one = batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]) });
    assert.equal(producePartition(await rw.request(API.Produce, 7, produceBody(topic, 0, one))).error_code, 0);
    const del = await rw.request(API.DeleteTopics, 4, { topic_names: [topic], timeout_ms: 1000 });
    assert.equal((del.responses as Body[])[0]!.error_code, 29, 'deleting a topic needs admin');

    const ro = await WireClient.connect(b.kafkaPort);
    assert.equal((await authenticate(ro, plain('', 'svc', await token({ role: 'read-only' })))).error_code, 0);
    assert.equal(producePartition(await ro.request(API.Produce, 7, produceBody(topic, 0, one))).error_code, 29);
    const commit = await ro.request(API.OffsetCommit, 6, { group_id: uniqueName('g'), generation_id: -1, member_id: '', topics: [{ name: topic, partitions: [{ partition_index: 0, committed_offset: 1, committed_leader_epoch: -1, committed_metadata: null }] }] });
    assert.equal(((commit.topics as Body[])[0]!.partitions as Body[])[0]!.error_code, 30);
    const meta = await ro.request(API.Metadata, 9, { topics: [{ name: topic }], allow_auto_topic_creation: false });
    assert.equal((meta.topics as Body[])[0]!.error_code, 0, 'reading is allowed');

    const admin = await WireClient.connect(b.kafkaPort);
    assert.equal((await authenticate(admin, plain('', 'svc', await token({ role: 'admin' })))).error_code, 0);
    const gone = await admin.request(API.DeleteTopics, 4, { topic_names: [topic], timeout_ms: 1000 });
    assert.equal((gone.responses as Body[])[0]!.error_code, 0);
    for (const c of [rw, ro, admin]) c.close();
  });

  test('kafkajs with SASL/PLAIN produces and consumes', async () => {
    const password = await token({ role: 'read-write' });
    const kafka = new Kafka({ clientId: 'sasl', brokers: [b.bootstrap], sasl: { mechanism: 'plain', username: 'svc', password }, logLevel: logLevel.NOTHING });
    const topic = uniqueName('sasl');
    assert.equal(await produceThenConsume(kafka, topic, 'secured', 'a'), 'secured');
  });

  test('no token reaches any log line', () => {
    const out = b.output();
    assert.ok(tokens.length > 5);
    for (const t of tokens) {
      assert.ok(!out.includes(t), 'a token was logged');
      assert.ok(!out.includes(t.split('.')[2]!), 'a token signature was logged');
    }
  });
});

describe('JWT on, SASL off', () => {
  test('without QUEEN_TOKEN the boot warns and every API is refused; with it, its roles apply', async () => {
    const bare = await startKafkaBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET } });
    try {
      // The boot lines reach this process through a pipe, possibly after the port already accepts.
      await waitFor(() => /neither QUEEN_TOKEN nor QUEEN_KAFKA_SASL/.test(bare.output()), { what: 'the no-credential warning' });
      const c = await WireClient.connect(bare.kafkaPort);
      const one = batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]) });
      assert.equal(producePartition(await c.request(API.Produce, 7, produceBody('no-token', 0, one))).error_code, 29);
      c.close();
    } finally {
      await bare.stop();
    }
    const processToken = await mint('HS256', hsKey(SECRET), { sub: 'process', role: 'read-write' });
    const withToken = await startKafkaBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET, QUEEN_TOKEN: processToken } });
    try {
      await waitFor(() => /"authenticated":true/.test(withToken.output()), { what: 'the boot line with authenticated:true' });
      assert.ok(!withToken.output().includes(processToken), 'QUEEN_TOKEN is never logged');
      const c = await WireClient.connect(withToken.kafkaPort);
      const one = batch({ count: 1, body: recordsBody([{ value: Buffer.from('x') }]) });
      const r = producePartition(await c.request(API.Produce, 7, produceBody(uniqueName('with-token'), 0, one)));
      assert.deepEqual([r.error_code, r.base_offset], [0, 0]);
      c.close();
    } finally {
      await withToken.stop();
    }
  });
});

describe('SASL/PLAIN outcomes by the credential check\'s answer', () => {
  // The in-process check cannot be made unreachable from outside (a JWKS miss is a 401), so the
  // exchange is driven with checks that answer each way; the connection closes on `close` (above).
  const msg = Buffer.from('\u0000svc\u0000the-token');
  test('401 and 403 are 58 with their texts; anything else closes without an answer', async () => {
    const refusedWith = (e: Error) => authenticatePlain(msg, () => Promise.reject(e));
    const r401 = await refusedWith(new QueenError('invalid_token_signature'));
    assert.equal(r401.kind, 'refused');
    assert.match((r401 as { message: string }).message, /HTTP 401/);
    const r403 = await refusedWith(new QueenError('insufficient_permissions', 'needs read-only'));
    assert.match((r403 as { message: string }).message, /HTTP 403.*read.*needs read-only/);
    for (const e of [new QueenError('shutting_down'), new Error('socket hang up')]) assert.deepEqual(await refusedWith(e), { kind: 'close' });
    for (const r of [r401, r403]) assert.ok(!JSON.stringify(r).includes('the-token'));
    assert.deepEqual(await authenticatePlain(msg, () => Promise.resolve({ sub: 's', roles: 'all' })), { kind: 'ok', sub: 's', roles: 'all', token: 'the-token' });
  });
});
