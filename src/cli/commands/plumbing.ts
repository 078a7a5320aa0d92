/**
 * `config` (contexts), `ping`, `version`, `status` (docs/cli.md#configuration,
 * docs/cli.md#commands). Verbs, flags and printed lines follow the reference CLI
 * (queen-mq/queen: clients/client-cli/cmd/config.go, ping.go, version.go, status.go).
 */
import type { Command } from 'commander';
import type { Answer } from '../../http/schemas/types.js';
import type { Api } from '../client.js';
import { authLabel, deleteContext, findContext, NO_SERVER, redacted, saveConfig, upsertContext, type Context } from '../config.js';
import { CliError, emptyResult, serverError, userError } from '../errors.js';
import { humanSeconds, type View } from '../output.js';
import { durationFlag, Session } from '../session.js';
import { VERSION } from '../version.js';

export function registerConfig(program: Command): void {
  const config = program.command('config').description('Manage contexts in ~/.queen/config.yaml');

  config.command('view').description('Print the configuration file (tokens redacted)').action((_o, cmd: Command) => {
    const s = Session.of(cmd);
    const r = s.renderer();
    (r.format === 'table' || r.format === 'wide' ? s.renderer('yaml') : r).render(redacted(s.config()));
  });

  config.command('current-context').alias('current').description('Print the current context name').action((_o, cmd: Command) => {
    const cur = Session.of(cmd).config()['current-context'];
    if (!cur) throw emptyResult('no current-context set');
    process.stdout.write(`${cur}\n`);
  });

  config.command('get-contexts').aliases(['list', 'ls']).description('List contexts').action((_o, cmd: Command) => {
    const s = Session.of(cmd);
    const cfg = s.config();
    const rows = (cfg.contexts ?? []).map((c) => ({ current: c.name === cfg['current-context'], name: c.name, server: c.server ?? '', auth: authLabel(c['token-ref']), insecure: c.insecure === true }));
    const view: View = {
      columns: [{ header: 'CURRENT', format: (v) => (v === true ? '*' : '') }, { header: 'NAME' }, { header: 'SERVER' }, { header: 'AUTH' }, { header: 'INSECURE', wide: true }],
      rows: () => rows,
    };
    s.renderer().render(rows, view);
  });

  config.command('set-context <name>')
    .description('Create or update a context (--server, --token, --token-ref, --insecure are read from this command line)')
    .option('--token-ref <ref>', 'token reference: env | file:///abs/path | literal:<token>')
    .option('--no-keychain', 'store --token as a literal (the default here: there is no OS keychain)')
    .action((name: string, o: { tokenRef?: string }, cmd: Command) => {
      const s = Session.of(cmd);
      const cfg = s.config();
      const ctx: Context = { ...(findContext(cfg, name) ?? { name }) };
      if (s.g.server !== undefined) ctx.server = s.g.server.replace(/\/+$/, '');
      if (s.g.insecure !== undefined) ctx.insecure = s.g.insecure;
      if (o.tokenRef !== undefined) ctx['token-ref'] = o.tokenRef;
      if (s.g.token !== undefined) ctx['token-ref'] = `literal:${s.g.token}`;
      upsertContext(cfg, ctx);
      if (!cfg['current-context']) cfg['current-context'] = name;
      saveConfig(s.configFile, cfg);
      s.say(`context "${name}" updated`);
    });

  config.command('use-context <name>').description('Set the current context').action((name: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const cfg = s.config();
    if (!findContext(cfg, name)) throw userError(`no such context "${name}"`);
    cfg['current-context'] = name;
    saveConfig(s.configFile, cfg);
    s.say(`switched to context "${name}"`);
  });

  config.command('delete-context <name>').alias('rm').description('Remove a context').action((name: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const cfg = s.config();
    if (!deleteContext(cfg, name)) throw userError(`no such context "${name}"`);
    saveConfig(s.configFile, cfg);
    s.say(`context "${name}" removed`);
  });
}

/** `queenctl docs`: where the documentation is (the reference CLI prints its website's pages). */
export function registerDocs(program: Command): void {
  program.command('docs').description('Print where the documentation lives')
    .option('--topic <name>', 'one page: cli, http-api, configuration, security, operations, storage, architecture')
    .action((o: { topic?: string }) => {
      const pages: [string, string][] = [
        ['queenctl', 'cli'], ['HTTP API', 'http-api'], ['Configuration', 'configuration'], ['Security', 'security'],
        ['Operations', 'operations'], ['Storage', 'storage'], ['Architecture', 'architecture'],
      ];
      const dir = new URL('../../../../docs/', import.meta.url).pathname;
      if (o.topic) {
        if (!pages.some(([, f]) => f === o.topic)) throw userError(`unknown topic "${o.topic}" (${pages.map(([, f]) => f).join(', ')})`);
        process.stdout.write(`${dir}${o.topic}.md\n`);
        return;
      }
      process.stdout.write('Queen-TS documentation\n----------------------\n');
      for (const [title, f] of pages) process.stdout.write(`${title.padEnd(22)} ${dir}${f}.md\n`);
      process.stdout.write(`${'OpenAPI'.padEnd(22)} <server>/openapi\n${'Queen MQ'.padEnd(22)} https://queenmq.com/\n`);
    });
}

export function registerPing(program: Command): void {
  program.command('ping').description('Check GET /health; exit 2 when the broker is unreachable or unhealthy')
    .option('--timeout <duration>', 'ping timeout', '5s')
    .action(async (o: { timeout: string }, cmd: Command) => {
      const s = Session.of(cmd);
      const api = s.api(durationFlag('timeout', o.timeout));
      const t0 = performance.now();
      const h = await api.call('GET /health');
      const latency = performance.now() - t0;
      const status = h?.status ?? '';
      const database = typeof h?.database === 'string' ? h.database : '';
      if (status !== 'healthy' || (database !== '' && database !== 'connected')) throw serverError(`unhealthy: status=${status} database=${database}`);
      s.renderer().render({ status, database, version: h?.version ?? null, latency: `${Math.round(latency)}ms` }, {
        columns: [{ header: 'STATUS' }, { header: 'DATABASE' }, { header: 'VERSION' }, { header: 'LATENCY' }],
      });
    });
}

/**
 * Registers `version`: the client's version line, then the server's `/health` (version, status,
 * database, context). The client line never needs a server: with none configured, or one that
 * does not answer, a `server   …` line says so and the command still exits 0
 * (docs/cli.md#commands). A bad `--context` or server URL stays exit 1.
 */
export function registerVersion(program: Command): void {
  program.command('version').description('Print the queenctl version, then the server\'s (when one is configured and answers)')
    .option('--short', 'print only the queenctl version (no server call)')
    .action(async (o: { short?: boolean }, cmd: Command) => {
      process.stdout.write(`queenctl ${VERSION} (queen-ts)\n`);
      if (o.short) return;
      const s = Session.of(cmd);
      let api: Api;
      try {
        api = s.api(5000);
      } catch (e) {
        if (e instanceof CliError && e.message === NO_SERVER) {
          process.stdout.write('server   none configured (pass --server, set $QUEEN_SERVER, or set a context)\n');
          return;
        }
        throw e;
      }
      let h: Answer<'GET /health'> | undefined;
      try {
        h = await api.call('GET /health');
      } catch (e) {
        if (!(e instanceof CliError)) throw e;
        process.stdout.write(`server   not available: ${e.message}\n`);
        return;
      }
      const dash = (v: unknown): string => (typeof v === 'string' && v !== '' ? v : '-');
      process.stdout.write(`server   ${dash(h?.version)}\nstatus   ${dash(h?.status)}\ndatabase ${dash(h?.database)}\ncontext  ${dash(s.resolved().name)} (${api.server})\n`);
    });
}

interface Counts { pending?: number; processing?: number; completed?: number; failed?: number; deadLetter?: number }

/** A status row, in the reference's flattened shape. */
function queueRow(q: { name?: unknown; namespace?: unknown; task?: unknown; messages?: Counts; partitions?: unknown; lagSeconds?: unknown }): Record<string, unknown> {
  const m = q.messages ?? {};
  return {
    queue: q.name, namespace: q.namespace ?? null, task: q.task ?? null,
    pending: m.pending ?? 0, processing: m.processing ?? 0, completed: m.completed ?? 0, failed: m.failed ?? 0, dlq: m.deadLetter ?? 0,
    partitions: q.partitions ?? null, lagSeconds: q.lagSeconds ?? null,
  };
}

export function registerStatus(program: Command): void {
  program.command('status [queue]').description('Queues with depth and counts; with a queue, its detail')
    .option('--namespace <ns>', 'filter by namespace')
    .option('--task <task>', 'filter by task')
    .option('--partitions', 'with a queue: one row per partition')
    .action(async (queue: string | undefined, o: { namespace?: string; task?: string; partitions?: boolean }, cmd: Command) => {
      const s = Session.of(cmd);
      const api = s.api();
      const lag: View['columns'][number] = { header: 'LAG', path: 'lagSeconds', format: humanSeconds };
      if (queue) {
        const d = await api.call('GET /api/v1/resources/queues/:queue', { params: { queue } });
        if (o.partitions) {
          s.renderer().render(d, {
            columns: [{ header: 'PARTITION', path: 'name' }, { header: 'PENDING' }, { header: 'PROCESSING' }, { header: 'COMPLETED' }, { header: 'FAILED' }, { header: 'DLQ', path: 'deadLetter' }],
            rows: (x) => ((x as { partitions?: { name: string; messages?: Counts }[] }).partitions ?? []).map((p) => ({ name: p.name, ...(p.messages ?? {}), ...(p as object) })),
          });
          return;
        }
        const row = queueRow({ name: d?.name, namespace: d?.namespace, task: d?.task, messages: d?.totals as Counts, partitions: d?.partitions.length });
        s.renderer().render(row, { columns: [{ header: 'QUEUE' }, { header: 'PENDING' }, { header: 'PROCESSING' }, { header: 'COMPLETED' }, { header: 'FAILED' }, { header: 'DLQ' }, { header: 'PARTITIONS' }, lag], rows: () => [row] });
        return;
      }
      // Lag of a queue: the largest time lag of its consumer groups, in seconds.
      const lagOf = new Map<string, number>();
      for (const g of (await api.call('GET /api/v1/consumer-groups')) ?? []) {
        const t = (g as { maxTimeLag?: unknown }).maxTimeLag;
        if (typeof t === 'number') lagOf.set(g.queueName, Math.max(t, lagOf.get(g.queueName) ?? 0));
      }
      const rows: Record<string, unknown>[] = [];
      for (let offset = 0; ; offset += 1000) {
        const page = await api.call('GET /api/v1/status/queues', { query: { namespace: o.namespace, task: o.task, limit: 1000, offset } });
        const qs = page?.queues ?? [];
        for (const q of qs) rows.push(queueRow({ ...(q as Parameters<typeof queueRow>[0]), lagSeconds: lagOf.get(q.name) ?? null }));
        if (qs.length < 1000) break;
      }
      s.renderer().render(rows, {
        columns: [{ header: 'QUEUE' }, { header: 'NAMESPACE' }, { header: 'TASK', wide: true }, { header: 'PENDING' }, { header: 'PROCESSING' }, { header: 'COMPLETED' }, { header: 'FAILED' }, { header: 'DLQ' }, lag],
        rows: () => rows,
      });
    });
}
