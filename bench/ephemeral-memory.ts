/**
 * Ephemeral memory: 1,000,000 messages pushed and acked must leave the broker's RSS within 20% of
 * where it started (docs/ephemeral.md#engine: memory is released on ack), and a push beyond the
 * node byte ceiling must answer 503 ephemeral_unavailable without the held bytes passing it.
 *
 * Shape: one ephemeral queue, 4 partitions; a producer pushes 500 messages per request (~150 B
 * payload each) while 4 consumers pop batches of 500 and ack them; RSS and heap read by
 * bench/probe.ts (full GC before each reading) after a 200,000-message warm-up (RSS settles once the allocator has seen the working set) and at the end:
 * once right after the last ack and once RSS has settled (see settled()), the figure judged. V8 shrinks its heap
 * (new space back from its 16 MiB semi-spaces, emptied old-space pages) only from its idle-time
 * memory reducer, so the reading right after the last ack measures GC timing, not retention; the
 * V8 space sizes and the anonymous/file-backed RSS split are printed to tell the two apart.
 * Then a second broker with QUEEN_EPHEMERAL_MAX_BYTES=1 MiB is filled past its ceiling.
 *
 * Env: BENCH_EPH_MESSAGES (default 1,000,000); BENCH_EPH_NODE_FLAGS, V8 flags for the broker (e.g.
 * `--max-semi-space-size=4`, docs/ephemeral.md#memory); MALLOC_ARENA_MAX passed through. Run: `npm run build && node dist/bench/ephemeral-memory.js`
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { request } from './http.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOTAL = Number(process.env.BENCH_EPH_MESSAGES ?? 1_000_000);
const BATCH = 500;
const PARTITIONS = 4;
const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

interface Probe { heapUsed: number; heapTotal: number; external: number; rss: number; RssAnon?: number; RssFile?: number; spaces?: Record<string, number> }

function prober(b: BrokerHandle): () => Promise<Probe> {
  let err = '';
  const waiting: ((p: Probe) => void)[] = [];
  b.proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    let i;
    while ((i = err.indexOf('\n')) >= 0) {
      const line = err.slice(0, i);
      err = err.slice(i + 1);
      if (line.startsWith('PROBE ')) waiting.shift()?.(JSON.parse(line.slice(6)) as Probe);
    }
  });
  return () => new Promise<Probe>((resolve) => { waiting.push(resolve); b.proc.kill('SIGUSR2'); });
}

/** Pushes and acks `n` messages through `queue`; returns how many were acked. */
async function flow(url: string, queue: string, n: number): Promise<number> {
  let pushed = 0;
  let acked = 0;
  const producer = async () => {
    let k = 0;
    while (pushed < n) {
      const count = Math.min(BATCH, n - pushed);
      const messages = Array.from({ length: count }, (_, i) => ({ payload: { n: pushed + i, user: 'alice', typing: true, pad: 'x'.repeat(100) } }));
      const r = await request(url, 'POST', '/api/v1/ephemeral/push', { queue, partition: `p${k++ % PARTITIONS}`, messages });
      if (r.status === 201) pushed += count;
      else if (r.status !== 429) throw new Error(`push answered ${r.status}: ${JSON.stringify(r.body)}`);
      else await new Promise((res) => setTimeout(res, 5)); // queue full: let the consumers catch up
    }
  };
  const consumer = async () => {
    while (acked < n) {
      const p = await request(url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&batch=${BATCH}&wait=true&timeout=1000`);
      const msgs = p.body.messages as { id: string }[];
      if (msgs.length === 0) continue;
      const a = await request(url, 'POST', '/api/v1/ephemeral/ack', { queue, acks: msgs.map((m) => ({ id: m.id, status: 'completed' })) });
      acked += (a.body.results as { outcome: string }[]).filter((r) => r.outcome === 'acked').length;
    }
  };
  await Promise.all([producer(), ...Array.from({ length: 4 }, consumer)]);
  return acked;
}

/**
 * Reads the broker's memory once a second until RSS stops moving (two readings 1 s apart within
 * 1 MiB of each other) or 30 s have passed. V8 hands emptied pages back from its idle-time memory
 * reducer several seconds after a full GC (docs/ephemeral.md#memory), so a reading taken at a fixed
 * moment measures that timer, not what the broker retains; both the start and the end figure are
 * taken this way, so neither side is favoured.
 * @returns the last reading and the time waited (ms)
 */
async function settled(probe: () => Promise<Probe>): Promise<{ last: Probe; waitedMs: number }> {
  const t0 = performance.now();
  let prev = await probe();
  for (;;) {
    await new Promise((res) => setTimeout(res, 1000));
    const next = await probe();
    if (Math.abs(next.rss - prev.rss) < 1024 * 1024 || performance.now() - t0 > 30_000) return { last: next, waitedMs: performance.now() - t0 };
    prev = next;
  }
}

async function main(): Promise<void> {
  const env = { LOG_LEVEL: 'info', ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}), NODE_OPTIONS: `${process.env.BENCH_EPH_NODE_FLAGS ?? ''} --import=${path.join(here, 'probe.js')}`.trim(), QUEEN_EPHEMERAL_RATE: '100000000', QUEEN_EPHEMERAL_BURST: '100000000' };
  const b = await startBroker({ env });
  try {
    const probe = prober(b);
    await flow(b.url, 'eph-mem', 200_000);
    const start = (await settled(probe)).last;
    const t0 = performance.now();
    let acked = 0;
    const half = await (async () => { acked += await flow(b.url, 'eph-mem', TOTAL / 2); return probe(); })();
    acked += await flow(b.url, 'eph-mem', TOTAL - TOTAL / 2);
    const secs = (performance.now() - t0) / 1000;
    const end0 = await probe();
    const { last: end, waitedMs } = await settled(probe);
    console.log(`  right after: RSS ${mb(end0.rss)} MiB heap total ${mb(end0.heapTotal)} old ${mb(end0.spaces?.old_space ?? 0)}; settled after ${(waitedMs / 1000).toFixed(0)} s: RSS ${mb(end.rss)} MiB heap total ${mb(end.heapTotal)}`);
    const sys = await request(b.url, 'GET', '/api/v1/system/ephemeral');
    const growth = (end.rss - start.rss) / start.rss;
    console.log(`ephemeral memory: ${acked} messages pushed and acked in ${secs.toFixed(1)} s (${(acked / secs).toFixed(0)} msg/s)`);
    console.log(`  at half way: RSS ${mb(half.rss)} MiB, heap total ${mb(half.heapTotal)} MiB, external ${mb(half.external)} MiB`);
    const spaces = Object.keys(end.spaces ?? {}).map((k) => `${k} ${mb(start.spaces?.[k] ?? 0)} → ${mb(end.spaces![k]!)}`).join(', ');
    console.log(`  RSS anonymous ${mb(start.RssAnon ?? 0)} → ${mb(end.RssAnon ?? 0)} MiB, file-backed (code) ${mb(start.RssFile ?? 0)} → ${mb(end.RssFile ?? 0)} MiB`);
    console.log(`  V8 spaces (MiB): ${spaces}`);
    console.log(`  heap total ${mb(start.heapTotal)} → ${mb(end.heapTotal)} MiB, external ${mb(start.external)} → ${mb(end.external)} MiB`);
    console.log(`  RSS ${mb(start.rss)} MiB → ${mb(end.rss)} MiB (${(growth * 100).toFixed(1)}%), heap ${mb(start.heapUsed)} → ${mb(end.heapUsed)} MiB, cellBytes at the end ${sys.body.cellBytes}`);
    console.log(`  ${Math.abs(growth) <= 0.2 && sys.body.cellBytes === 0 ? 'PASS' : 'FAIL'}: RSS within 20% and nothing held`);
  } finally {
    await b.stop();
  }
  const ceiling = 1024 * 1024;
  const c = await startBroker({ env: { LOG_LEVEL: 'info', QUEEN_EPHEMERAL_MAX_BYTES: String(ceiling), QUEEN_EPHEMERAL_QUEUE_MAX_LENGTH: '1000000' } });
  try {
    let refused: { status: number; code: string } | undefined;
    for (let i = 0; i < 100 && !refused; i++) {
      const r = await request(c.url, 'POST', '/api/v1/ephemeral/push', { queue: 'eph-ceiling', messages: Array.from({ length: 100 }, () => ({ payload: 'y'.repeat(200) })) });
      if (r.status !== 201) refused = { status: r.status, code: r.body.code as string };
    }
    const sys = await request(c.url, 'GET', '/api/v1/system/ephemeral');
    console.log(`byte ceiling ${ceiling}: refusal ${JSON.stringify(refused)}, cellBytes ${sys.body.cellBytes} (${sys.body.cellBytes <= ceiling ? 'never past the ceiling' : 'PAST THE CEILING'})`);
  } finally {
    await c.stop();
  }
}

await main();
