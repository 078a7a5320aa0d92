/**
 * Preloaded into every test file's process by scripts/test.mjs (`--import`). A test file that is
 * still running `QUEEN_TEST_WATCHDOG_MS` after it started (default 240 000 ms, under the runner's
 * 300 s file timeout) prints, once, what keeps it busy to stderr: the libuv handles that are
 * active and referenced (sockets with their endpoints, child processes with their pids, timers with
 * their due time) and node's active-resource summary. The runner shows a file's stderr as
 * diagnostics of that file (scripts/test.mjs prints the lines that start with `test watchdog:`), so
 * a file that later times out names what it was waiting on.
 *
 * Only handle metadata is printed: no environment, no payloads.
 */
const ms = Number(process.env.QUEEN_TEST_WATCHDOG_MS ?? 240_000);

if (Number.isFinite(ms) && ms > 0) {
  setTimeout(() => {
    const lines = [`test watchdog: ${process.argv[1] ?? 'this file'} still running after ${ms} ms; what it waits on:`];
    const handles = process.report.getReport().libuv.filter((h) => h.is_active && h.is_referenced);
    for (const h of handles) {
      const parts = [h.type];
      if (h.localEndpoint) parts.push(`local ${h.localEndpoint.host}:${h.localEndpoint.port}`);
      if (h.remoteEndpoint) parts.push(`remote ${h.remoteEndpoint.host}:${h.remoteEndpoint.port}`);
      if (h.pid !== undefined) parts.push(`pid ${h.pid}`);
      if (h.firesInMsFromNow !== undefined) parts.push(`fires in ${h.firesInMsFromNow} ms`);
      lines.push(`test watchdog:   ${parts.join(' ')}`);
    }
    lines.push(`test watchdog:   active resources: ${process.getActiveResourcesInfo().join(', ')}`);
    process.stderr.write(`${lines.join('\n')}\n`);
  }, ms).unref();
}
