/**
 * Dead-letter administration (docs/http-api.md#dead-letters) beyond the listing of dlq.ts: purge one
 * queue's dead letters (the queue is required: never a broker-wide delete) and replay one by id.
 */
import type { FastifyInstance } from 'fastify';
import { purgeDeadLetters, replayDeadLetter, type ReplayTarget } from '../../broker/admin/messages.js';
import { QueenError } from '../../errors.js';
import { qString, type Query } from '../query.js';
import { bodyObject, type OpsContext } from './ops-context.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

/** Fastify plugin registering the routes this module describes. */
export async function dlqAdminRoutes(app: FastifyInstance, { broker, ops, views }: OpsContext): Promise<void> {
  app.delete<{ Querystring: Query } & Replies<'DELETE /api/v1/dlq'>>('/api/v1/dlq', async (req) => {
    const queue = qString(req.query, 'queue');
    if (!queue) throw new QueenError('queue_required', undefined, { success: false });
    return wire(await purgeDeadLetters(broker, ops.activity, req.tenant, queue, qString(req.query, 'consumerGroup') || undefined));
  });

  app.post<{ Params: { id: string } } & Replies<'POST /api/v1/dlq/:id/replay'>>('/api/v1/dlq/:id/replay', async (req) => {
    const b = bodyObject(req.body, { success: false });
    const target: ReplayTarget = {};
    for (const k of ['queue', 'partition'] as const) {
      if (b[k] === undefined || b[k] === null) continue;
      if (typeof b[k] !== 'string' || (b[k] as string).trim() === '') {
        throw new QueenError('invalid_request', `${k} must be a non-empty string`, { success: false });
      }
      broker.checkName(k, b[k] as string);
      target[k] = b[k] as string;
    }
    return wire(await replayDeadLetter(broker, ops.activity, req.tenant, () => views.deadLetter(req.tenant, req.params.id), target, ops.maintenance.diverting));
  });
}
