/**
 * Time arguments of queenctl flags (`--to`, `--since`, `--from`): the forms the reference CLI
 * accepts (queen-mq/queen: clients/client-cli/internal/timefmt/parse.go), see
 * docs/cli.md#time-arguments.
 */
import { parseIso } from '../util/time.js';
import { userError } from './errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * A duration such as `30s`, `5m`, `1h30m`, `2d`, `1w`, in ms; undefined when `text` is not one.
 */
export function parseDurationMs(text: string): number | undefined {
  const s = text.trim().toLowerCase();
  if (s === '' || !/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(s)) return undefined;
  let total = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return total;
}

/**
 * Reads a point in time: `now`; `beginning`/`start`/`earliest` (the epoch); `15m ago` or a bare
 * `15m`; Unix seconds (above 10^9); RFC 3339 / ISO-8601; `YYYY-MM-DD` (UTC midnight).
 * @param nowMs the current time in ms (injected so callers and tests agree on "now")
 * @returns ms since the epoch
 * @throws CliError exit 1 when nothing matches
 */
export function parseTime(text: string, nowMs = Date.now()): number {
  const s = text.trim();
  const low = s.toLowerCase();
  if (low === '') throw userError('empty time');
  if (low === 'now') return nowMs;
  if (low === 'beginning' || low === 'start' || low === 'earliest') return 0;
  const rel = parseDurationMs(low.endsWith(' ago') ? low.slice(0, -4) : low);
  if (rel !== undefined) return nowMs - rel;
  if (/^\d+$/.test(s) && Number(s) > 1_000_000_000) return Number(s) * 1000;
  const ms = parseIso(s); // the broker's own reading: no offset = UTC, a day its month lacks refused
  if (ms === undefined) throw userError(`unrecognised time "${text}" (use now, beginning, "15m ago", RFC 3339 or Unix seconds)`);
  return ms;
}

/** {@link parseTime} as the ISO-8601 UTC string the broker's queries and bodies take. */
export function parseTimeIso(text: string, nowMs = Date.now()): string {
  return new Date(parseTime(text, nowMs)).toISOString();
}
