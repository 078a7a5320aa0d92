/**
 * LOG_FORMAT: human-readable lines when asked (or on a terminal), JSON lines when piped or asked;
 * any other value stops the boot.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runBrokerExpectingExit, startBroker, type BrokerHandle } from '../helpers/broker.js';

async function lineWith(b: BrokerHandle, text: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = b.output().split('\n').find((l) => l.includes(text));
    if (line !== undefined) return line;
    if (Date.now() > deadline) throw new Error(`no line with ${JSON.stringify(text)} in:\n${b.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('LOG_FORMAT', () => {
  it('pretty prints readable lines: the boot lines hold their message and no JSON', async () => {
    const key = 'ab'.repeat(32);
    const b = await startBroker({ env: { LOG_FORMAT: 'pretty', LOG_LEVEL: 'info', QUEEN_ENCRYPTION_KEY: key, JWT_ENABLED: 'true', JWT_SECRET: 'x'.repeat(32) } });
    try {
      for (const text of ['queen-ts listening', 'encryption service initialized (AES-256-GCM)', 'JWT auth ENABLED']) {
        const line = await lineWith(b, text);
        assert.ok(!line.includes('{') && !line.includes('"msg"'), `not a readable line: ${line}`);
        assert.match(line, /INFO/, line);
      }
      assert.ok(!b.output().includes(key), 'the key leaked into the log');
    } finally {
      await b.stop();
    }
  });

  it('piped output without LOG_FORMAT stays JSON lines, and so does LOG_FORMAT=json', async () => {
    for (const env of [{}, { LOG_FORMAT: 'json' }] as Record<string, string>[]) {
      const b = await startBroker({ env: { LOG_LEVEL: 'info', ...env } });
      try {
        const line = await lineWith(b, 'queen-ts listening');
        const rec = JSON.parse(line) as { msg: string; level: number };
        assert.equal(rec.msg, 'queen-ts listening');
        assert.equal(rec.level, 30);
      } finally {
        await b.stop();
      }
    }
  });

  it('any other value stops the boot naming the accepted ones', async () => {
    const r = await runBrokerExpectingExit({ LOG_FORMAT: 'xml' });
    assert.notEqual(r.code, 0, r.output);
    assert.match(r.output, /fatal: LOG_FORMAT="xml" is not one of .*json.*pretty/, r.output);
  });
});
