/**
 * queenctl's password login through the embedded proxy, end to end (docs/cli.md#login,
 * docs/proxy.md#sessions): a real broker with QUEEN_PROXY_EMBEDDED, a person with a role on a
 * cluster, `queenctl login --method password` as a subprocess against the proxy URL, then push,
 * pop and ack with the stored context, then logout. The reference CLI (queen-mq/queen:
 * clients/client-cli/internal/auth/login.go) posts `{username, password}` to `/api/login` and
 * uses the session JWT as `Authorization: Bearer`; this test holds our proxy and CLI to that.
 */
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import type { BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { bootstrap, startProxied, type Tenant } from '../proxy/helpers.js';
import { person, SESSION_ENV } from '../proxy/session-helpers.js';
import { queenctl, ndjson, tempHome, type Run } from './run.js';

const PASSWORD = 'tr0ub4dor & 3 horses';
let b: BrokerHandle;
let acme: Tenant;
let alice: string;
let viewer: string;

before(async () => {
  b = await startProxied({ ...SESSION_ENV });
  acme = await bootstrap(b.url, uniqueName('cliacme').toLowerCase());
  alice = `alice@${acme.slug}.test`;
  viewer = `vera@${acme.slug}.test`;
  await person(b.url, acme.slug, alice, PASSWORD, { cluster: acme.slug, role: 'admin' });
  await person(b.url, acme.slug, viewer, PASSWORD, { cluster: acme.slug, role: 'viewer' });
});
after(async () => { await b.stop(); });

const configOf = (home: string): string => path.join(home, '.queen', 'config.yaml');
const storedToken = (home: string): string | undefined => {
  const ref = (YAML.parse(fs.readFileSync(configOf(home), 'utf8')) as { contexts: { 'token-ref'?: string }[] }).contexts[0]!['token-ref'];
  return ref?.replace(/^literal:/, '');
};
function noSecret(r: Run, ...secrets: string[]): void {
  for (const s of secrets) assert.ok(!r.stdout.includes(s) && !r.stderr.includes(s), `a secret was printed:\n${r.stdout}\n${r.stderr}`);
}

describe('login --method password through the embedded proxy', () => {
  test('wrong password: exit 3, nothing stored, the password never printed', async () => {
    const home = tempHome();
    await queenctl(['config', 'set-context', 'p', '--server', b.url], { home });
    const wrong = await queenctl(['login', '--method', 'password', '-u', alice, '--password', 'not-the-password'], { home });
    assert.equal(wrong.code, 3, wrong.stderr);
    assert.match(wrong.stderr, /invalid credentials/);
    noSecret(wrong, 'not-the-password');
    assert.equal(storedToken(home), undefined);
    const unknown = await queenctl(['login', '--method', 'password'], { home, input: `nobody@${acme.slug}.test\n${PASSWORD}\n` });
    assert.equal(unknown.code, 3, unknown.stderr);
    noSecret(unknown, PASSWORD);
  });

  test('login (password on stdin), push, pop, ack with the stored context, logout ends the session', async () => {
    const home = tempHome();
    await queenctl(['config', 'set-context', 'p', '--server', b.url], { home });
    assert.equal((await queenctl(['push', 'q', '--data', '{"a":1}'], { home })).code, 3, 'no credential yet');

    const login = await queenctl(['login', '--method', 'password', '-u', alice], { home, input: `${PASSWORD}\n` });
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stdout, /^logged in as context=p server=http:\/\/127\.0\.0\.1:\d+ \(token stored in .*config\.yaml\)\n$/);
    const token = storedToken(home)!;
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a session JWT');
    noSecret(login, token, PASSWORD);
    assert.equal(fs.statSync(configOf(home)).mode & 0o777, 0o600);
    // The stored token is a bearer for the data plane (docs/proxy.md#sessions: Authorization wins over the cookie).
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { authorization: `Bearer ${token}` })).status, 200);

    const q = uniqueName('cli-proxy');
    const pushed = await queenctl(['push', q], { home, input: '{"n":1}\n{"n":2}\n' });
    assert.equal(pushed.code, 0, pushed.stderr);
    assert.equal(pushed.stdout.trim(), 'queued=2 duplicate=0 failed=0');
    const popped = await queenctl(['pop', q, '-n', '2', '--cg', 'workers', '--no-wait'], { home });
    assert.equal(popped.code, 0, popped.stderr);
    const lines = ndjson<{ data: { n: number } }>(popped.stdout);
    assert.deepEqual(lines.map((l) => l.data.n), [1, 2]);
    const acked = await queenctl(['ack', '--batch', '-', '--cg', 'workers'], { home, input: popped.stdout });
    assert.equal(acked.code, 0, acked.stderr);
    assert.equal(acked.stdout.trim(), 'ok=2 failed=0');
    assert.equal((await queenctl(['pop', q, '--cg', 'workers', '--no-wait'], { home })).code, 4, 'all acked');
    for (const r of [pushed, popped, acked]) noSecret(r, token);

    const out = await queenctl(['logout'], { home });
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, 'logged out from p\n');
    assert.equal(storedToken(home), undefined);
    assert.equal((await queenctl(['push', q, '--data', '{"n":3}'], { home })).code, 3, 'logged out');
    // The session itself is over at the proxy, not only forgotten (POST /auth/logout with the bearer).
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { authorization: `Bearer ${token}` })).status, 401);
  });

  test('a viewer logs in; push is refused with exit 3 (403), reads work', async () => {
    const home = tempHome();
    await queenctl(['config', 'set-context', 'v', '--server', b.url], { home });
    assert.equal((await queenctl(['login', '-u', viewer, '--password', PASSWORD], { home })).code, 0);
    assert.equal((await queenctl(['queue', 'list'], { home })).code, 0);
    const push = await queenctl(['push', uniqueName('cli-view'), '--data', '{"a":1}'], { home });
    assert.equal(push.code, 3, push.stderr);
  });
});
