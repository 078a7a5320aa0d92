/**
 * Resource views (docs/http-api.md#resources) beyond the queue list/detail/delete of resources.ts:
 * overview, namespaces, tasks, partitions of a queue, queue depth, and the stats refresh (stats are
 * live here, so it only reports that).
 */
import type { FastifyInstance } from 'fastify';
import { qInt, qString, type Query } from '../query.js';
import type { OpsContext } from './ops-context.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

/** Fastify plugin registering the routes this module describes. */
export async function resourceAdminRoutes(app: FastifyInstance, { views }: OpsContext): Promise<void> {

  app.get<Replies<'GET /api/v1/resources/overview'>>('/api/v1/resources/overview', async (req) => wire(await views.overview(req.tenant)));
  app.get<Replies<'GET /api/v1/resources/namespaces'>>('/api/v1/resources/namespaces', async (req) => wire(await views.namespaces(req.tenant)));
  app.get<Replies<'GET /api/v1/resources/tasks'>>('/api/v1/resources/tasks', async (req) => wire(await views.tasks(req.tenant)));

  const partitions = async (tenant: string, queue: string | undefined, q: Query) => {
    const limit = qInt(q, 'limit', 100, 1, 10_000);
    const after = qString(q, 'after') || undefined;
    return wire(await views.partitions(tenant, queue, limit, after));
  };
  // JS Admin.getPartitions (docs/http-api.md#resources): optional queue as a query parameter.
  app.get<{ Querystring: Query } & Replies<'GET /api/v1/resources/partitions'>>('/api/v1/resources/partitions', async (req) => partitions(req.tenant, qString(req.query, 'queue'), req.query));
  app.get<{ Params: { queue: string }; Querystring: Query } & Replies<'GET /api/v1/resources/queues/:queue/partitions'>>('/api/v1/resources/queues/:queue/partitions', async (req) =>
    partitions(req.tenant, req.params.queue, req.query));

  app.get<{ Params: { queue: string }; Querystring: Query } & Replies<'GET /api/v1/resources/queues/:queue/depth'>>('/api/v1/resources/queues/:queue/depth', async (req) =>
    wire(await views.depth(req.tenant, req.params.queue, qString(req.query, 'group') || qString(req.query, 'consumerGroup') || undefined)));

  app.post<Replies<'POST /api/v1/stats/refresh'>>('/api/v1/stats/refresh', async () => ({ success: true, refreshed: false, reason: 'stats are live', engine: 'sqlite' }));
}
