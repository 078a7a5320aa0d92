/**
 * The broker's main (src/main.ts) under a CPU profiler switched by SIGUSR2 (bench/proxy-cpu.ts):
 * the first signal starts node:inspector's profiler, the second stops it and writes the profile to
 * `$CPU_PROFILE/broker-<pid>.cpuprofile` (open it in Chrome DevTools or speedscope). `--cpu-prof`
 * is refused in NODE_OPTIONS and would include the boot and the warm-up.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const session = new Session();
session.connect();
let running = false;
let written = 0;
process.on('SIGUSR2', () => {
  if (!running) {
    running = true;
    session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start')));
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, r) => {
    if (err) throw err;
    // The first profile keeps its old name; later ones of the same process get -2, -3, … (bench/proxy-pop.ts takes several).
    written++;
    fs.writeFileSync(path.join(process.env.CPU_PROFILE ?? '.', `broker-${process.pid}${written > 1 ? `-${written}` : ''}.cpuprofile`), JSON.stringify(r.profile));
  });
});
await import('../src/main.js');
