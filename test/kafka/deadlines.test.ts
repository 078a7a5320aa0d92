/**
 * Connection deadlines and the in-flight byte budget of the Kafka port
 * (docs/kafka.md#connection-layer): a connection that does not authenticate in time, or a frame
 * that does not complete in time once started, is closed — the idle timeout alone was reset by any
 * byte. Raw sockets, real brokers with short deadlines.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { API } from '../../src/kafka/protocol/apis.js';
import { waitFor, within } from '../helpers/wait.js';
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

/** Resident memory of process `pid`, bytes (/proc/<pid>/status VmRSS). */
function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

describe('Kafka in-flight request bytes', () => {
  const MiB = 1024 * 1024;
  let b: KafkaBroker;
  before(async () => {
    b = await startKafkaBroker({ env: { QUEEN_KAFKA_MAX_REQUEST_BYTES: String(64 * MiB), QUEEN_KAFKA_QUEUED_MAX_REQUEST_BYTES: String(128 * MiB), QUEEN_KAFKA_FRAME_TIMEOUT_MS: '3000' } });
  });
  after(async () => { await b?.stop(); });

  test('8 connections each holding 60 MiB of an unfinished 64 MiB frame pin at most QUEEN_KAFKA_QUEUED_MAX_REQUEST_BYTES, not 480 MiB', async () => {
    const pid = b.proc.pid!;
    const base = rssBytes(pid);
    const head = Buffer.alloc(4);
    head.writeInt32BE(64 * MiB);
    const body = Buffer.alloc(60 * MiB, 1);
    const conns = await Promise.all(Array.from({ length: 8 }, () => WireClient.connect(b.kafkaPort)));
    for (const c of conns) c.send(Buffer.concat([head, body]));
    let peak = base;
    // Each unfinished frame is closed by the frame deadline once it has its budget; sample the
    // broker's memory until all 8 are gone.
    await waitFor(() => {
      peak = Math.max(peak, rssBytes(pid));
      return conns.every((c) => c.isClosed);
    }, { what: 'all 8 connections closed by the frame deadline', timeoutMs: 60_000, intervalMs: 10 });
    const grew = (peak - base) / MiB;
    assert.ok(grew < 300, `the broker's resident memory grew by ${grew.toFixed(0)} MiB`);
    // The budget is given back: a complete request is served.
    const ok = await WireClient.connect(b.kafkaPort);
    assert.equal(((await ok.request(API.Metadata, 1, { topics: [] })).brokers as Body[]).length, 1);
    ok.close();
  });
});
