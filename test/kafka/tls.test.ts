/**
 * TLS on the Kafka port (docs/kafka.md#sasl-plain): with QUEEN_KAFKA_TLS_CERT/_KEY the port
 * speaks TLS only; kafkajs verifying the certificate produces and consumes over it with SASL/PLAIN,
 * and the boot does not warn about cleartext passwords. Skipped where `openssl` is missing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import kafkajs from 'kafkajs';
import { tempDir } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { hsKey, mint } from '../helpers/jwt.js';
import { produceThenConsume, startKafkaBroker, type KafkaBroker } from './helpers.js';
import { WireClient } from './wire.js';

const { Kafka, logLevel } = kafkajs;
const SECRET = 'kafka-tls-test-secret-0123456789abcdef';

function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('TLS on the Kafka port', { skip: !haveOpenssl() && 'openssl is not installed' }, () => {
  let b: KafkaBroker;
  let cert: string;
  before(async () => {
    const dir = tempDir('kafka-tls-');
    const certPath = path.join(dir, 'cert.pem');
    const keyPath = path.join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyPath, '-out', certPath], { stdio: 'ignore' });
    cert = fs.readFileSync(certPath, 'utf8');
    b = await startKafkaBroker({
      env: { QUEEN_KAFKA_TLS_CERT: certPath, QUEEN_KAFKA_TLS_KEY: keyPath, QUEEN_KAFKA_SASL: 'plain', JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET },
    });
  });
  after(async () => { await b?.stop(); });

  test('kafkajs over TLS with SASL/PLAIN produces and consumes; no cleartext warning', async () => {
    assert.match(b.output(), /"tls":true/);
    assert.doesNotMatch(b.output(), /without TLS/);
    const password = await mint('HS256', hsKey(SECRET), { sub: 'tls', role: 'read-write' });
    const kafka = new Kafka({ clientId: 'tls', brokers: [b.bootstrap], ssl: { ca: [cert] }, sasl: { mechanism: 'plain', username: 'tls', password }, logLevel: logLevel.NOTHING });
    const topic = uniqueName('tls');
    assert.equal(await produceThenConsume(kafka, topic, 'over tls'), 'over tls');
  });

  test('a cleartext Kafka request gets no Kafka answer', async () => {
    const c = await WireClient.connect(b.kafkaPort);
    let answered = false;
    void c.nextFrame().then(() => (answered = true));
    c.send(c.encode(18, 0, {}).frame);
    await c.closed;
    assert.equal(answered, false);
  });
});
