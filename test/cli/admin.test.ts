/**
 * queenctl end to end, admin plane (docs/cli.md#resources, docs/cli.md#apply,
 * docs/cli.md#transactions): DLQ list/retry/drain, `tx -f`, `apply -f` (twice: the second run is
 * a no-op with exit 4), queue verbs, and every output format. Mirrors the reference CLI's tests
 * (queen-mq/queen: clients/client-cli/tests/dlq_test.go, transaction_test.go, queue_test.go,
 * maintenance_test.go).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import { startBroker, tempDir, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { CLI, Cli, ndjson } from './run.js';

interface Line { transactionId: string; partitionId: string; leaseId: string; data: unknown }

let broker: BrokerHandle;
let cli: Cli;
before(async () => {
  broker = await startBroker();
  cli = new Cli(broker.url);
});
after(async () => { await broker.stop(); });

/** Pops the messages of `q` (queue mode) one by one and acks each as failed: with retryLimit 0 each is dead-lettered. */
async function deadLetterAll(q: string): Promise<Line[]> {
  const lines: Line[] = [];
  for (;;) {
    const r = await cli.run(['pop', q, '--no-wait']);
    if (r.code === 4) return lines;
    const [m] = ndjson<Line>(r.stdout);
    lines.push(m!);
    assert.equal((await cli.ok(['ack', m!.transactionId, '--partition-id', m!.partitionId, '--lease-id', m!.leaseId, '--failed', '--error', 'boom'])).trim(), 'ack ok');
  }
}

describe('dead letters', () => {
  test('dlq list, retry (back into the queue), drain; empty list exits 4', async () => {
    const q = uniqueName('cli-dlq');
    await cli.ok(['queue', 'configure', q, '--retry-limit', '0']);
    await cli.ok(['push', q], { input: '{"d":1}\n{"d":2}\n' });
    assert.equal((await cli.run(['dlq', 'list', '--queue', q])).code, 4);
    assert.equal((await deadLetterAll(q)).length, 2);

    const listed = JSON.parse(await cli.ok(['dlq', 'list', '--queue', q, '-o', 'json'])) as { queue: string; errorMessage: string; data: unknown }[];
    assert.deepEqual(listed.map((r) => [r.queue, r.errorMessage]), [[q, 'boom'], [q, 'boom']]);
    const table = await cli.ok(['dlq', 'list', '--queue', q, '-o', 'table']);
    assert.match(table.split('\n')[0]!, /^TX\s+QUEUE\s+PARTITION\s+CG\s+RETRIES\s+ERROR$/);

    assert.equal((await cli.run(['dlq', 'retry', '--queue', q])).code, 1, 'retry needs --yes');
    assert.match(await cli.ok(['dlq', 'retry', '--queue', q, '--dry-run']), /^\[dry-run\] retry /);
    assert.equal((await cli.ok(['dlq', 'retry', '--queue', q, '--yes'])).trim(), 'retried=2 errors=0');
    assert.equal((await cli.run(['dlq', 'list', '--queue', q])).code, 4);
    const back = await deadLetterAll(q);
    assert.deepEqual(back.map((l) => l.data).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))), [{ d: 1 }, { d: 2 }]);

    // messages retry / delete address one message's dead letters.
    const [first] = JSON.parse(await cli.ok(['dlq', 'list', '--queue', q, '-o', 'json', '--limit', '1'])) as Line[];
    assert.equal((await cli.run(['messages', 'delete', first!.partitionId, first!.transactionId])).code, 1, 'needs --yes');
    assert.match(await cli.ok(['messages', 'retry', first!.partitionId, first!.transactionId]), /^retry .*: moved\n$/);
    assert.equal((await deadLetterAll(q)).length, 1);
    assert.equal(JSON.parse(await cli.ok(['dlq', 'list', '--queue', q, '-o', 'json'])).length, 2);

    assert.equal((await cli.ok(['dlq', 'drain', '--queue', q, '--dry-run'])).split('\n').filter((l) => l.startsWith('[dry-run] delete ')).length, 2);
    assert.equal(JSON.parse(await cli.ok(['dlq', 'list', '--queue', q, '-o', 'json'])).length, 2, 'a dry run deletes nothing');
    assert.equal((await cli.ok(['dlq', 'drain', '--queue', q, '--yes'])).trim(), 'processed=2 errors=0');
    assert.equal((await cli.run(['dlq', 'list', '--queue', q])).code, 4);
    assert.equal((await cli.run(['dlq', 'drain', '--queue', q, '--yes'])).code, 4);
  });
});

describe('dead letters, dry runs', () => {
  test('dlq retry and drain --dry-run say they sent nothing (text, and dryRun: true in JSON) and leave the dead letters', async () => {
    const q = uniqueName('cli-dlqdry');
    await cli.ok(['queue', 'configure', q, '--retry-limit', '0']);
    await cli.ok(['push', q], { input: '{"d":1}\n' });
    const [dead] = await deadLetterAll(q);
    const [row] = JSON.parse(await cli.ok(['dlq', 'list', '--queue', q, '-o', 'json'])) as { id: string; partitionId: string; transactionId: string }[];
    assert.equal(row!.transactionId, dead!.transactionId);

    assert.equal(await cli.ok(['dlq', 'retry', '--queue', q, '--dry-run']), `[dry-run] retry ${row!.partitionId} ${row!.transactionId}\nwould retry 1 dead letter (dry run, nothing sent)\n`);
    assert.equal(await cli.ok(['dlq', 'drain', '--queue', q, '--dry-run']), `[dry-run] delete ${row!.partitionId} ${row!.transactionId}\nwould delete 1 dead letter (dry run, nothing sent)\n`);
    const items = [{ id: row!.id, partitionId: row!.partitionId, transactionId: row!.transactionId }];
    assert.deepEqual(JSON.parse(await cli.ok(['dlq', 'retry', '--queue', q, '--dry-run', '-o', 'json'])), { dryRun: true, wouldRetry: 1, items });
    assert.deepEqual(JSON.parse(await cli.ok(['dlq', 'drain', '--queue', q, '--dry-run', '-o', 'json'])), { dryRun: true, wouldDelete: 1, items });
    assert.equal((JSON.parse(await cli.ok(['dlq', 'list', '--queue', q, '-o', 'json'])) as unknown[]).length, 1, 'the dry runs changed nothing');
    assert.equal((await cli.run(['pop', q, '--no-wait'])).code, 4, 'nothing was replayed');

    assert.deepEqual(JSON.parse(await cli.ok(['dlq', 'retry', '--queue', q, '--yes', '-o', 'json'])), { retried: 1, errors: 0 });
    assert.equal((await deadLetterAll(q)).length, 1, 'the real retry replayed it');
  });
});

describe('tx -f', () => {
  test('an ack and a push commit together; the same bundle again is refused (exit 2)', async () => {
    const q = uniqueName('cli-tx');
    const out = uniqueName('cli-txout');
    await cli.ok(['push', q, '--data', '{"n":7}']);
    const [m] = ndjson<Line>(await cli.ok(['pop', q]));
    const file = path.join(tempDir(), 'bundle.yaml');
    fs.writeFileSync(file, YAML.stringify({
      operations: [
        { type: 'ack', transactionId: m!.transactionId, partitionId: m!.partitionId, status: 'completed' },
        { type: 'push', items: [{ queue: out, payload: { from: 7 } }] },
      ],
      requiredLeases: [m!.leaseId],
    }));
    assert.equal((await cli.ok(['tx', '--file', file, '--dry-run'])).trim(), '[dry-run] 2 operations, 1 required leases');
    assert.equal((await cli.ok(['tx', '-f', file])).trim(), 'transaction committed');
    assert.deepEqual(ndjson<Line>(await cli.ok(['pop', out, '--auto-ack'])).map((l) => l.data), [{ from: 7 }]);
    assert.equal((await cli.run(['pop', q, '--no-wait'])).code, 4, 'the ack committed');
    const again = await cli.run(['tx', '-f', file]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /^queenctl: transaction failed: /);
    assert.equal((await cli.run(['pop', out, '--no-wait'])).code, 4, 'nothing pushed by the refused transaction');
    assert.equal((await cli.run(['tx', '-f', '-'], { input: '{"operations":[]}' })).code, 1);
  });
});

describe('apply -f', () => {
  test('creates queues and positions groups; the second run changes nothing and exits 4; --dry-run shows a diff', async () => {
    const q = uniqueName('cli-apply');
    const dir = tempDir();
    const file = path.join(dir, 'queues.yaml');
    const manifest = (lease: number): string => `kind: Queue\nname: ${q}\nconfig:\n  leaseTime: ${lease}\n  retryLimit: 5\n---\nkind: ConsumerGroup\nname: analytics\nqueue: ${q}\nseek-to: beginning\n`;
    fs.writeFileSync(file, manifest(60));
    assert.equal(await cli.ok(['apply', '-f', file, '--dry-run']), `[dry-run] would apply Queue "${q}"\n  + queue ${q}\n[dry-run] would apply ConsumerGroup "analytics"\n  + seek ${q} to beginning\n`);
    assert.equal((await cli.run(['queue', 'describe', q])).code, 2, 'a dry run creates nothing');

    assert.equal(await cli.ok(['apply', '-f', file]), `applied Queue "${q}"\napplied ConsumerGroup "analytics"\n`);
    const second = await cli.run(['apply', '-f', file]);
    assert.equal(second.code, 4);
    assert.equal(second.stdout, `unchanged Queue "${q}"\nunchanged ConsumerGroup "analytics"\n`);
    assert.equal(second.stderr, '');

    fs.writeFileSync(file, manifest(90));
    assert.equal(await cli.ok(['apply', '-f', file, '--dry-run']), `[dry-run] would apply Queue "${q}"\n  ~ leaseTime: 60 -> 90\nunchanged ConsumerGroup "analytics"\n`);
    assert.equal(await cli.ok(['queue', 'describe', q, '-o', 'jsonpath=.options.leaseTime']), '60\n');
    await cli.ok(['apply', '-f', '-'], { input: manifest(90) });
    assert.equal(await cli.ok(['queue', 'describe', q, '-o', 'jsonpath=.options.leaseTime']), '90\n');
    assert.equal(await cli.ok(['queue', 'describe', q, '-o', 'jsonpath=.options.retryLimit']), '5\n');

    assert.equal((await cli.run(['apply', '-f', '-'], { input: 'kind: Topic\nname: x\n' })).code, 1);
  });
});

describe('queues and output formats', () => {
  test('queue configure/list/describe/delete in every output format', async () => {
    const q = uniqueName('cli-fmt');
    assert.equal((await cli.ok(['queue', 'configure', q, '--lease-time', '45', '--priority', '3'])).trim(), `configured "${q}"`);
    await cli.ok(['push', q], { input: '{"x":1}\n{"x":2}\n' });

    // Default in a pipe is JSON: the broker's rows.
    const rows = JSON.parse(await cli.ok(['queue', 'list'])) as { name: string; options: { leaseTime: number } }[];
    assert.equal(rows.find((r) => r.name === q)?.options.leaseTime, 45);
    const asNd = ndjson<{ name: string }>(await cli.ok(['queue', 'list', '-o', 'ndjson']));
    assert.deepEqual(asNd.map((r) => r.name), rows.map((r) => r.name));
    const asYaml = YAML.parse(await cli.ok(['queue', 'list', '-o', 'yaml'])) as { name: string }[];
    assert.deepEqual(asYaml.map((r) => r.name), rows.map((r) => r.name));

    const table = (await cli.ok(['queue', 'list', '-o', 'table'])).split('\n');
    assert.match(table[0]!, /^NAME\s+NAMESPACE\s+TASK\s+PARTITIONS\s+PRIORITY\s+LEASE\s+PENDING$/);
    assert.match(table.find((l) => l.startsWith(q))!, new RegExp(`^${q}\\s+\\S+\\s+-\\s+1\\s+3\\s+45\\s+2$`));
    const wide = (await cli.ok(['queue', 'list', '-o', 'wide'])).split('\n');
    assert.match(wide[0]!, /\sRETRY\s+MAXSIZE\s+ENCRYPTED$/);
    const bare = (await cli.ok(['queue', 'list', '-o', 'table', '--no-headers'])).split('\n');
    assert.ok(!bare[0]!.startsWith('NAME'));

    assert.equal(await cli.ok(['queue', 'describe', q, '-o', 'jsonpath=.totals.pending']), '2\n');
    assert.equal(await cli.ok(['queue', 'list', '-o', `jsonpath={[0].name}`]), `${rows[0]!.name}\n`);
    const described = YAML.parse(await cli.ok(['queue', 'describe', q, '-o', 'table'])) as { name: string };
    assert.equal(described.name, q, 'a document without a table prints as YAML');

    assert.equal((await cli.run(['queue', 'delete', q])).code, 1);
    assert.equal((await cli.ok(['queue', 'delete', q, '--yes'])).trim(), `deleted "${q}"`);
    assert.equal((await cli.run(['queue', 'describe', q])).code, 2, 'a missing queue is a server answer (exit 2, as queenctl)');
  });

  test('status, lag, namespace/task, partition list, messages list, traces, metrics, maintenance, analytics answer', async () => {
    const q = uniqueName('cli-ops');
    await cli.ok(['push', q, '--partition', 'p1'], { input: '{"o":1}\n' });
    assert.ok((JSON.parse(await cli.ok(['status'])) as { queue: string }[]).some((r) => r.queue === q));
    assert.equal((JSON.parse(await cli.ok(['status', q])) as { pending: number }[])[0]!.pending, 1);
    assert.ok(Array.isArray(JSON.parse(await cli.ok(['lag']))));
    assert.ok(Array.isArray(JSON.parse(await cli.ok(['namespace', 'list']))));
    assert.ok(Array.isArray(JSON.parse(await cli.ok(['task', 'list']))));
    assert.deepEqual((JSON.parse(await cli.ok(['partition', 'list', q])) as { name: string }[]).map((p) => p.name), ['p1']);
    const msgs = JSON.parse(await cli.ok(['messages', 'list', '--queue', q])) as { transactionId: string; partitionId: string; data: unknown }[];
    assert.deepEqual(msgs.map((m) => m.data), [{ o: 1 }]);
    assert.equal(JSON.parse(await cli.ok(['messages', 'get', msgs[0]!.partitionId, msgs[0]!.transactionId])).data.o, 1);
    assert.ok(Array.isArray(JSON.parse(await cli.ok(['traces', 'names']))));
    assert.equal(typeof JSON.parse(await cli.ok(['metrics'])), 'object');
    assert.match(await cli.ok(['metrics', '--prometheus']), /^# (HELP|TYPE) /m);
    assert.equal(JSON.parse(await cli.ok(['maintenance', 'get'])).maintenanceMode, false);
    assert.equal((await cli.run(['maintenance', 'on'])).code, 1, 'needs --yes');
    assert.equal((await cli.ok(['maintenance', 'on', '--pop', '--yes'])).trim(), 'pop-maintenance on');
    assert.equal(JSON.parse(await cli.ok(['maintenance', 'get', '--pop'])).popMaintenanceMode, true);
    assert.equal((await cli.run(['pop', q, '--no-wait'])).code, 4, 'pop maintenance: every pop is empty');
    assert.equal((await cli.ok(['maintenance', '--pop', 'off'])).trim(), 'pop-maintenance off');
    assert.equal(ndjson(await cli.ok(['pop', q, '--no-wait'])).length, 1);
    assert.equal(typeof JSON.parse(await cli.ok(['analytics', 'overview', '--from', '10m ago'])), 'object');
    assert.equal(typeof JSON.parse(await cli.ok(['analytics', 'postgres'])), 'object');
  });

  test('queue delete of a queue that does not exist is a no-op: exit 4, saying so', async () => {
    const q = uniqueName('cli-nodel');
    const r = await cli.run(['queue', 'delete', q, '--yes']);
    assert.equal(r.code, 4, r.stdout + r.stderr);
    assert.equal(r.stdout, `queue "${q}" did not exist, nothing deleted\n`);
    assert.equal(r.stderr, '');
    await cli.ok(['queue', 'configure', q]);
    assert.equal(await cli.ok(['queue', 'delete', q, '--yes']), `deleted "${q}"\n`);
    assert.equal((await cli.run(['queue', 'delete', q, '--yes'])).code, 4, 'deleted once, then absent');
  });

  test('namespace list and task list print the names the broker answers (namespace / task fields)', async () => {
    const q = uniqueName('cli-nst');
    const ns = uniqueName('ns');
    const task = uniqueName('task');
    await cli.ok(['queue', 'configure', q, '--namespace', ns, '--task', task]);
    await cli.ok(['push', q], { input: '{"a":1}\n' });
    for (const [verb, name] of [['namespace', ns], ['task', task]] as const) {
      const table = (await cli.ok([verb, 'list', '-o', 'table'])).split('\n');
      assert.match(table[0]!, new RegExp(`^${verb.toUpperCase()}\\s+QUEUES$`));
      assert.match(table.find((l) => l.startsWith(name)) ?? '', new RegExp(`^${name}\\s+1$`), table.join('\n'));
      assert.ok(!table.slice(1).some((l) => l.startsWith('-')), `no nameless rows:\n${table.join('\n')}`);
      const wide = (await cli.ok([verb, 'list', '-o', 'wide'])).split('\n');
      assert.match(wide.find((l) => l.startsWith(name)) ?? '', new RegExp(`^${name}\\s+1\\s+1$`), wide.join('\n'));
    }
  });

  test('bench pushes and drains; no progress bar outside a terminal', async () => {
    const q = uniqueName('cli-bench');
    const r = await cli.run(['bench', '--queue', q, '--total', '300', '--batch', '50', '--partitions', '3', '--producers', '2', '--consumers', '2', '--auto-delete']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /^PUSH {7}300 msgs in [\d.]+s \(\d+ msg\/s\)$/m);
    assert.match(r.stdout, /^POP {8}300 msgs in [\d.]+s \(\d+ msg\/s\)$/m);
    assert.match(r.stdout, /^RESIDENCY {2}p50=\d+ms p95=\d+ms p99=\d+ms/m);
    assert.equal((await cli.run(['queue', 'describe', q])).code, 2, '--auto-delete');

    const file = path.join(tempDir(), 'big.ndjson');
    fs.writeFileSync(file, Array.from({ length: 6000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(200) })).join('\n'));
    assert.ok(fs.statSync(file).size > 1 << 20);
    const big = await cli.run(['push', uniqueName('cli-big'), '-f', file]);
    assert.equal(big.stdout, 'queued=6000 duplicate=0 failed=0\n');
    assert.equal(big.stderr, '', 'the progress bar is for terminals only');
  });

  test('on a terminal: a table by default, and a progress bar for a large push (util-linux script as the terminal)', { skip: spawnSync('script', ['--version']).error !== undefined }, async () => {
    const q = uniqueName('cli-tty');
    const file = path.join(tempDir(), 'big.ndjson');
    fs.writeFileSync(file, Array.from({ length: 6000 }, (_, i) => JSON.stringify({ i, pad: 'y'.repeat(200) })).join('\n'));
    const inTty = (args: string[]): string => {
      const cmd = [process.execPath, CLI, '--server', broker.url, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
      const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: cli.home, TERM: 'xterm' }, timeout: 60_000 });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      return r.stdout;
    };
    const pushed = inTty(['push', q, '-f', file]);
    assert.match(pushed, /push \[/, 'a progress bar on the terminal');
    assert.match(pushed, /queued=6000 duplicate=0 failed=0/);
    const table = inTty(['queue', 'list', '--no-color']);
    assert.match(table, /^NAME\s+NAMESPACE\s+TASK\s+PARTITIONS/m, 'a table on the terminal');
    assert.match(table, new RegExp(`^${q}\\s`, 'm'));
  });

  test('kv put of a value that is not JSON is exit 1 and writes nothing; a JSON string is stored', async () => {
    const ns = uniqueName('cli-kvbad');
    for (const bad of ['{bad', 'hello', '']) {
      const r = await cli.run(['kv', 'put', ns, 'k1', bad, '--ttl', '60']);
      assert.equal(r.code, 1, `${JSON.stringify(bad)}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /^queenctl: <value> is not JSON: .*\(a string is quoted: '"text"'\)\n$/);
      assert.equal(r.stdout, '');
    }
    assert.equal((await cli.run(['kv', 'get', ns, 'k1'])).code, 4, 'nothing was written');
    await cli.ok(['kv', 'put', ns, 'k1', '"{bad"', '--ttl', '60']);
    assert.equal(JSON.parse(await cli.ok(['kv', 'get', ns, 'k1'])).value, '{bad');
  });

  test('a refusal carrying a human reason (KV: error is a code, reason the text) prints that reason', async () => {
    const bad = await cli.run(['kv', 'put', 'Bad_NS', 'k1', '1']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.equal(bad.stderr, 'queenctl: HTTP 400 kv_bad_namespace: path.ns must match ^[a-z0-9][a-z0-9._-]{0,63}$\n');
    // Where `error` is the text and `reason` a token (the transaction route), the text stays.
    const tx = await cli.run(['tx', '-f', '-'], { input: '{"operations":[{"type":"ack"}]}' });
    assert.equal(tx.code, 2, tx.stderr);
    assert.match(tx.stderr, /^queenctl: HTTP 400 \w+: \S+ \S+.*\n$/, 'a sentence, not the bad_request token');
    assert.ok(!tx.stderr.includes(': bad_request'), tx.stderr);
  });

  test('kv put/get/list and timers list/get/cancel (Queen-TS additions)', async () => {
    const ns = uniqueName('cli-kv');
    assert.equal((await cli.run(['kv', 'get', ns, 'missing'])).code, 4);
    assert.match(await cli.ok(['kv', 'put', ns, 'a/b', '{"n":12345678901234567890}']), /^put .* version=\d+\n$/);
    assert.ok((await cli.ok(['kv', 'get', ns, 'a/b', '-o', 'ndjson'])).includes('"value":{"n":12345678901234567890}'));
    assert.deepEqual((JSON.parse(await cli.ok(['kv', 'list', ns])) as { key: string }[]).map((r) => r.key), ['a/b']);
    assert.equal((await cli.run(['kv', 'put', ns, 'a/b', '1', '--expect', '0'])).code, 2, 'a lost precondition');

    const q = uniqueName('cli-timers');
    const payload = Buffer.from('{"t":1}').toString('base64');
    const r = await fetch(`${broker.url}/api/v1/timers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operations: [{ op: 'schedule', queue: q, timerKey: 'k/1', delayMs: 3_600_000, txn: 't1', payload }] }) });
    assert.equal(r.status, 200);
    assert.deepEqual((JSON.parse(await cli.ok(['timers', 'list', q])) as { timerKey: string }[]).map((t) => t.timerKey), ['k/1']);
    assert.equal(JSON.parse(await cli.ok(['timers', 'get', q, 'k/1'])).found, true);
    await cli.ok(['timers', 'cancel', q, 'k/1']);
    assert.equal((await cli.run(['timers', 'get', q, 'k/1'])).code, 4);
  });
});
