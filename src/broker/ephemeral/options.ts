/**
 * Ephemeral queue options (docs/ephemeral.md#configure): the closed option list, its validation
 * and the values in force after clamping to the broker's ceilings (src/config/ephemeral.ts).
 */
import type { EphemeralConfig } from '../../config/ephemeral.js';
import { QueenError } from '../../errors.js';

/** What a full queue does to a push. */
export type EphemeralPolicy = 'reject' | 'dropOldest';

/** Options in force (clamped). Bytes are payload JSON bytes; `leaseMs` in ms. */
export interface EphemeralOptions {
  maxBytes: number;
  maxLength: number;
  policy: EphemeralPolicy;
  /** 0 = off. */
  ttlSeconds: number;
  leaseSeconds: number;
  retryLimit: number;
  /** `{ms:0,count:0}` when off. */
  windowBuffer: { ms: number; count: number };
}

const KEYS = ['maxBytes', 'maxLength', 'policy', 'ttlSeconds', 'leaseSeconds', 'retryLimit', 'windowBuffer'];
const NUMERIC = ['maxBytes', 'maxLength', 'ttlSeconds', 'leaseSeconds', 'retryLimit'];

function bad(message: string): QueenError {
  return new QueenError('ephemeral_bad_request', message);
}

function nonNegativeInt(v: unknown, key: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(`${key} must be a non-negative integer`);
  return v;
}

/**
 * Checks a configure `options` value (absent/null = `{}`).
 * @returns the options object as sent (validated)
 * @throws QueenError `ephemeral_bad_request` naming the first problem
 */
export function validateOptions(raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw bad('options must be an object');
  const o = raw as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (!KEYS.includes(k)) throw bad(`unknown option \`${k}\`; the ephemeral options are ${KEYS.join(', ')}`);
    if (v === null) continue;
    if (NUMERIC.includes(k)) nonNegativeInt(v, k);
    if (k === 'policy' && v !== 'reject' && v !== 'dropOldest') throw bad('policy must be "reject" or "dropOldest"');
    if (k === 'windowBuffer') {
      if (typeof v !== 'object' || Array.isArray(v)) throw bad('windowBuffer must be an object like {"ms":20,"count":50}');
      for (const [wk, wv] of Object.entries(v as Record<string, unknown>)) {
        if (wk !== 'ms' && wk !== 'count') throw bad(`unknown windowBuffer field \`${wk}\`; the fields are ms, count`);
        if (wv !== null) nonNegativeInt(wv, `windowBuffer.${wk}`);
      }
    }
  }
  return o;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/**
 * The values in force for `sent` (a validated or stored options object; unknown keys ignored),
 * clamped to the broker's ceilings (docs/ephemeral.md#configure).
 */
export function optionsInForce(sent: Record<string, unknown>, cfg: EphemeralConfig): EphemeralOptions {
  const pick = (k: string, dflt: number, max: number): number => {
    const v = num(sent[k]);
    return v === undefined || v === 0 ? dflt : Math.min(v, max);
  };
  const wb = (sent.windowBuffer ?? {}) as Record<string, unknown>;
  return {
    maxBytes: pick('maxBytes', cfg.queueMaxBytes, cfg.queueMaxBytes),
    maxLength: pick('maxLength', cfg.queueMaxLength, cfg.queueMaxLength),
    policy: sent.policy === 'dropOldest' ? 'dropOldest' : 'reject',
    ttlSeconds: num(sent.ttlSeconds) ?? 0,
    leaseSeconds: pick('leaseSeconds', cfg.leaseSeconds, 86_400),
    retryLimit: Math.min(num(sent.retryLimit) ?? cfg.retryLimit, 1000),
    windowBuffer: { ms: Math.min(num(wb.ms) ?? 0, 60_000), count: Math.min(num(wb.count) ?? 0, 10_000) },
  };
}

/** Broker defaults, for an implicit queue. */
export function defaultOptions(cfg: EphemeralConfig): EphemeralOptions {
  return optionsInForce({}, cfg);
}
