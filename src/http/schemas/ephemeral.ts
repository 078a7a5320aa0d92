/** Schemas of the ephemeral queue routes (docs/ephemeral.md#routes); bodies are checked by their handlers (`ephemeral_bad_request`). */
import { answers, anyValue, arr, bool, handBody, int, isoTime, obj, params, query, str, type RouteTable } from './common.js';

const windowBuffer = obj({ ms: int, count: int });
const options = obj({ maxBytes: int, maxLength: int, policy: str('reject | dropOldest'), ttlSeconds: int, leaseSeconds: int, retryLimit: int, windowBuffer });
const drops = obj({ bounds: int, ttl: int, retry: int });
const queueRow = obj({ queue: str(), tier: str('implicit | declared'), depth: int, bytes: int, partitions: int, groups: int, parked: int, inFlight: int, drops, options });
const killSwitch = obj({
  ephemeralEnabled: bool, cellBytes: int, cellMaxBytes: int, queues: int, grantedTenants: int, requireGrant: bool, epoch: str('this process\'s epoch (hex)'),
}, undefined, ['ephemeralEnabled']);

/** Ephemeral route schemas. */
export const ephemeralSchemas = {
  'POST /api/v1/ephemeral/push': {
    tags: ['ephemeral'], summary: 'Push to an ephemeral queue, all or nothing (RAM only)',
    body: handBody(obj({ queue: str(), partition: str('default "Default"'), messages: arr(obj({ payload: anyValue })) }, undefined, ['queue', 'messages'])),
    response: answers(obj({ pushed: int }, undefined, ['pushed']), 'Every message appended', 201),
  },
  'GET /api/v1/ephemeral/pop': {
    tags: ['ephemeral'], summary: 'Pop from an ephemeral queue (always 200)',
    querystring: query({
      queue: 'queue name (required)', partition: 'one partition; all when absent', group: 'consumer group; queue mode when absent',
      batch: '1..10000 (1)', wait: 'true = long poll', timeout: 'ms, 0..300000 (DEFAULT_TIMEOUT)', commitOnDelivery: 'true = at-most-once, no lease', autoAck: 'deprecated alias of commitOnDelivery',
    }),
    response: answers(obj({ queue: str(), messages: arr(obj({ id: str('opaque'), partition: str(), attempts: int, payload: anyValue })) }, undefined, ['queue', 'messages']), 'Delivered messages, possibly none'),
  },
  'POST /api/v1/ephemeral/ack': {
    tags: ['ephemeral'], summary: 'Acknowledge ephemeral messages',
    body: handBody(obj({ queue: str(), group: str(), acks: arr(obj({ id: str(), status: str('completed | retry | failed'), error: str('ignored') })) }, undefined, ['queue', 'acks'])),
    response: answers(obj({ results: arr(obj({ id: str(), outcome: str('acked | redelivered | stale | unknown') })) }, undefined, ['results']), 'One outcome per id, in order'),
  },
  'POST /api/v1/ephemeral/configure': {
    tags: ['ephemeral'], summary: 'Declare an ephemeral queue (options durable, contents never)',
    body: handBody(obj({ queue: str(), options }, undefined, ['queue'])),
    response: answers(obj({ queue: str(), options: obj(), updatedAt: isoTime }, undefined, ['queue', 'options', 'updatedAt']), 'The stored declaration', 201),
  },
  'POST /api/v1/ephemeral/reset': {
    tags: ['ephemeral'], summary: 'Drop every message of an ephemeral queue; the declaration stays',
    body: handBody(obj({ queue: str() }, undefined, ['queue'])),
    response: answers(obj({ queue: str(), dropped: int }, undefined, ['queue', 'dropped']), 'Messages dropped on this node'),
  },
  'DELETE /api/v1/ephemeral/queue/:queue': {
    tags: ['ephemeral'], summary: 'Delete an ephemeral queue and its declaration', params: params({ queue: 'queue name' }),
    response: answers(obj({ queue: str(), deleted: bool, declared: bool }, undefined, ['queue', 'deleted', 'declared']), 'What was removed'),
  },
  'GET /api/v1/ephemeral/queues': {
    tags: ['ephemeral'], summary: 'Ephemeral queues held by this node',
    response: answers(obj({ queues: arr(queueRow), count: int, cellBytes: int }, undefined, ['queues', 'count', 'cellBytes']), 'Sorted by name'),
  },
  'GET /api/v1/ephemeral/queues/:queue/depth': {
    tags: ['ephemeral'], summary: 'Backlog of an ephemeral queue', params: params({ queue: 'queue name' }), querystring: query({ group: 'consumer group' }),
    response: answers(obj({
      queue: str(), group: { type: ['string', 'null'] }, tier: str(), pending: int, partitionsPending: int, bytes: int,
      partitions: arr(obj({ partition: str(), pending: int, bytes: int })), groups: arr(obj({ group: str(), pending: int, skipped: int })),
    }, undefined, ['queue', 'pending']), 'Backlog per partition and group'),
  },
  'GET /api/v1/system/ephemeral': {
    tags: ['ephemeral'], summary: 'The ephemeral kill switch and node totals', response: answers(killSwitch, 'State of this node'),
  },
  'POST /api/v1/system/ephemeral': {
    tags: ['ephemeral'], summary: 'Switch ephemeral queues on or off',
    body: handBody(obj({ enabled: bool }, undefined, ['enabled'])), response: answers(killSwitch, 'The new state'),
  },
  'POST /api/v1/ephemeral/_adopt': {
    tags: ['ephemeral'], summary: 'Hand-over of rings between nodes (verified relay only; 403 internal_only otherwise and on SQLite; 503 leaving while stopping)',
    body: handBody(obj({
      rings: arr(obj({
        queue: str(), partition: str(), messages: arr(obj({ t: int, p: anyValue })),
        groups: arr(obj({ g: str(), next: int, redeliver: arr(int), attempts: arr(arr(int)), skipped: int })),
      }, undefined, ['queue', 'partition', 'messages'])),
    }, undefined, ['rings'])),
    response: answers(obj({ adopted: int, refusedRings: int }, undefined, ['adopted', 'refusedRings']), 'Messages adopted and rings refused'),
  },
  'POST /api/v1/ephemeral/_leaving': {
    tags: ['ephemeral'], summary: 'A node announces it is stopping (verified relay only; 403 internal_only otherwise and on SQLite)',
    body: handBody(obj({ node: str(), epoch: str() }, undefined, ['node'])), response: answers(obj({ ok: bool }, undefined, ['ok']), 'The node is excluded from placement'),
  },
  'GET /api/v1/ephemeral/_ready': {
    tags: ['ephemeral'], summary: 'Readiness probe between nodes (verified relay only; 403 internal_only otherwise and on SQLite; 503 leaving while stopping)',
    response: answers(obj({ node: str(), epoch: str() }, undefined, ['node', 'epoch']), 'This node and its epoch'),
  },
} satisfies RouteTable;
