/**
 * Throughput history: the broker's per-minute series (`GET /api/v1/status`, and
 * `/api/v1/status/queues/:queue`, when served), with the minute still in progress turned into a
 * rate over its elapsed seconds. Brokers without the status routes: this browser's own samples.
 */
import { arr, num, numOr, obj } from './api';

export interface RatePoint {
  /** unix seconds */
  t: number;
  in: number | null;
  out: number | null;
}

/**
 * Complete minutes are placed at the end of their minute (the value is that minute's average);
 * the current minute is placed at `now`, its counts divided by the seconds elapsed so far.
 */
export function readThroughput(body: unknown, partial = true, nowSec = Date.now() / 1000): RatePoint[] {
  const b = obj(body);
  const list = arr(b.throughput ?? b.series);
  const out: RatePoint[] = [];
  for (const x of list) {
    const p = obj(x);
    const start = Date.parse(String(p.timestamp ?? p.minute ?? p.time ?? '')) / 1000;
    if (!Number.isFinite(start)) continue;
    const pushed = numOr(p.ingested, p.pushed);
    const popped = numOr(p.processed, p.popped);
    if (start + 60 > nowSec) {
      if (!partial || pushed === undefined || popped === undefined) continue;
      const elapsed = Math.max(5, nowSec - start);
      out.push({ t: nowSec, in: pushed / elapsed, out: popped / elapsed });
    } else {
      out.push({
        t: start + 60,
        in: numOr(p.ingestedPerSecond) ?? num(pushed) / 60,
        out: numOr(p.processedPerSecond) ?? num(popped) / 60,
      });
    }
  }
  return out.sort((a, b) => a.t - b.t);
}

/**
 * The broker's series when it has one, else the browser's samples. With `joinLive`, the browser's
 * samples taken after the broker's last complete minute follow it (same counters: pushes and pops).
 */
export function joinRates(minutes: RatePoint[] | undefined, live: RatePoint[], joinLive = false): RatePoint[] {
  if (!minutes || minutes.length === 0) return live;
  if (!joinLive) return minutes;
  const last = minutes[minutes.length - 1]!.t;
  return [...minutes, ...live.filter((p) => p.t > last && p.in !== null)];
}
