/**
 * Connection deadlines and the in-flight byte budget of the Kafka port
 * (docs/kafka.md#connection-layer): a connection that does not authenticate in time, or a frame
 * that does not complete in time once started, is closed — the idle timeout alone was reset by any
 * byte. Raw sockets, real brokers with short deadlines.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { API } from '../../src/kafka/protocol/apis.js';
import { within } from '../helpers/wait.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';
import { WireClient, type Body } from './wire.js';

function plain(user: string, password: string): Buffer {
  return Buffer.from(`\u0000${user}\u0000${password}`);
}

describe('Kafka deadlines with SASL on', () => {
  let b: KafkaBroker;
  before(async () => {
    b = await startKafkaBroker({ env: { QUEEN_KAFKA_SASL: 'plain', QUEEN_KAFKA_SASL_AUTH_TIMEOUT_MS: '1000' } });
  });
  after(async () => { await b?.stop(); });

  test('a connection not authenticated within QUEEN_KAFKA_SASL_AUTH_TIMEOUT_MS is closed; an authenticated one stays', async () => {
    const idle = await WireClient.connect(b.kafkaPort);
    const trickle = await WireClient.connect(b.kafkaPort);
    const authed = await WireClient.connect(b.kafkaPort);
    const hs = await authed.request(API.SaslHandshake, 1, { mechanism: 'PLAIN' });
    assert.equal(hs.error_code, 0);
    assert.equal((await authed.request(API.SaslAuthenticate, 1, { auth_bytes: plain('svc', 'any-token') })).error_code, 0);
    // ApiVersions is allowed before authentication; answering it must not extend the deadline.
    const { frame } = trickle.encode(API.ApiVersions, 0, {});
    let answered = 0;
    const pinging = (async () => {
      while (!trickle.isClosed && answered < 200) {
        const a = trickle.nextFrame();
        trickle.send(frame);
        await Promise.race([a, trickle.closed]);
        answered++;
        await Promise.race([new Promise((r) => setTimeout(r, 50)), trickle.closed]); // the attack's pacing
      }
    })();
    await within(Promise.all([idle.closed, trickle.closed]), 20_000, 'the unauthenticated connections to be closed');
    await pinging;
    assert.ok(answered < 200, 'ApiVersions did not keep the unauthenticated connection open');
    const meta = await authed.request(API.Metadata, 9, { topics: [], allow_auto_topic_creation: false });
    assert.equal((meta.brokers as Body[]).length, 1, 'the authenticated connection is served');
    authed.close();
  });
});

describe('Kafka frame deadline', () => {
  let b: KafkaBroker;
  before(async () => {
    b = await startKafkaBroker({ env: { QUEEN_KAFKA_FRAME_TIMEOUT_MS: '1000' } });
  });
  after(async () => { await b?.stop(); });

  test('a frame trickled one byte at a time is closed once QUEEN_KAFKA_FRAME_TIMEOUT_MS passes since it started', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    const { frame } = c.encode(API.Metadata, 1, { topics: Array.from({ length: 50 }, (_, i) => ({ name: `t${i}` })) });
    let sent = 0;
    while (!c.isClosed && sent < frame.length - 1) {
      c.send(frame.subarray(sent, sent + 1));
      sent++;
      // Pacing of the attack itself (one byte per 50 ms), not a wait for an outcome.
      await Promise.race([new Promise((r) => setTimeout(r, 50)), c.closed]);
    }
    assert.ok(c.isClosed, `the connection stayed open while ${sent} of ${frame.length} bytes trickled in`);
    // A frame sent whole on a new connection is served.
    const ok = await WireClient.connect(b.kafkaPort);
    assert.equal(((await ok.request(API.Metadata, 1, { topics: [] })).brokers as Body[]).length, 1);
    ok.close();
  });
});
