/**
 * The node port (docs/cluster.md#the-node-port, docs/cluster.md#the-node-token) on a real broker process over real sockets: the token is checked
 * from the request head before any body byte is read, the health route, the boot warnings, and a
 * bad `QUEEN_RAFT_LISTEN` refused at boot.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { runBrokerExpectingExit, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'b7c1d2e3f4a5968778695a4b3c2d1e0f';

/** The node port's bound port, read from the broker's `node port listening` log line. */
async function nodePort(b: BrokerHandle): Promise<number> {
  return waitFor(() => {
    for (const line of b.output().split('\n')) {
      if (!line.includes('node port listening')) continue;
      const o = JSON.parse(line) as { port?: number };
      if (typeof o.port === 'number') return o.port;
    }
    return undefined;
  }, { what: 'the node port listening line' });
}

/** Sends `head` on a raw socket and collects everything until the server closes (or `deadlineMs` passes). */
function rawExchange(port: number, head: string, deadlineMs: number): Promise<{ text: string; closedByServer: boolean; reset?: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    const t = setTimeout(() => { s.destroy(); resolve({ text, closedByServer: false }); }, deadlineMs);
    s.on('data', (d) => (text += d.toString('latin1')));
    // A server that closes with unread request bytes resets the connection (TCP RST).
    s.on('error', () => { clearTimeout(t); resolve({ text, closedByServer: true, reset: true }); });
    s.on('close', () => { clearTimeout(t); resolve({ text, closedByServer: true }); });
    s.write(head);
  });
}

test('node port: a wrong token with a 50 MB Content-Length gets its complete 401 without the body being sent', async () => {
  const b = await startBroker({ env: { QUEEN_RAFT_LISTEN: '127.0.0.1:0', QUEEN_RAFT_TOKEN: TOKEN } });
  try {
    const port = await nodePort(b);
    const r = await rawExchange(port, `POST /health HTTP/1.1\r\nHost: peer\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\nx-queen-raft-token: ${TOKEN.slice(0, -1)}x\r\n\r\n`, 1000);
    assert.ok(r.closedByServer, `the server answered and closed within 1 s (got ${JSON.stringify(r.text)})`);
    assert.match(r.text, /^HTTP\/1\.1 401 /);
    const [, body] = r.text.split('\r\n\r\n');
    assert.equal(body, 'bad raft token');
    // The same without any token header, and with a token of another length.
    for (const hdr of ['', 'x-queen-raft-token: short\r\n']) {
      const r2 = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: peer\r\n${hdr}\r\n`, 1000);
      assert.match(r2.text, /^HTTP\/1\.1 401 [^]*\r\n\r\nbad raft token$/);
    }
    // The broker still serves afterwards.
    const ok = await fetch(`http://127.0.0.1:${port}/health`, { headers: { 'x-queen-raft-token': TOKEN } });
    assert.equal(ok.status, 200);
  } finally {
    await b.stop();
  }
});

test('node port: the right token reads health ({serverId, epoch, leaving}); unknown routes 404; headers are bounded', async () => {
  const b = await startBroker({ env: { QUEEN_RAFT_LISTEN: '127.0.0.1:0', QUEEN_RAFT_TOKEN: ` ${TOKEN} `, QUEEN_SERVER_ID: 'node-a' } });
  try {
    const port = await nodePort(b);
    const base = `http://127.0.0.1:${port}`;
    const h = { 'x-queen-raft-token': TOKEN };
    for (const path of ['/health', '/cluster/v1/health']) {
      const r = await fetch(base + path, { headers: h });
      assert.equal(r.status, 200);
      const body = await r.json() as { serverId: string; epoch: string; leaving: boolean };
      assert.equal(body.serverId, 'node-a');
      assert.equal(body.leaving, false);
      assert.match(body.epoch, /^[0-9a-f-]{36}$/);
    }
    const nf = await fetch(`${base}/api/v1/push`, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body: '{"items":[]}' });
    assert.equal(nf.status, 404, 'durable messages never cross the node port');
    assert.equal((await nf.json() as { code: string }).code, 'not_found');
    const big = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: peer\r\nx-queen-raft-token: ${TOKEN}\r\nx-pad: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 5000);
    // Node answers 431 and closes; the RST of the unread bytes may overtake the answer.
    assert.ok(big.closedByServer && (/^HTTP\/1\.1 431 /.test(big.text) || (big.reset === true && big.text === '')), `an oversized head is refused: ${JSON.stringify(big)}`);
    assert.equal((await fetch(`${base}/health`, { headers: h })).status, 200, 'the node port serves on afterwards');
    const st = await (await fetch(`${b.url}/status`)).json() as { cluster?: { port: number; token: boolean } };
    assert.deepEqual(st.cluster, { listen: '127.0.0.1:0', port, token: true }, 'GET /status on PORT shows the node port');
    assert.ok(!b.output().includes(TOKEN), 'the token is never logged');
  } finally {
    await b.stop();
  }
});

test('node port boot warnings: no token beyond loopback; Raft-only variables named once', async () => {
  const b = await startBroker({ env: { QUEEN_RAFT_LISTEN: '0.0.0.0:0', QUEEN_RAFT_PEERS: 'a:7400,b:7400', QUEEN_LINK_TOKEN: 'l', QUEEN_RAFT_ELECTION_TIMEOUT_MS: '300' } });
  try {
    const port = await nodePort(b);
    assert.match(b.output(), /reachable beyond loopback without QUEEN_RAFT_TOKEN/);
    const warn = b.output().split('\n').filter((l) => l.includes('Raft-only variables are ignored'));
    assert.equal(warn.length, 1);
    assert.match(warn[0]!, /QUEEN_LINK_TOKEN, QUEEN_RAFT_ELECTION_TIMEOUT_MS, QUEEN_RAFT_PEERS/);
    // Token unset: every caller is accepted (docs/cluster.md#the-node-token).
    assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
  } finally {
    await b.stop();
  }
  const quiet = await startBroker({ env: { QUEEN_RAFT_LISTEN: '127.0.0.1:0' } });
  try {
    await nodePort(quiet);
    assert.doesNotMatch(quiet.output(), /beyond loopback/);
    assert.doesNotMatch(quiet.output(), /Raft-only/);
  } finally {
    await quiet.stop();
  }
});

test('node port: a QUEEN_RAFT_LISTEN without a port is fatal at boot', async () => {
  const r = await runBrokerExpectingExit({ QUEEN_RAFT_LISTEN: '127.0.0.1' });
  assert.equal(r.code, 1);
  assert.match(r.output, /fatal: QUEEN_RAFT_LISTEN=127\.0\.0\.1 has no port/);
});

test('node port: a body over 1 MiB is 413 from the head, a refused request streaming its body reads its 401, malformed and unfinished heads get the JSON shape, the boot line says it is guarded', async () => {
  const b = await startBroker({ env: { QUEEN_RAFT_LISTEN: '127.0.0.1:0', QUEEN_RAFT_TOKEN: TOKEN } });
  try {
    const port = await nodePort(b);
    const boot = b.output().split('\n').find((l) => l.includes('node port listening'))!;
    assert.equal((JSON.parse(boot) as { guarded?: unknown }).guarded, true, boot);

    const big = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: peer\r\nContent-Length: ${2 * 1024 * 1024}\r\nx-queen-raft-token: ${TOKEN}\r\n\r\n`, 5000);
    assert.match(big.text, /^HTTP\/1\.1 413 /, big.text);
    assert.equal((JSON.parse(big.text.split('\r\n\r\n')[1]!) as { code: string }).code, 'body_too_large');

    // A wrong token while the client keeps sending a large body: the client reads the 401, not a reset.
    for (let i = 0; i < 5; i++) {
      const got = await new Promise<string>((resolve) => {
        const s = net.connect(port, '127.0.0.1');
        let text = '';
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        const pump = (): void => { while (!s.destroyed && s.write(chunk)); };
        s.on('drain', pump);
        s.on('data', (d) => (text += d.toString('latin1')));
        s.on('error', () => resolve(text));
        s.on('close', () => resolve(text));
        s.write(`POST /health HTTP/1.1\r\nHost: peer\r\nContent-Length: 50000000\r\nx-queen-raft-token: wrong\r\n\r\n`);
        pump();
      });
      assert.match(got, /^HTTP\/1\.1 401 [^]*bad raft token/, `attempt ${i}: ${JSON.stringify(got.slice(0, 80))}`);
    }

    const malformed = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: peer\r\nbad header line\r\n\r\n', 5000);
    assert.match(malformed.text, /^HTTP\/1\.1 400 /, malformed.text);
    assert.equal((JSON.parse(malformed.text.split('\r\n\r\n')[1]!) as { code: string }).code, 'invalid_request');
    // A head that never ends is answered by the 10 s head timeout (not only at the 30 s request timeout).
    const slow = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: peer\r\nx-queen-raft-token: ${TOKEN}\r\n`, 25_000);
    assert.match(slow.text, /^HTTP\/1\.1 408 /, slow.text);
    assert.equal((JSON.parse(slow.text.split('\r\n\r\n')[1]!) as { code: string }).code, 'request_timeout');
  } finally {
    await b.stop();
  }
});
