/**
 * Retention on a test clock, on a real SQLite store: the periodic sweep runs each time the clock
 * crosses `RETENTION_INTERVAL`, and removes messages older than `retentionSeconds`, not younger
 * ones. No sleeps: the test advances one interval at a time and polls for that sweep's report.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RawJson } from '../../../src/util/json.js';
import { popOf, startTestServices, type TestServices } from '../../helpers/services.js';
import { waitFor } from '../../helpers/wait.js';

const INTERVAL_MS = 60_000;
let t: TestServices;
before(() => { t = startTestServices({ RETENTION_INTERVAL: String(INTERVAL_MS) }); });
after(() => t.stop());

test('the sweep at its interval removes what is older than retentionSeconds and keeps the rest', async () => {
  const { broker, jobs } = t.services;
  const t0 = t.clock.now();
  await broker.configure({ queue: 'old', mode: 'replace', options: { retentionEnabled: true, retentionSeconds: 3600 } });
  await broker.push([{ queue: 'old', partition: 'a', payload: 'old' }], null);
  /** Moves one interval on and waits for the sweep it starts; returns that sweep's removals. */
  const tick = async () => {
    t.clock.advance(INTERVAL_MS);
    const at = t.clock.now();
    return (await waitFor(() => (jobs.retention.last?.startedAt === at ? jobs.retention.last : undefined), { what: `the sweep at +${at - t0} ms`, intervalMs: 1 })).removed;
  };
  let removed = 0;
  while (t.clock.now() < t0 + 50 * INTERVAL_MS) removed += await tick();
  assert.equal(removed, 0, 'nothing is an hour old after 50 minutes');
  await broker.push([{ queue: 'old', partition: 'b', payload: 'young' }], null);
  while (t.clock.now() < t0 + 60 * INTERVAL_MS) removed += await tick();
  assert.equal(removed, 0, 'an hour old is not older than the hour');
  removed += await tick();
  assert.equal(removed, 1, 'at 61 min the old message goes');
  const left = await broker.pop(popOf('old', { partitions: 2 }));
  assert.ok(left && 'messages' in left);
  assert.deepEqual(left.messages.map((m) => (m.data as RawJson).text), ['"young"'], 'the young message stays');
});
