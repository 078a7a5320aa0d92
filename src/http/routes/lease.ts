/** `POST /api/v1/lease/:leaseId/extend` (docs/http-api.md#lease-extension): body `{seconds?}`, default 60. */
import type { FastifyInstance } from 'fastify';
import { QueenError } from '../../errors.js';
import { controlNumber } from '../../util/json.js';
import type { RouteContext } from '../app.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

/** Fastify plugin registering the routes this module describes. */
export async function leaseRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  app.post<{ Params: { leaseId: string } } & Replies<'POST /api/v1/lease/:leaseId/extend'>>('/api/v1/lease/:leaseId/extend', async (req) => {
    const body = req.body as { seconds?: unknown } | undefined | null;
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
      throw new QueenError('invalid_request', 'body must be a JSON object like {"seconds": 60}');
    }
    const s = controlNumber(body?.seconds);
    let seconds = 60;
    if (s !== undefined && s !== null) {
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 1 || s > 2_147_483) {
        throw new QueenError('invalid_request', 'seconds must be an integer between 1 and 2147483');
      }
      seconds = s;
    }
    return wire(await broker.extendLease(req.params.leaseId, seconds, req.tenant));
  });
}
