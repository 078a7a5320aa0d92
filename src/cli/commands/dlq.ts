/**
 * Dead letters: `dlq list|describe|retry|drain` (docs/cli.md#resources). Flags, columns and the
 * `processed=N errors=N` line follow the reference CLI (queen-mq/queen:
 * clients/client-cli/cmd/dlq.go); `dlq retry` (alias `requeue`), which the reference lists but
 * does not implement, replays each dead letter with `POST /api/v1/dlq/:id/replay`
 * (docs/http-api.md#dead-letters). An empty result exits 4.
 */
import type { Command } from 'commander';
import type { Api } from '../client.js';
import { emptyResult, userError } from '../errors.js';
import { intFlag, Session } from '../session.js';
import { parseTimeIso } from '../time.js';
import { getMessage } from './admin.js';

interface DlqOptions { queue?: string; cg?: string; partition?: string; from?: string; to?: string; limit: number; offset: number; dryRun?: boolean; yes?: boolean }

interface DeadLetter { id?: string; transactionId?: string; partitionId?: string; partition?: string }

/** Every dead letter matching the filters (`--partition` is applied here: the route has no such filter). */
async function* deadLetters(api: Api, o: DlqOptions, pageSize: number): AsyncGenerator<DeadLetter[]> {
  for (let offset = o.offset; ; offset += pageSize) {
    const page = await api.call('GET /api/v1/dlq', { query: { queue: o.queue, consumerGroup: o.cg, from: o.from ? parseTimeIso(o.from) : undefined, to: o.to ? parseTimeIso(o.to) : undefined, limit: pageSize, offset } });
    const rows = (page?.messages ?? []) as DeadLetter[];
    yield rows.filter((r) => !o.partition || r.partition === o.partition);
    if (rows.length < pageSize) return;
  }
}

function dlqFilters(c: Command): Command {
  return c.option('--queue <queue>', 'filter by queue')
    .option('--cg <group>', 'filter by consumer group')
    .option('--partition <name>', 'filter by partition')
    .option('--from <time>', 'failed at or after')
    .option('--to <time>', 'failed at or before')
    .option('--limit <n>', 'page size', (v) => intFlag('limit', v), 0)
    .option('--offset <n>', 'page offset', (v) => intFlag('offset', v), 0);
}

/**
 * Registers `dlq list|describe|retry|drain`. `retry` and `drain` print `retried=N errors=N` /
 * `processed=N errors=N`; with `--dry-run` one `[dry-run] …` line per dead letter and
 * `would retry|delete N dead letters (dry run, nothing sent)`. With `-o json|ndjson|yaml|jsonpath`
 * the summary is an object (`{retried, errors}`, `{dryRun: true, wouldRetry|wouldDelete, items}`)
 * and the per-item lines go to stderr.
 */
export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description('Dead letters: list, retry, drain');
  dlqFilters(dlq.command('list').alias('ls').description('Dead letters, newest failure first')).action(async (o: DlqOptions, cmd: Command) => {
    const s = Session.of(cmd);
    const api = s.api();
    const page = await api.call('GET /api/v1/dlq', { query: { queue: o.queue, consumerGroup: o.cg, from: o.from ? parseTimeIso(o.from) : undefined, to: o.to ? parseTimeIso(o.to) : undefined, limit: o.limit || 100, offset: o.offset } });
    const rows = ((page?.messages ?? []) as DeadLetter[]).filter((r) => !o.partition || r.partition === o.partition);
    s.renderer().render({ ...page, messages: rows }, {
      columns: [{ header: 'TX', path: 'transactionId' }, { header: 'QUEUE' }, { header: 'PARTITION' }, { header: 'CG', path: 'consumerGroup' }, { header: 'RETRIES', path: 'retryCount' }, { header: 'ERROR', path: 'errorMessage' }, { header: 'FAILED-AT', path: 'failedAt', wide: true }, { header: 'PARTITIONID', path: 'partitionId', wide: true }, { header: 'ID', path: 'id', wide: true }],
      rows: (d) => (d as { messages: unknown[] }).messages,
    });
    if (rows.length === 0) throw emptyResult('no DLQ messages');
  });
  dlq.command('describe <partitionId> <transactionId>').alias('get').description('One dead-lettered message').action((p: string, t: string, _o, cmd: Command) => getMessage(cmd, p, t));
  for (const [verb, what, act, would] of [['retry', 'Replay matching dead letters into their queues (alias requeue)', 'retried', 'retry'], ['drain', 'Delete matching dead letters', 'processed', 'delete']] as const) {
    const c = dlqFilters(dlq.command(verb).description(what)).option('--dry-run', 'print what would happen, send nothing').option('--yes', 'confirm');
    if (verb === 'retry') c.alias('requeue');
    c.action(async (o: DlqOptions, cmd: Command) => {
      if (!o.yes && !o.dryRun) throw userError(`refusing to ${verb} without --yes (use --dry-run for a preview)`);
      const s = Session.of(cmd);
      const api = s.api();
      // With -o json|yaml|… stdout carries one document; the per-item lines go to stderr.
      const line = (text: string): void => { (s.structured ? process.stderr : process.stdout).write(`${text}\n`); };
      const all: DeadLetter[] = [];
      for await (const rows of deadLetters(api, o, o.limit || 500)) all.push(...rows); // list first: each retry/delete shifts the pages
      const usable = all.filter((r) => r.partitionId && r.transactionId && r.id);
      if (o.dryRun) {
        for (const r of usable) line(`[dry-run] ${would} ${r.partitionId} ${r.transactionId}`);
        const n = usable.length;
        if (s.structured) {
          const items = usable.map((r) => ({ id: r.id, partitionId: r.partitionId, transactionId: r.transactionId }));
          s.renderer().render({ dryRun: true, [verb === 'retry' ? 'wouldRetry' : 'wouldDelete']: n, items });
        } else s.say(`would ${would} ${n} dead letter${n === 1 ? '' : 's'} (dry run, nothing sent)`);
        if (n === 0) throw emptyResult('no DLQ messages matched');
        return;
      }
      let processed = 0;
      let errors = 0;
      const seen = new Set<string>();
      for (const r of usable) {
        try {
          if (verb === 'retry') await api.call('POST /api/v1/dlq/:id/replay', { params: { id: r.id! }, body: {} });
          else {
            const key = `${r.partitionId}/${r.transactionId}`;
            if (!seen.has(key)) await api.call('DELETE /api/v1/messages/:partitionId/:transactionId', { params: { partitionId: r.partitionId!, transactionId: r.transactionId! } });
            seen.add(key);
          }
          processed++;
        } catch (e) {
          errors++;
          line(`error: ${r.partitionId}/${r.transactionId}: ${(e as Error).message}`);
        }
      }
      if (s.structured) s.renderer().render({ [act]: processed, errors });
      else s.say(`${act}=${processed} errors=${errors}`);
      if (processed === 0 && errors === 0) throw emptyResult('no DLQ messages matched');
    });
  }
}
