/** Schemas of the streams routes (docs/streams.md#routes); bodies are checked by their handlers (`streams_bad_request`). */
import { answers, anyValue, arr, bool, handBody, int, isoTime, num, nullableStr, obj, query, str, type RouteTable } from './common.js';

const stateOp = obj({ type: str('upsert | delete'), key: str('≤ 1024 bytes'), value: anyValue }, undefined, ['type', 'key']);
const pushItem = obj({ queue: str('empty = item skipped'), partition: str('default "Default"'), payload: anyValue, data: anyValue, transactionId: str(), messageId: str('ignored: the broker assigns ids') });
const ack = obj({ transactionId: str('the last message acked'), leaseId: str('the pop\'s lease id'), status: str('completed (default) | anything else = nack'), count: int });
const pushResult = obj({ queue: str(), partition: str(), status: str('queued | duplicate'), baseOffset: int }, undefined, ['queue', 'partition', 'status']);
const ackResult = obj({ success: bool, count: int, lease_released: bool, dlq: bool });
const row = obj({ key: str(), value: anyValue, updated_at: isoTime }, undefined, ['key', 'value', 'updated_at']);
const queryView = obj({
  query_id: str(), name: str(), source_queue: str(), sink_queue: nullableStr, config_hash: str(), created_at: isoTime, updated_at: isoTime,
  partitions: arr(obj({ partition_id: str(), rows: int })),
}, undefined, ['query_id', 'name', 'source_queue', 'sink_queue', 'partitions']);

/** Streams route schemas. */
export const streamsSchemas = {
  'POST /streams/v1/queries': {
    tags: ['streams'], summary: 'Register a streaming query (idempotent per name)',
    body: handBody(obj({ name: str(), source_queue: str(), sink_queue: str('"" = none'), config_hash: str(), reset: bool }, undefined, ['name', 'source_queue', 'config_hash'])),
    response: answers(obj({ success: bool, query_id: str(), name: str(), config_hash: str(), fresh: bool, reset: bool }, undefined, ['success', 'query_id']),
      'Registered (409 streams_config_hash_mismatch when the operator chain changed without reset)'),
  },
  'POST /streams/v1/state/get': {
    tags: ['streams'], summary: 'Read a query\'s state rows on one source partition',
    body: handBody(obj({ query_id: str(), partition_id: str(), keys: arr(str()), key_prefix: str('literal prefix'), ripe_at_or_before: num }, undefined, ['query_id', 'partition_id'])),
    response: answers(obj({ success: bool, rows: arr(row) }, undefined, ['success', 'rows']), 'Rows by key'),
  },
  'POST /streams/v1/cycle': {
    tags: ['streams'], summary: 'Commit a stream cycle: state, sink pushes and source ack, all or nothing',
    body: handBody(obj({
      query_id: str(), partition_id: str(), consumer_group: str('default __QUEUE_MODE__'), state_ops: arr(stateOp), push_items: arr(pushItem),
      ack: { ...ack, type: ['object', 'null'] }, release_lease: bool,
    }, undefined, ['query_id', 'partition_id'])),
    response: answers(obj({
      success: bool, query_id: str(), partition_id: str(), queueName: nullableStr, state_ops_applied: int,
      push_results: arr(pushResult), ack_result: { ...ackResult, type: ['object', 'null'] }, error: str('why nothing was committed (success false)'), deferred: str('an idle flush postponed: the partition is not idle (success true, nothing written)'),
    }, undefined, ['success', 'query_id', 'partition_id', 'state_ops_applied', 'push_results', 'ack_result']), 'The procedure ran: read `success`'),
  },
  'GET /api/v1/streams/queries': {
    tags: ['streams'], summary: 'Registered streaming queries with their state rows per partition (dashboard)',
    querystring: query({ limit: '1..1000 (100)' }),
    response: answers(obj({ queries: arr(queryView) }, undefined, ['queries']), 'By name'),
  },
} satisfies RouteTable;
