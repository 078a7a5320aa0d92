/** `GET /api/v1/dlq` (spec http-api.md §4.3): dead letters with queue/group/time filters. */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../app.js';
import { qInt, qString, qTime, type Query } from '../query.js';

/** Fastify plugin registering the routes this module describes. */
export async function dlqRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  app.get<{ Querystring: Query }>('/api/v1/dlq', async (req) => {
    const q = req.query;
    const filter: Parameters<typeof broker.listDlq>[0] = {
      limit: qInt(q, 'limit', 100, 1, 1000),
      offset: qInt(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
    };
    const queue = qString(q, 'queue');
    const group = qString(q, 'consumerGroup');
    const from = qTime(q, 'from');
    const to = qTime(q, 'to');
    if (queue) filter.queue = queue;
    if (group) filter.group = group;
    if (from !== undefined) filter.from = from;
    if (to !== undefined) filter.to = to;
    return broker.listDlq(filter);
  });
}
