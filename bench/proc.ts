/**
 * Readings of another process from /proc (Linux): its CPU time and its resident memory. The CPU
 * time per message is a row's load-independent figure: the machine's other work slows a run down
 * but does not add to the measured process's own CPU time.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`, 100 when unknown). */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system) process `pid` has used so far; 0 where there is no /proc or no such process. */
export function cpuSeconds(pid: number | undefined): number {
  return pid === undefined ? 0 : statCpuSeconds(`/proc/${pid}/stat`);
}

/**
 * CPU seconds (user + system) of the main thread of process `pid` alone (its JavaScript, the HTTP
 * parser and TLS run there; not the libuv pool, GC helpers or compiler threads); 0 when unreadable.
 */
export function mainThreadCpuSeconds(pid: number | undefined): number {
  return pid === undefined ? 0 : statCpuSeconds(`/proc/${pid}/task/${pid}/stat`);
}

function statCpuSeconds(file: string): number {
  try {
    const stat = fs.readFileSync(file, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state): utime is field 14, stime 15
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** VmRSS of `pid` in bytes, or 0 when unreadable. */
export function rssBytes(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds the main thread of process `pid` has run, from the scheduler's own account
 * (/proc/<pid>/task/<pid>/schedstat, nanoseconds) rather than the 10 ms ticks of
 * {@link mainThreadCpuSeconds}: the figure for short fixed-work phases. 0 when unreadable.
 */
export function mainThreadRunSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e9;
  } catch {
    return 0;
  }
}

/** The same summed over every thread process `pid` has now (a thread that already ended is not counted). */
export function runSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let ns = 0;
  try {
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return 0;
  }
  return ns / 1e9;
}
