/**
 * Preloaded into a broker process by bench/lease-memory.ts (`NODE_OPTIONS=--import=…/probe.js`):
 * on SIGUSR2 it runs a full GC and prints one line `PROBE {"heapUsed","heapTotal","external","rss","loopMaxMs","loopP99Ms"}`
 * (bytes, ms) to stderr, then resets the event-loop delay histogram. Bench use only.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
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
  process.stderr.write(`PROBE ${JSON.stringify({ heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, rss: m.rss, loopMaxMs, loopP99Ms })}\n`);
  setTimeout(() => loop.reset(), 50); // after the forced GC pause has been sampled
});
