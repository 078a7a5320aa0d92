/**
 * `queenctl push <queue>`: NDJSON (stdin, `--file`, or one `--data` value) into a queue
 * (docs/cli.md#push). Flags, the summary line `queued=N duplicate=N failed=N` and exit 4 when the
 * input holds no message are the reference CLI's (queen-mq/queen: clients/client-cli/cmd/push.go).
 *
 * With `--dry-run` every line is read and checked and nothing is sent; the summary says so.
 *
 * Lines are batched into `--batch` items per `POST /api/v1/push`, with up to `--concurrency`
 * requests in flight on different partitions (one partition's messages keep their input order).
 * Each line is checked with `JSON.parse` and its text is sent as is, so a payload's numbers reach
 * the broker digit for digit. A progress bar (cli-progress) shows on stderr when it is a terminal
 * and the input is a file.
 */
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import type { Api } from '../client.js';
import { emptyResult, serverError, userError } from '../errors.js';
import { toJson } from '../output.js';
import { invalidJsonLine, openInput, readLines } from '../lines.js';
import { intFlag, Session } from '../session.js';
import { parseClientJson } from '../../util/json.js';

interface PushOptions {
  partition?: string;
  partitionKey?: string;
  batch: number;
  concurrency: number;
  data?: string;
  file?: string;
  traceId?: string;
  transactionId?: string;
  wrapped?: boolean;
  dryRun?: boolean;
}

/** Most requests `push` keeps in flight (`--concurrency`); each is one lane object and one socket. */
export const MAX_CONCURRENCY = 256;

/** Totals of a push run, by item status. */
export interface PushTotals { queued: number; duplicate: number; failed: number }

/** The value at a dotted path of a payload, as a partition name ('' when absent or not a scalar). */
function partitionFrom(payload: unknown, path: string): string {
  let cur = payload;
  for (const k of path.split('.')) cur = cur !== null && typeof cur === 'object' && !Array.isArray(cur) ? (cur as Record<string, unknown>)[k] : undefined;
  return typeof cur === 'string' || typeof cur === 'number' || typeof cur === 'boolean' ? String(cur) : '';
}

/** One item's JSON text for the push body (the payload spliced in as its source text) and its partition. */
function itemText(queue: string, line: string, n: number, o: PushOptions, firstTx: { done: boolean }): { text: string; partition: string } {
  let payloadText = line;
  let partition = o.partition ?? '';
  let transactionId = '';
  let traceId = o.traceId ?? '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (e) {
    throw invalidJsonLine(n, e);
  }
  if (o.wrapped) {
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw userError('--wrapped: each line must be an object {transactionId?, traceId?, partition?, data}');
    const w = parseClientJson(line) as { data?: unknown; partition?: unknown; transactionId?: unknown; traceId?: unknown };
    payloadText = toJson(w.data ?? null);
    parsed = (parsed as { data?: unknown }).data;
    if (typeof w.partition === 'string' && w.partition) partition = w.partition;
    if (typeof w.transactionId === 'string' && w.transactionId) transactionId = w.transactionId;
    if (typeof w.traceId === 'string' && w.traceId) traceId = w.traceId;
  }
  if (o.partitionKey) partition = partitionFrom(parsed, o.partitionKey) || partition;
  if (o.transactionId && !o.wrapped && !firstTx.done) {
    transactionId = o.transactionId;
    firstTx.done = true;
  }
  let t = `{"queue":${JSON.stringify(queue)}`;
  if (partition) t += `,"partition":${JSON.stringify(partition)}`;
  if (transactionId) t += `,"transactionId":${JSON.stringify(transactionId)}`;
  if (traceId) t += `,"traceId":${JSON.stringify(traceId)}`;
  return { text: `${t},"payload":${payloadText}}`, partition };
}

/** Sends one batch and adds its outcomes to `totals`. */
async function sendBatch(api: Api, items: string[], totals: PushTotals): Promise<void> {
  const res = await api.call('POST /api/v1/push', { rawBody: `{"items":[${items.join(',')}]}`, timeoutMs: 120_000 });
  if (!Array.isArray(res)) throw serverError('push: unexpected answer (not an array)');
  for (const r of res) {
    if (r.status === 'queued' || r.status === 'buffered') totals.queued++;
    else if (r.status === 'duplicate') totals.duplicate++;
    else totals.failed++;
  }
}

/**
 * Pushes every NDJSON line of `input` to `queue`. Lines go to `o.concurrency` lanes by partition;
 * each lane sends its batches one after the other, so the messages of one partition are stored in
 * input order while different partitions travel in parallel.
 * @throws CliError exit 1 on a bad or over-long line (src/cli/lines.ts), exit 2/3 when the broker refuses a batch
 */
export async function pushLines(api: Api | undefined, queue: string, input: NodeJS.ReadableStream, o: PushOptions, onProgress?: (bytes: number) => void): Promise<PushTotals> {
  const totals: PushTotals = { queued: 0, duplicate: 0, failed: 0 };
  const firstTx = { done: false };
  let failure: Error | undefined;
  // Each lane sends its batches one after the other (partition order); reading pauses only when
  // 2 × concurrency batches are waiting or in flight, so every lane with work keeps a request going.
  const lanes = Array.from({ length: o.concurrency }, () => ({ items: [] as string[], tail: Promise.resolve() }));
  // A partition keeps the lane it was first given; new partitions are dealt round-robin, so 16
  // partitions over 8 lanes are 2 per lane (a hash would leave some lanes with 3 and others 1).
  const laneOfPartition = new Map<string, number>();
  let queuedBatches = 0;
  let wake: (() => void) | undefined;
  const flush = async (lane: (typeof lanes)[number]): Promise<void> => {
    if (lane.items.length === 0) return;
    const items = lane.items;
    lane.items = [];
    if (!api) {
      totals.queued += items.length; // --dry-run
      return;
    }
    queuedBatches++;
    lane.tail = lane.tail
      .then(() => (failure ? undefined : sendBatch(api, items, totals)))
      .catch((e: unknown) => { failure ??= e instanceof Error ? e : new Error(String(e)); })
      .finally(() => {
        queuedBatches--;
        wake?.();
      });
    while (queuedBatches >= 2 * o.concurrency && !failure) await new Promise<void>((r) => (wake = r));
    if (failure) throw failure;
  };
  for await (const { line: raw, n, bytes } of readLines(input)) {
    onProgress?.(bytes);
    const line = raw.trim();
    if (line === '') continue;
    const item = itemText(queue, line, n, o, firstTx);
    let k = laneOfPartition.get(item.partition);
    if (k === undefined) laneOfPartition.set(item.partition, (k = laneOfPartition.size % o.concurrency));
    const lane = lanes[k]!;
    lane.items.push(item.text);
    if (lane.items.length >= o.batch) await flush(lane);
  }
  for (const lane of lanes) await flush(lane);
  for (const lane of lanes) await lane.tail;
  if (failure) throw failure;
  return totals;
}

/**
 * Registers `push <queue>`. It prints `queued=N duplicate=N failed=N`, or with `--dry-run`
 * `would push N messages (dry run, nothing sent)`; with `-o json|ndjson|yaml|jsonpath` the same
 * summary as an object (`{queued, duplicate, failed}`, `{dryRun: true, wouldPush}`). Exit 4 when
 * the input holds no message.
 */
export function registerPush(program: Command): void {
  program.command('push <queue>').description('Push NDJSON messages (stdin, --file or --data)')
    .option('--partition <name>', 'partition for every message')
    .option('--partition-key <path>', 'dotted path inside each payload whose value names the partition')
    .option('--batch <n>', 'messages per request', (v) => intFlag('batch', v), 100)
    .option('--concurrency <n>', 'requests in flight (on different partitions)', (v) => intFlag('concurrency', v), 4)
    .option('--data <json>', 'one inline JSON payload (stdin is not read)')
    .option('-f, --file <path>', 'read NDJSON from a file instead of stdin (- for stdin)')
    .option('--trace-id <id>', 'trace id attached to every message')
    .option('--transaction-id <id>', 'transactionId of the first message')
    .option('--wrapped', 'lines are items {transactionId?, traceId?, partition?, data}')
    .option('--dry-run', 'read and check the input, send nothing')
    .action(async (queue: string, o: PushOptions, cmd: Command) => {
      const s = Session.of(cmd);
      if (o.batch < 1) throw userError('--batch must be at least 1');
      if (o.concurrency < 1 || o.concurrency > MAX_CONCURRENCY) throw userError(`--concurrency must be between 1 and ${MAX_CONCURRENCY}`);
      const api = o.dryRun ? undefined : s.api();
      let input: NodeJS.ReadableStream;
      let bar: SingleBar | undefined;
      if (o.data !== undefined) {
        const { Readable } = await import('node:stream');
        input = Readable.from([`${o.data}\n`]);
      } else if (o.file) {
        const opened = openInput(o.file);
        input = opened.input;
        const size = opened.size ?? 0;
        if (process.stderr.isTTY && !s.g.quiet && size > 1 << 20) {
          bar = new SingleBar({ stream: process.stderr, format: 'push [{bar}] {percentage}% {value}/{total} bytes' }, Presets.shades_classic);
          bar.start(size, 0);
        }
      } else input = process.stdin;
      let done = 0;
      let totals: PushTotals;
      try {
        totals = await pushLines(api, queue, input, o, bar ? (n) => bar.update((done += n)) : undefined);
      } finally {
        bar?.stop();
      }
      if (o.dryRun) {
        // pushLines counted every checked message as queued: none was sent.
        if (s.structured) s.renderer().render({ dryRun: true, wouldPush: totals.queued });
        else s.say(`would push ${totals.queued} message${totals.queued === 1 ? '' : 's'} (dry run, nothing sent)`);
      } else if (s.structured) s.renderer().render(totals);
      else s.say(`queued=${totals.queued} duplicate=${totals.duplicate} failed=${totals.failed}`);
      if (totals.queued === 0 && totals.duplicate === 0 && totals.failed === 0) throw emptyResult('nothing pushed');
    });
}
