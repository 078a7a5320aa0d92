/** Queue resources (spec http-api.md §4.1): list, detail, delete. */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../app.js';

export async function resourceRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  app.get('/api/v1/resources/queues', async () => broker.listQueues());

  app.get<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', async (req) => broker.queueDetail(req.params.queue));

  app.delete<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', async (req) => broker.deleteQueue(req.params.queue));
}
