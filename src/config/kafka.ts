/**
 * The Kafka port's configuration (docs/kafka.md#configuration): off unless
 * `QUEEN_KAFKA_EMBEDDED=true`; when on, `QUEEN_KAFKA_ADVERTISED_ADDR` is required and every value
 * is checked at boot, a bad one fatal with a message naming the variable.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { bool, ConfigError, int, str, type Env } from './env.js';

/** A `host:port` pair as configured (host without brackets). */
export interface HostPort {
  host: string;
  port: number;
}

/** The Kafka listener's settings (docs/kafka.md#configuration). */
export interface KafkaConfig {
  /** Bind address (`QUEEN_KAFKA_ADDR`, default `0.0.0.0:9092`); port 0 lets the kernel pick. */
  listen: HostPort;
  /** What Metadata and FindCoordinator tell clients (`QUEEN_KAFKA_ADVERTISED_ADDR`, required). */
  advertised: HostPort;
  /** Width of a topic created without a count (`QUEEN_KAFKA_DEFAULT_PARTITIONS`, 1024). */
  defaultPartitions: number;
  /** Open connections at most (`QUEEN_KAFKA_MAX_CONNECTIONS`, 4096); excess closed at accept. */
  maxConnections: number;
  /** Initial rebalance delay of an empty group, ms (`QUEEN_KAFKA_GROUP_JOIN_DELAY_MS`, 3000). */
  groupJoinDelayMs: number;
  /** Session timeout bounds, ms (`QUEEN_KAFKA_GROUP_MIN/MAX_SESSION_TIMEOUT_MS`, 6000 / 300000). */
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  /** Idle connections closed after this many ms (`QUEEN_KAFKA_IDLE_TIMEOUT_MS`, 600000). */
  idleTimeoutMs: number;
  /**
   * With SASL on, a connection not authenticated this many ms after it was accepted is closed
   * (`QUEEN_KAFKA_SASL_AUTH_TIMEOUT_MS`, 10000; 100..600000).
   */
  saslAuthTimeoutMs: number;
  /**
   * A frame not complete this many ms after its first byte arrived closes the connection
   * (`QUEEN_KAFKA_FRAME_TIMEOUT_MS`, 30000; 100..600000); time spent paused by the broker
   * (backpressure) does not count.
   */
  frameTimeoutMs: number;
  /**
   * Largest request frame after authentication, bytes (`QUEEN_KAFKA_MAX_REQUEST_BYTES`, 16 MiB;
   * 65536..1 GiB); a larger one closes the connection. Kafka's `socket.request.max.bytes` is 100 MiB,
   * its clients send 1 MB requests by default.
   */
  maxRequestBytes: number;
  /**
   * Request bytes read and not yet handled, all connections together, bytes
   * (`QUEEN_KAFKA_QUEUED_MAX_REQUEST_BYTES`, 256 MiB; at least `maxRequestBytes`, at most 16 GiB);
   * like Kafka's `queued.max.request.bytes`.
   */
  queuedMaxRequestBytes: number;
  /**
   * Records one Produce request may carry, all partitions together: the HTTP push limit
   * (`QUEEN_MAX_PUSH_ITEMS`, 10000; 1..1000000), read with the same default and range.
   */
  maxRecordsPerRequest: number;
  /**
   * Decompressed bytes one Produce request may carry: the HTTP decoded-body limit
   * (`QUEEN_MAX_BODY_BYTES`, 64 MiB; 1024..1 GiB), read with the same default and range.
   */
  maxDecodedBytes: number;
  /** SASL/PLAIN on (`QUEEN_KAFKA_SASL=plain`). */
  sasl: boolean;
  /** How often an authenticated connection's token is checked again, ms (`QUEEN_KAFKA_SASL_RECHECK_MS`, 30000; 100..30000). */
  saslRecheckMs: number;
  /** PEM certificate and key for TLS on the port (`QUEEN_KAFKA_TLS_CERT` / `_KEY`), both or neither. */
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** Whether `QUEEN_TOKEN` is set (its value is never logged). */
  processToken: string | undefined;
  /**
   * Produce requests of one connection, already read, appended as one store unit (`QUEEN_KAFKA_COALESCE`,
   * 5; 1..64, 1 = off; a bad value means the default, docs/kafka.md#produce).
   */
  coalesce: number;
}

/**
 * Parses `host:port` (IPv6 bracketed) for `name`.
 * @param allowZeroPort a listen address may ask for port 0 (kernel-picked)
 * @throws ConfigError for a missing port, a bad port, or an unbracketed IPv6 host
 */
export function parseHostPort(name: string, value: string, allowZeroPort: boolean): HostPort {
  let host: string;
  let portText: string;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0 || value[end + 1] !== ':') throw new ConfigError(`${name}=${value} is not [host]:port`);
    host = value.slice(1, end);
    portText = value.slice(end + 2);
  } else {
    const colon = value.lastIndexOf(':');
    if (colon < 0) throw new ConfigError(`${name}=${value} has no port (expected host:port)`);
    host = value.slice(0, colon);
    portText = value.slice(colon + 1);
    if (host.includes(':')) throw new ConfigError(`${name}=${value} is a bare IPv6 address: bracket the host, e.g. [::1]:9092`);
  }
  if (host === '') throw new ConfigError(`${name}=${value} has no host (expected host:port)`);
  if (!/^\d{1,5}$/.test(portText)) throw new ConfigError(`${name}=${value} has a non-numeric port`);
  const port = Number(portText);
  if (port > 65535 || (port === 0 && !allowZeroPort)) throw new ConfigError(`${name}=${value} has port ${port} (expected 1..65535)`);
  return { host, port };
}

/**
 * Reads the Kafka settings; undefined when the port is off (nothing else is read then).
 * @throws ConfigError per docs/kafka.md#configuration
 */
export function loadKafkaConfig(env: Env): KafkaConfig | undefined {
  if (!bool(env, 'QUEEN_KAFKA_EMBEDDED', false)) return undefined;
  const listen = parseHostPort('QUEEN_KAFKA_ADDR', str(env, 'QUEEN_KAFKA_ADDR', '0.0.0.0:9092'), true);
  const advRaw = str(env, 'QUEEN_KAFKA_ADVERTISED_ADDR', '');
  if (advRaw === '') throw new ConfigError('QUEEN_KAFKA_ADVERTISED_ADDR is required when QUEEN_KAFKA_EMBEDDED=true (the host:port clients reconnect to)');
  const advertised = parseHostPort('QUEEN_KAFKA_ADVERTISED_ADDR', advRaw, false);
  if (advertised.host === '0.0.0.0' || advertised.host === '::' || (isIP(advertised.host) === 6 && /^[0:]+$/.test(advertised.host))) {
    throw new ConfigError(`QUEEN_KAFKA_ADVERTISED_ADDR=${advRaw} is a wildcard address: clients cannot connect to it; advertise a reachable host`);
  }
  const saslRaw = str(env, 'QUEEN_KAFKA_SASL', '').trim();
  if (saslRaw !== '' && saslRaw.toLowerCase() !== 'plain') throw new ConfigError(`QUEEN_KAFKA_SASL=${JSON.stringify(saslRaw)} is not supported (only plain)`);
  const store = str(env, 'QUEEN_KAFKA_OFFSET_STORE', 'positions').trim().toLowerCase();
  if (store !== 'positions') throw new ConfigError(`QUEEN_KAFKA_OFFSET_STORE=${JSON.stringify(store)} is not supported (only positions)`);
  const certPath = str(env, 'QUEEN_KAFKA_TLS_CERT', '');
  const keyPath = str(env, 'QUEEN_KAFKA_TLS_KEY', '');
  if ((certPath === '') !== (keyPath === '')) {
    throw new ConfigError('QUEEN_KAFKA_TLS_CERT and QUEEN_KAFKA_TLS_KEY must be set together; with only one the Kafka port would serve cleartext');
  }
  let tls: KafkaConfig['tls'];
  if (certPath !== '') {
    const read = (name: string, p: string) => {
      try {
        return readFileSync(p);
      } catch (e) {
        throw new ConfigError(`${name}=${p} cannot be read: ${(e as Error).message}`);
      }
    };
    tls = { cert: read('QUEEN_KAFKA_TLS_CERT', certPath), key: read('QUEEN_KAFKA_TLS_KEY', keyPath) };
  }
  const minSessionTimeoutMs = int(env, 'QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS', 6000, 1, 3_600_000);
  const maxSessionTimeoutMs = int(env, 'QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS', 300_000, minSessionTimeoutMs, 3_600_000);
  const token = str(env, 'QUEEN_TOKEN', '');
  const coalesce = Number(str(env, 'QUEEN_KAFKA_COALESCE', ''));
  const maxRequestBytes = int(env, 'QUEEN_KAFKA_MAX_REQUEST_BYTES', 16 * 1024 * 1024, 65_536, 1024 * 1024 * 1024);
  const queuedMaxRequestBytes = int(env, 'QUEEN_KAFKA_QUEUED_MAX_REQUEST_BYTES', Math.max(256 * 1024 * 1024, maxRequestBytes), maxRequestBytes, 16 * 1024 * 1024 * 1024);
  return {
    listen,
    advertised,
    defaultPartitions: int(env, 'QUEEN_KAFKA_DEFAULT_PARTITIONS', 1024, 1, 100_000),
    maxConnections: int(env, 'QUEEN_KAFKA_MAX_CONNECTIONS', 4096, 16, 1_000_000),
    groupJoinDelayMs: int(env, 'QUEEN_KAFKA_GROUP_JOIN_DELAY_MS', 3000, 0, 3_600_000),
    minSessionTimeoutMs,
    maxSessionTimeoutMs,
    idleTimeoutMs: int(env, 'QUEEN_KAFKA_IDLE_TIMEOUT_MS', 600_000, 1000, 86_400_000),
    sasl: saslRaw !== '',
    maxRequestBytes,
    queuedMaxRequestBytes,
    maxRecordsPerRequest: int(env, 'QUEEN_MAX_PUSH_ITEMS', 10_000, 1, 1_000_000),
    maxDecodedBytes: int(env, 'QUEEN_MAX_BODY_BYTES', 64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    saslAuthTimeoutMs: int(env, 'QUEEN_KAFKA_SASL_AUTH_TIMEOUT_MS', 10_000, 100, 600_000),
    frameTimeoutMs: int(env, 'QUEEN_KAFKA_FRAME_TIMEOUT_MS', 30_000, 100, 600_000),
    saslRecheckMs: int(env, 'QUEEN_KAFKA_SASL_RECHECK_MS', 30_000, 100, 30_000),
    tls,
    processToken: token === '' ? undefined : token,
    coalesce: Number.isInteger(coalesce) && coalesce >= 1 && coalesce <= 64 ? coalesce : 5,
  };
}
