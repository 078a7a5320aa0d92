/**
 * SIGTERM with sockets that carry no request: a connection that was opened and never used (as
 * undici opens after an aborted request, or a silent client) must not hold the shutdown open.
 * Without the fix the broker waits for the client until the grace period passes and exits 1.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { startBroker } from '../helpers/broker.js';

describe('shutdown and quiet connections', () => {
  test('a silent socket and an idle keep-alive socket are closed by SIGTERM; the broker exits 0', async () => {
    const b = await startBroker({ env: { QUEEN_SHUTDOWN_GRACE_MS: '1000' } });
    const silent = net.connect(b.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => silent.once('connect', resolve).once('error', reject));
    const silentClosed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    silent.on('error', () => undefined);
    // A keep-alive socket that served one request and is now idle.
    const idle = net.connect(b.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => idle.once('connect', resolve).once('error', reject));
    idle.on('error', () => undefined);
    const answered = new Promise<string>((resolve) => {
      let text = '';
      idle.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\r\n\r\n') && text.includes('healthy')) resolve(text);
      });
    });
    idle.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    assert.match(await answered, /^HTTP\/1\.1 200/);
    const code = await b.stop();
    assert.equal(code, 0, `the broker did not stop cleanly:\n${b.output()}`);
    await silentClosed; // the server ended it; the client never did
    assert.equal(silent.destroyed || silent.readyState === 'closed', true);
    idle.destroy();
  });
});
