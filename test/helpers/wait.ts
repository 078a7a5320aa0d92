/**
 * Polling instead of sleeping: tests wait for the condition they need (a parked consumer, a
 * delivered message, a log line), never for a fixed time.
 */

export interface WaitOptions {
  /** What is being waited for, named in the failure message ("two parked consumers on q"). */
  what: string;
  /** Give up after this many ms (default 10 000). */
  timeoutMs?: number;
  /** Pause between polls, in ms (default 20). */
  intervalMs?: number;
}

/**
 * Polls `cond` until it returns a truthy value and resolves with that value. A `cond` that throws
 * counts as "not yet"; its last error is quoted if the wait times out.
 * @throws Error `timed out after <timeoutMs> ms waiting for <what>` (with the last value or error)
 */
export async function waitFor<T>(cond: () => T | Promise<T>, opts: WaitOptions): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      last = await cond();
      lastError = undefined;
      if (last) return last as NonNullable<T>;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const detail = lastError !== undefined ? `last error: ${(lastError as Error)?.message ?? String(lastError)}` : `last value: ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what} (${detail})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Long-poll pops parked on the broker at `url`: on `queue` (the `queen_queue_parked_consumers`
 * gauge of /metrics/prometheus), or on all queues when `queue` is omitted (`queen_parked_consumers`).
 * @returns the count; 0 when the queue has no parked consumer (the gauge omits it)
 */
export async function parkedConsumers(url: string, queue?: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics/prometheus`)).text();
  if (queue === undefined) {
    const m = /^queen_parked_consumers (\d+)/m.exec(text);
    if (!m) throw new Error('queen_parked_consumers missing from /metrics/prometheus');
    return Number(m[1]);
  }
  const line = text.split('\n').find((l) => l.startsWith(`queen_queue_parked_consumers{queue=${JSON.stringify(queue)}} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/**
 * Resolves once exactly `n` long-poll pops are parked on `queue` (all queues when omitted), so a
 * push made afterwards is known to find them parked.
 * @throws Error from {@link waitFor} when the count is not reached in `timeoutMs` (default 10 000)
 */
export async function waitForParked(url: string, n: number, queue?: string, timeoutMs?: number): Promise<void> {
  await waitFor(async () => (await parkedConsumers(url, queue)) === n, { what: `${n} parked consumer(s)${queue === undefined ? '' : ` on ${queue}`}`, timeoutMs });
}
