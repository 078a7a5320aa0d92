/** Number, time and payload formatting shared by every page. */
import { showJson } from './json';

const nf = new Intl.NumberFormat('en-US');

export function fmtInt(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  return nf.format(Math.round(n));
}

/** 1234 → 1.2k, 1234567 → 1.2M; small numbers stay exact. */
export function fmtCompact(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a < 10_000) return fmtInt(n);
  if (a < 1_000_000) return `${(n / 1000).toFixed(a < 100_000 ? 1 : 0)}k`;
  if (a < 1_000_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  return `${(n / 1_000_000_000).toFixed(1)}B`;
}

export function fmtRate(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  if (n === 0) return '0';
  if (n < 10) return n.toFixed(1);
  return fmtCompact(n);
}

/** Seconds → "45s", "3m 12s", "2h 5m", "3d 4h". */
export function fmtDuration(sec: number | undefined): string {
  if (sec === undefined || !Number.isFinite(sec)) return '—';
  const s = Math.max(0, Math.round(sec));
  const two = (a: number, ua: string, b: number, ub: string) => (b ? `${a}${ua} ${b}${ub}` : `${a}${ua}`);
  if (s < 60) return `${s}s`;
  if (s < 3600) return two(Math.floor(s / 60), 'm', s % 60, 's');
  if (s < 86400) return two(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'm');
  return two(Math.floor(s / 86400), 'd', Math.floor((s % 86400) / 3600), 'h');
}

export function parseTime(iso: string): number | undefined {
  if (!iso) return undefined;
  const t = Date.parse(iso);
  return Number.isFinite(t) ? t : undefined;
}

/** "just now", "12s ago", "5m ago", then a date. */
export function fmtAgo(iso: string, now = Date.now()): string {
  const t = parseTime(iso);
  if (t === undefined) return '—';
  const d = (now - t) / 1000;
  if (d < 0) return `in ${fmtDuration(-d)}`;
  if (d < 5) return 'just now';
  if (d < 3600 * 24) return `${fmtDuration(d).split(' ')[0]} ago`;
  return fmtDate(iso);
}

export function fmtDate(iso: string): string {
  const t = parseTime(iso);
  if (t === undefined) return iso || '—';
  const d = new Date(t);
  const sameDay = new Date().toDateString() === d.toDateString();
  const time = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (sameDay) return time;
  return `${d.toLocaleDateString('en-CA')} ${time}`;
}

/** Full timestamp with milliseconds, for tooltips and detail panes. */
export function fmtStamp(iso: string): string {
  const t = parseTime(iso);
  if (t === undefined) return iso || '—';
  return new Date(t).toISOString().replace('T', ' ').replace('Z', ' UTC');
}

/** Payload on one line, shortened for tables. */
export function preview(v: unknown, max = 80): string {
  let s: string;
  if (v === undefined) s = '';
  else if (typeof v === 'string') s = JSON.stringify(v);
  else {
    try {
      s = showJson(v) ?? '';
    } catch {
      s = String(v);
    }
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** "0198c9b7-cb4f-7c1a-9b21-7e8a5c3a40e1" → "0198c9b7…40e1" */
export function shortId(id: string, head = 8, tail = 4): string {
  if (id.length <= head + tail + 1) return id;
  return `${id.slice(0, head)}…${id.slice(-tail)}`;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${fmtInt(n)} ${n === 1 ? one : many}`;
}
