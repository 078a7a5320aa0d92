/**
 * The Services object (src/broker/services.ts): background jobs start with it, with no HTTP and
 * no lazy lookup, and stop with it, leaving nothing scheduled. On a test clock and a real SQLite
 * store; a restart reopens the same data directory.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestServices } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

test('start arms the jobs from the store (KV expiry, timers, retention); stop cancels every entry', async () => {
  const first = startTestServices({ RETENTION_INTERVAL: '60000' });
  const { services, clock } = first;
  const put = await services.kv.batch([{ op: 'put', ns: 'boot', key: 'k', value: 'v', expiry: 10_000, required: false }]);
  assert.ok(put.ok);
  await services.timers.apply([{ op: 'schedule', queue: 'boot-q', timerKey: 't', delayMs: 20_000, txn: 'boot-1', payloadJson: '1' }], null);
  assert.ok(services.scheduler.size > 0);
  await first.stop();
  assert.equal(services.scheduler.size, 0, 'nothing left scheduled after stop');
  assert.equal(services.scheduler.armed, false, 'no timer left armed');
  await first.stop(); // idempotent

  // A restart: only Services.start() runs, no route, no KV or timer call.
  const again = startTestServices({ RETENTION_INTERVAL: '60000' }, { dataDir: first.dataDir, clock });
  try {
    // The jobs read their due times through the (async) operation contract: armed once those reads answer.
    const lanes = () => ['kv-ttl', 'timers', 'retention'].map((l) => [l, again.services.scheduler.lane(l).size]);
    await waitFor(() => lanes().every(([, n]) => n === 1), { what: 'each job armed by start()', intervalMs: 1 });
    assert.deepEqual(lanes(), [['kv-ttl', 1], ['timers', 1], ['retention', 1]], 'each job armed by start()');
    assert.throws(() => again.services.start(), /already started/);
    clock.advance(20_000);
    await waitFor(() => again.services.kv.sweeper.pruned === 1 && again.services.timers.fired === 1, { what: 'the KV sweep and the timer after the restart', intervalMs: 1 });
  } finally {
    await again.stop();
  }
});

test('front doors open after the domain and close first: the store still answers a door while it closes, and stop() closes one left open', async () => {
  const t = startTestServices();
  const { services } = t;
  const events: string[] = [];
  await services.broker.push([{ queue: 'doors', partition: 'p', payload: { n: 1 } }], null);
  const door = (name: string) => ({
    name,
    start: () => { events.push(`start ${name}`); return Promise.resolve(name.length); },
    // Answering its last request on the way out (new work is refused by then): the store still reads.
    stop: async () => {
      const head = (await services.logs.bounds('doors', 'p')).headOffset;
      events.push(`stop ${name}: head ${head}`);
    },
    status: () => ({ name }),
  });
  assert.equal(await services.openFrontDoor(door('one')), 3, 'the door\'s start result');
  await services.openFrontDoor(door('three'));
  assert.deepEqual(services.frontDoorStatus(), { one: { name: 'one' }, three: { name: 'three' } });
  await t.stop(); // without closeFrontDoors first: stop() closes them, last opened first
  assert.deepEqual(events, ['start one', 'start three', 'stop three: head 1', 'stop one: head 1']);
  assert.deepEqual(services.frontDoorStatus(), {});
  await assert.rejects(services.openFrontDoor(door('late')), /opened while the services are stopped/);
});
