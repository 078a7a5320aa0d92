/**
 * Adversarial: limits answer the code README documents. QUEEN_MAX_PUSH_ITEMS bounds push items,
 * transaction items and acks per batch with `400 batch_too_large`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { QUEEN_MAX_PUSH_ITEMS: '10' } }); });
after(async () => { await b.stop(); });

describe('QUEEN_MAX_PUSH_ITEMS', () => {
  test('an ack batch over the limit answers 400 batch_too_large', async () => {
    const acknowledgments = Array.from({ length: 11 }, (_, i) => ({ transactionId: `t${i}`, partitionId: 'p' }));
    const r = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'batch_too_large', r.text);
  });
});
