/**
 * `pop`, `tail`, `ack`, `lease extend` (docs/cli.md#consuming). Both `pop` and `tail` print one
 * JSON object per message (NDJSON, whatever `-o` says) with the reference CLI's fields
 * (queen-mq/queen: clients/client-cli/cmd/pop.go, tail.go): queue, partition, transactionId,
 * partitionId, createdAt, retryCount, data, and leaseId when the message is leased. That output
 * is what `ack --batch -` reads back.
 *
 * `tail` pops in a loop for its consumer group (default `queenctl-tail`); with `--auto-ack` it
 * acknowledges each batch after printing it (the reference's client-side acknowledgement),
 * otherwise the messages stay leased for a later `queenctl ack`. Without `--follow` it stops at
 * the first empty pop or after one batch (`--batch`, 100) unless `--limit` says otherwise; with
 * `--follow` it long-polls until interrupted; `--limit` and `--idle-millis` stop it too.
 */
import type { Command } from 'commander';
import type { PoppedMessage } from '../../http/schemas/types.js';
import type { Api } from '../client.js';
import { emptyResult, serverError, userError } from '../errors.js';
import { invalidJsonLine, openInput, readLines } from '../lines.js';
import { toJson } from '../output.js';
import { durationFlag, intFlag, Session } from '../session.js';
import { parseTimeIso } from '../time.js';

/** The printed shape of a popped message (the reference's field order). */
function messageLine(m: PoppedMessage): string {
  const out: Record<string, unknown> = {
    queue: m.queue, partition: m.partition, transactionId: m.transactionId, partitionId: m.partitionId,
    createdAt: m.createdAt, retryCount: m.retryCount ?? 0, data: m.data,
  };
  if (m.leaseId) out.leaseId = m.leaseId;
  const producerSub = (m as { producerSub?: unknown }).producerSub;
  if (typeof producerSub === 'string' && producerSub) out.producerSub = producerSub;
  return `${toJson(out)}\n`;
}

interface PopQuery {
  queue?: string; partition?: string; group?: string; batch: number; partitions?: number; wait: boolean; timeoutMs: number;
  autoAck?: boolean; namespace?: string; task?: string; mode?: string; since?: string; signal?: AbortSignal;
}

/** One pop call; [] when nothing is available (204). */
async function popOnce(api: Api, q: PopQuery): Promise<PoppedMessage[]> {
  const query = {
    consumerGroup: q.group, batch: q.batch, partitions: q.partitions && q.partitions > 1 ? q.partitions : undefined,
    wait: q.wait, timeout: q.timeoutMs, autoAck: q.autoAck ? true : undefined, namespace: q.namespace, task: q.task,
    subscriptionMode: q.mode, subscriptionFrom: q.since === undefined ? undefined : q.since.toLowerCase() === 'now' ? 'now' : parseTimeIso(q.since),
  };
  const opts = { query, timeoutMs: q.timeoutMs + 10_000, signal: q.signal };
  let res;
  if (!q.queue) res = await api.call('GET /api/v1/pop', opts);
  else if (q.partition) res = await api.call('GET /api/v1/pop/queue/:queue/partition/:partition', { ...opts, params: { queue: q.queue, partition: q.partition } });
  else res = await api.call('GET /api/v1/pop/queue/:queue', { ...opts, params: { queue: q.queue } });
  return res?.messages ?? [];
}

/** Acks messages (completed or failed) in order, in chunks of 1000; returns [ok, failed]. */
async function ackMany(api: Api, msgs: { transactionId: string; partitionId: string; leaseId?: string | null; consumerGroup?: string | null }[], group: string | undefined, failed: boolean, error?: string): Promise<[number, number]> {
  let ok = 0;
  let bad = 0;
  for (let i = 0; i < msgs.length; i += 1000) {
    const acknowledgments = msgs.slice(i, i + 1000).map((m) => ({
      transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId ?? null, status: failed ? 'failed' : 'completed',
      ...(m.consumerGroup ? { consumerGroup: m.consumerGroup } : {}), ...(error ? { error } : {}),
    }));
    const res = await api.call('POST /api/v1/ack/batch', { body: { consumerGroup: group ?? null, acknowledgments } });
    for (const r of res ?? []) if (r.success) ok++; else bad++;
  }
  return [ok, bad];
}

export function registerPop(program: Command): void {
  program.command('pop [queue]').description('Pop messages once and print them as NDJSON (exit 4 when none)')
    .option('--cg <group>', 'consumer group')
    .option('--partition <name>', 'one partition')
    .option('-n, --limit <n>', 'messages to print', (v) => intFlag('limit', v), 1)
    .option('--batch <n>', 'batch asked of the broker (default: --limit)', (v) => intFlag('batch', v))
    .option('--max-partitions <n>', 'partitions claimed by one pop', (v) => intFlag('max-partitions', v), 1)
    .option('--auto-ack', 'the broker acknowledges on delivery')
    .option('--wait', 'long-poll until a message or the timeout (the default)')
    .option('--no-wait', 'do not long-poll')
    .option('--timeout <duration>', 'long-poll timeout', '10s')
    .option('--namespace <ns>', 'pop by namespace')
    .option('--task <task>', 'pop by task')
    .option('--from-mode <mode>', 'subscription mode of a new group: all | new | new-only')
    .option('--since <time>', 'subscription start of a new group: now, RFC 3339, "5m ago"')
    .action(async (queue: string | undefined, o: { cg?: string; partition?: string; limit: number; batch?: number; maxPartitions: number; autoAck?: boolean; wait?: boolean; timeout: string; namespace?: string; task?: string; fromMode?: string; since?: string }, cmd: Command) => {
      if (!queue && !o.namespace && !o.task) throw userError('a queue, --namespace or --task is required');
      const api = Session.of(cmd).api();
      const msgs = await popOnce(api, {
        queue, partition: o.partition, group: o.cg, batch: o.batch || o.limit || 1, partitions: o.maxPartitions, wait: o.wait !== false,
        timeoutMs: durationFlag('timeout', o.timeout), autoAck: o.autoAck, namespace: o.namespace, task: o.task, mode: o.fromMode, since: o.since,
      });
      if (msgs.length === 0) throw emptyResult('no messages');
      for (const m of msgs.slice(0, o.limit > 0 ? o.limit : msgs.length)) process.stdout.write(messageLine(m));
    });
}

interface TailOptions {
  cg?: string; partition?: string; follow?: boolean; limit: number; batch?: number; maxPartitions: number; autoAck?: boolean;
  from?: string; since?: string; idleMillis: number; concurrency?: number; timeout?: string;
}

export function registerTail(program: Command): void {
  program.command('tail <queue>').description('Stream messages as NDJSON (always NDJSON)')
    .option('--cg <group>', 'consumer group', 'queenctl-tail')
    .option('--partition <name>', 'one partition')
    .option('-f, --follow', 'keep long-polling after the queue drains')
    .option('-n, --limit <n>', 'stop after N messages', (v) => intFlag('limit', v), 0)
    .option('--batch <n>', 'messages per pop (default 100, at most --limit)', (v) => intFlag('batch', v))
    .option('--max-partitions <n>', 'partitions claimed per pop', (v) => intFlag('max-partitions', v), 1)
    .option('--auto-ack', 'acknowledge each batch after printing it')
    .option('--from <mode>', 'subscription mode of a new group: all | new | new-only')
    .option('--since <time>', 'subscription start of a new group: now, RFC 3339, "5m ago"')
    .option('--idle-millis <ms>', 'stop after this many ms without a message', (v) => intFlag('idle-millis', v), 0)
    .option('--concurrency <n>', 'accepted for compatibility; messages are printed in order by one loop', (v) => intFlag('concurrency', v))
    .option('--timeout <duration>', 'per-pop long-poll timeout (default 30s, or --idle-millis when smaller)')
    .action(async (queue: string, o: TailOptions, cmd: Command) => {
      const api = Session.of(cmd).api();
      const abort = new AbortController();
      const stop = (): void => abort.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      process.stdout.on('error', stop); // a closed pipe (| head) ends the tail
      const waitMs = o.timeout ? durationFlag('timeout', o.timeout) : o.idleMillis > 0 && o.idleMillis < 30_000 ? o.idleMillis : 30_000;
      const longPoll = o.follow === true || o.idleMillis > 0;
      // Without --follow or --limit, one batch at most, as the reference's tail.
      const limit = o.limit > 0 ? o.limit : o.follow ? 0 : o.batch ?? 100;
      let printed = 0;
      let last = Date.now();
      try {
        while (!abort.signal.aborted) {
          const left = limit > 0 ? limit - printed : Infinity;
          if (left <= 0) break;
          if (o.idleMillis > 0 && Date.now() - last >= o.idleMillis) break;
          let msgs: PoppedMessage[];
          try {
            msgs = await popOnce(api, {
              queue, partition: o.partition, group: o.cg, batch: Math.min(o.batch ?? 100, left), partitions: o.maxPartitions,
              wait: longPoll, timeoutMs: longPoll ? waitMs : 0, mode: o.from, since: o.since, signal: abort.signal,
            });
          } catch (e) {
            if (abort.signal.aborted) break;
            throw e;
          }
          if (msgs.length === 0) {
            if (!longPoll) break;
            continue;
          }
          last = Date.now();
          process.stdout.write(msgs.map(messageLine).join(''));
          printed += msgs.length;
          if (o.autoAck) {
            const [, bad] = await ackMany(api, msgs, o.cg, false);
            if (bad > 0) throw serverError(`tail: ${bad} acknowledgements refused`);
          }
        }
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
      if (printed === 0 && !abort.signal.aborted) throw emptyResult('no messages');
    });
}

/** Reads NDJSON acknowledgement lines (the output of pop/tail) from a file or stdin (`-`). */
async function readAckLines(file: string): Promise<{ transactionId: string; partitionId: string; leaseId?: string; consumerGroup?: string }[]> {
  const { input } = openInput(file);
  const out = [];
  for await (const { line: raw, n } of readLines(input)) {
    const line = raw.trim();
    if (line === '') continue;
    let m: { transactionId?: unknown; partitionId?: unknown; leaseId?: unknown; consumerGroup?: unknown };
    try {
      m = JSON.parse(line) as typeof m;
    } catch (e) {
      throw invalidJsonLine(n, e);
    }
    if (typeof m.transactionId !== 'string' || typeof m.partitionId !== 'string' || !m.transactionId || !m.partitionId) throw userError('each line must include transactionId and partitionId');
    out.push({
      transactionId: m.transactionId, partitionId: m.partitionId,
      ...(typeof m.leaseId === 'string' ? { leaseId: m.leaseId } : {}),
      ...(typeof m.consumerGroup === 'string' ? { consumerGroup: m.consumerGroup } : {}),
    });
  }
  return out;
}

export function registerAck(program: Command): void {
  program.command('ack [transactionId]').description('Acknowledge one message, or many with --batch <file|->')
    .option('--partition-id <id>', 'partition id (from pop/tail output)')
    .option('--lease-id <id>', 'lease id (from pop/tail output)')
    .option('--cg <group>', 'consumer group')
    .option('--error <text>', 'error message (with --failed)')
    .option('--failed', 'mark as failed (retry, then dead letter)')
    .option('--batch <file>', 'NDJSON of {transactionId, partitionId, leaseId} (- for stdin)')
    .action(async (transactionId: string | undefined, o: { partitionId?: string; leaseId?: string; cg?: string; error?: string; failed?: boolean; batch?: string }, cmd: Command) => {
      const s = Session.of(cmd);
      if (o.batch !== undefined) {
        const msgs = await readAckLines(o.batch);
        if (msgs.length === 0) throw emptyResult('no messages to ack');
        const [ok, bad] = await ackMany(s.api(), msgs, o.cg, o.failed === true, o.error);
        s.say(`ok=${ok} failed=${bad}`);
        if (bad > 0) throw serverError(`${bad} acknowledgements refused`);
        return;
      }
      if (!transactionId) throw userError('transactionId required (or use --batch)');
      if (!o.partitionId) throw userError('--partition-id is required');
      const res = await s.api().call('POST /api/v1/ack', { body: { transactionId, partitionId: o.partitionId, leaseId: o.leaseId ?? null, status: o.failed ? 'failed' : 'completed', consumerGroup: o.cg ?? null, error: o.error ?? null } });
      const r = res?.[0];
      if (r?.success) s.say('ack ok');
      else {
        s.say(`ack failed: ${r?.error ?? 'unknown'}`);
        throw serverError(`ack refused: ${r?.error ?? 'unknown'}`);
      }
    });
}

export function registerLease(program: Command): void {
  const lease = program.command('lease').description('Lease operations');
  lease.command('extend <leaseId>').description('Extend a live lease')
    .option('--seconds <n>', 'new lease length from now, s', (v) => intFlag('seconds', v), 60)
    .action(async (leaseId: string, o: { seconds: number }, cmd: Command) => {
      const s = Session.of(cmd);
      const res = await s.api().call('POST /api/v1/lease/:leaseId/extend', { params: { leaseId }, body: { seconds: o.seconds } });
      if (!res?.success) throw serverError(`lease ${leaseId}: not renewed (expired or unknown)`);
      if (s.formatChosen) s.renderer().render(res);
      else s.say(`renewed ${leaseId} -> ${res.newExpiresAt ?? res.expiresAt ?? '-'}`);
    });
}
