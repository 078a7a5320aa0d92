/**
 * Status and analytics routes for the dashboard (docs/http-api.md#status-and-analytics): served from the
 * activity counters and in-memory indexes. The analytics families the reference serves from its
 * metrics tables answer neutral documents built from the same counters.
 */
import type { FastifyInstance } from 'fastify';
import type { StatusFilter } from '../../broker/admin/status.js';
import { QUEUE_MESSAGES_MAX_OFFSET } from '../../broker/admin/messages.js';
import { QueenError } from '../../errors.js';
import { qInt, qString, qTime, type Query } from '../query.js';
import type { OpsContext } from './ops-context.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

function filter(q: Query): StatusFilter {
  return {
    from: qTime(q, 'from'), to: qTime(q, 'to'), queue: qString(q, 'queue') || undefined,
    namespace: qString(q, 'namespace') || undefined, task: qString(q, 'task') || undefined,
  };
}

/** Fastify plugin registering the routes this module describes. */
export async function statusRoutes(app: FastifyInstance, { broker, ops, views }: OpsContext): Promise<void> {

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/status'>>('/api/v1/status', async (req) => {
    const m = ops.maintenance.status();
    return wire(await views.status(req.tenant, filter(req.query), {
      parkedConsumers: broker.parkedConsumers, uptimeSeconds: views.uptimeSeconds(),
      maintenance: { push: m.maintenanceMode, pop: m.popMaintenanceMode, bufferedMessages: m.bufferedMessages },
    }));
  });

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/status/queues'>>('/api/v1/status/queues', async (req) =>
    wire(await views.statusQueues(req.tenant, filter(req.query), qInt(req.query, 'limit', 100, 1, 1000), qInt(req.query, 'offset', 0, 0, 1_000_000))));

  app.get<{ Params: { queue: string } } & Replies<'GET /api/v1/status/queues/:queue'>>('/api/v1/status/queues/:queue', async (req) => wire(await views.statusQueue(req.tenant, req.params.queue)));
  app.get<{ Params: { queue: string }; Querystring: Query } & Replies<'GET /api/v1/status/queues/:queue/messages'>>('/api/v1/status/queues/:queue/messages', async (req) =>
    wire(await views.queueMessages(req.tenant, req.params.queue, qInt(req.query, 'limit', 50, 1, 1000), qInt(req.query, 'offset', 0, 0, QUEUE_MESSAGES_MAX_OFFSET))));

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/status/analytics'>>('/api/v1/status/analytics', async (req) => {
    const interval = qString(req.query, 'interval') || 'minute';
    if (interval !== 'minute' && interval !== 'hour') throw new QueenError('invalid_request', 'interval must be minute or hour');
    return wire(await views.analytics(req.tenant, filter(req.query), interval));
  });

  app.get<Replies<'GET /api/v1/status/buffers'>>('/api/v1/status/buffers', async () => {
    const m = ops.maintenance.status();
    return { pending: m.bufferedMessages, failed: m.bufferStats.failed, dbHealthy: broker.healthy(), worker: { draining: m.bufferStats.draining } };
  });

  app.get<Replies<'GET /api/v1/analytics/system-metrics'>>('/api/v1/analytics/system-metrics', async () => {
    const mem = process.memoryUsage();
    const cpu = process.cpuUsage();
    return {
      timeSeries: [], replicas: [],
      current: {
        timestamp: new Date(views.clock.now()).toISOString(), uptimeSeconds: views.uptimeSeconds(),
        cpu: { user_us: cpu.user, system_us: cpu.system }, memory: { rss_bytes: mem.rss, heap_used_bytes: mem.heapUsed },
      },
    };
  });
  app.get<Replies<'GET /api/v1/analytics/worker-metrics'>>('/api/v1/analytics/worker-metrics', async () => ({ timeSeries: [], workers: [] }));

  // The reference's remaining analytics read PostgreSQL internals or its own stats tables; this
  // broker has neither, so they answer neutral documents (docs/http-api.md#status-and-analytics) that say so, instead of 404s
  // that make the official clients' admin helpers throw.
  const neutral = (name: string, body: Record<string, unknown>) =>
    app.get(`/api/v1/analytics/${name}`, async () => ({ ...body, engine: 'sqlite', supported: false }));
  neutral('postgres-stats', { database: null, tables: [], connections: null });
  neutral('queue-parked-replicas', { replicas: [] });
  neutral('workload', { queues: [], timeSeries: [] });
  neutral('retention', { queues: [], timeSeries: [] });
  neutral('dlq-signatures', { signatures: [] });
  neutral('partition-liveness', { partitions: [] });
  neutral('queue-ops', { queues: [], timeSeries: [] });
  app.get<Replies<'GET /api/v1/analytics/queue-lag'>>('/api/v1/analytics/queue-lag', async () => []);
}
