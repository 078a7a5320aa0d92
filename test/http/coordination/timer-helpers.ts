/** Small helpers for the timer tests (scheduled messages, docs/http-api.md#timers). */
import { call, uniqueName, type Answer } from '../../helpers/http.js';

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

/**
 * Schedules a sentinel timer `delayMs` from now on a queue of its own and waits (long-poll, 20 s)
 * for its message. Timers fire in due order, so once it has fired every timer due before it has had
 * its chance to fire: a test that checks something did NOT fire waits for this instead of sleeping.
 * @throws Error when the sentinel is not delivered
 */
export async function afterTimersDueBefore(url: string, delayMs: number): Promise<void> {
  const q = uniqueName('sentinel');
  const s = await timers(url, [schedule(q, 'sentinel', { delayMs })]);
  if (s.status !== 200 || s.body.results?.[0]?.ok !== true) throw new Error(`sentinel timer refused: ${s.text}`);
  const p = await popWait(url, q, 20_000, '&autoAck=true');
  if (p.status !== 200) throw new Error(`sentinel timer not delivered within 20 s (${p.status})`);
}

/** Only for a window that is the subject of a test (e.g. backoff: how many attempts in a span). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
