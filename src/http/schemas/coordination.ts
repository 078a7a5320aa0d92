/** Schemas of the coordination routes: KV, locks and timers (README.md "KV and locks", "Timers"). */
import { answers, anyValue, arr, bool, handBody, int, isoTime, nullableStr, obj, params, query, str, type RouteTable } from './common.js';

const kvPath = params({ ns: 'namespace', '*': 'key (may contain /)' });
const kvResult = obj({ ok: bool, ns: str(), key: str(), found: bool, value: anyValue, version: int, expiresAt: { type: ['string', 'null'] } });
const kvBatch = obj({ ok: bool, results: arr(obj({ index: int, op: str(), key: str(), value: anyValue, version: int })), error: str(), failedIndex: int }, undefined, ['ok']);
const kvOp = obj({
  op: str('get | getMany | getPrefix | put | putIfAbsent | delete | incr | check'), ns: str(), key: str(), keys: arr(str()), prefix: str(),
  value: anyValue, ttlSeconds: int, forever: bool, expect: int, by: int, required: bool,
});
const timerView = obj({ queue: str(), timerKey: str(), deliverAt: isoTime, partition: str(), payload: anyValue, version: int });
const timerList = obj({ rows: arr(timerView), truncated: bool, nextAfter: nullableStr }, 'A keyset page of timers by key', ['rows', 'truncated', 'nextAfter']);

/** Coordination route schemas. */
export const coordinationSchemas = {
  'POST /api/v1/kv': {
    tags: ['kv'], summary: 'KV batch: one unit of work',
    body: handBody({ oneOf: [obj({ operations: arr(kvOp) }, undefined, ['operations']), arr(kvOp)] }),
    response: answers(kvBatch, 'Results in order, or ok:false with the failing index'),
  },
  'GET /api/v1/kv/:ns/*': { tags: ['kv'], summary: 'Read one key', params: kvPath, response: answers(kvResult, 'The key') },
  'PUT /api/v1/kv/:ns/*': {
    tags: ['kv'], summary: 'Write one key', params: kvPath,
    body: handBody(obj({ value: anyValue, ttlSeconds: int, forever: bool, expect: int }, undefined, ['value'])),
    response: answers(kvResult, 'The new version'),
  },
  'DELETE /api/v1/kv/:ns/*': {
    tags: ['kv'], summary: 'Delete one key', params: kvPath, body: handBody(obj({ expect: int })), response: answers(kvResult, 'Deleted or absent'),
  },
  'GET /api/v1/resources/kv/namespaces': {
    tags: ['kv'], summary: 'KV namespaces with row counts', response: answers(obj({ namespaces: arr(obj({ ns: str(), keys: int }, undefined, ['ns'])) }, undefined, ['namespaces']), 'Namespaces'),
  },
  'POST /api/v1/resources/kv/list': {
    tags: ['kv'], summary: 'A keyset page of a namespace',
    body: handBody(obj({ ns: str(), prefix: str(), after: str(), limit: { type: 'integer', description: '1.., clamped to 1000' }, keysOnly: bool }, undefined, ['ns'])),
    response: answers(obj({ ns: str(), rows: arr(obj({ key: str(), value: anyValue, version: int }, undefined, ['key'])), truncated: bool, nextAfter: nullableStr }, undefined, ['ns', 'rows', 'truncated', 'nextAfter']), 'One page'),
  },
  'POST /api/v1/locks': {
    tags: ['kv'], summary: 'Locks and semaphores',
    body: handBody({ oneOf: [obj({ operations: arr(obj({ op: str('acquire | renew | release | get'), name: str(), ttlSeconds: int, owner: str(), limit: int, token: { type: ['integer', 'string'], description: 'fencing token (integer or decimal string)' }, slot: int })) }, undefined, ['operations']), arr(obj())] }),
    response: answers(obj({
      results: arr(obj({
        index: int, op: str(), name: str(), acquired: bool, renewed: bool, released: bool, held: bool, reason: str('why a verdict is false: held | lost'),
        slot: { type: ['integer', 'null'], description: 'null on a refusal' }, token: { type: ['integer', 'null'], description: 'fencing token; null on a refusal' },
        owner: nullableStr, expiresAt: { type: ['string', 'null'], description: 'ISO-8601' }, guard: { type: ['object', 'null'], description: 'KV check for a transaction kv rider' }, holders: arr(obj()),
      }, 'The verdict is named for the op: acquired, renewed or released', ['op', 'name'])),
    }, undefined, ['results']), 'One verdict per operation'),
  },
  'POST /api/v1/timers': {
    tags: ['timers'], summary: 'Schedule, reschedule or cancel timers, all or nothing',
    body: handBody({ oneOf: [obj({ operations: arr(obj({ op: str('schedule | reschedule | cancel'), queue: str(), timerKey: str(), delayMs: int, at: isoTime, partition: str(), payload: str('base64 of the UTF-8 JSON payload') })) }, undefined, ['operations']), arr(obj())] }),
    response: answers(obj({ results: arr(obj({ op: str(), ok: bool, status: str() })) }, undefined, ['results']), 'One result per operation'),
  },
  'GET /api/v1/timers/:queue': {
    tags: ['timers'], summary: "A queue's pending timers", params: params({ queue: 'queue name' }),
    querystring: query({ after: 'previous page nextAfter', limit: 'rows per page, 1..1000 (100)' }), response: answers(timerList, 'One page'),
  },
  'GET /api/v1/timers/:queue/*': {
    tags: ['timers'], summary: 'Peek one timer', params: params({ queue: 'queue name', '*': 'timer key' }),
    response: answers(obj({ found: bool, queue: str(), timerKey: str() }, undefined, ['found', 'queue', 'timerKey']), 'found:true with the timer, or found:false'),
  },
  'DELETE /api/v1/timers/:queue/*': {
    tags: ['timers'], summary: 'Cancel one timer', params: params({ queue: 'queue name', '*': 'timer key' }),
    response: answers(obj({ ok: bool, status: str('cancelled | absent | too_late') }, undefined, ['ok', 'status']), 'The verdict'),
  },
} satisfies RouteTable;
