/**
 * queenctl end to end, plumbing (docs/cli.md#configuration, docs/cli.md#exit-codes,
 * docs/cli.md#login): contexts in `~/.queen/config.yaml` (mode 0600), the precedence file <
 * $QUEEN_CONTEXT < --context < $QUEEN_SERVER/$QUEEN_TOKEN < flags, tokens never printed, every
 * exit code, the pasted-token login, completion. Mirrors the reference CLI's tests (queen-mq/queen:
 * clients/client-cli/tests/auth_test.go, internal/config/config_test.go,
 * internal/errors/exit_test.go). Here the password login is checked against a stand-in speaking
 * the reference proxy's `/api/login` contract (the `token` cookie), as the reference's
 * auth_test.go does; test/cli/login-proxy.test.ts runs it through our embedded proxy.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import { startBroker, tempDir, type BrokerHandle } from '../helpers/broker.js';
import { hsKey, mint } from '../helpers/jwt.js';
import { queenctl, tempHome, type Run } from './run.js';

const SECRET = randomBytes(32).toString('hex');
const DEAD = 'http://127.0.0.1:1';
let plain: BrokerHandle;
let secured: BrokerHandle;
let token: string;

before(async () => {
  [plain, secured] = await Promise.all([
    startBroker(),
    startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET } }),
  ]);
  token = await mint('HS256', hsKey(SECRET), { sub: 'ops', role: 'admin', exp: Math.floor(Date.now() / 1000) + 3600 });
});
after(async () => { await Promise.all([plain.stop(), secured.stop()]); });

const configOf = (home: string): string => path.join(home, '.queen', 'config.yaml');

function noSecret(r: Run, secret: string): void {
  assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), `a token was printed:\n${r.stdout}\n${r.stderr}`);
}

describe('contexts', () => {
  test('set-context writes ~/.queen/config.yaml with mode 0600 in a 0700 directory; get/use/delete-context', async () => {
    const home = tempHome();
    assert.equal((await queenctl(['config', 'current-context'], { home })).code, 4, 'no current context yet');
    const set = await queenctl(['config', 'set-context', 'local', '--server', plain.url], { home });
    assert.equal(set.code, 0);
    assert.equal(set.stdout, 'context "local" updated\n');
    assert.equal(fs.statSync(configOf(home)).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(configOf(home))).mode & 0o777, 0o700);
    assert.deepEqual(YAML.parse(fs.readFileSync(configOf(home), 'utf8')), { contexts: [{ name: 'local', server: plain.url }], 'current-context': 'local' });

    await queenctl(['config', 'set-context', 'dead', '--server', DEAD, '-q'], { home });
    assert.equal((await queenctl(['config', 'current-context'], { home })).stdout, 'local\n', 'the first context stays current');
    const table = (await queenctl(['config', 'get-contexts', '-o', 'table'], { home })).stdout.split('\n');
    assert.match(table[0]!, /^CURRENT\s+NAME\s+SERVER\s+AUTH$/);
    assert.match(table[1]!, /^\*\s+local\s+http:\/\/127\.0\.0\.1:\d+\s+none$/);
    assert.equal((await queenctl(['config', 'use-context', 'dead'], { home })).stdout, 'switched to context "dead"\n');
    assert.equal((await queenctl(['config', 'use-context', 'nope'], { home })).code, 1);
    assert.equal((await queenctl(['config', 'delete-context', 'dead'], { home })).stdout, 'context "dead" removed\n');
    assert.equal((await queenctl(['config', 'current-context'], { home })).code, 4, 'deleting the current context unsets it');
    assert.equal(fs.statSync(configOf(home)).mode & 0o777, 0o600, 'rewrites keep the mode');
  });

  test('precedence: file < $QUEEN_CONTEXT < --context < $QUEEN_SERVER < --server', async () => {
    const home = tempHome();
    await queenctl(['config', 'set-context', 'dead', '--server', DEAD], { home });
    await queenctl(['config', 'set-context', 'live', '--server', plain.url], { home });
    const ping = async (args: string[], env: Record<string, string> = {}): Promise<number | null> => (await queenctl([...args, 'ping'], { home, env })).code;
    assert.equal(await ping([]), 2, 'current-context (dead) from the file');
    assert.equal(await ping([], { QUEEN_CONTEXT: 'live' }), 0, '$QUEEN_CONTEXT over the file');
    assert.equal(await ping(['--context', 'dead'], { QUEEN_CONTEXT: 'live' }), 2, '--context over $QUEEN_CONTEXT');
    assert.equal(await ping(['--context', 'dead'], { QUEEN_SERVER: plain.url }), 0, '$QUEEN_SERVER over --context');
    assert.equal(await ping(['--server', DEAD], { QUEEN_SERVER: plain.url }), 2, '--server over $QUEEN_SERVER');
    assert.equal(await ping(['--context', 'missing']), 1, 'an unknown context is a user error');
    const none = await queenctl(['ping'], { home: tempHome() });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^queenctl: no server configured/);
  });
});

describe('tokens', () => {
  test('a context token authenticates; it never appears in config view, listings or errors', async () => {
    const home = tempHome();
    assert.equal((await queenctl(['config', 'set-context', 'sec', '--server', secured.url, '--token', token], { home })).code, 0);
    assert.equal(fs.statSync(configOf(home)).mode & 0o777, 0o600);
    const list = await queenctl(['queue', 'list'], { home });
    assert.equal(list.code, 0, list.stderr);
    const view = await queenctl(['config', 'view'], { home });
    noSecret(view, token);
    assert.ok(view.stdout.includes('"token-ref": "literal:<redacted>"'), view.stdout);
    const contexts = await queenctl(['config', 'get-contexts', '-o', 'json'], { home });
    noSecret(contexts, token);
    assert.equal((JSON.parse(contexts.stdout) as { auth: string }[])[0]!.auth, 'literal');

    const bad = `${token.slice(0, -4)}AAAA`;
    for (const r of [await queenctl(['queue', 'list', '--token', bad], { home }), await queenctl(['queue', 'list'], { home, env: { QUEEN_TOKEN: bad } })]) {
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, /^queenctl: HTTP 401 /);
      noSecret(r, bad);
      noSecret(r, token);
    }
    const none = await queenctl(['--server', secured.url, 'queue', 'list'], { home: tempHome() });
    assert.equal(none.code, 3);
  });

  test('login --method token (pasted on stdin) stores the token; logout forgets it', async () => {
    const home = tempHome();
    await queenctl(['config', 'set-context', 'sec', '--server', secured.url], { home });
    assert.equal((await queenctl(['queue', 'list'], { home })).code, 3);
    const login = await queenctl(['login', '--method', 'token'], { home, input: `${token}\n` });
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stdout, /^logged in as context=sec server=http:\/\/127\.0\.0\.1:\d+ \(token stored in .*config\.yaml\)\n$/);
    noSecret(login, token);
    assert.equal(fs.statSync(configOf(home)).mode & 0o777, 0o600);
    assert.equal((await queenctl(['queue', 'list'], { home })).code, 0);
    assert.equal((await queenctl(['logout'], { home })).stdout, 'logged out from sec\n');
    assert.equal((await queenctl(['queue', 'list'], { home })).code, 3);
    assert.equal((await queenctl(['login', '--method', 'token'], { home, input: '\n' })).code, 1, 'an empty paste');
  });

  test('login --method password speaks the proxy contract: token cookie stored, 401 exits 3', async () => {
    const seen: string[] = [];
    const proxy = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push(`${req.method} ${req.url}`);
        const creds = JSON.parse(body || '{}') as { username?: string; password?: string };
        if (req.url !== '/api/login') return void res.writeHead(404).end();
        if (creds.username === 'alice' && creds.password === 'pw') res.writeHead(200, { 'set-cookie': `token=${token}; HttpOnly; Path=/`, 'content-type': 'application/json' }).end('{"ok":true}');
        else res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid credentials"}');
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const home = tempHome();
      await queenctl(['config', 'set-context', 'p', '--server', url], { home });
      const wrong = await queenctl(['login', '-u', 'alice', '--password', 'nope'], { home });
      assert.equal(wrong.code, 3);
      noSecret(wrong, 'nope');
      const ok = await queenctl(['login', '--method', 'password', '-u', 'alice', '--password', 'pw'], { home });
      assert.equal(ok.code, 0, ok.stderr);
      noSecret(ok, token);
      noSecret(ok, 'pw"');
      assert.equal(YAML.parse(fs.readFileSync(configOf(home), 'utf8')).contexts[0]['token-ref'], `literal:${token}`);
      const prompted = await queenctl(['login', '--method', 'password'], { home, input: 'alice\npw\n' });
      assert.equal(prompted.code, 0, prompted.stderr);
      assert.equal(prompted.stderr, 'Username: Password: ');
      assert.deepEqual(seen, ['POST /api/login', 'POST /api/login', 'POST /api/login']);
    } finally {
      proxy.close();
    }
  });
});

describe('exit codes and plumbing', () => {
  test('0 ok, 1 user error, 2 unreachable or server error, 4 no-op', async () => {
    const home = tempHome();
    const at = (args: string[], input?: string): Promise<Run> => queenctl(['--server', plain.url, ...args], { home, input });
    assert.equal((await at(['ping'])).code, 0);
    assert.equal((await at(['version', '--short'])).stdout, 'queenctl 0.1.0 (queen-ts)\n');
    assert.match((await at(['version'])).stdout, /^queenctl 0\.1\.0 \(queen-ts\)\nserver {3}\S+\nstatus {3}healthy\ndatabase connected\ncontext {2}- \(http:\/\/127\.0\.0\.1:\d+\)\n$/);
    for (const args of [['ping', '--bogus'], ['no-such-verb'], ['queue', 'list', '-o', 'xml'], ['pop'], ['queue', 'delete', 'x']]) {
      const r = await at(args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^queenctl: /);
    }
    const down = await queenctl(['--server', DEAD, 'queue', 'list'], { home });
    assert.equal(down.code, 2);
    assert.match(down.stderr, /^queenctl: server unreachable \(http:\/\/127\.0\.0\.1:1\)/);
    const noGroup = await at(['cg', 'describe', 'no-such-group-anywhere']);
    assert.deepEqual([noGroup.code, noGroup.stderr.trim()], [2, 'queenctl: consumer group not found: no-such-group-anywhere']);
    const empty = await at(['pop', 'cli-never-pushed', '--no-wait']);
    assert.equal(empty.code, 4);
    assert.equal(empty.stderr, '', 'exit 4 prints nothing on stderr');
    assert.equal((await at(['--help'])).code, 0);
  });

  test('version without a server, or with one unreachable, prints the client version and says so, exit 0', async () => {
    const none = await queenctl(['version'], { home: tempHome() });
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stderr, '');
    assert.equal(none.stdout, 'queenctl 0.1.0 (queen-ts)\nserver   none configured (pass --server, set $QUEEN_SERVER, or set a context)\n');
    const down = await queenctl(['--server', DEAD, 'version'], { home: tempHome() });
    assert.equal(down.code, 0, down.stderr);
    assert.equal(down.stderr, '');
    assert.match(down.stdout, /^queenctl 0\.1\.0 \(queen-ts\)\nserver {3}not available: server unreachable \(http:\/\/127\.0\.0\.1:1\): \S+\n$/);
  });

  test('completion bash is valid bash naming every verb; zsh, fish, powershell print', async () => {
    const r = await queenctl(['completion', 'bash']);
    assert.equal(r.code, 0);
    for (const verb of ['tail', 'push', 'dlq', 'apply', 'kv', 'timers', '--cg']) assert.ok(r.stdout.includes(verb), verb);
    const file = path.join(tempDir(), 'queenctl.bash');
    fs.writeFileSync(file, r.stdout);
    const check = spawnSync('bash', ['-n', file], { encoding: 'utf8' });
    if (check.error === undefined) assert.equal(check.status, 0, check.stderr);
    for (const shell of ['zsh', 'fish', 'powershell']) assert.equal((await queenctl(['completion', shell])).code, 0, shell);
    assert.equal((await queenctl(['completion', 'tcsh'])).code, 1);
    const page = (await queenctl(['docs', '--topic', 'cli'])).stdout.trim();
    assert.ok(fs.readFileSync(page, 'utf8').startsWith('# queenctl'), page);
  });
});
