/**
 * Resources: `queue list|describe|configure|delete|stats`, `messages list|get|delete|retry|
 * traces`, `namespace list`, `task list` (docs/cli.md#resources). Verbs, flags, columns and
 * status lines follow the reference CLI (queen-mq/queen: clients/client-cli/cmd/queue.go,
 * messages.go, namespace_task.go); `messages retry` uses this broker's replay route
 * (docs/http-api.md#dead-letters). Dead letters are in dlq.ts.
 */
import type { Command } from 'commander';
import type { Api } from '../client.js';
import { emptyResult, userError } from '../errors.js';
import { humanInt, type View } from '../output.js';
import { intFlag, Session } from '../session.js';
import { parseTimeIso } from '../time.js';

/** Queue option flags of `queue configure` and their option names (docs/http-api.md#queue-options). */
const OPTION_FLAGS: [flag: string, option: string, help: string][] = [
  ['lease-time', 'leaseTime', 'lease seconds'],
  ['retry-limit', 'retryLimit', 'retries before the dead-letter queue'],
  ['priority', 'priority', 'queue priority'],
  ['delayed-processing', 'delayedProcessing', 'delayed-processing seconds'],
  ['window-buffer', 'windowBuffer', 'window buffer seconds'],
  ['max-size', 'maxSize', 'queue capacity (0 = unlimited)'],
  ['retention', 'retentionSeconds', 'pending retention seconds'],
  ['completed-retention', 'completedRetentionSeconds', 'completed retention seconds'],
];

const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** Registers `queue`, `messages`, `namespace list` and `task list` (columns NAMESPACE/TASK, QUEUES, PARTITIONS wide). */
export function registerAdmin(program: Command): void {
  registerQueue(program);
  registerMessages(program);
  // Each row names its namespace or task in a field of that name (`{namespace, queues, …}`,
  // docs/http-api.md); `name` is read too, for a broker that answers it that way.
  for (const [verb, alias, route, key, col] of [['namespace', 'ns', 'GET /api/v1/resources/namespaces', 'namespaces', 'NAMESPACE'], ['task', 'tasks', 'GET /api/v1/resources/tasks', 'tasks', 'TASK']] as const) {
    const c = program.command(verb).aliases(verb === 'namespace' ? ['namespaces', alias] : [alias]).description(`${verb === 'namespace' ? 'Namespaces' : 'Tasks'} with their queues`);
    c.command('list').alias('ls').description(`List ${key}`).action(async (_o, cmd: Command) => {
      const s = Session.of(cmd);
      const data = await s.api().call(route);
      s.renderer().render(data, {
        columns: [{ header: col, value: (r) => r[verb] ?? r.name }, { header: 'QUEUES', value: (r) => r.queueCount ?? r.queues, format: humanInt }, { header: 'PARTITIONS', value: (r) => r.partitionCount ?? r.partitions, wide: true }],
        rows: (d) => ((d as Record<string, unknown[]>)[key] ?? []),
      });
    });
  }
}

/**
 * `queue list|describe|configure|delete|stats`. `queue delete` prints `deleted "<q>"`, or
 * `queue "<q>" did not exist, nothing deleted` with exit 4 when the broker answers `existed:false`.
 */
function registerQueue(program: Command): void {
  const queue = program.command('queue').aliases(['queues', 'q']).description('Queues');
  queue.command('list').alias('ls').description('List queues')
    .option('--namespace <ns>', 'filter by namespace')
    .option('--task <task>', 'filter by task')
    .option('--limit <n>', 'at most N queues', (v) => intFlag('limit', v), 0)
    .option('--offset <n>', 'skip N queues', (v) => intFlag('offset', v), 0)
    .action(async (o: { namespace?: string; task?: string; limit: number; offset: number }, cmd: Command) => {
      const s = Session.of(cmd);
      const data = await s.api().call('GET /api/v1/resources/queues');
      let rows = (data?.queues ?? []).filter((q) => (!o.namespace || q.namespace === o.namespace) && (!o.task || q.task === o.task));
      rows = rows.slice(o.offset, o.limit > 0 ? o.offset + o.limit : undefined);
      const opt = (k: string) => (r: Record<string, unknown>): unknown => (r.options as Record<string, unknown> | undefined)?.[k];
      s.renderer().render(rows, {
        columns: [
          { header: 'NAME', path: 'name' }, { header: 'NAMESPACE' }, { header: 'TASK' }, { header: 'PARTITIONS', path: 'partitions', format: humanInt },
          { header: 'PRIORITY', value: opt('priority') }, { header: 'LEASE', value: opt('leaseTime') }, { header: 'PENDING', path: 'messages.pending', format: humanInt },
          { header: 'RETRY', value: opt('retryLimit'), wide: true }, { header: 'MAXSIZE', value: opt('maxSize'), format: humanInt, wide: true },
          { header: 'ENCRYPTED', value: opt('encryptionEnabled'), wide: true },
        ],
        rows: () => rows,
      });
    });
  queue.command('describe <queue>').aliases(['get', 'show']).description('One queue: options, partitions, totals').action(async (name: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    s.renderer().render(await s.api().call('GET /api/v1/resources/queues/:queue', { params: { queue: name } }));
  });
  const configure = queue.command('configure <queue>').description('Create a queue or change its options (only the flags given)')
    .option('--namespace <ns>', 'queue namespace')
    .option('--task <task>', 'queue task')
    .option('--encrypt', 'encrypt payloads at rest');
  for (const [flag, , help] of OPTION_FLAGS) configure.option(`--${flag} <n>`, help, (v) => intFlag(flag, v));
  configure.action(async (name: string, o: Record<string, unknown>, cmd: Command) => {
    const s = Session.of(cmd);
    const options: Record<string, unknown> = {};
    for (const [flag, option] of OPTION_FLAGS) if (o[camel(flag)] !== undefined) options[option] = o[camel(flag)];
    if (o.encrypt) options.encryptionEnabled = true;
    const res = await s.api().call('POST /api/v1/configure', { body: { queue: name, ...(o.namespace ? { namespace: o.namespace } : {}), ...(o.task ? { task: o.task } : {}), options } });
    if (s.formatChosen) s.renderer().render(res);
    else s.say(`configured "${name}"`);
  });
  queue.command('delete <queue>').alias('rm').description('Delete a queue and everything in it (exit 4 when it did not exist)')
    .option('--yes', 'confirm')
    .action(async (name: string, o: { yes?: boolean }, cmd: Command) => {
      if (!o.yes) throw userError(`refusing to delete "${name}" without --yes`);
      const s = Session.of(cmd);
      const r = await s.api().call('DELETE /api/v1/resources/queues/:queue', { params: { queue: name } });
      // The broker answers 200 {deleted:false, existed:false} for a queue it does not have: a no-op (exit 4).
      if ((r as { existed?: unknown } | undefined)?.existed === false) {
        s.say(`queue "${name}" did not exist, nothing deleted`);
        throw emptyResult(`queue "${name}" did not exist`);
      }
      s.say(`deleted "${name}"`);
    });
  queue.command('stats').description('Per-queue counts')
    .option('--namespace <ns>', 'filter by namespace')
    .option('--task <task>', 'filter by task')
    .action(async (o: { namespace?: string; task?: string }, cmd: Command) => {
      const s = Session.of(cmd);
      const data = await s.api().call('GET /api/v1/status/queues', { query: { namespace: o.namespace, task: o.task, limit: 1000 } });
      s.renderer().render(data, {
        columns: [{ header: 'QUEUE', path: 'name' }, { header: 'PENDING', path: 'messages.pending', format: humanInt }, { header: 'PROCESSING', path: 'messages.processing', format: humanInt }, { header: 'COMPLETED', path: 'messages.completed', format: humanInt }, { header: 'FAILED', path: 'messages.failed', format: humanInt }, { header: 'DLQ', path: 'messages.deadLetter', format: humanInt }],
        rows: (d) => (d as { queues?: unknown[] }).queues ?? [],
      });
    });
}

const traceView: View = {
  columns: [{ header: 'AT', path: 'createdAt' }, { header: 'EVENT', path: 'eventType' }, { header: 'TRACE', value: (r) => r.traceName ?? r.traceNames }, { header: 'DATA' }],
  rows: (d) => (d as { traces?: unknown[] }).traces ?? [],
};

export async function getMessage(cmd: Command, partitionId: string, transactionId: string): Promise<void> {
  const s = Session.of(cmd);
  s.renderer().render(await s.api().call('GET /api/v1/messages/:partitionId/:transactionId', { params: { partitionId, transactionId } }));
}

async function retryMessage(api: Api, partitionId: string, transactionId: string): Promise<string> {
  const r = await api.call('POST /api/v1/messages/:partitionId/:transactionId/retry', { params: { partitionId, transactionId } });
  const result = (r as { result?: unknown } | undefined)?.result;
  return typeof result === 'string' ? result : 'moved';
}

function registerMessages(program: Command): void {
  const messages = program.command('messages').aliases(['msg', 'msgs']).description('Browse and manage messages');
  messages.command('list').alias('ls').description('Messages, newest first')
    .option('--queue <queue>', 'filter by queue')
    .option('--partition <name>', 'filter by partition (with --queue)')
    .option('--status <status>', 'pending | processing | completed')
    .option('--namespace <ns>', 'filter by namespace')
    .option('--task <task>', 'filter by task')
    .option('--from <time>', 'created at or after')
    .option('--to <time>', 'created at or before')
    .option('--limit <n>', 'at most N messages', (v) => intFlag('limit', v), 100)
    .action(async (o: { queue?: string; partition?: string; status?: string; namespace?: string; task?: string; from?: string; to?: string; limit: number }, cmd: Command) => {
      const s = Session.of(cmd);
      const api = s.api();
      const rows: unknown[] = [];
      let cursor: string | undefined;
      while (rows.length < o.limit) {
        const page = await api.call('GET /api/v1/messages', { query: {
          queue: o.queue, partition: o.partition, status: o.status, namespace: o.namespace, task: o.task,
          from: o.from ? parseTimeIso(o.from) : undefined, to: o.to ? parseTimeIso(o.to) : undefined, limit: Math.min(1000, o.limit - rows.length), cursor,
        } });
        rows.push(...(page?.messages ?? []));
        const p = page?.pagination as { nextCursor?: string | null; hasMore?: boolean } | undefined;
        if (!p?.hasMore || !p.nextCursor) break;
        cursor = p.nextCursor;
      }
      s.renderer().render(rows, {
        columns: [{ header: 'TX', path: 'transactionId' }, { header: 'QUEUE' }, { header: 'PARTITION' }, { header: 'STATUS' }, { header: 'RETRIES', path: 'retryCount' }, { header: 'CREATED', path: 'createdAt' }, { header: 'PARTITIONID', path: 'partitionId', wide: true }, { header: 'PRODUCER', path: 'producerSub', wide: true }],
        rows: () => rows,
      });
    });
  messages.command('get <partitionId> <transactionId>').aliases(['describe', 'show']).description('One message').action((p: string, t: string, _o, cmd: Command) => getMessage(cmd, p, t));
  messages.command('delete <partitionId> <transactionId>').alias('rm').description("Delete the message's dead letters")
    .option('--yes', 'confirm')
    .action(async (partitionId: string, transactionId: string, o: { yes?: boolean }, cmd: Command) => {
      if (!o.yes) throw userError('refusing to delete without --yes');
      const s = Session.of(cmd);
      await s.api().call('DELETE /api/v1/messages/:partitionId/:transactionId', { params: { partitionId, transactionId } });
      s.say('deleted');
    });
  messages.command('retry <partitionId> <transactionId>').description("Replay the message's newest dead letter into its queue").action(async (partitionId: string, transactionId: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    s.say(`retry ${partitionId}/${transactionId}: ${await retryMessage(s.api(), partitionId, transactionId)}`);
  });
  messages.command('traces <partitionId> <transactionId>').description('Trace events of a message').action(async (partitionId: string, transactionId: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    s.renderer().render(await s.api().call('GET /api/v1/traces/:partitionId/:transactionId', { params: { partitionId, transactionId } }), traceView);
  });
}
