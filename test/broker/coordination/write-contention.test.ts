/**
 * Decisions that keep going stale (src/broker/coordination/kv.ts `Kv.decided`, Broker transactions):
 * after 8 refused units the call answers `503 write_contention` with nothing written, not a 500.
 * The backend is made to refuse every unit, as rows changed by writers this process does not
 * order (other nodes, the expiry sweep) would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { QueenError } from '../../../src/errors.js';
import type { UnitOp, UnitResult } from '../../../src/storage/contract.js';
import { startTestServices, type TestServices } from '../../helpers/services.js';

let t: TestServices;
let units = 0;
before(() => {
  t = startTestServices();
  const backend = t.services.broker.backend as { unit: (ops: UnitOp[]) => Promise<UnitResult> };
  backend.unit = async () => {
    units++;
    return { committed: false, failedIndex: 0 };
  };
});
after(() => t.stop());

const contention = (e: unknown) => e instanceof QueenError && e.code === 'write_contention' && e.status === 503;

describe('stale decisions', () => {
  test('a KV write decided 8 times on rows that changed each time answers write_contention', async () => {
    units = 0;
    await assert.rejects(t.services.kv.batch([{ op: 'incr', ns: 'n', key: 'k', delta: 1, expiry: null, required: false }]), contention);
    assert.equal(units, 8);
    assert.equal(t.services.broker.kvWrites.size, 0, 'the key is let go');
  });

  test('a transaction with a KV rider decided 8 times answers write_contention', async () => {
    units = 0;
    await assert.rejects(t.services.broker.transaction({
      operations: [{ type: 'push', items: [{ queue: 'q', payload: 1 }] }], requiredLeases: [], producerSub: null,
      kv: { ops: [{ op: 'incr', ns: 'n', key: 'k', delta: 1, expiry: null, required: false }] },
    }), contention);
    assert.equal(units, 8);
    assert.equal(t.services.broker.kvWrites.size, 0);
  });
});
