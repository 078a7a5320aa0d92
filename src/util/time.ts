/** Time helpers. Internally every instant is integer milliseconds since the epoch. */

/** ISO-8601 UTC with `Z` (millisecond precision) for an epoch-ms instant. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** ISO string or null. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : iso(ms);
}

/**
 * Parses an ISO-8601 timestamp to epoch ms.
 * @returns undefined when `s` is not a parseable date.
 */
export function parseIso(s: string): number | undefined {
  const ms = Date.parse(s);
  return Number.isFinite(ms) ? ms : undefined;
}
