/**
 * queenctl against careless or hostile input (docs/cli.md#push, docs/cli.md#exit-codes): the built
 * CLI as a subprocess against a real broker. Over-long lines, `-f -`, binary input and malformed
 * server URLs end with a clear message and the documented exit code, never a crash or a partial
 * push the user did not ask for.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { Cli, ndjson, queenctl, tempHome } from './run.js';

let broker: BrokerHandle;
let cli: Cli;
before(async () => {
  broker = await startBroker();
  cli = new Cli(broker.url);
});
after(async () => { await broker.stop(); });

describe('push input', () => {
  test('a line over 16 MiB is refused with exit 1 instead of being sent (or buffered without end)', async () => {
    const q = uniqueName('cli-long');
    // Valid JSON of 17 MiB: without a line cap it reached the broker (413, exit 2).
    const input = `{"a":1}\n{"big":"${'x'.repeat(17 * 1024 * 1024)}"}\n`;
    const r = await cli.run(['push', q, '--batch', '1'], { input, timeoutMs: 120_000 });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^queenctl: input line 2 is longer than 16777216 bytes/);
    // A stream without any newline is refused the same way (it used to be buffered whole).
    const flat = await cli.run(['ack', '--batch', '-'], { input: 'y'.repeat(17 * 1024 * 1024), timeoutMs: 120_000 });
    assert.equal(flat.code, 1, flat.stderr);
    assert.match(flat.stderr, /^queenctl: input line 1 is longer than/);
  });

  test('-f - reads stdin, as tx -f - and ack --batch - do', async () => {
    const q = uniqueName('cli-dash');
    assert.equal((await cli.ok(['push', q, '-f', '-'], { input: '{"d":1}\n{"d":2}\n' })).trim(), 'queued=2 duplicate=0 failed=0');
    const lines = ndjson<{ data: { d: number } }>(await cli.ok(['tail', q, '--cg', 'g', '--auto-ack', '--limit', '10']));
    assert.deepEqual(lines.map((l) => l.data.d), [1, 2]);
  });

  test('binary input: exit 1 naming the line number, not the bytes', async () => {
    const q = uniqueName('cli-bin');
    const r = await cli.run(['push', q], { input: '{"ok":1}\n\u0000\u0001\u00ff\u001b[2J garbage\n' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^queenctl: invalid JSON line 2: /);
    assert.ok(!r.stderr.includes('\u0000') && !r.stderr.includes('\u001b'), JSON.stringify(r.stderr));
  });
});

describe('numeric flags', () => {
  test('absurd counts are exit 1 with a message, never a crash or a silently rounded number', async () => {
    const q = uniqueName('cli-num');
    const huge = await cli.run(['push', q, '--concurrency', '99999999999', '--data', '{}']);
    assert.equal(huge.code, 1, huge.stderr);
    assert.match(huge.stderr, /^queenctl: --concurrency must be between 1 and 256/);
    const unsafe = await cli.run(['queue', 'list', '--limit', '99999999999999999999']);
    assert.equal(unsafe.code, 1, unsafe.stderr);
    assert.match(unsafe.stderr, /^queenctl: --limit: expected a non-negative integer/);
    const producers = await cli.run(['bench', '--queue', q, '--producers', '99999999', '--total', '10']);
    assert.equal(producers.code, 1, producers.stderr);
    assert.match(producers.stderr, /^queenctl: --producers must be at most 256/);
    const filler = await cli.run(['bench', '--queue', q, '--payload-size', '99999999999', '--total', '10']);
    assert.equal(filler.code, 1, filler.stderr);
    assert.match(filler.stderr, /^queenctl: --payload-size must be at most 16777216/);
  });
});

describe('config file', () => {
  test('a context field of the wrong type is exit 1 naming it, not a TypeError', async () => {
    const home = tempHome();
    fs.mkdirSync(path.join(home, '.queen'), { recursive: true });
    fs.writeFileSync(path.join(home, '.queen', 'config.yaml'), 'current-context: a\ncontexts:\n  - name: a\n    server: 5\n');
    const r = await queenctl(['ping'], { home });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /contexts\[0\]\.server must be a string/);
  });
});

describe('connection flags', () => {
  test('a server that is not an http(s) URL is a user error (exit 1), not an unreachable broker', async () => {
    for (const server of ['notaurl', 'ftp://x', 'http://[::1']) {
      const r = await cli.run(['--server', server, 'ping']);
      assert.equal(r.code, 1, `${server}: ${r.stderr}`);
      assert.match(r.stderr, /^queenctl: invalid server URL/);
    }
    // An unreachable but well-formed server stays exit 2.
    const down = await cli.run(['--server', 'http://127.0.0.1:1', 'ping']);
    assert.equal(down.code, 2, down.stderr);
  });
});

describe('a server that is not Queen', () => {
  test('an HTML answer (200 or an error status) is a one-line error naming status and content-type, not the page', async () => {
    const page = `<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n<body>${'<p>lorem ipsum</p>\n'.repeat(500)}</body></html>\n`;
    const server = http.createServer((req, res) => {
      res.writeHead(req.url?.startsWith('/health') ? 200 : 502, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const [args, status] of [[['ping'], 200], [['queue', 'list'], 502]] as const) {
        const r = await queenctl(['--server', url, ...args], { home: tempHome() });
        assert.equal(r.code, 2, r.stderr);
        assert.equal(r.stdout, '');
        assert.equal(r.stderr.split('\n').length, 2, `one line: ${r.stderr.slice(0, 300)}`);
        assert.match(r.stderr, new RegExp(`^queenctl: not a Queen JSON answer: HTTP ${status}, content-type text/html; charset=utf-8, body "<!DOCTYPE html> <html><head><title>Welcome.{0,60}…"\n$`));
      }
    } finally {
      server.close();
    }
  });
});
