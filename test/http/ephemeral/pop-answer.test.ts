/**
 * The pop and ack answers built as text (src/http/routes/ephemeral.ts `popAnswer`, `ackAnswer`) is byte-identical to
 * serializing the answer object with each payload a RawJson (docs/ephemeral.md#pop), including
 * inexact numbers, escapes and non-ASCII in payloads, queue names and partitions.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ackAnswer, popAnswer } from '../../../src/http/routes/ephemeral.js';
import { RawJson, stringifyClientJson } from '../../../src/util/json.js';

describe('ephemeral pop answer text', () => {
  test('same bytes as the lossless serializer', () => {
    const messages = [
      { id: 'e:ab:p"1:1', partition: 'p"1', attempts: 1, payload: '{"n":1.50,"big":12345678901234567890}' },
      { id: 'e:ab:p"1:2', partition: 'p"1', attempts: 2, payload: '"z\\u0000é"' },
      { id: 'e:ab:Default:3', partition: 'Default', attempts: 1, payload: 'null' },
    ];
    for (const ms of [messages, []]) {
      const expected = stringifyClientJson({ queue: 'q\\ü', messages: ms.map((m) => ({ id: m.id, partition: m.partition, attempts: m.attempts, payload: new RawJson(m.payload) })) });
      assert.equal(popAnswer('q\\ü', ms), expected);
    }
  });
});

describe('ephemeral ack answer text', () => {
  test('same bytes as the lossless serializer for string ids; other ids fall back', () => {
    const acks = [{ id: 'e:ab:p:1' }, { id: 'quote"\u2028' }, { id: '' }];
    const outcomes = ['acked', 'unknown', 'stale'] as const;
    assert.equal(ackAnswer(acks, outcomes), stringifyClientJson({ results: acks.map((a, i) => ({ id: a.id, outcome: outcomes[i] })) }));
    assert.equal(ackAnswer([{ id: 'a' }, { id: 7 }], ['unknown', 'unknown']), undefined);
    assert.equal(ackAnswer([], []), '{"results":[]}');
  });
});
