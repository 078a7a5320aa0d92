/**
 * Consumer groups and their positions: `lag`, `replay`, `cg list|describe|lag|seek|delete|
 * refresh-stats`, `partition list|describe|seek` (docs/cli.md#consumer-groups). Verbs, flags and
 * status lines follow the reference CLI (queen-mq/queen: clients/client-cli/cmd/lag.go,
 * replay.go, cg.go, partition.go, seek_helper.go); a seek maps to
 * `POST /api/v1/consumer-groups/:group/queues/:queue/seek` (docs/http-api.md#consumer-group-administration).
 */
import type { Command } from 'commander';
import { serverError, userError } from '../errors.js';
import { humanInt, humanSeconds, type View } from '../output.js';
import { intFlag, Session } from '../session.js';
import { parseTime } from '../time.js';

/** The seek body for a `--to` value: end, the epoch, or a time (docs/cli.md#time-arguments). */
export function seekBody(to: string | undefined): { toEnd: true } | { timestamp: string } {
  const a = (to ?? '').trim();
  if (a === '') throw userError('--to is required');
  const low = a.toLowerCase();
  if (low === 'now' || low === 'end' || low === 'latest') return { toEnd: true };
  return { timestamp: new Date(parseTime(a)).toISOString() };
}

const first = (r: Record<string, unknown>, ...keys: string[]): unknown => keys.map((k) => r[k]).find((v) => v !== undefined && v !== null);

/** `lag`, `cg list`, `cg lag`: one row per (group, queue). */
const lagView: View = {
  columns: [
    { header: 'CG', value: (r) => first(r, 'name', 'consumerGroup') },
    { header: 'QUEUE', value: (r) => first(r, 'queueName', 'queue') },
    { header: 'MESSAGES', value: (r) => first(r, 'totalLag', 'offsetLag', 'lagMessages'), format: humanInt },
    { header: 'LAG', value: (r) => first(r, 'maxTimeLag', 'timeLagSeconds', 'lagSeconds'), format: humanSeconds },
    { header: 'PARTITIONS', value: (r) => r.partitionsWithLag, wide: true },
    { header: 'SUBSCRIBED', value: (r) => first(r, 'subscriptionTimestamp', 'subscriptionMode'), wide: true },
  ],
  rows: (d) => (Array.isArray(d) ? (d as unknown[]) : []),
};

/** `lag --min-seconds N`: one row per lagging (group, queue, partition), so the partition is a column. */
const laggingView: View = {
  columns: [
    { header: 'CG', value: (r) => first(r, 'consumerGroup', 'name') },
    { header: 'QUEUE', value: (r) => first(r, 'queueName', 'queue') },
    { header: 'PARTITION', value: (r) => r.partition },
    { header: 'MESSAGES', value: (r) => first(r, 'offsetLag', 'totalLag', 'lagMessages'), format: humanInt },
    { header: 'LAG', value: (r) => first(r, 'timeLagSeconds', 'maxTimeLag', 'lagSeconds'), format: humanSeconds },
  ],
  rows: (d) => (Array.isArray(d) ? (d as unknown[]) : []),
};

/**
 * Prints the consumer groups with their lag (`CG QUEUE MESSAGES LAG`), or with `minSeconds > 0`
 * the partitions lagging at least that long (`CG QUEUE PARTITION MESSAGES LAG`).
 */
async function lagAction(minSeconds: number, cmd: Command): Promise<void> {
  const s = Session.of(cmd);
  const api = s.api();
  if (minSeconds > 0) s.renderer().render((await api.call('GET /api/v1/consumer-groups/lagging', { query: { minLagSeconds: minSeconds } })) ?? [], laggingView);
  else s.renderer().render((await api.call('GET /api/v1/consumer-groups')) ?? [], lagView);
}

async function seek(cmd: Command, group: string, queue: string, to: string | undefined, dryRun: boolean | undefined, verb: string): Promise<void> {
  const s = Session.of(cmd);
  const body = seekBody(to);
  if (dryRun) {
    process.stdout.write(`[dry-run] would seek cg=${group} queue=${queue} toEnd=${'toEnd' in body} ts="${'timestamp' in body ? body.timestamp : ''}"\n`);
    return;
  }
  await s.api().call('POST /api/v1/consumer-groups/:group/queues/:queue/seek', { params: { group, queue }, body });
  s.say(`${verb} cg=${group} queue=${queue} to=${to}`);
}

/** `--min-seconds` and the lag listing, shared by `queenctl lag` and `queenctl cg lag`. */
function withLagOptions(command: Command): Command {
  return command
    .option('--min-seconds <n>', 'only lag of at least N seconds', (v) => intFlag('min-seconds', v), 0)
    .action((o: { minSeconds: number }, cmd: Command) => lagAction(o.minSeconds, cmd));
}

export function registerGroups(program: Command): void {
  withLagOptions(program.command('lag').description('Consumer groups with their lag (--min-seconds: lagging partitions only)'));

  program.command('replay [queue]').description('Move a consumer group to a point in time (--to)')
    .requiredOption('--cg <group>', 'consumer group')
    .requiredOption('--to <time>', "'15m ago' | beginning | now | RFC 3339")
    .option('--dry-run', 'print the action, send nothing')
    .action(async (queue: string | undefined, o: { cg: string; to: string; dryRun?: boolean }, cmd: Command) => {
      if (!queue) throw userError('queue is required');
      await seek(cmd, o.cg, queue, o.to, o.dryRun, 'replayed');
    });

  const cg = program.command('cg').aliases(['consumer-group', 'consumer-groups']).description('Inspect and manage consumer groups');
  cg.command('list').alias('ls').description('List consumer groups').action((_o, cmd: Command) => lagAction(0, cmd));
  cg.command('describe <name>').aliases(['get', 'show']).description('One consumer group, per queue and partition').action(async (name: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const data = await s.api().call('GET /api/v1/consumer-groups/:group', { params: { group: name } });
    // The broker answers {} for a group that reads no queue (as the reference); for a script that is
    // a missing resource, as the 404 it was (docs/cli.md#exit-codes).
    if (data === undefined || data === null || Object.keys(data).length === 0) throw serverError(`consumer group not found: ${name}`);
    s.renderer().render(data);
  });
  withLagOptions(cg.command('lag').description('Lagging consumer groups (as `queenctl lag`)'));
  cg.command('seek <cg> <queue>').description('Move a consumer group on a queue (as `queenctl replay`)')
    .option('--to <time>', "'15m ago' | beginning | now | RFC 3339")
    .option('--dry-run', 'print the action, send nothing')
    .action((group: string, queue: string, o: { to?: string; dryRun?: boolean }, cmd: Command) => seek(cmd, group, queue, o.to, o.dryRun, 'seek'));
  cg.command('delete <cg>').alias('rm').description('Delete a consumer group (everywhere, or on --queue)')
    .option('--queue <queue>', 'only on this queue')
    .option('--metadata', 'also delete the subscription, so the next pop is a first contact')
    .option('--yes', 'confirm')
    .action(async (group: string, o: { queue?: string; metadata?: boolean; yes?: boolean }, cmd: Command) => {
      if (!o.yes) throw userError('refusing to delete without --yes');
      const s = Session.of(cmd);
      const query = { deleteMetadata: o.metadata === true };
      if (o.queue) await s.api().call('DELETE /api/v1/consumer-groups/:group/queues/:queue', { params: { group, queue: o.queue }, query });
      else await s.api().call('DELETE /api/v1/consumer-groups/:group', { params: { group }, query });
      s.say(`deleted cg=${group}`);
    });
  cg.command('refresh-stats').description('Refresh consumer-group statistics (live on Queen-TS)').action(async (_o, cmd: Command) => {
    const s = Session.of(cmd);
    await s.api().call('POST /api/v1/stats/refresh');
    s.say('refreshed');
  });

  const partition = program.command('partition').aliases(['partitions', 'p']).description('Partitions of a queue');
  partition.command('list <queue>').alias('ls').description('Partitions with their counts').action(async (queue: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const api = s.api();
    const rows: unknown[] = [];
    let after: string | undefined;
    do {
      const page = await api.call('GET /api/v1/resources/queues/:queue/partitions', { params: { queue }, query: { limit: 10_000, after } });
      rows.push(...(page?.partitions ?? []));
      after = page?.pagination?.nextAfter ?? undefined;
    } while (after);
    const m = (k: string) => (r: Record<string, unknown>): unknown => first(r, k) ?? (r.messages as Record<string, unknown> | undefined)?.[k];
    s.renderer().render(rows, {
      columns: [
        { header: 'PARTITION', path: 'name' }, { header: 'PENDING', value: m('pending'), format: humanInt }, { header: 'PROCESSING', value: m('processing'), format: humanInt },
        { header: 'COMPLETED', value: m('completed'), format: humanInt, wide: true }, { header: 'FAILED', value: m('failed'), format: humanInt, wide: true },
        { header: 'DLQ', value: m('deadLetter'), format: humanInt, wide: true }, { header: 'TOTAL', value: m('total'), format: humanInt, wide: true },
      ],
      rows: () => rows,
    });
  });
  partition.command('describe <queue> <partition>').aliases(['get', 'show']).description('Messages of one partition')
    .option('--limit <n>', 'messages', (v) => intFlag('limit', v), 100)
    .action(async (queue: string, name: string, o: { limit: number }, cmd: Command) => {
      const s = Session.of(cmd);
      const data = await s.api().call('GET /api/v1/messages', { query: { queue, partition: name, limit: o.limit } });
      s.renderer().render(data, { columns: [{ header: 'TX', path: 'transactionId' }, { header: 'STATUS' }, { header: 'OFFSET' }, { header: 'CREATED', path: 'createdAt' }], rows: (d) => (d as { messages?: unknown[] }).messages ?? [] });
    });
  partition.command('seek <queue> <partition>').description('Move a consumer group to the end of one partition')
    .requiredOption('--cg <group>', 'consumer group')
    .option('--to <where>', "only 'end' per partition (use `cg seek` for times)", 'end')
    .action(async (queue: string, name: string, o: { cg: string; to: string }, cmd: Command) => {
      if (o.to !== 'end') throw userError(`partition seek only supports 'end' (got "${o.to}"); use 'queenctl cg seek' for timestamp-based seeks`);
      const s = Session.of(cmd);
      await s.api().call('POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek', { params: { group: o.cg, queue, partition: name }, body: { toEnd: true } });
      s.say(`seek cg=${o.cg} queue=${queue} partition=${name} to=end`);
    });
}
