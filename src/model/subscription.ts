/**
 * Parsing of a consumer group's subscription request (docs/http-api.md#subscription-modes), shared by the HTTP
 * layer (early 400s), the engine (first contact) and the configuration (the default mode).
 */
import { QueenError } from '../errors.js';
import { parseIso } from '../util/time.js';

/** True for `new` and its aliases `new-only`, `new_only`, `newonly` (case-insensitive, trimmed). */
export function isNewMode(mode: string): boolean {
  return ['new', 'new-only', 'new_only', 'newonly'].includes(mode.trim().toLowerCase());
}

/**
 * `subscriptionFrom`: `now`, or an ISO-8601 timestamp (epoch ms).
 * @throws QueenError `invalid_request` for anything else
 */
export function parseSubscriptionFrom(from: string): 'now' | number {
  const s = from.trim();
  if (s.toLowerCase() === 'now') return 'now';
  const t = parseIso(s);
  if (t === undefined) throw new QueenError('invalid_request', `subscriptionFrom must be "now" or an ISO-8601 timestamp, got ${JSON.stringify(from)}`);
  return t;
}

/** The consumer group of queue-mode pops and acks (no group named): every message once, always from the start. */
export const QUEUE_MODE = '__QUEUE_MODE__';

/** What a group asks for on first contact (docs/http-api.md#subscription-modes). */
export interface SubscriptionRequest {
  mode?: string | undefined;
  from?: string | undefined;
  /**
   * When the consumer first asked (epoch ms): a `new` / `now` subscription starts there, so a
   * long-poll parked before the queue existed still gets the push that wakes it.
   */
  since?: number | undefined;
  /** Ask for a conflating group (newest message per partition); recorded on first contact only. */
  conflation?: boolean | undefined;
}

/** A group's subscription as a claim carries it: where it starts on partitions it has no cursor on, and conflation. */
export interface ResolvedSubscription {
  mode: 'all' | 'from';
  /** Messages created after this (epoch ms, exclusive); null for `all`. */
  fromTime: number | null;
  /** How the subscriber asked (`all`, `new`, `timestamp`), echoed by listings. */
  label: string;
  conflation: boolean;
}

/**
 * The subscription a group registering at `now` (epoch ms) gets from `req`: queue mode always
 * subscribes `all`; a named group uses the request's `subscriptionFrom`, its mode, or the default
 * mode (docs/http-api.md#subscription-modes). No write.
 * @param defaultNew the broker's default subscription mode is `new` (QUEEN_DEFAULT_SUBSCRIPTION_MODE)
 * @throws QueenError `invalid_request` for an unparseable `subscriptionFrom`
 */
export function resolveSubscription(group: string, req: SubscriptionRequest, defaultNew: boolean, now: number): ResolvedSubscription {
  const conflation = group !== QUEUE_MODE && req.conflation === true;
  // Inclusive of the millisecond the consumer arrived in (`fromTime` is exclusive).
  const start = Math.min(now, req.since ?? now) - 1;
  if (group === QUEUE_MODE) return { mode: 'all', fromTime: null, label: 'all', conflation };
  if (req.from?.trim()) {
    const from = parseSubscriptionFrom(req.from);
    return from === 'now' ? { mode: 'from', fromTime: start, label: 'new', conflation } : { mode: 'from', fromTime: from, label: 'timestamp', conflation };
  }
  const mode = (req.mode ?? '').trim();
  const isNew = isNewMode(mode) || (mode === '' && defaultNew);
  return isNew ? { mode: 'from', fromTime: start, label: 'new', conflation } : { mode: 'all', fromTime: null, label: 'all', conflation };
}
