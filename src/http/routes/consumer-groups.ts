/**
 * Consumer-group routes (docs/http-api.md#consumer-group-administration): listings with lag, detail, delete (all queues or
 * one), seek (queue or partition; to the end or to a time) and the subscription timestamp.
 */
import type { FastifyInstance } from 'fastify';
import { deleteGroup, seek, setSubscriptionTimestamp, type SeekTarget } from '../../broker/admin/consumer-groups.js';
import { QueenError } from '../../errors.js';
import { qBool, qInt, type Query } from '../query.js';
import { bodyObject, type OpsContext } from './ops-context.js';
import { parseIso } from '../../util/time.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

/**
 * Reads a seek body: `{toEnd:true}` or `{timestamp: ISO}`; `emptyIsEnd` for the partition route.
 * @throws QueenError `invalid_request`
 */
function seekTarget(body: unknown, emptyIsEnd: boolean): SeekTarget {
  const b = bodyObject(body);
  if (b.toEnd !== undefined && typeof b.toEnd !== 'boolean') throw new QueenError('invalid_request', 'toEnd must be a boolean');
  const hasTimestamp = b.timestamp !== undefined && b.timestamp !== null;
  if (b.toEnd === true && hasTimestamp) throw new QueenError('invalid_request', 'give toEnd=true or a timestamp, not both', { success: false });
  if (b.toEnd === true) return { toEnd: true };
  if (hasTimestamp) {
    const t = typeof b.timestamp === 'string' ? parseIso(b.timestamp) : undefined;
    if (t === undefined) throw new QueenError('invalid_request', 'timestamp must be an ISO-8601 timestamp');
    return { timestamp: t };
  }
  if (emptyIsEnd && Object.keys(b).length === 0) return { toEnd: true };
  throw new QueenError('invalid_request', 'Must specify toEnd=true or a timestamp', { success: false });
}

/** Fastify plugin registering the routes this module describes. */
export async function consumerGroupRoutes(app: FastifyInstance, { broker, ops, views }: OpsContext): Promise<void> {

  app.get<Replies<'GET /api/v1/consumer-groups'>>('/api/v1/consumer-groups', async (req) => wire(await views.listGroups(req.tenant)));

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/consumer-groups/lagging'>>('/api/v1/consumer-groups/lagging', async (req) =>
    wire(await views.laggingPartitions(req.tenant, qInt(req.query, 'minLagSeconds', 3600, 0, 10 * 365 * 86_400))));

  app.get<{ Params: { group: string } } & Replies<'GET /api/v1/consumer-groups/:group'>>('/api/v1/consumer-groups/:group', async (req) =>
    wire(await views.groupDetail(req.tenant, req.params.group)));

  app.delete<{ Params: { group: string }; Querystring: Query } & Replies<'DELETE /api/v1/consumer-groups/:group'>>('/api/v1/consumer-groups/:group', async (req) =>
    wire(await deleteGroup(broker, req.tenant, req.params.group, undefined, qBool(req.query, 'deleteMetadata', true), ops.cursorMoved)));

  app.delete<{ Params: { group: string; queue: string }; Querystring: Query } & Replies<'DELETE /api/v1/consumer-groups/:group/queues/:queue'>>('/api/v1/consumer-groups/:group/queues/:queue', async (req) =>
    wire(await deleteGroup(broker, req.tenant, req.params.group, req.params.queue, qBool(req.query, 'deleteMetadata', true), ops.cursorMoved)));

  app.post<{ Params: { group: string } } & Replies<'POST /api/v1/consumer-groups/:group/subscription'>>('/api/v1/consumer-groups/:group/subscription', async (req) => {
    broker.checkName('consumerGroup', req.params.group);
    const b = bodyObject(req.body);
    const ts = typeof b.subscriptionTimestamp === 'string' ? parseIso(b.subscriptionTimestamp) : undefined;
    if (ts === undefined) throw new QueenError('invalid_request', 'subscriptionTimestamp (ISO-8601) is required', { success: false });
    return wire(await setSubscriptionTimestamp(broker, req.tenant, req.params.group, ts));
  });

  app.post<{ Params: { group: string; queue: string } } & Replies<'POST /api/v1/consumer-groups/:group/queues/:queue/seek'>>('/api/v1/consumer-groups/:group/queues/:queue/seek', async (req) => {
    broker.checkName('consumerGroup', req.params.group);
    return wire(await seek(broker, req.tenant, req.params.group, req.params.queue, undefined, seekTarget(req.body, false), ops.cursorMoved));
  });

  app.post<{ Params: { group: string; queue: string; partition: string } } & Replies<'POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek'>>('/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek',
    async (req) => {
      broker.checkName('consumerGroup', req.params.group);
      return wire(await seek(broker, req.tenant, req.params.group, req.params.queue, req.params.partition, seekTarget(req.body, true), ops.cursorMoved));
    },
  );
}
