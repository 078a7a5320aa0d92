/**
 * `queenctl bench`: push `--total` messages from `--producers` loops in batches of `--batch`
 * across `--partitions` partitions, then drain them with `--consumers` auto-acking pops, and
 * print throughput and residency (pop time − push time) percentiles (docs/cli.md#bench). Flags and
 * report lines follow the reference CLI (queen-mq/queen: clients/client-cli/cmd/bench.go). A
 * progress bar shows on stderr when it is a terminal.
 */
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { Api } from '../client.js';
import { serverError, userError } from '../errors.js';
import { MAX_LINE_BYTES } from '../lines.js';
import { intFlag, Session } from '../session.js';
import { MAX_CONCURRENCY } from './push.js';

interface BenchOptions {
  queue: string; total: number; batch: number; partitions: number; producers: number; consumers: number;
  payloadSize: number; skipPop?: boolean; autoCreate: boolean; autoDelete?: boolean;
}

function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function push(api: Api, o: BenchOptions, tick: (n: number) => void): Promise<void> {
  const filler = 'x'.repeat(o.payloadSize);
  await Promise.all(Array.from({ length: o.producers }, async (_, producer) => {
    const count = Math.floor(o.total / o.producers) + (producer < o.total % o.producers ? 1 : 0);
    for (let i = 0; i < count; i += o.batch) {
      const n = Math.min(o.batch, count - i);
      const partition = `p${(producer + i) % o.partitions}`;
      const items = Array.from({ length: n }, (_, j) => ({ queue: o.queue, partition, payload: { producer, i: i + j, ts: Date.now(), data: filler } }));
      const res = await api.call('POST /api/v1/push', { body: { items }, timeoutMs: 120_000 });
      const failed = (res ?? []).filter((r) => r.status === 'failed').length;
      if (failed > 0) throw serverError(`bench push: ${failed} items failed`);
      tick(n);
    }
  }));
}

async function drain(api: Api, o: BenchOptions, tick: (n: number) => void): Promise<{ count: number; residency: number[] }> {
  const residency: number[] = [];
  let count = 0;
  await Promise.all(Array.from({ length: o.consumers }, async () => {
    let idleSince = 0;
    while (count < o.total) {
      const res = await api.call('GET /api/v1/pop/queue/:queue', { params: { queue: o.queue }, query: { consumerGroup: 'queenctl-bench', subscriptionMode: 'all', autoAck: true, batch: o.batch, wait: true, timeout: 2000 }, timeoutMs: 15_000 });
      const msgs = res?.messages ?? [];
      if (msgs.length === 0) {
        idleSince ||= Date.now();
        if (Date.now() - idleSince > 5000) return;
        continue;
      }
      idleSince = 0;
      const now = Date.now();
      for (const m of msgs) {
        const ts = (m.data as { ts?: unknown } | null)?.ts;
        if (typeof ts === 'number') residency.push(now - ts);
      }
      count += msgs.length;
      tick(msgs.length);
    }
  }));
  return { count, residency };
}

export function registerBench(program: Command): void {
  program.command('bench').description('Push then drain a synthetic load and report throughput')
    .option('--queue <name>', 'queue', 'queenctl-bench')
    .option('--total <n>', 'messages', (v) => intFlag('total', v), 10_000)
    .option('--batch <n>', 'messages per push and per pop', (v) => intFlag('batch', v), 100)
    .option('--partitions <n>', 'partitions', (v) => intFlag('partitions', v), 4)
    .option('--producers <n>', 'concurrent producers', (v) => intFlag('producers', v), 4)
    .option('--consumers <n>', 'concurrent consumers', (v) => intFlag('consumers', v), 4)
    .option('--payload-size <n>', 'filler bytes per payload', (v) => intFlag('payload-size', v), 64)
    .option('--skip-pop', 'push only')
    .option('--no-auto-create', 'do not create the queue')
    .option('--auto-delete', 'delete the queue at the end')
    .action(async (o: BenchOptions, cmd: Command) => {
      for (const k of ['total', 'batch', 'partitions', 'producers', 'consumers'] as const) if (o[k] < 1) throw userError(`--${k} must be at least 1`);
      // Each producer and consumer is a loop with its own request in flight; each payload holds
      // the filler: bounded so a typo is a message, not an allocation that takes the machine down.
      for (const k of ['producers', 'consumers'] as const) if (o[k] > MAX_CONCURRENCY) throw userError(`--${k} must be at most ${MAX_CONCURRENCY}`);
      if (o.payloadSize > MAX_LINE_BYTES) throw userError(`--payload-size must be at most ${MAX_LINE_BYTES}`);
      const s = Session.of(cmd);
      const api = s.api();
      if (o.autoCreate) await api.call('POST /api/v1/configure', { body: { queue: o.queue, options: { leaseTime: 60 } } });
      const bars = process.stderr.isTTY && !s.g.quiet ? new MultiBar({ stream: process.stderr, format: '{phase} [{bar}] {value}/{total}' }, Presets.shades_classic) : undefined;
      const bar = (phase: string): SingleBar | undefined => bars?.create(o.total, 0, { phase });
      try {
        s.say(`pushing ${o.total} messages across ${o.partitions} partitions...`);
        const pb = bar('push');
        const t0 = performance.now();
        await push(api, o, (n) => pb?.increment(n));
        const pushSecs = (performance.now() - t0) / 1000;
        let popLine = '';
        let residency: number[] = [];
        let drained = 0;
        if (!o.skipPop) {
          s.say(`draining ${o.total} messages with ${o.consumers} consumers...`);
          const cb = bar('pop ');
          const t1 = performance.now();
          const r = await drain(api, o, (n) => cb?.increment(n));
          const popSecs = (performance.now() - t1) / 1000;
          drained = r.count;
          residency = r.residency.sort((a, b) => a - b);
          popLine = `POP        ${drained} msgs in ${popSecs.toFixed(2)}s (${(drained / popSecs).toFixed(0)} msg/s)`;
        }
        bars?.stop();
        process.stdout.write(`\nPUSH       ${o.total} msgs in ${pushSecs.toFixed(2)}s (${(o.total / pushSecs).toFixed(0)} msg/s)\n`);
        if (popLine) {
          process.stdout.write(`${popLine}\n`);
          if (drained < o.total) process.stdout.write(`WARN       expected ${o.total}, drained ${drained} (${o.total - drained} short - check queue config / lease time)\n`);
          if (residency.length) process.stdout.write(`RESIDENCY  p50=${pct(residency, 50)}ms p95=${pct(residency, 95)}ms p99=${pct(residency, 99)}ms  (pop_ts - push_ts; not RTT)\n`);
        }
      } finally {
        bars?.stop();
      }
      if (o.autoDelete) await api.call('DELETE /api/v1/resources/queues/:queue', { params: { queue: o.queue } });
      else s.say(`\nqueue "${o.queue}" ${o.skipPop ? `has ${o.total} pending messages` : 'drained (messages were popped + auto-acked)'}.\n  inspect:  queenctl queue describe ${o.queue}\n  cleanup:  queenctl queue delete ${o.queue} --yes`);
    });
}
