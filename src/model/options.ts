/**
 * Queue options: names, defaults, validation, and the merge/replace rules of `/configure`
 * (docs/http-api.md#configure: absent key keeps, explicit `null` resets to the
 * default, a value is written; `replace` starts from the defaults).
 */
import { QueenError } from '../errors.js';
import { controlNumber } from '../util/json.js';

/** Every queue option with its unit. Field names are the Queen API's. */
export interface QueueOptions {
  /** Lease length in s. */
  leaseTime: number;
  /** Failed deliveries charged before the head message is dead-lettered (or dropped). */
  retryLimit: number;
  /** Stored and echoed, ms (not enforced, as in the reference). */
  retryDelay: number;
  /** Orders queues in namespace/task discovery pops, higher first. */
  priority: number;
  /** Stored and echoed (0 = unlimited). */
  maxSize: number;
  /** Stored and echoed, s. */
  ttl: number;
  deadLetterQueue: boolean;
  dlqAfterMaxRetries: boolean;
  /** A message becomes visible `delayedProcessing` s after it was pushed. */
  delayedProcessing: number;
  /** A partition is eligible only after `windowBuffer` s without a push. */
  windowBuffer: number;
  /** With retentionEnabled: delete messages older than this many s, consumed or not. */
  retentionSeconds: number;
  /** With retentionEnabled: delete messages consumed by every group and older than this many s. */
  completedRetentionSeconds: number;
  retentionEnabled: boolean;
  encryptionEnabled: boolean;
  /** Evict messages older than this many s (0 = off). */
  maxWaitTimeSeconds: number;
  /** ms, 0..60000 (accepted and echoed). */
  minPopWaitTime: number;
  /** Window in s within which a repeated transactionId in a partition is a duplicate (0 = off). */
  dedupWindowSeconds: number;
  retentionSinkHold: string;
  retentionSinkHoldMaxSeconds: number;
}

/** Defaults applied on create, on `replace`, and for an explicit `null` (docs/http-api.md#queue-options). */
export const QUEUE_DEFAULTS: Readonly<QueueOptions> = Object.freeze({
  priority: 0,
  leaseTime: 300,
  retryLimit: 3,
  retryDelay: 1000,
  maxSize: 0,
  ttl: 3600,
  deadLetterQueue: true,
  dlqAfterMaxRetries: true,
  delayedProcessing: 0,
  windowBuffer: 0,
  retentionSeconds: 0,
  completedRetentionSeconds: 0,
  retentionEnabled: false,
  encryptionEnabled: false,
  maxWaitTimeSeconds: 0,
  minPopWaitTime: 0,
  dedupWindowSeconds: 3600,
  retentionSinkHold: '',
  retentionSinkHoldMaxSeconds: 604800,
});

type Kind = { type: 'int'; min: number; max: number } | { type: 'bool' } | { type: 'string'; pattern: RegExp };

const INT32 = 2_147_483_647;
const SCHEMA: Record<keyof QueueOptions, Kind> = {
  priority: { type: 'int', min: -INT32 - 1, max: INT32 }, // int32, as documented: -2^31 included
  leaseTime: { type: 'int', min: 1, max: INT32 },
  retryLimit: { type: 'int', min: 0, max: INT32 },
  retryDelay: { type: 'int', min: 0, max: INT32 },
  maxSize: { type: 'int', min: 0, max: Number.MAX_SAFE_INTEGER },
  ttl: { type: 'int', min: 0, max: INT32 },
  deadLetterQueue: { type: 'bool' },
  dlqAfterMaxRetries: { type: 'bool' },
  delayedProcessing: { type: 'int', min: 0, max: INT32 },
  windowBuffer: { type: 'int', min: 0, max: INT32 },
  retentionSeconds: { type: 'int', min: 0, max: INT32 },
  completedRetentionSeconds: { type: 'int', min: 0, max: INT32 },
  retentionEnabled: { type: 'bool' },
  encryptionEnabled: { type: 'bool' },
  maxWaitTimeSeconds: { type: 'int', min: 0, max: INT32 },
  minPopWaitTime: { type: 'int', min: 0, max: 60000 },
  dedupWindowSeconds: { type: 'int', min: 0, max: INT32 },
  retentionSinkHold: { type: 'string', pattern: /^[A-Za-z0-9._-]{0,64}$/ },
  retentionSinkHoldMaxSeconds: { type: 'int', min: 60, max: 31_536_000 },
};

/** The option names, in the order answers list them. */
export const OPTION_NAMES = Object.keys(QUEUE_DEFAULTS) as (keyof QueueOptions)[];

function invalid(name: string, why: string): QueenError {
  return new QueenError('invalid_option', `invalid value for ${name}: ${why}`, { invalid: name });
}

function parseOne(name: keyof QueueOptions, v: unknown): number | boolean | string {
  const kind = SCHEMA[name];
  switch (kind.type) {
    case 'int': {
      // A digit string exactly: " 60" or "60\n" is refused like any other text, not trimmed into 60.
      const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : controlNumber(v);
      if (typeof n !== 'number' || !Number.isInteger(n)) throw invalid(name, 'expected an integer');
      if (n < kind.min || n > kind.max) throw invalid(name, `expected ${kind.min}..${kind.max}`);
      return n;
    }
    case 'bool':
      if (typeof v !== 'boolean') throw invalid(name, 'expected true or false');
      return v;
    case 'string':
      if (typeof v !== 'string' || !kind.pattern.test(v)) throw invalid(name, `expected a string matching ${kind.pattern}`);
      return v;
  }
}

/**
 * Applies `/configure` options over `base`.
 * @param base the stored options (merge) or undefined (create / replace ⇒ defaults)
 * @param input the request's options object; unknown keys are ignored
 * @throws QueenError code `invalid_option` with `invalid: <option name>`
 */
export function applyOptions(base: QueueOptions | undefined, input: Record<string, unknown>): QueueOptions {
  const out: QueueOptions = { ...(base ?? QUEUE_DEFAULTS) };
  const w = out as unknown as Record<string, unknown>;
  for (const name of OPTION_NAMES) {
    if (!(name in input)) continue;
    const v = input[name];
    w[name] = v === null || v === undefined ? QUEUE_DEFAULTS[name] : parseOne(name, v);
  }
  return out;
}

/** True when failures past the retry limit go to the dead-letter queue (either switch on). */
export function dlqEnabled(o: QueueOptions): boolean {
  return o.deadLetterQueue || o.dlqAfterMaxRetries;
}
