/**
 * `queenctl apply -f <file>`: declarative queues and consumer groups from YAML (docs/cli.md#apply).
 * Documents (separated by `---`) have the reference CLI's shape (queen-mq/queen:
 * clients/client-cli/cmd/apply.go): `kind: Queue` (default) with `name`, `namespace`, `task`,
 * `config` (queue options, docs/http-api.md#queue-options); `kind: ConsumerGroup` with `name`,
 * `queue`, `seek-to`.
 *
 * Idempotent: a Queue is configured only when it is missing or one of the listed options,
 * namespace or task differs from the broker's; a ConsumerGroup is positioned (`seek-to`) only
 * when the group has no position on that queue yet. A run that changes nothing exits 4.
 * `--dry-run` prints what would change (`+` create, `~ option: old -> new`) and sends nothing.
 */
import type { Command } from 'commander';
import YAML from 'yaml';
import type { Api } from '../client.js';
import { emptyResult, userError } from '../errors.js';
import { toJson } from '../output.js';
import { Session } from '../session.js';
import { readInput } from './tx.js';
import { seekBody } from './groups.js';

interface Doc {
  kind?: string;
  name?: string;
  namespace?: string;
  task?: string;
  config?: Record<string, unknown>;
  queue?: string;
  'seek-to'?: string;
}

/** Parses every document of the stream. @throws CliError exit 1 */
function documents(text: string): Doc[] {
  const docs = YAML.parseAllDocuments(text);
  const out: Doc[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw userError(`parse: ${d.errors[0]!.message}`);
    const v = d.toJS() as unknown;
    if (v === null || v === undefined) continue;
    if (typeof v !== 'object' || Array.isArray(v)) throw userError('parse: each document must be a mapping');
    const doc = v as Doc;
    if (!doc.name) continue;
    doc.kind ??= 'Queue';
    if (doc.config !== undefined && (doc.config === null || typeof doc.config !== 'object' || Array.isArray(doc.config))) throw userError(`${doc.kind} "${doc.name}": config must be a mapping`);
    out.push(doc);
  }
  return out;
}

const same = (a: unknown, b: unknown): boolean => toJson(a) === toJson(b);

/** The differences between a Queue document and the broker's queue: ['+ create'] or ['~ k: a -> b', …]. */
async function queueDiff(api: Api, doc: Doc): Promise<string[]> {
  const cur = await api.call('GET /api/v1/resources/queues/:queue', { params: { queue: doc.name! }, missingOk: true });
  if (!cur) return [`+ queue ${doc.name}`];
  const diff: string[] = [];
  const opts = (cur.options ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(doc.config ?? {})) if (!same(opts[k], v)) diff.push(`~ ${k}: ${toJson(opts[k] ?? null)} -> ${toJson(v)}`);
  for (const k of ['namespace', 'task'] as const) {
    if (doc[k] !== undefined && (cur as Record<string, unknown>)[k] !== doc[k]) diff.push(`~ ${k}: ${toJson((cur as Record<string, unknown>)[k] ?? null)} -> ${toJson(doc[k])}`);
  }
  return diff;
}

/** Whether the group already has a position on the queue. */
async function groupOnQueue(api: Api, group: string, queue: string): Promise<boolean> {
  const rows = await api.call('GET /api/v1/consumer-groups');
  return (rows ?? []).some((r) => r.name === group && r.queueName === queue);
}

export function registerApply(program: Command): void {
  program.command('apply').description('Apply queue and consumer-group manifests (YAML); exit 4 when nothing changes')
    .option('-f, --file <path>', 'manifest (- for stdin)')
    .option('--dry-run', 'print the changes, apply nothing')
    .action(async (o: { file?: string; dryRun?: boolean }, cmd: Command) => {
      if (!o.file) throw userError('--file is required');
      const docs = documents(await readInput(o.file));
      for (const d of docs) {
        if (d.kind !== 'Queue' && d.kind !== 'ConsumerGroup') throw userError(`unsupported kind "${d.kind}" (Queue or ConsumerGroup)`);
        if (d.kind === 'ConsumerGroup' && !d.queue) throw userError(`ConsumerGroup "${d.name}": 'queue' field is required`);
      }
      const s = Session.of(cmd);
      const api = s.api();
      let applied = 0;
      for (const d of docs) {
        const label = `${d.kind} "${d.name}"`;
        if (d.kind === 'Queue') {
          const diff = await queueDiff(api, d);
          if (diff.length === 0) {
            s.say(`unchanged ${label}`);
            continue;
          }
          applied++;
          if (o.dryRun) {
            s.say(`[dry-run] would apply ${label}`);
            for (const line of diff) s.say(`  ${line}`);
            continue;
          }
          await api.call('POST /api/v1/configure', { body: { queue: d.name, ...(d.namespace ? { namespace: d.namespace } : {}), ...(d.task ? { task: d.task } : {}), options: d.config ?? {} } });
          s.say(`applied ${label}`);
          continue;
        }
        if (!d['seek-to']) {
          s.say(`[skip] ${label} has nothing to apply (no seek-to)`);
          continue;
        }
        const body = seekBody(d['seek-to']);
        if (await groupOnQueue(api, d.name!, d.queue!)) {
          s.say(`unchanged ${label}`);
          continue;
        }
        applied++;
        if (o.dryRun) {
          s.say(`[dry-run] would apply ${label}`);
          s.say(`  + seek ${d.queue} to ${d['seek-to']}`);
          continue;
        }
        await api.call('POST /api/v1/consumer-groups/:group/queues/:queue/seek', { params: { group: d.name!, queue: d.queue! }, body });
        s.say(`applied ${label}`);
      }
      if (applied === 0) throw emptyResult('no changes');
    });
}
