/**
 * `POST /api/v1/ack` and `/api/v1/ack/batch` (docs/http-api.md#ack): always 200 with a
 * top-level array holding exactly one outcome per acknowledgement, in order.
 */
import type { FastifyInstance } from 'fastify';
import type { AckInput } from '../../broker/messaging/ack.js';
import { QUEUE_MODE } from '../../broker/broker.js';
import { QueenError } from '../../errors.js';
import type { RouteContext } from '../app.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';
import { mapPacked } from '../../util/arrays.js';
import { checkNameText } from '../../util/names.js';

const nullableString = { type: ['string', 'null'] } as const;

/** JSON schema of one acknowledgement (shared with transaction ack ops). */
export const ackItemProperties = {
  transactionId: { type: 'string', minLength: 1 },
  partitionId: { type: 'string', minLength: 1 },
  status: nullableString,
  error: nullableString,
  consumerGroup: nullableString,
  leaseId: nullableString,
} as const;

interface RawAck {
  transactionId: string;
  partitionId: string;
  status?: string | null;
  error?: string | null;
  consumerGroup?: string | null;
  leaseId?: string | null;
}

/**
 * Validated raw ack → domain input; an absent or null group is queue mode.
 * @throws QueenError `invalid_name` when an identifier holds a NUL or a lone surrogate (no stored
 *   name can, and PostgreSQL cannot even be asked for one: src/util/names.ts)
 */
export function toAckInput(a: RawAck, group: string | null | undefined): AckInput {
  const g = a.consumerGroup ?? group;
  checkNameText('transactionId', a.transactionId);
  checkNameText('partitionId', a.partitionId);
  if (typeof g === 'string') checkNameText('consumerGroup', g);
  if (typeof a.leaseId === 'string') checkNameText('leaseId', a.leaseId);
  return {
    transactionId: a.transactionId, partitionId: a.partitionId, status: a.status, error: a.error ?? null,
    leaseId: a.leaseId ?? null, group: g === undefined || g === null || g === '' ? QUEUE_MODE : g,
  };
}

/** Fastify plugin registering the routes this module describes. */
export async function ackRoutes(app: FastifyInstance, { broker, config }: RouteContext): Promise<void> {
  app.post<{ Body: RawAck } & Replies<'POST /api/v1/ack'>>('/api/v1/ack', {
    schema: { body: { type: 'object', required: ['transactionId', 'partitionId'], properties: ackItemProperties } },
  }, async (req) => {
    return wire(await broker.ack([toAckInput(req.body, undefined)], req.tenant));
  });

  app.post<{ Body: { consumerGroup?: string | null; acknowledgments: RawAck[] } } & Replies<'POST /api/v1/ack/batch'>>('/api/v1/ack/batch', {
    preValidation: async (req) => {
      const acks = (req.body as { acknowledgments?: unknown } | undefined)?.acknowledgments;
      if (Array.isArray(acks) && acks.length > config.limits.maxPushItems) {
        throw new QueenError('batch_too_large', `acknowledgments has ${acks.length} entries; the limit is ${config.limits.maxPushItems} (QUEEN_MAX_PUSH_ITEMS)`);
      }
    },
    schema: {
      body: {
        type: 'object',
        required: ['acknowledgments'],
        properties: {
          consumerGroup: nullableString,
          acknowledgments: {
            type: 'array', maxItems: config.limits.maxPushItems,
            items: { type: 'object', required: ['transactionId', 'partitionId'], properties: ackItemProperties },
          },
        },
      },
    },
  }, async (req) => {
    return wire(await broker.ack(mapPacked(req.body.acknowledgments, (a) => toAckInput(a, req.body.consumerGroup)), req.tenant));
  });
}
