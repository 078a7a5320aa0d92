/** Time helpers. Internally every instant is integer milliseconds since the epoch. */

/** The last instant {@link iso} formatted, and its text: the messages of one pop usually share one `createdAt`. */
let lastMs = NaN;
let lastIso = '';

/**
 * ISO-8601 UTC with `Z` (millisecond precision) for an epoch-ms instant. Repeats of the previous
 * instant reuse its text (a pop of 100 messages pushed in one request formats one date, not 100).
 * @throws RangeError when `ms` is not a valid instant (as `Date.prototype.toISOString`)
 */
export function iso(ms: number): string {
  if (ms === lastMs) return lastIso;
  const text = new Date(ms).toISOString();
  lastMs = ms;
  lastIso = text;
  return text;
}

/** ISO string or null. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : iso(ms);
}

/**
 * An ISO-8601 date or date-time: `2026-11-29`, `2026-11-29T16:10`, `…:15`, `…:15.123456`, with an
 * optional `Z` or `±hh:mm` offset (no offset = UTC). Free text such as `"1"` or `"yesterday"`,
 * which `Date.parse` would accept, is refused.
 */
const ISO_RE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Days of `month` (1–12) in `year` of the proleptic Gregorian calendar. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Parses an ISO-8601 timestamp to epoch ms.
 * @returns undefined when `s` is not a valid ISO-8601 date or date-time, a day its month lacks
 *   included (`2020-02-30`, which `Date.parse` reads as 1 March)
 */
export function parseIso(s: string): number | undefined {
  const t = s.trim();
  if (!ISO_RE.test(t)) return undefined;
  const year = Number(t.slice(0, 4));
  const month = Number(t.slice(5, 7));
  const day = Number(t.slice(8, 10));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  // Without an offset a date-time is UTC here (Date.parse would read it as local time).
  const withZone = /T|\s/i.test(t) && !/(?:Z|[+-]\d{2}:?\d{2})$/i.test(t) ? `${t}Z` : t;
  const ms = Date.parse(withZone.replace(' ', 'T'));
  return Number.isFinite(ms) ? ms : undefined;
}
