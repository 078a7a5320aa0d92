/**
 * queenctl end to end, data plane (docs/cli.md#consuming): the built CLI as a subprocess against a
 * real broker. Mirrors the reference CLI's tests (queen-mq/queen: clients/client-cli/tests/
 * push_test.go, pop_test.go, consume_test.go, subscription_test.go): push summary lines, empty
 * input and empty pops exiting 4, NDJSON message lines, tail limits, replay.
 */
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { CLI, Cli, ndjson } from './run.js';

interface Line { queue: string; partition: string; transactionId: string; partitionId: string; leaseId?: string; createdAt: string; retryCount: number; data: unknown }

let broker: BrokerHandle;
let cli: Cli;
before(async () => {
  broker = await startBroker();
  cli = new Cli(broker.url);
});
after(async () => { await broker.stop(); });

describe('push, tail, ack', () => {
  test('NDJSON pushed, tailed without ack, acked from the tail output; payload numbers exact', async () => {
    const q = uniqueName('cli-pta');
    const input = '{"i":1}\n\n{"i":12345678901234567890,"f":1.0}\n{"i":3}\n';
    assert.equal((await cli.ok(['push', q], { input })).trim(), 'queued=3 duplicate=0 failed=0');

    const tailed = await cli.ok(['tail', q, '--cg', 'workers']);
    const lines = ndjson<Line>(tailed);
    assert.equal(lines.length, 3);
    assert.ok(tailed.includes('"data":{"i":12345678901234567890,"f":1.0}'), tailed);
    for (const l of lines) {
      assert.deepEqual(Object.keys(l), ['queue', 'partition', 'transactionId', 'partitionId', 'createdAt', 'retryCount', 'data', 'leaseId']);
      assert.equal(l.queue, q);
    }
    // Leased, not acked: a second tail of the group finds nothing (exit 4).
    assert.equal((await cli.run(['tail', q, '--cg', 'workers'])).code, 4);

    assert.equal((await cli.ok(['ack', '--batch', '-', '--cg', 'workers'], { input: tailed })).trim(), 'ok=3 failed=0');
    const lag = JSON.parse(await cli.ok(['cg', 'describe', 'workers', '-o', 'json'])) as Record<string, { totalLag: number }>;
    assert.equal(lag[q]!.totalLag, 0);
  });

  test('push --partition-key, --batch and --concurrency keep every message, in order per partition', async () => {
    const q = uniqueName('cli-pk');
    const input = Array.from({ length: 250 }, (_, i) => JSON.stringify({ user: { id: `u${i % 3}` }, i })).join('\n');
    assert.equal((await cli.ok(['push', q, '--partition-key', 'user.id', '--batch', '7', '--concurrency', '3'], { input })).trim(), 'queued=250 duplicate=0 failed=0');
    const lines = ndjson<Line & { data: { i: number; user: { id: string } } }>(await cli.ok(['tail', q, '--cg', 'g', '--auto-ack', '--max-partitions', '3', '--limit', '1000']));
    assert.equal(lines.length, 250);
    for (const p of ['u0', 'u1', 'u2']) {
      const got = lines.filter((l) => l.partition === p).map((l) => l.data.i);
      assert.ok(got.length > 0 && got.every((i) => i % 3 === Number(p.slice(1))), p);
      assert.deepEqual(got, [...got].sort((a, b) => a - b), `order in ${p}`);
    }
  });

  test('push --data and --transaction-id: a repeated transaction id is a duplicate (exit 0)', async () => {
    const q = uniqueName('cli-dup');
    assert.equal((await cli.ok(['push', q, '--data', '{"a":1}', '--transaction-id', 'tx-1'])).trim(), 'queued=1 duplicate=0 failed=0');
    assert.equal((await cli.ok(['push', q, '--data', '{"a":1}', '--transaction-id', 'tx-1'])).trim(), 'queued=0 duplicate=1 failed=0');
  });

  test('push --dry-run says it sent nothing (text, and dryRun: true in JSON); the queue stays absent', async () => {
    const q = uniqueName('cli-dry');
    const input = '{"d":1}\n{"d":2}\n{"d":3}\n';
    assert.equal(await cli.ok(['push', q, '--dry-run'], { input }), 'would push 3 messages (dry run, nothing sent)\n');
    assert.deepEqual(JSON.parse(await cli.ok(['push', q, '--dry-run', '-o', 'json'], { input })), { dryRun: true, wouldPush: 3 });
    assert.equal((await cli.run(['queue', 'describe', q])).code, 2, 'nothing was sent: the queue does not exist');
    assert.deepEqual(JSON.parse(await cli.ok(['push', q, '-o', 'json'], { input })), { queued: 3, duplicate: 0, failed: 0 });
    const empty = await cli.run(['push', q, '--dry-run'], { input: '\n' });
    assert.equal(empty.code, 4);
    assert.equal(empty.stdout, 'would push 0 messages (dry run, nothing sent)\n');
  });

  test('push of empty input exits 4; a bad line exits 1 naming the problem', async () => {
    const q = uniqueName('cli-empty');
    const empty = await cli.run(['push', q], { input: '\n\n' });
    assert.equal(empty.code, 4);
    assert.equal(empty.stderr, '');
    const bad = await cli.run(['push', q], { input: '{"a":1}\nnot json\n' });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^queenctl: invalid JSON line/);
  });

  test('pop: one message by default, -n N, exit 4 when empty, --auto-ack consumes', async () => {
    const q = uniqueName('cli-pop');
    assert.equal((await cli.run(['pop', q, '--no-wait'])).code, 4);
    assert.equal((await cli.run(['pop', q, '--wait=false', '--timeout', '100ms'])).code, 4, 'Go-style boolean flags of the reference CLI');
    await cli.ok(['push', q], { input: '{"n":1}\n{"n":2}\n{"n":3}\n' });
    const one = ndjson<Line>(await cli.ok(['pop', q, '--cg', 'a', '--auto-ack']));
    assert.equal(one.length, 1);
    const rest = ndjson<Line>(await cli.ok(['pop', q, '--cg', 'a', '-n', '5', '--auto-ack']));
    assert.deepEqual(rest.map((l) => l.data), [{ n: 2 }, { n: 3 }]);
    assert.equal((await cli.run(['pop', q, '--cg', 'a', '--no-wait'])).code, 4);
  });

  test('lease extend renews a live lease; an unknown lease exits 2', async () => {
    const q = uniqueName('cli-lease');
    await cli.ok(['push', q, '--data', '{"l":1}']);
    const [m] = ndjson<Line>(await cli.ok(['pop', q, '--cg', 'x']));
    assert.match(await cli.ok(['lease', 'extend', m!.leaseId!, '--seconds', '120']), new RegExp(`^renewed ${m!.leaseId} -> \\d{4}-\\d{2}-\\d{2}T`));
    assert.equal((await cli.run(['lease', 'extend', '01a00000-0000-7000-8000-000000000000'])).code, 2);
  });

  test('tail --limit stops after N, a one-shot tail after one batch; --idle-millis ends an idle tail with exit 4', async () => {
    const q = uniqueName('cli-limit');
    await cli.ok(['push', q], { input: Array.from({ length: 13 }, (_, i) => `{"i":${i}}`).join('\n') });
    assert.equal(ndjson(await cli.ok(['tail', q, '--cg', 'l', '--auto-ack', '--batch', '3'])).length, 3);
    assert.equal(ndjson(await cli.ok(['tail', q, '--cg', 'l', '--auto-ack', '--limit', '4'])).length, 4);
    assert.equal(ndjson(await cli.ok(['tail', q, '--cg', 'l', '--auto-ack', '--limit', '100', '--idle-millis', '300'])).length, 6);
    assert.equal((await cli.run(['tail', q, '--cg', 'l', '--idle-millis', '300'])).code, 4);
  });

  test('tail --follow prints messages pushed while it runs and ends cleanly on SIGINT', async () => {
    const q = uniqueName('cli-follow');
    const child = spawn(process.execPath, [CLI, '--server', broker.url, 'tail', q, '--cg', 'f', '--follow', '--auto-ack', '--timeout', '1s'], { env: { PATH: process.env.PATH ?? '', HOME: cli.home } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('close', (c) => r(c)));
    try {
      for (let i = 0; i < 3; i++) {
        await cli.ok(['push', q, '--data', `{"live":${i}}`]);
        await waitFor(() => ndjson(out).length === i + 1, { what: `live message ${i} tailed`, timeoutMs: 15_000 });
      }
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0);
    assert.deepEqual(ndjson<Line>(out).map((l) => l.data), [{ live: 0 }, { live: 1 }, { live: 2 }]);
  });
});

describe('replay and consumer-group positions', () => {
  test('replay moves a group back to a time: only what was created since is delivered again', async () => {
    const q = uniqueName('cli-replay');
    await cli.ok(['push', q], { input: '{"batch":1}\n{"batch":1}\n' });
    await cli.ok(['push', q], { input: '{"batch":2}\n{"batch":2}\n' });
    const all = ndjson<Line>(await cli.ok(['tail', q, '--cg', 'r', '--auto-ack']));
    assert.equal(all.length, 4);
    const second = all.find((l) => (l.data as { batch: number }).batch === 2)!;
    assert.ok(all.filter((l) => (l.data as { batch: number }).batch === 1).every((l) => l.createdAt < second.createdAt), 'the two pushes have distinct times');
    assert.equal((await cli.run(['tail', q, '--cg', 'r'])).code, 4);

    assert.equal((await cli.ok(['replay', q, '--cg', 'r', '--to', second.createdAt])).trim(), `replayed cg=r queue=${q} to=${second.createdAt}`);
    assert.deepEqual(ndjson<Line>(await cli.ok(['tail', q, '--cg', 'r', '--auto-ack'])).map((l) => l.data), [{ batch: 2 }, { batch: 2 }]);

    assert.match(await cli.ok(['replay', q, '--cg', 'r', '--to', '1h ago', '--dry-run']), /^\[dry-run\] would seek cg=r queue=.* toEnd=false ts="\d{4}-/);
    await cli.ok(['replay', q, '--cg', 'r', '--to', 'beginning']);
    assert.equal(ndjson(await cli.ok(['tail', q, '--cg', 'r', '--auto-ack'])).length, 4);
    const noTo = await cli.run(['replay', q, '--cg', 'r']);
    assert.equal(noTo.code, 1);
  });

  test('cg seek to the end and back to the beginning; cg delete needs --yes and removes the group', async () => {
    const q = uniqueName('cli-seek');
    await cli.ok(['push', q], { input: '{"k":1}\n{"k":2}\n' });
    assert.equal((await cli.ok(['cg', 'seek', 's', q, '--to', 'now'])).trim(), `seek cg=s queue=${q} to=now`);
    assert.equal((await cli.run(['tail', q, '--cg', 's'])).code, 4);
    await cli.ok(['cg', 'seek', 's', q, '--to', 'beginning']);
    assert.equal(ndjson(await cli.ok(['tail', q, '--cg', 's', '--auto-ack'])).length, 2);

    const listed = (): Promise<{ name: string; queueName: string }[]> => cli.ok(['cg', 'list', '-o', 'json']).then((t) => JSON.parse(t) as { name: string; queueName: string }[]);
    assert.ok((await listed()).some((g) => g.name === 's' && g.queueName === q));
    assert.equal((await cli.run(['cg', 'delete', 's'])).code, 1);
    assert.equal((await cli.ok(['cg', 'delete', 's', '--queue', q, '--metadata', '--yes'])).trim(), 'deleted cg=s');
    assert.ok(!(await listed()).some((g) => g.name === 's' && g.queueName === q));
    assert.equal(ndjson(await cli.ok(['tail', q, '--cg', 's', '--auto-ack'])).length, 2, 'a deleted group consumes again from the start');
  });

  test('lag --min-seconds -o table names the partition of each lagging row', async () => {
    const q = uniqueName('cli-lagp');
    const g = uniqueName('lg');
    await cli.ok(['push', q, '--partition', 'p1'], { input: '{"n":1}\n' });
    await cli.ok(['push', q, '--partition', 'p2'], { input: '{"n":2}\n' });
    await cli.ok(['cg', 'seek', g, q, '--to', 'beginning']);
    // Both partitions lag once their message is a second old.
    await waitFor(async () => (JSON.parse(await cli.ok(['lag', '--min-seconds', '1', '-o', 'json'])) as { consumerGroup: string }[]).filter((r) => r.consumerGroup === g).length === 2, { what: 'two lagging partitions' });
    const table = (await cli.ok(['lag', '--min-seconds', '1', '-o', 'table'])).split('\n');
    assert.match(table[0]!, /^CG\s+QUEUE\s+PARTITION\s+MESSAGES\s+LAG$/);
    const rows = table.filter((l) => l.startsWith(`${g} `)).map((l) => l.split(/\s+/).slice(0, 4));
    assert.deepEqual(rows.sort(), [[g, q, 'p1', '1'], [g, q, 'p2', '1']]);
    // Without --min-seconds the rows are per (group, queue): no partition column.
    assert.match((await cli.ok(['lag', '-o', 'table'])).split('\n')[0]!, /^CG\s+QUEUE\s+MESSAGES\s+LAG$/);
  });

  test('tail --partition reads one partition only', async () => {
    const q = uniqueName('cli-part');
    await cli.ok(['push', q, '--partition', 'a'], { input: '{"p":"a"}\n' });
    await cli.ok(['push', q, '--partition', 'b'], { input: '{"p":"b"}\n{"p":"b"}\n' });
    const lines = ndjson<Line>(await cli.ok(['tail', q, '--cg', 'pf', '--partition', 'b', '--auto-ack']));
    assert.deepEqual(lines.map((l) => [l.partition, l.data]), [['b', { p: 'b' }], ['b', { p: 'b' }]]);
  });
});
