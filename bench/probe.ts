/**
 * Preloaded into a broker process by bench/lease-memory.ts (`NODE_OPTIONS=--import=…/probe.js`):
 * on SIGUSR2 it runs a full GC and prints one line `PROBE {"heapUsed","heapTotal","external","arrayBuffers","rss","RssAnon","RssFile","loopMaxMs","loopP99Ms","spaces"}`
 * (bytes, ms; `spaces`: V8 heap space name → reserved bytes) to stderr, then resets the event-loop delay histogram. Bench use only.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

process.on('SIGUSR2', () => {
  const loopMaxMs = loop.max / 1e6;
  const loopP99Ms = loop.percentile(99) / 1e6;
  gc();
  const m = process.memoryUsage();
  let status: Record<string, number> = {};
  try {
    status = Object.fromEntries(readFileSync('/proc/self/status', 'utf8').split('\n').filter((l) => /^Rss(Anon|File):/.test(l)).map((l) => [l.split(':')[0]!, Number(l.split(/\s+/)[1]) * 1024]));
  } catch { /* not Linux */ }
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
  process.stderr.write(`PROBE ${JSON.stringify({ heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss, ...status, loopMaxMs, loopP99Ms, spaces })}\n`);
  setTimeout(() => loop.reset(), 50); // after the forced GC pause has been sampled
});
