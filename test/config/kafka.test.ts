/** The Kafka port's configuration (docs/kafka.md#configuration): off by default, every fatal case named. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/env.js';
import { loadKafkaConfig } from '../../src/config/kafka.js';
import { runBrokerExpectingExit } from '../helpers/broker.js';

const ON = { QUEEN_KAFKA_EMBEDDED: 'true', QUEEN_KAFKA_ADVERTISED_ADDR: 'kafka.example:9092' };

describe('Kafka configuration', () => {
  test('off by default; nothing else is read then', () => {
    assert.equal(loadKafkaConfig({}), undefined);
    assert.equal(loadKafkaConfig({ QUEEN_KAFKA_SASL: 'scram', QUEEN_KAFKA_ADDR: 'nonsense' }), undefined);
  });

  test('defaults when on', () => {
    const c = loadKafkaConfig(ON)!;
    assert.deepEqual(c.listen, { host: '0.0.0.0', port: 9092 });
    assert.deepEqual(c.advertised, { host: 'kafka.example', port: 9092 });
    assert.equal(c.defaultPartitions, 1024);
    assert.equal(c.maxConnections, 4096);
    assert.equal(c.sasl, false);
    assert.equal(c.tls, undefined);
    assert.deepEqual(loadKafkaConfig({ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: '[::1]:19092' })!.advertised, { host: '::1', port: 19092 });
    assert.equal(loadKafkaConfig({ ...ON, QUEEN_KAFKA_SASL: 'PLAIN' })!.sasl, true);
  });

  test('QUEEN_KAFKA_COALESCE: 1..64, default 5; a bad value means the default (not fatal)', () => {
    const coalesce = (v?: string) => loadKafkaConfig(v === undefined ? ON : { ...ON, QUEEN_KAFKA_COALESCE: v })!.coalesce;
    assert.deepEqual([coalesce(), coalesce('1'), coalesce('64'), coalesce('12')], [5, 1, 64, 12]);
    for (const bad of ['0', '65', '-3', '2.5', 'lots', '']) assert.equal(coalesce(bad), 5, bad);
  });

  test('each bad value is fatal with a message naming the variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ QUEEN_KAFKA_EMBEDDED: 'true' }, /QUEEN_KAFKA_ADVERTISED_ADDR is required/],
      [{ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: '0.0.0.0:9092' }, /QUEEN_KAFKA_ADVERTISED_ADDR.*wildcard/],
      [{ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: '[::]:9092' }, /wildcard/],
      [{ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: 'kafka.example' }, /has no port/],
      [{ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: 'kafka.example:0' }, /port 0/],
      [{ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: 'kafka.example:http' }, /non-numeric port/],
      [{ ...ON, QUEEN_KAFKA_ADVERTISED_ADDR: '::1:9092' }, /bracket the host/],
      [{ ...ON, QUEEN_KAFKA_SASL: 'scram-sha-256' }, /QUEEN_KAFKA_SASL/],
      [{ ...ON, QUEEN_KAFKA_TLS_CERT: '/tmp/cert.pem' }, /would serve cleartext/],
      [{ ...ON, QUEEN_KAFKA_OFFSET_STORE: 'kv' }, /QUEEN_KAFKA_OFFSET_STORE/],
      [{ ...ON, QUEEN_KAFKA_DEFAULT_PARTITIONS: '100001' }, /QUEEN_KAFKA_DEFAULT_PARTITIONS/],
      [{ ...ON, QUEEN_KAFKA_MAX_CONNECTIONS: '15' }, /QUEEN_KAFKA_MAX_CONNECTIONS/],
      [{ ...ON, QUEEN_KAFKA_EMBEDDED: 'maybe' }, /QUEEN_KAFKA_EMBEDDED/],
    ];
    for (const [env, message] of cases) {
      assert.throws(() => loadKafkaConfig(env), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(env));
    }
  });

  test('the broker refuses to boot without an advertised address', async () => {
    const r = await runBrokerExpectingExit({ QUEEN_KAFKA_EMBEDDED: 'true' });
    assert.equal(r.code, 1);
    assert.match(r.output, /fatal: QUEEN_KAFKA_ADVERTISED_ADDR is required/);
  });
});
