/** `POST /api/v1/push`: 201 with one result per item, in order (docs/http-api.md#push). */
import type { FastifyInstance } from 'fastify';
import type { PushItem } from '../../broker/messaging/push.js';
import { QueenError } from '../../errors.js';
import type { RouteContext } from '../app.js';
import { producerSubOf } from '../identity.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';
import { mapPacked } from '../../util/arrays.js';

/** JSON schema of one push item (shared with transaction push ops). */
export const pushItemSchema = {
  type: 'object',
  required: ['queue'],
  properties: {
    queue: { type: 'string' },
    partition: { type: 'string' },
    payload: {},
    data: {},
    transactionId: { type: ['string', 'null'] },
    traceId: { type: ['string', 'null'] },
  },
} as const;

interface RawItem {
  queue: string;
  partition?: string;
  payload?: unknown;
  data?: unknown;
  transactionId?: string | null;
  traceId?: string | null;
}

/**
 * Normalises a validated raw item: `payload`, else `data` (JS client alias); neither ⇒ 400.
 * @throws QueenError `invalid_request`
 */
export function toPushItem(raw: RawItem, where: string): PushItem {
  let payload: unknown;
  if ('payload' in raw) payload = raw.payload;
  else if ('data' in raw) payload = raw.data;
  else throw new QueenError('invalid_request', `${where}.payload is required`);
  return {
    queue: raw.queue,
    partition: raw.partition,
    payload,
    transactionId: raw.transactionId ?? undefined,
    traceId: raw.traceId ?? null,
  };
}

/** Fastify plugin registering the routes this module describes. */
export async function pushRoutes(app: FastifyInstance, { broker, config }: RouteContext): Promise<void> {
  const schema = {
    body: {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', maxItems: config.limits.maxPushItems, items: pushItemSchema } },
    },
  };
  app.post<{ Body: { items: RawItem[] } } & Replies<'POST /api/v1/push'>>('/api/v1/push', {
    preValidation: async (req) => {
      const b = req.body as { items?: unknown } | undefined;
      if (!b || typeof b !== 'object' || !Array.isArray(b.items)) throw new QueenError('items_required');
      if (b.items.length > config.limits.maxPushItems) {
        throw new QueenError('batch_too_large', `items has ${b.items.length} entries; the limit is ${config.limits.maxPushItems} (QUEEN_MAX_PUSH_ITEMS)`);
      }
    },
    schema,
  }, async (req, reply) => {
    const items = mapPacked(req.body.items, (raw, i) => toPushItem(raw, `items[${i}]`));
    const results = await broker.push(items, producerSubOf(req), req.tenant);
    return reply.code(201).send(wire(results));
  });
}
