/**
 * Idle RSS of freshly booted SQLite brokers, for before/after comparisons: boots `IDLE_BOOTS`
 * (default 5) brokers of each build given, alternating the builds boot by boot, and reads each
 * one's `/proc/<pid>/status` the way the `rss` row of `npm run bench` does: VmRSS 1 s after one
 * `GET /health` (startBroker's readiness check), split into RssAnon (heap, malloc) and RssFile
 * (the mapped `node` binary and native modules). Prints MiB (2^20 bytes) and MB (10^6 bytes), and
 * the load average with each boot.
 *
 * Run: `node dist/bench/idle-rss.js [path/to/dist/src/main.js ...]` (default: this build).
 */
import os from 'node:os';
import fs from 'node:fs';
import { MAIN, startBroker } from '../test/helpers/broker.js';

const BOOTS = Number(process.env.IDLE_BOOTS ?? 5);
const builds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [MAIN];

/** RSS fields of `pid` in bytes (`VmRSS`, `RssAnon`, `RssFile`). */
function status(pid: number): Record<'VmRSS' | 'RssAnon' | 'RssFile', number> {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kB = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(text)?.[1] ?? NaN) * 1024;
  return { VmRSS: kB('VmRSS'), RssAnon: kB('RssAnon'), RssFile: kB('RssFile') };
}

const mib = (b: number) => (b / 2 ** 20).toFixed(1);
const mb = (b: number) => (b / 1e6).toFixed(1);

async function main(): Promise<void> {
  const seen = new Map<string, number[]>(builds.map((b) => [b, []]));
  for (let i = 0; i < BOOTS; i++) {
    for (const main of builds) {
      const b = await startBroker({ main, env: { LOG_LEVEL: 'info' } });
      try {
        await new Promise((r) => setTimeout(r, 1000));
        const s = status(b.proc.pid!);
        seen.get(main)!.push(s.VmRSS);
        console.log(`${main}: VmRSS ${mib(s.VmRSS)} MiB (${mb(s.VmRSS)} MB), RssAnon ${mib(s.RssAnon)} MiB, RssFile ${mib(s.RssFile)} MiB; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
      } finally {
        await b.stop();
      }
    }
  }
  for (const [main, v] of seen) {
    const mean = v.reduce((a, x) => a + x, 0) / v.length;
    console.log(`${main}: ${v.map(mib).join(' ')} MiB; mean ${mib(mean)} MiB = ${mb(mean)} MB, max ${mib(Math.max(...v))} MiB = ${mb(Math.max(...v))} MB`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
