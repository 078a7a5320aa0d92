/**
 * Ephemeral (RAM-only) queue settings (docs/ephemeral.md#settings; the public reference's
 * server/src/config.rs ephemeral knobs). Every byte value is in bytes, every duration as named.
 */
import { bool, int, type Env } from './env.js';

/** The ephemeral engine's ceilings and defaults. */
export interface EphemeralConfig {
  /** Node-wide payload bytes held by every ephemeral queue (`QUEEN_EPHEMERAL_MAX_BYTES`, 256 MiB; 0 = unlimited). */
  maxBytes: number;
  /** Default and ceiling of a queue's `maxBytes` (`QUEEN_EPHEMERAL_QUEUE_MAX_BYTES`, 16 MiB). */
  queueMaxBytes: number;
  /** Default and ceiling of a queue's `maxLength` (`QUEEN_EPHEMERAL_QUEUE_MAX_LENGTH`, 10,000). */
  queueMaxLength: number;
  /** Default per-message lease, seconds (`QUEEN_EPHEMERAL_LEASE_S`, 30). */
  leaseSeconds: number;
  /** Default deliveries before a message is dropped for a group (`QUEEN_EPHEMERAL_RETRY_LIMIT`, 5). */
  retryLimit: number;
  /** An empty, untouched implicit queue is removed after this many seconds (`QUEEN_EPHEMERAL_IMPLICIT_IDLE_S`, 300; 0 = never). */
  implicitIdleS: number;
  /** An empty partition ring is released after this many ms (`QUEEN_EPHEMERAL_IDLE_GC_MS`, 300,000). */
  idleGcMs: number;
  /** Per-tenant push rate, messages per second (`QUEEN_EPHEMERAL_RATE`, 5000). */
  rate: number;
  /** Per-tenant push burst, messages (`QUEEN_EPHEMERAL_BURST`, 10,000). */
  burst: number;
  /**
   * Tenants other than the default one need a grant (`QUEEN_EPHEMERAL_REQUIRE_GRANT`, default: the
   * value of `QUEEN_TENANCY_HEADER`). This broker keeps no grant rows, so on: only the default tenant
   * is served (others `403 feature_gated`); off: every tenant, each in its own namespace.
   */
  requireGrant: boolean;
}

/**
 * Reads the ephemeral settings.
 * @throws ConfigError naming the variable when a value is not an integer in range
 */
export function loadEphemeralConfig(env: Env): EphemeralConfig {
  return {
    maxBytes: int(env, 'QUEEN_EPHEMERAL_MAX_BYTES', 268_435_456, 0, Number.MAX_SAFE_INTEGER),
    queueMaxBytes: int(env, 'QUEEN_EPHEMERAL_QUEUE_MAX_BYTES', 16_777_216, 1, Number.MAX_SAFE_INTEGER),
    queueMaxLength: int(env, 'QUEEN_EPHEMERAL_QUEUE_MAX_LENGTH', 10_000, 1, 100_000_000),
    leaseSeconds: int(env, 'QUEEN_EPHEMERAL_LEASE_S', 30, 1, 86_400),
    retryLimit: int(env, 'QUEEN_EPHEMERAL_RETRY_LIMIT', 5, 0, 1000),
    implicitIdleS: int(env, 'QUEEN_EPHEMERAL_IMPLICIT_IDLE_S', 300, 0, 86_400 * 365),
    idleGcMs: int(env, 'QUEEN_EPHEMERAL_IDLE_GC_MS', 300_000, 1, 86_400_000 * 365),
    rate: int(env, 'QUEEN_EPHEMERAL_RATE', 5000, 1, 100_000_000),
    burst: int(env, 'QUEEN_EPHEMERAL_BURST', 10_000, 1, 100_000_000),
    requireGrant: bool(env, 'QUEEN_EPHEMERAL_REQUIRE_GRANT', bool(env, 'QUEEN_TENANCY_HEADER', false)),
  };
}
