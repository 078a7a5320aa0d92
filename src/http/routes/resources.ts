/** Queue resources (docs/http-api.md#resources): list, detail, delete. */
import type { FastifyInstance } from 'fastify';
import { AdminJobs } from '../../broker/jobs/admin-jobs.js';
import { listQueues, queueDetail } from '../../broker/admin/resources.js';
import type { RouteContext } from '../app.js';
import type { Answer, Replies } from '../schemas/types.js';
import { unchecked } from '../schemas/wire.js';

/** Fastify plugin registering the routes this module describes. */
export async function resourceRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  const ops = AdminJobs.for(broker);

  app.get<Replies<'GET /api/v1/resources/queues'>>('/api/v1/resources/queues', async () =>
    unchecked<Answer<'GET /api/v1/resources/queues'>>(listQueues(broker.engine, ops.activity, Date.now())));

  app.get<{ Params: { queue: string } } & Replies<'GET /api/v1/resources/queues/:queue'>>('/api/v1/resources/queues/:queue', async (req) =>
    unchecked<Answer<'GET /api/v1/resources/queues/:queue'>>(queueDetail(broker.engine, ops.activity, req.params.queue, Date.now())));

  app.delete<{ Params: { queue: string } } & Replies<'DELETE /api/v1/resources/queues/:queue'>>('/api/v1/resources/queues/:queue', async (req) => broker.deleteQueue(req.params.queue));
}
