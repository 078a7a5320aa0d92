/**
 * Operations: `maintenance get|on|off`, `metrics`, `analytics …`, `traces names|by-name|by-message`
 * (docs/cli.md#operations). Verbs, flags and status lines follow the reference CLI (queen-mq/queen:
 * clients/client-cli/cmd/maintenance.go, metrics.go, analytics.go, traces.go). Documents without a
 * table view print as YAML on a terminal.
 */
import type { Command } from 'commander';
import { userError } from '../errors.js';
import { humanInt, type View } from '../output.js';
import { intFlag, Session } from '../session.js';
import { parseTimeIso } from '../time.js';

export function registerOps(program: Command): void {
  const maintenance = program.command('maintenance').alias('maint').description('Push and pop maintenance modes')
    .option('--pop', 'pop maintenance instead of push maintenance');
  maintenance.command('get').description('Print the maintenance state').action(async (_o, cmd: Command) => {
    const s = Session.of(cmd);
    const api = s.api();
    s.renderer().render((cmd.optsWithGlobals() as { pop?: boolean }).pop ? await api.call('GET /api/v1/system/maintenance/pop') : await api.call('GET /api/v1/system/maintenance'));
  });
  for (const enabled of [true, false]) {
    const c = maintenance.command(enabled ? 'on' : 'off').description(enabled ? 'Enable maintenance (needs --yes)' : 'Disable maintenance');
    if (enabled) c.option('--yes', 'confirm');
    c.action(async (o: { yes?: boolean }, cmd: Command) => {
      if (enabled && !o.yes) throw userError('refusing to enable maintenance without --yes');
      const s = Session.of(cmd);
      const pop = (cmd.optsWithGlobals() as { pop?: boolean }).pop === true;
      if (pop) await s.api().call('POST /api/v1/system/maintenance/pop', { body: { enabled } });
      else await s.api().call('POST /api/v1/system/maintenance', { body: { enabled } });
      s.say(`${pop ? 'pop-maintenance' : 'maintenance'} ${enabled ? 'on' : 'off'}`);
    });
  }

  program.command('metrics').description('Broker counters (JSON), or --prometheus for the text exposition')
    .option('--prometheus', 'GET /metrics/prometheus')
    .action(async (o: { prometheus?: boolean }, cmd: Command) => {
      const s = Session.of(cmd);
      if (o.prometheus) {
        process.stdout.write(await s.api().text('GET /metrics/prometheus'));
        return;
      }
      s.renderer().render(await s.api().call('GET /metrics'));
    });

  const analytics = program.command('analytics').aliases(['a', 'an']).description('Time series and broker statistics');
  const routes = {
    overview: 'GET /api/v1/status/analytics', 'queue-lag': 'GET /api/v1/analytics/queue-lag', 'queue-ops': 'GET /api/v1/analytics/queue-ops',
    'queue-parked': 'GET /api/v1/analytics/queue-parked-replicas', retention: 'GET /api/v1/analytics/retention', system: 'GET /api/v1/analytics/system-metrics',
    worker: 'GET /api/v1/analytics/worker-metrics', postgres: 'GET /api/v1/analytics/postgres-stats',
  } as const;
  for (const [verb, route] of Object.entries(routes) as [keyof typeof routes, (typeof routes)[keyof typeof routes]][]) {
    analytics.command(verb).description(`${route.slice(4)}`)
      .option('--from <time>', 'start time')
      .option('--to <time>', 'end time')
      .action(async (o: { from?: string; to?: string }, cmd: Command) => {
        const s = Session.of(cmd);
        const query = { from: o.from ? parseTimeIso(o.from) : undefined, to: o.to ? parseTimeIso(o.to) : undefined };
        s.renderer().render(await s.api().json(route, { query }));
      });
  }

  const traces = program.command('traces').description('Message traces');
  const paging = (c: Command): Command => c.option('--limit <n>', 'rows', (v) => intFlag('limit', v), 100).option('--offset <n>', 'page offset', (v) => intFlag('offset', v), 0);
  paging(traces.command('names').aliases(['list', 'ls']).description('Trace names with counts')).action(async (o: { limit: number; offset: number }, cmd: Command) => {
    const s = Session.of(cmd);
    const data = await s.api().call('GET /api/v1/traces/names', { query: { limit: Math.min(o.limit, 1000), offset: o.offset } });
    s.renderer().render(data, {
      columns: [{ header: 'NAME', path: 'trace_name' }, { header: 'EVENTS', path: 'trace_count', format: humanInt }, { header: 'MESSAGES', path: 'message_count', format: humanInt }, { header: 'LAST', path: 'last_seen' }],
      rows: (d) => (d as { trace_names?: unknown[] }).trace_names ?? [],
    });
  });
  const eventView: View = {
    columns: [{ header: 'AT', path: 'createdAt' }, { header: 'EVENT', path: 'eventType' }, { header: 'TX', path: 'transactionId' }, { header: 'PARTITION', path: 'partition' }, { header: 'DATA' }],
    rows: (d) => (d as { traces?: unknown[] }).traces ?? [],
  };
  paging(traces.command('by-name <name>').description('Events carrying a trace name')).action(async (name: string, o: { limit: number; offset: number }, cmd: Command) => {
    const s = Session.of(cmd);
    s.renderer().render(await s.api().call('GET /api/v1/traces/by-name/:traceName', { params: { traceName: name }, query: { limit: Math.min(o.limit, 1000), offset: o.offset } }), eventView);
  });
  traces.command('by-message <partitionId> <transactionId>').description('Events of one message').action(async (partitionId: string, transactionId: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    s.renderer().render(await s.api().call('GET /api/v1/traces/:partitionId/:transactionId', { params: { partitionId, transactionId } }), eventView);
  });
}
