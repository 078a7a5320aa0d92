/** Queue resources (docs/http-api.md#resources): list, detail, delete. */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../app.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

/** Fastify plugin registering the routes this module describes. */
export async function resourceRoutes(app: FastifyInstance, { broker, services }: RouteContext): Promise<void> {
  const views = services.views;

  app.get<Replies<'GET /api/v1/resources/queues'>>('/api/v1/resources/queues', async (req) =>
    wire(await views.listQueues(req.tenant)));

  app.get<{ Params: { queue: string } } & Replies<'GET /api/v1/resources/queues/:queue'>>('/api/v1/resources/queues/:queue', async (req) =>
    wire(await views.queueDetail(req.tenant, req.params.queue)));

  app.delete<{ Params: { queue: string } } & Replies<'DELETE /api/v1/resources/queues/:queue'>>('/api/v1/resources/queues/:queue', async (req) => wire(await broker.deleteQueue(req.params.queue, req.tenant)));
}
