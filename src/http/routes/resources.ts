/** Queue resources (docs/http-api.md#resources): list, detail, delete. */
import type { FastifyInstance } from 'fastify';
import { AdminJobs } from '../../broker/jobs/admin-jobs.js';
import { listQueues, queueDetail } from '../../broker/admin/resources.js';
import type { RouteContext } from '../app.js';

/** Fastify plugin registering the routes this module describes. */
export async function resourceRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  const ops = AdminJobs.for(broker);

  app.get('/api/v1/resources/queues', async () => listQueues(broker.engine, ops.activity, Date.now()));

  app.get<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', async (req) =>
    queueDetail(broker.engine, ops.activity, req.params.queue, Date.now()));

  app.delete<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', async (req) => broker.deleteQueue(req.params.queue));
}
