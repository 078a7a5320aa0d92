/**
 * Schemas of the messaging routes: push, pop, ack, transactions, leases (docs/ and the public
 * reference queen-mq/queen: docs for the wire shapes). Configure, push and ack carry their own
 * enforced body schemas beside their handlers; this table adds their responses.
 */
import { answers, anyValue, arr, bool, handBody, int, isoTime, nullableStr, obj, params, query, str, type RouteTable } from './common.js';

const popQuery = query({
  consumerGroup: 'consumer group (absent: queue mode)',
  batch: 'messages to lease, 1..QUEEN_MAX_POP_BATCH',
  partitions: 'partitions to claim in one pop, 1..QUEEN_MAX_POP_PARTITIONS',
  wait: 'true: long-poll until a message or the timeout',
  timeout: 'long-poll timeout in ms, 0..QUEEN_MAX_POP_TIMEOUT_MS',
  leaseSeconds: 'lease length in seconds (default: the queue leaseTime)',
  commitOnDelivery: 'true: commit at delivery, no lease (at-most-once)',
  autoAck: 'deprecated alias of commitOnDelivery',
  subscriptionMode: 'all | new | timestamp (first contact of the group)',
  subscriptionFrom: 'ISO-8601 start for a timestamp subscription, or now',
  namespace: 'namespace filter (pop by namespace/task)',
  task: 'task filter (pop by namespace/task)',
  conflation: 'true: newest message per partition',
});

const popped = obj({
  messages: arr(obj({
    id: str(), transactionId: str(), partitionId: str(), leaseId: str(), queue: str(), partition: str(),
    data: anyValue, createdAt: isoTime, traceId: nullableStr, retryCount: int, offset: int,
    deliveryAttempt: { type: 'integer', minimum: 1, description: 'deliveries of this message to this consumer group, this one included (never fewer; counted from 1 again after a seek)' },
  }, undefined, ['id', 'transactionId', 'partitionId', 'queue', 'partition', 'data', 'createdAt'])),
}, '200 with messages; 204 (empty body) when nothing is available', ['messages']);

const pushResult = arr(obj({
  transaction_id: str(), message_id: str(), status: str('queued | duplicate | buffered | failed'), error: str(),
  partition_id: str('the partition\'s id (queued items)'), trace_id: nullableStr,
}, undefined, ['transaction_id', 'status']));
const ackResult = arr(obj({ transactionId: str(), success: bool, error: nullableStr, queueName: nullableStr, partitionName: nullableStr }, undefined, ['transactionId', 'success']));

/** Messaging route schemas. */
export const messagingSchemas = {
  'POST /api/v1/configure': {
    tags: ['queues'], summary: 'Create a queue or change its options',
    response: answers(obj({ queue: str(), namespace: str(), task: str(), options: obj() }, undefined, ['queue', 'options']), 'The queue as configured'),
  },
  'POST /api/v1/push': {
    tags: ['messages'], summary: 'Push messages (all committed durably before the answer)',
    response: answers(pushResult, 'One result per item, in order', 201),
  },
  'GET /api/v1/pop': {
    tags: ['messages'], summary: 'Pop by namespace/task', querystring: popQuery, response: answers(popped, 'Leased messages'),
  },
  'GET /api/v1/pop/queue/:queue': {
    tags: ['messages'], summary: 'Pop from any partition of a queue', params: params({ queue: 'queue name' }), querystring: popQuery,
    response: answers(popped, 'Leased messages'),
  },
  'GET /api/v1/pop/queue/:queue/partition/:partition': {
    tags: ['messages'], summary: 'Pop from one partition', params: params({ queue: 'queue name', partition: 'partition name' }),
    querystring: popQuery, response: answers(popped, 'Leased messages'),
  },
  'POST /api/v1/ack': {
    tags: ['messages'], summary: 'Acknowledge one message', response: answers(ackResult, 'One outcome'),
  },
  'POST /api/v1/ack/batch': {
    tags: ['messages'], summary: 'Acknowledge messages in order', response: answers(ackResult, 'One outcome per acknowledgement, in order'),
  },
  'POST /api/v1/transaction': {
    tags: ['messages'], summary: 'Acks, pushes, KV and timer riders, all or nothing',
    body: handBody(obj({
      operations: arr(obj({ type: str('push | ack'), queue: str(), partition: str(), payload: anyValue, transactionId: str(), partitionId: str(), leaseId: str(), status: str() })),
      requiredLeases: arr(str()),
      kv: arr(obj(), 'KV operations committed with the unit'),
      timers: arr(obj(), 'timer operations committed with the unit'),
    }, undefined, ['operations'])),
    response: answers(obj({ success: bool, transactionId: str(), results: arr(obj()), error: str(), reason: str() }, undefined, ['success']), '200 in both outcomes; a refusal has success:false'),
  },
  'POST /api/v1/lease/:leaseId/extend': {
    tags: ['messages'], summary: 'Extend a lease', params: params({ leaseId: 'lease id from a pop' }),
    body: handBody(obj({ seconds: int })),
    response: answers(obj({
      leaseId: str(), success: bool, renewed: { type: 'integer', description: 'messages whose lease moved' },
      error: str('why nothing was renewed (only then)'),
      expiresAt: { type: ['string', 'null'], description: 'ISO-8601 new expiry; null when nothing was renewed' },
      newExpiresAt: { type: ['string', 'null'], description: 'alias of expiresAt' }, lease_expires_at: { type: ['string', 'null'], description: 'alias of expiresAt' },
    }, undefined, ['leaseId', 'success', 'renewed', 'expiresAt']), 'The new expiry'),
  },
} satisfies RouteTable;
