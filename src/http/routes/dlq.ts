/** `GET /api/v1/dlq` (docs/http-api.md#dead-letters): the request tenant's dead letters with queue/group/time filters. */
import type { FastifyInstance } from 'fastify';
import { QueenError } from '../../errors.js';
import type { RouteContext } from '../app.js';
import { qInt, qString, qTime, type Query } from '../query.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

/** Largest `offset` a listing accepts (deeper pages: narrow the filter or the time window). */
const MAX_OFFSET = 1_000_000;

/** Fastify plugin registering the routes this module describes. */
export async function dlqRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  app.get<{ Querystring: Query } & Replies<'GET /api/v1/dlq'>>('/api/v1/dlq', async (req) => {
    const q = req.query;
    const filter: Parameters<typeof broker.listDlq>[0] = {
      tenant: req.tenant,
      limit: qInt(q, 'limit', 100, 1, 1000),
      offset: qInt(q, 'offset', 0, 0, MAX_OFFSET),
    };
    const queue = qString(q, 'queue');
    const group = qString(q, 'consumerGroup');
    const from = qTime(q, 'from');
    const to = qTime(q, 'to');
    if (from !== undefined && to !== undefined && from > to) throw new QueenError('invalid_request', 'from must not be after to');
    if (queue) filter.queue = queue;
    if (group) filter.group = group;
    if (from !== undefined) filter.from = from;
    if (to !== undefined) filter.to = to;
    return wire(await broker.listDlq(filter));
  });
}
