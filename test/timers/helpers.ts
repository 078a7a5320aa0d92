/** Small helpers for the timer tests (scheduled messages, spec §5.2). */
import { call, type Answer } from '../helpers/http.js';

/** base64 of the JSON bytes of `v` (the wire form of a timer payload). */
export function b64json(v: unknown): string {
  return Buffer.from(JSON.stringify(v), 'utf8').toString('base64');
}

/** A schedule operation with defaults (1 min delay, payload `{n: 1}`). */
export function schedule(queue: string, timerKey: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { op: 'schedule', queue, timerKey, delayMs: 60_000, txn: `txn-${timerKey}`, payload: b64json({ n: 1 }), ...extra };
}

/** `POST /api/v1/timers` with `operations`. */
export function timers(url: string, operations: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return call(url, 'POST', '/api/v1/timers', { operations }, headers);
}

/** Long-polls a queue until a message arrives or `timeoutMs` passes (204 then). */
export function popWait(url: string, queue: string, timeoutMs: number, extra = ''): Promise<Answer> {
  return call(url, 'GET', `/api/v1/pop/queue/${encodeURIComponent(queue)}?wait=true&timeout=${timeoutMs}&batch=100${extra}`);
}

/** Every message of a queue (inspection listing). */
export async function messagesOf(url: string, queue: string): Promise<any[]> {
  const r = await call(url, 'GET', `/api/v1/messages?queue=${encodeURIComponent(queue)}&limit=1000`);
  if (r.status !== 200) throw new Error(`messages listing answered ${r.status}: ${r.text}`);
  return r.body.messages ?? r.body;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
