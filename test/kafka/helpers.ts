/**
 * Starting a broker with the Kafka port on (docs/kafka.md#configuration). The advertised address
 * must name the real port, so a free loopback port is picked first; a lost race (the port taken
 * between the pick and the bind) makes the broker exit, and the start is retried.
 */
import net from 'node:net';
import { startBroker, type BrokerHandle, type StartOptions } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { waitFor, within } from '../helpers/wait.js';

export interface KafkaBroker extends BrokerHandle {
  kafkaPort: number;
  /** `127.0.0.1:<kafkaPort>` */
  bootstrap: string;
}

/** A loopback port free at the time of the call. */
export async function freeLoopbackPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Kafka environment variables for `port`. */
export function kafkaEnv(port: number): Record<string, string> {
  return {
    QUEEN_KAFKA_EMBEDDED: 'true',
    QUEEN_KAFKA_ADDR: `127.0.0.1:${port}`,
    QUEEN_KAFKA_ADVERTISED_ADDR: `127.0.0.1:${port}`,
    QUEEN_KAFKA_GROUP_JOIN_DELAY_MS: '200',
    LOG_FORMAT: 'json',
  };
}

/** True when a TCP connection to 127.0.0.1:`port` is accepted (it is closed at once). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => { s.destroy(); resolve(false); });
  });
}

/**
 * Starts a broker with the Kafka port; `kafkaPort` reuses a port (restart tests).
 * @throws Error with the broker output after three failed starts
 */
export async function startKafkaBroker(opts: StartOptions & { kafkaPort?: number } = {}): Promise<KafkaBroker> {
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const kafkaPort = opts.kafkaPort ?? await freeLoopbackPort();
    try {
      const b = await startBroker({ ...opts, env: { ...kafkaEnv(kafkaPort), ...opts.env } });
      // The Kafka port opens after the HTTP listening line (src/boot.ts), once its module and the
      // credential check have loaded: wait until it accepts a connection, or the broker has exited.
      await waitFor(async () => b.proc.exitCode !== null || b.proc.signalCode !== null || await accepts(kafkaPort), { what: `the Kafka port ${kafkaPort} to accept`, timeoutMs: 30_000, intervalMs: 25 });
      if (b.proc.exitCode !== null || b.proc.signalCode !== null) throw new Error(`broker exited before its Kafka port accepted:\n${b.output()}`);
      return Object.assign(b, { kafkaPort, bootstrap: `127.0.0.1:${kafkaPort}` });
    } catch (e) {
      last = e;
      if (opts.kafkaPort !== undefined || !String(e).includes('cannot bind QUEEN_KAFKA_ADDR')) throw e;
    }
  }
  throw last as Error;
}

/**
 * Produces `value` to partition 0 of `topic` with `kafka`'s producer, then reads it back with a new
 * consumer group from the beginning; answers the value read.
 * @throws Error when nothing arrives within `timeoutMs` (default 15,000 ms), so a lost record fails
 *   the test instead of hanging it
 */
export async function produceThenConsume(kafka: import('kafkajs').Kafka, topic: string, value: string, key?: string, timeoutMs = 15_000): Promise<string> {
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [{ ...(key === undefined ? {} : { key }), value, partition: 0 }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: uniqueName('g') });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const first = new Promise<string>((resolve) => {
      void consumer.run({ eachMessage: async ({ message }) => resolve(message.value!.toString()) });
    });
    return await within(first, timeoutMs, `a record on ${topic}`);
  } finally {
    await consumer.disconnect();
  }
}
