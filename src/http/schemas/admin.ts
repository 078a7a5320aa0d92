/**
 * Schemas of the operator routes: resources, status and analytics, consumer groups, dead letters,
 * message browsing, traces, maintenance, health and metrics, auth and the dashboard.
 */
import { answers, anyValue, arr, bool, handBody, int, isoTime, nullableStr, num, obj, offsetPage, params, query, str, type RouteTable, type RouteSchema } from './common.js';

const counts = obj({ total: int, pending: int, processing: int, completed: int, failed: int, deadLetter: int }, undefined, ['total', 'pending', 'processing']);
const window = { from: 'ISO-8601; clamped to the retained activity', to: 'ISO-8601; clamped to now' };
const statusFilter = { ...window, queue: 'queue name', namespace: 'namespace', task: 'task' };
const point = obj({ timestamp: isoTime, ingested: int, processed: int, ingestedPerSecond: num, processedPerSecond: num });
const qp = params({ queue: 'queue name' });
const group = params({ group: 'consumer group' });
const address = params({ partitionId: 'partition id', transactionId: 'transaction id' });
const seekBody = handBody(obj({ toEnd: bool, timestamp: isoTime }, 'toEnd:true or an ISO-8601 timestamp'));
const deadLetter = obj({
  id: str(), transactionId: str(), partitionId: str(), queue: str(), partition: str(), consumerGroup: str(), errorMessage: nullableStr,
  retryCount: int, data: anyValue, messageId: str(), createdAt: isoTime, failedAt: isoTime,
}, undefined, ['id', 'transactionId', 'partitionId', 'queue', 'partition', 'data', 'failedAt']);
const trace = obj({ event_type: str(), data: anyValue, trace_names: arr(str()), consumer_group: str(), created_at: isoTime }, undefined, ['event_type', 'trace_names', 'created_at']);
const partitionView = obj({ id: str(), name: str(), queue: str(), messages: obj({ total: int, pending: int, processing: int, completed: int }) });
const neutral: RouteSchema = {
  tags: ['analytics'], summary: 'Neutral document (the statistic needs PostgreSQL internals this broker does not have)',
  response: answers(obj({ engine: str(), supported: bool }), 'supported:false'),
};
const staticFile: RouteSchema = { hide: true, response: { 200: { description: 'Dashboard file' } } };
const groupsDelete = query({ deleteMetadata: 'true|false (true): also remove the subscription' });

/** Operator route schemas. */
export const adminSchemas = {
  // queues and resources
  'GET /api/v1/resources/queues': {
    tags: ['queues'], summary: 'Queues with counts, options and group lag',
    response: answers(obj({ queues: arr(obj({ id: str(), name: str(), namespace: str(), task: str(), partitions: int, messages: counts, options: obj() }, undefined, ['id', 'name', 'partitions', 'messages'])) }, undefined, ['queues']), 'Every queue'),
  },
  'GET /api/v1/resources/queues/:queue': {
    tags: ['queues'], summary: 'One queue: options, partitions, totals, groups', params: qp,
    response: answers(obj({ name: str(), options: obj(), partitions: arr(partitionView), totals: counts }, undefined, ['name', 'options', 'partitions', 'totals']), 'The queue'),
  },
  'DELETE /api/v1/resources/queues/:queue': {
    tags: ['queues'], summary: 'Delete a queue and everything under it', params: qp, response: answers(obj({ deleted: bool }), 'Deleted'),
  },
  'GET /api/v1/resources/overview': { tags: ['queues'], summary: 'Inventory, depth, lag and throughput', response: answers(obj({ queues: int, partitions: int, messages: counts }, undefined, ['queues', 'partitions', 'messages']), 'Overview') },
  'GET /api/v1/resources/namespaces': { tags: ['queues'], summary: 'Namespaces with counts', response: answers(obj({ namespaces: arr(obj()) }), 'Namespaces') },
  'GET /api/v1/resources/tasks': { tags: ['queues'], summary: 'Tasks with counts', response: answers(obj({ tasks: arr(obj()) }), 'Tasks') },
  'GET /api/v1/resources/partitions': {
    tags: ['queues'], summary: 'Partitions (of every queue, or of `queue`)',
    querystring: query({ queue: 'queue name', limit: 'rows per page, 1..10000 (100)', after: 'previous page nextAfter' }),
    response: answers(obj({ partitions: arr(partitionView), total: { type: 'integer', description: 'partitions of the queue (with queue)' }, pagination: obj({ limit: int, nextAfter: nullableStr }) }), 'One keyset page'),
  },
  'GET /api/v1/resources/queues/:queue/partitions': {
    tags: ['queues'], summary: 'Partitions of a queue', params: qp, querystring: query({ limit: 'rows per page, 1..10000 (100)', after: 'previous page nextAfter' }),
    response: answers(obj({ queue: str(), partitions: arr(partitionView), total: int, pagination: obj({ limit: int, nextAfter: nullableStr }) }), 'One keyset page'),
  },
  'GET /api/v1/resources/queues/:queue/depth': {
    tags: ['queues'], summary: 'Queue depth (for a group)', params: qp, querystring: query({ group: 'consumer group', consumerGroup: 'alias of group' }),
    response: answers(obj({ queue: str(), depth: int }), 'Depth'),
  },
  'POST /api/v1/stats/refresh': { tags: ['queues'], summary: 'No-op: stats are live', response: answers(obj({ success: bool, refreshed: bool }), 'refreshed:false') },

  // status and analytics
  'GET /api/v1/status': {
    tags: ['status'], summary: 'Totals now and per-minute throughput of the window', querystring: query(statusFilter),
    response: answers(obj({ timeRange: obj({ from: isoTime, to: isoTime }), queues: int, partitions: int, messages: counts, throughput: arr(point), leases: obj({ active: int }) }, undefined, ['queues', 'partitions', 'messages', 'throughput']), 'Status'),
  },
  'GET /api/v1/status/queues': {
    tags: ['status'], summary: 'One row per queue', querystring: query({ ...statusFilter, limit: 'rows per page, 1..1000 (100)', offset: '0..1000000' }),
    response: answers(obj({ queues: arr(obj({ name: str(), messages: counts }, undefined, ['name', 'messages'])), pagination: offsetPage }, undefined, ['queues', 'pagination']), 'One page with the true total'),
  },
  'GET /api/v1/status/queues/:queue': {
    tags: ['status'], summary: 'One queue, its partitions and its last hour', params: qp,
    response: answers(obj({ queue: obj(), partitions: arr(obj()), totalPartitions: int, partitionsTruncated: bool, throughput: arr(point) }), 'Queue status'),
  },
  'GET /api/v1/status/queues/:queue/messages': {
    tags: ['status'], summary: 'A queue\'s messages, newest first (the reference\'s status listing)', params: qp, querystring: query({ limit: '1…1000, default 50', offset: '0…1000, default 0' }),
    response: answers(arr(obj({ id: str(), transactionId: str(), partitionId: str(), queuePath: str(), queue: str(), partition: str(), status: str('pending | processing | completed'), createdAt: isoTime })), 'Messages; [] for an unknown queue'),
  },
  'GET /api/v1/status/analytics': {
    tags: ['status'], summary: 'Per-minute or per-hour series', querystring: query({ ...statusFilter, interval: 'minute | hour' }),
    response: answers(obj({ interval: str(), from: isoTime, to: isoTime, queues: int, series: arr(point), totals: obj() }), 'Series'),
  },
  'GET /api/v1/status/buffers': { tags: ['status'], summary: 'Maintenance spool', response: answers(obj({ pending: int, failed: int, dbHealthy: bool }), 'Spool') },
  'GET /api/v1/analytics/system-metrics': { tags: ['analytics'], summary: 'Process CPU and memory', response: answers(obj({ current: obj(), timeSeries: arr(obj()), replicas: arr(obj()) }), 'Metrics') },
  'GET /api/v1/analytics/worker-metrics': { tags: ['analytics'], summary: 'No workers in this broker', response: answers(obj({ timeSeries: arr(obj()), workers: arr(obj()) }), 'Empty') },
  'GET /api/v1/analytics/queue-lag': { tags: ['analytics'], summary: 'Empty list (neutral)', response: answers(arr(obj()), 'Empty') },
  'GET /api/v1/analytics/postgres-stats': neutral,
  'GET /api/v1/analytics/queue-parked-replicas': neutral,
  'GET /api/v1/analytics/workload': neutral,
  'GET /api/v1/analytics/retention': neutral,
  'GET /api/v1/analytics/dlq-signatures': neutral,
  'GET /api/v1/analytics/partition-liveness': neutral,
  'GET /api/v1/analytics/queue-ops': neutral,

  // consumer groups
  'GET /api/v1/consumer-groups': { tags: ['groups'], summary: 'One row per (group, queue) with lag', response: answers(arr(obj({ name: str(), queueName: str(), members: int, state: str() }, undefined, ['name', 'queueName'])), 'Groups') },
  'GET /api/v1/consumer-groups/lagging': {
    tags: ['groups'], summary: 'Partitions lagging more than minLagSeconds (at most 10000 rows)', querystring: query({ minLagSeconds: 'seconds, 0..315360000 (3600)' }),
    response: answers(arr(obj({
      consumerGroup: str(), queueName: str(), partition: str(), offsetLag: int, timeLagSeconds: int,
      consumer_group: str(), queue_name: str(), partition_name: str(), partition_id: str(), worker_id: { type: 'null' }, offset_lag: int,
      time_lag_seconds: int, lag_hours: num, oldest_unconsumed_at: isoTime, last_consumed_at: { type: 'null' },
    })), 'Lagging partitions (camelCase fields and the reference\'s snake_case names)'),
  },
  'GET /api/v1/consumer-groups/:group': { tags: ['groups'], summary: 'One group: queues and partitions', params: group, response: answers({
    type: 'object', description: 'by queue name, as the reference answers; {} for a group that reads no queue',
    additionalProperties: obj({
      name: str(), subscriptionMode: str(), totalLag: int, partitionsWithLag: int, state: str(),
      partitions: arr(obj({ partition: str(), partitionId: str(), workerId: { type: 'null' }, lastConsumedAt: { type: 'null' }, offsetLag: int, timeLagSeconds: int, leaseActive: bool, totalConsumed: int })),
    }),
  }, 'The group') },
  'DELETE /api/v1/consumer-groups/:group': { tags: ['groups'], summary: "Delete a group's cursors (every queue)", params: group, querystring: groupsDelete, response: answers(obj({ success: bool }), 'Deleted') },
  'DELETE /api/v1/consumer-groups/:group/queues/:queue': {
    tags: ['groups'], summary: "Delete a group's cursors on one queue", params: params({ group: 'consumer group', queue: 'queue name' }), querystring: groupsDelete,
    response: answers(obj({ success: bool }), 'Deleted'),
  },
  'POST /api/v1/consumer-groups/:group/subscription': {
    tags: ['groups'], summary: 'Change the subscription timestamp', params: group, body: handBody(obj({ subscriptionTimestamp: isoTime }, undefined, ['subscriptionTimestamp'])),
    response: answers(obj({ success: bool }), 'Updated'),
  },
  'POST /api/v1/consumer-groups/:group/queues/:queue/seek': {
    tags: ['groups'], summary: 'Seek a group on a queue', params: params({ group: 'consumer group', queue: 'queue name' }), body: seekBody,
    response: answers(obj({ success: bool }), 'Moved'),
  },
  'POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek': {
    tags: ['groups'], summary: 'Seek a group on one partition (empty body: to the end)', params: params({ group: 'consumer group', queue: 'queue name', partition: 'partition name' }),
    body: seekBody, response: answers(obj({ success: bool }), 'Moved'),
  },

  // dead letters and browsing
  'GET /api/v1/dlq': {
    tags: ['dlq'], summary: 'Dead letters, newest first',
    querystring: query({ queue: 'queue name', consumerGroup: 'consumer group', ...window, limit: 'rows per page, 1..1000 (100)', offset: '0..1000000' }),
    response: answers(obj({ messages: arr(deadLetter), pagination: offsetPage, total: { type: 'integer', description: 'dead letters matching the filter, not the page length' } }, undefined, ['messages', 'pagination']), 'One page'),
  },
  'DELETE /api/v1/dlq': {
    tags: ['dlq'], summary: "Purge a queue's dead letters", querystring: query({ queue: 'queue name (required)', consumerGroup: 'consumer group' }),
    response: answers(obj({ success: bool, deleted: int }), 'Purged'),
  },
  'POST /api/v1/dlq/:id/replay': { tags: ['dlq'], summary: 'Replay one dead letter exactly once', params: params({ id: 'dead letter id' }), response: answers(obj({ success: bool }), 'Replayed') },
  'GET /api/v1/messages': {
    tags: ['messages'], summary: 'Browse messages, newest first (keyset pages)',
    querystring: query({ queue: 'queue name', partition: 'partition (needs queue)', namespace: 'namespace', ns: 'alias of namespace', task: 'task', ...window, status: 'pending | processing | completed', limit: 'rows per page, 1..1000 (200)', cursor: 'previous page pagination.nextCursor', offset: 'refused unless 0: use cursor' }),
    response: answers(obj({ messages: arr(obj({ id: str(), transactionId: str(), partitionId: str(), queue: str(), partition: str(), data: anyValue, offset: int, status: str() }, undefined, ['transactionId', 'partitionId', 'queue', 'partition', 'data', 'status'])), pagination: obj({ limit: int, nextCursor: nullableStr, hasMore: bool }, undefined, ['nextCursor', 'hasMore']) }, undefined, ['messages', 'pagination']), 'One page (no total: keyset pages)'),
  },
  'GET /api/v1/messages/:partitionId/:transactionId': { tags: ['messages'], summary: 'One message by address', params: address, response: answers(obj({ data: anyValue, status: str() }), 'The message') },
  'DELETE /api/v1/messages/:partitionId/:transactionId': { tags: ['messages'], summary: 'Delete the dead letter at this address', params: address, response: answers(obj({ success: bool }), 'Deleted') },
  'POST /api/v1/messages/:partitionId/:transactionId/retry': { tags: ['messages'], summary: 'Replay the newest dead letter at this address', params: address, response: answers(obj({ success: bool }), 'Replayed') },

  // traces
  'POST /api/v1/traces': {
    tags: ['traces'], summary: 'Record a processing event',
    body: handBody(obj({ transactionId: str(), partitionId: str(), consumerGroup: str(), eventType: str(), workerId: str(), traceNames: { oneOf: [str(), arr(str())] }, data: anyValue }, undefined, ['transactionId', 'partitionId', 'data'])),
    response: answers(obj({ success: bool, traceId: str() }), 'Recorded', 201),
  },
  'GET /api/v1/traces/:partitionId/:transactionId': { tags: ['traces'], summary: 'Events of one message', params: address, response: answers(obj({ traces: arr(trace) }, undefined, ['traces']), 'Events') },
  'GET /api/v1/traces/by-name/:traceName': {
    tags: ['traces'], summary: 'Events carrying a trace name', params: params({ traceName: 'trace name' }), querystring: query({ limit: '1..1000 (100)', offset: '0..1000000' }),
    response: answers(obj({ traces: arr(trace), total: { type: 'integer', description: 'events carrying the name' }, pagination: obj({ limit: int, offset: int }) }), 'One page'),
  },
  'GET /api/v1/traces/names': {
    tags: ['traces'], summary: 'Trace names with counts', querystring: query({ limit: '1..1000 (50)', offset: '0..1000000' }),
    response: answers(obj({ trace_names: arr(obj({ trace_name: str(), trace_count: int, message_count: int, last_seen: isoTime }, undefined, ['trace_name', 'trace_count'])), total: { type: 'integer', description: 'distinct names' }, pagination: obj({ limit: int, offset: int }) }, undefined, ['trace_names', 'total']), 'One page'),
  },

  // system
  'GET /api/v1/system/maintenance': { tags: ['system'], summary: 'Maintenance state', response: answers(obj({ maintenanceMode: bool, popMaintenanceMode: bool, bufferedMessages: int }, undefined, ['maintenanceMode', 'popMaintenanceMode', 'bufferedMessages']), 'State') },
  'POST /api/v1/system/maintenance': { tags: ['system'], summary: 'Push maintenance on/off', body: handBody(obj({ enabled: bool }, undefined, ['enabled'])), response: answers(obj({ maintenanceMode: bool }), 'New state') },
  'GET /api/v1/system/maintenance/pop': { tags: ['system'], summary: 'Pop maintenance state', response: answers(obj({ popMaintenanceMode: bool }), 'State') },
  'POST /api/v1/system/maintenance/pop': { tags: ['system'], summary: 'Pop maintenance on/off', body: handBody(obj({ enabled: bool }, undefined, ['enabled'])), response: answers(obj({ popMaintenanceMode: bool }), 'New state') },
  'GET /api/v1/system/link': {
    tags: ['system'], summary: 'The replication link: primary (with its readers) or standby (source, replay position, lag) (docs/cluster.md#standby)',
    response: answers(obj({
      role: str(), source: nullableStr, position: obj({ lsn: nullableStr }),
      follower: obj({ state: str(), lagMs: int, error: nullableStr }),
      readers: arr(obj({ name: str(), after: nullableStr, idleMs: { type: ['integer', 'null'] }, state: str() })),
    }, undefined, ['role', 'position']), 'Link'),
  },
  'GET /api/v1/system/raft/membership': {
    tags: ['system'], summary: 'The nodes sharing the database, read-only (docs/cluster.md#membership); empty on SQLite',
    response: answers(obj({
      engine: str(), members: arr(obj({ id: str(), http: str(), epoch: int, live: bool, lastSeenMs: int, leaving: bool })),
    }, undefined, ['engine', 'members']), 'Members'),
  },
  'POST /api/v1/system/link/promote': {
    tags: ['system'], summary: 'Promote the standby database (pg_promote); 409 promote_unavailable when the database role may not (docs/cluster.md#standby)',
    response: answers(obj({ role: str(), position: obj({ lsn: nullableStr }) }, undefined, ['role', 'position']), 'Promoted'),
  },
  'GET /api/v1/system/shared-state': { tags: ['system'], summary: 'Cluster shared state (single node)', response: answers(obj(), 'State') },
  'GET /health': {
    tags: ['system'], summary: 'Health: 503 when storage is unreachable',
    response: answers(obj({
      status: str(), database: str(), engine: str(), version: str(),
      cluster: obj({ serverId: str(), epoch: int, nodes: int, role: str() }, 'This node in the cluster (docs/cluster.md#membership); PostgreSQL only', ['serverId', 'epoch', 'nodes']),
    }, undefined, ['status']), 'Healthy'),
  },
  'GET /status': {
    tags: ['system'], summary: 'Engine, the Kafka port and the node port (when on)',
    response: answers(obj({
      status: str(), engine: str(),
      kafka: obj({ mode: str(), listen: str(), advertised: str(), connections: int }, 'The Kafka port (docs/kafka.md#configuration); absent when it is off', ['mode', 'listen', 'advertised', 'connections']),
      cluster: obj({ listen: str(), port: int, token: bool }, 'The node port (docs/cluster.md#the-node-port); absent when it is off', ['listen', 'port', 'token']),
      membership: obj({
        serverId: str(), epoch: int, role: str(), clockSkewMs: int, nodes: int,
        members: arr(obj({ serverId: str(), epoch: int, address: str(), live: bool, lastSeenMs: int, leaving: bool })),
        singletons: arr(obj({ task: str(), holder: nullableStr, epoch: { type: ['integer', 'null'] }, fencing: int, runs: int, lastRunAt: nullableStr, here: bool })),
      }, 'The nodes sharing the database and who runs each cluster-wide job (docs/cluster.md#membership); PostgreSQL only', ['serverId', 'epoch', 'nodes', 'members', 'singletons']),
    }, undefined, ['status', 'engine']), 'Status'),
  },
  'GET /metrics': { tags: ['system'], summary: 'JSON counters', response: answers(obj({ uptime: num, requests: obj(), messages: obj() }), 'Counters') },
  'GET /metrics/prometheus': { tags: ['system'], summary: 'Prometheus text format', response: { 200: { description: 'text/plain; version=0.0.4', type: 'string' } } },
  'GET /openapi.json': { tags: ['system'], summary: 'This document', response: { 200: { description: 'OpenAPI 3 document', type: 'object', additionalProperties: true } } },
  'GET /openapi': { tags: ['system'], summary: 'Human-readable page of this document (self-contained)', response: { 200: { description: 'text/html', type: 'string' } } },

  // auth and dashboard
  'GET /auth/me': {
    tags: ['auth'], summary: 'The dashboard identity (the standalone operator), or 401 when JWT is on',
    response: answers(obj({
      user_id: str(), email: nullableStr, tenant_slug: str(), is_operator: bool, role: str(), standalone: bool, cluster: nullableStr,
      clusters: arr(obj({ id: str(), slug: str(), role: str(), status: str() })),
    }, undefined, ['user_id', 'role', 'standalone']), 'The caller'),
  },
  'GET /auth/login': {
    tags: ['auth'], summary: 'Login page for the dashboard (JWT on), or a redirect to it (JWT off)',
    response: { 200: { description: 'text/html login page', type: 'string' }, 303: { description: 'Redirect to / (no login needed)' } },
  },
  'GET /auth/logout': { tags: ['auth'], summary: 'Clear the dashboard session', response: answers(obj({ ok: bool }, undefined, ['ok']), 'Logged out') },
  'POST /auth/logout': { tags: ['auth'], summary: 'Clear the dashboard session', response: answers(obj({ ok: bool }, undefined, ['ok']), 'Logged out') },
  'GET /': staticFile,
  'GET /index.html': staticFile,
  'GET /assets/*': staticFile,
  'GET /*': staticFile,
} satisfies RouteTable;

/** Schema of a top-level dashboard build file (favicon and the like): `GET /<name>.<ext>`. */
export function staticFileSchema(method: string, url: string): RouteSchema | undefined {
  return method === 'GET' && /^\/[^/]+\.[A-Za-z0-9]+$/.test(url) ? staticFile : undefined;
}
