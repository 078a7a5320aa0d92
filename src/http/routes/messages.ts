/**
 * Message routes (docs/http-api.md#messages): listing with filters and keyset pagination (`cursor`
 * from `pagination.nextCursor`), one message by address, delete (dead letters only) and retry
 * (replay of the address's newest dead letter).
 */
import type { FastifyInstance } from 'fastify';
import { deleteDeadLetter, replayDeadLetter, type MessageStatus } from '../../broker/admin/messages.js';
import { QueenError } from '../../errors.js';
import { qInt, qString, qTime, type Query } from '../query.js';
import type { OpsContext } from './ops-context.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

const STATUSES: readonly MessageStatus[] = ['pending', 'processing', 'completed'];

/** Fastify plugin registering the routes this module describes. */
export async function messageRoutes(app: FastifyInstance, { broker, ops, views }: OpsContext): Promise<void> {

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/messages'>>('/api/v1/messages', async (req) => {
    const q = req.query;
    const status = qString(q, 'status') || undefined;
    if (status !== undefined && !STATUSES.includes(status as MessageStatus)) {
      throw new QueenError('invalid_request', `status must be one of ${STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
    }
    const offset = qString(q, 'offset') ?? '';
    if (offset !== '' && offset !== '0') {
      throw new QueenError('invalid_request', 'offset paging is not supported: use cursor (pagination.nextCursor)');
    }
    return wire(await views.listMessages(req.tenant, {
      queue: qString(q, 'queue') || undefined,
      partition: qString(q, 'partition') || undefined,
      namespace: qString(q, 'namespace') || qString(q, 'ns') || undefined,
      task: qString(q, 'task') || undefined,
      from: qTime(q, 'from'),
      to: qTime(q, 'to'),
      status: status as MessageStatus | undefined,
      limit: qInt(q, 'limit', 200, 1, 1000),
      cursor: qString(q, 'cursor') || undefined,
    }));
  });

  app.get<{ Params: { partitionId: string; transactionId: string } } & Replies<'GET /api/v1/messages/:partitionId/:transactionId'>>('/api/v1/messages/:partitionId/:transactionId', async (req) =>
    wire(await views.getMessage(req.tenant, req.params.partitionId, req.params.transactionId)));

  app.delete<{ Params: { partitionId: string; transactionId: string } } & Replies<'DELETE /api/v1/messages/:partitionId/:transactionId'>>('/api/v1/messages/:partitionId/:transactionId', async (req) =>
    wire(await deleteDeadLetter(broker, ops.activity, req.tenant, req.params.partitionId, req.params.transactionId)));

  app.post<{ Params: { partitionId: string; transactionId: string } } & Replies<'POST /api/v1/messages/:partitionId/:transactionId/retry'>>('/api/v1/messages/:partitionId/:transactionId/retry', async (req) => {
    const { partitionId, transactionId } = req.params;
    try {
      return wire(await replayDeadLetter(broker, ops.activity, req.tenant, () => views.deadLetterAt(req.tenant, partitionId, transactionId), {}, ops.maintenance.diverting));
    } catch (e) {
      if (e instanceof QueenError && e.code === 'dlq_not_found') throw new QueenError('message_not_found', 'No dead letter for this message', { success: false });
      throw e;
    }
  });
}
