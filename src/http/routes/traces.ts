/** Trace routes (docs/http-api.md#traces): record an event (201) and list by message, by name, and the names. */
import type { FastifyInstance } from 'fastify';
import { recordTrace, traceNames, tracesByName, tracesOfMessage } from '../../broker/admin/traces.js';
import { QueenError } from '../../errors.js';
import { qInt, type Query } from '../query.js';
import { bodyObject, type OpsContext } from './ops-context.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';
import { checkNameText } from '../../util/names.js';

function str(b: Record<string, unknown>, k: string, required: boolean): string | undefined {
  const v = b[k];
  if (v === undefined || v === null || v === '') {
    if (required) throw new QueenError('invalid_request', `${k} is required`, { success: false });
    return undefined;
  }
  if (typeof v !== 'string') throw new QueenError('invalid_request', `${k} must be a string`, { success: false });
  checkNameText(k, v); // the message it names is looked up (PostgreSQL cannot be asked for a NUL)
  return v;
}

/** Fastify plugin registering the routes this module describes. */
export async function traceRoutes(app: FastifyInstance, { broker }: OpsContext): Promise<void> {
  app.post<Replies<'POST /api/v1/traces'>>('/api/v1/traces', async (req, reply) => {
    const b = bodyObject(req.body);
    if (!('data' in b) || b.data === undefined) throw new QueenError('invalid_request', 'data is required', { success: false });
    const out = await recordTrace(broker, req.tenant, {
      transactionId: str(b, 'transactionId', true)!, partitionId: str(b, 'partitionId', true)!,
      consumerGroup: str(b, 'consumerGroup', false), eventType: str(b, 'eventType', false), workerId: str(b, 'workerId', false),
      traceNames: b.traceNames, data: b.data,
    });
    return reply.code(201).send(out);
  });

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/traces/names'>>('/api/v1/traces/names', async (req) =>
    wire(await traceNames(broker, req.tenant, qInt(req.query, 'limit', 50, 1, 1000), qInt(req.query, 'offset', 0, 0, 1_000_000))));

  app.get<{ Params: { traceName: string }; Querystring: Query } & Replies<'GET /api/v1/traces/by-name/:traceName'>>('/api/v1/traces/by-name/:traceName', async (req) =>
    wire(await tracesByName(broker, req.tenant, req.params.traceName, qInt(req.query, 'limit', 100, 1, 1000), qInt(req.query, 'offset', 0, 0, 1_000_000))));

  app.get<{ Params: { partitionId: string; transactionId: string } } & Replies<'GET /api/v1/traces/:partitionId/:transactionId'>>('/api/v1/traces/:partitionId/:transactionId', async (req) =>
    wire(await tracesOfMessage(broker, req.tenant, req.params.partitionId, req.params.transactionId)));
}
