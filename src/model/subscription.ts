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
