/**
 * A Kafka client that pipelines requests and never reads its answers (docs/kafka.md#connection-layer):
 * the broker stops handling a connection's requests while its answers wait in the socket, so such
 * a client cannot grow the broker's memory by one answer per request. Raw socket, real broker.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { API } from '../../src/kafka/protocol/apis.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { startKafkaBroker, type KafkaBroker } from './helpers.js';
import { WireClient } from './wire.js';

let b: KafkaBroker;
before(async () => { b = await startKafkaBroker(); });
after(async () => { await b?.stop(); });

async function fetchesHandled(): Promise<number> {
  const text = await (await fetch(`${b.url}/metrics/prometheus`)).text();
  return Number(/queen_kafka_requests_total\{api="Fetch"\} (\d+)/.exec(text)?.[1] ?? 0);
}

test('a client that sends 400 Fetch requests without reading gets them answered only as it reads', async () => {
  const topic = uniqueName('kbp');
  const items = Array.from({ length: 64 }, (_, i) => ({ queue: topic, partition: '0', payload: { i, pad: 'p'.repeat(4000) } }));
  assert.equal((await call(b.url, 'POST', '/api/v1/push', { items })).status, 201);

  const c = await WireClient.connect(b.kafkaPort);
  c.socket.pause(); // reads nothing: answers pile up in the broker's socket
  const ids: number[] = [];
  const frames: Buffer[] = [];
  for (let i = 0; i < 400; i++) {
    const { frame, correlationId } = c.encode(API.Fetch, 4, {
      replica_id: -1, max_wait_ms: 0, min_bytes: 0, max_bytes: 256 * 1024, isolation_level: 0,
      topics: [{ topic, partitions: [{ partition: 0, fetch_offset: 0, partition_max_bytes: 256 * 1024 }] }],
    });
    ids.push(correlationId);
    frames.push(frame);
  }
  c.send(Buffer.concat(frames));
  await waitFor(async () => (await fetchesHandled()) >= 1, { what: 'the first Fetch answered' });
  // One short real interval (test/README.md): without backpressure all 400 answers (≈100 MiB)
  // were built and buffered in it; with it, about what the socket buffers hold.
  await new Promise((r) => setTimeout(r, 3000));
  const handled = await fetchesHandled();
  assert.ok(handled < 150, `${handled} Fetch requests answered to a client that read nothing`);

  // Reading resumes the connection: every answer arrives, in request order.
  const got: number[] = [];
  const all = Array.from({ length: 400 }, () => c.nextFrame().then((f) => got.push(f.readInt32BE(0))));
  c.socket.resume();
  await Promise.all(all);
  assert.deepEqual(got, ids);
  c.close();
});
