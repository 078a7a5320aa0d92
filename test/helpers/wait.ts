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
      const detail = lastError !== undefined ? `last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}` : `last value: ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what} (${detail})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Long-poll pops parked on the broker at `url`, all queues and discovery pops together (the
 * `queen_parked_consumers` gauge of /metrics/prometheus). Tests in one file run one at a time, so
 * the count is the current test's own.
 * @throws Error when the gauge is missing
 */
export async function parkedConsumers(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics/prometheus`)).text();
  const m = /^queen_parked_consumers (\d+)$/m.exec(text);
  if (!m) throw new Error('queen_parked_consumers missing from /metrics/prometheus');
  return Number(m[1]);
}

/**
 * Resolves once exactly `n` long-poll pops are parked on the broker at `url`, so that a push made
 * afterwards is known to find them parked (or, with `n = 0`, that a disconnected one is gone).
 * @throws Error from {@link waitFor} when the count is not reached within `timeoutMs` (default 10 000)
 */
export async function waitForParked(url: string, n: number, timeoutMs?: number): Promise<void> {
  await waitFor(async () => (await parkedConsumers(url)) === n, { what: `${n} parked consumer(s) on ${url}`, timeoutMs });
}

export interface Witness {
  /** True while the witness pop is still parked (it has neither timed out nor been released). */
  parked(): boolean;
  /** Wakes the witness pop with a push to its queue and waits for its answer. */
  release(): Promise<void>;
}

/**
 * Parks a long-poll pop with `timeoutMs` (default 20 000) on a fresh queue that nothing pushes to,
 * and resolves once the broker counts it as parked. It answers 204 only when its timeout passes, so
 * whatever completes while `parked()` is still true completed before that timeout: an ordering
 * against the broker's own timer, with no wall-clock threshold in the test.
 * @throws Error from {@link waitFor} when the pop does not park
 */
export async function parkWitness(url: string, timeoutMs = 20_000): Promise<Witness> {
  const before = await parkedConsumers(url);
  const queue = `witness-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  let settled = false;
  const done = fetch(`${url}/api/v1/pop/queue/${queue}?wait=true&timeout=${timeoutMs}&autoAck=true`)
    .then((r) => r.arrayBuffer())
    .finally(() => (settled = true));
  await waitFor(async () => settled || (await parkedConsumers(url)) === before + 1, { what: 'the witness pop to park' });
  if (settled) throw new Error('the witness pop answered instead of parking');
  return {
    parked: () => !settled,
    release: async () => {
      // A push rather than a disconnect: the pop answers normally and leaves no half-closed socket.
      const r = await fetch(`${url}/api/v1/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ items: [{ queue, payload: 'release' }] }) });
      if (r.status !== 201) throw new Error(`witness release push answered ${r.status}: ${await r.text()}`);
      await done;
    },
  };
}

/**
 * Resolves once every lease of `leaseSeconds` (default 1) granted before this call has expired on the
 * broker at `url`: a sentinel message on a queue of its own is leased for the same time and polled
 * until it is delivered again. Leases of equal length expire in grant order, so a test that needs a
 * lease to be stale (or to still be held past its original end) waits for this instead of sleeping.
 * @throws Error from {@link waitFor} when the sentinel is not redelivered within 15 s
 */
export async function afterLeasesGrantedBefore(url: string, leaseSeconds = 1): Promise<void> {
  const queue = `lease-sentinel-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const json = { 'content-type': 'application/json' };
  const pushed = await fetch(`${url}/api/v1/push`, { method: 'POST', headers: json, body: JSON.stringify({ items: [{ queue, payload: 'sentinel' }] }) });
  if (pushed.status !== 201) throw new Error(`lease sentinel push answered ${pushed.status}: ${await pushed.text()}`);
  const first = await fetch(`${url}/api/v1/pop/queue/${queue}?leaseSeconds=${leaseSeconds}`);
  if (first.status !== 200) throw new Error(`lease sentinel pop answered ${first.status}: ${await first.text()}`);
  await first.arrayBuffer();
  await waitFor(async () => {
    const r = await fetch(`${url}/api/v1/pop/queue/${queue}?autoAck=true`);
    await r.arrayBuffer();
    return r.status === 200;
  }, { what: `a ${leaseSeconds} s sentinel lease to expire and redeliver`, timeoutMs: 15_000 });
}

/**
 * `work`, or a rejection naming `what` once `ms` have passed without it settling: for awaits that
 * have no bound of their own, so that a test fails with a name instead of waiting for the runner's
 * file timeout.
 * @throws Error `<what> did not complete within <ms> ms`
 */
export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not complete within ${ms} ms`)), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
