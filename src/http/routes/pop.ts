/**
 * The three pop routes (docs/http-api.md#pop): a queue, one partition, or namespace/task
 * discovery. 200 with messages, or 204 with no body when there is nothing (also after a
 * long-poll times out). A client that disconnects while parked gets nothing claimed; a claim made
 * for a client that left before its answer was written is handed back (Broker.handBack).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QUEUE_MODE } from '../../broker/broker.js';
import type { PopRequest } from '../../broker/messaging/pop.js';
import { QueenError } from '../../errors.js';
import { upstreamSignal } from '../../model/in-process.js';
import { parseSubscriptionFrom } from '../../model/subscription.js';
import type { RouteContext } from '../app.js';
import { qBool, qInt, qIntOpt, qString, type Query } from '../query.js';
import type { Replies } from '../schemas/types.js';

/** Fastify plugin registering the routes this module describes. */
export async function popRoutes(app: FastifyInstance, { broker, config }: RouteContext): Promise<void> {
  const L = config.limits;

  function parse(q: Query, queue: string | undefined, partition: string | undefined): PopRequest {
    const group = qString(q, 'consumerGroup');
    for (const [kind, v] of [['consumerGroup', group], ['namespace', qString(q, 'namespace')], ['task', qString(q, 'task')]] as const) {
      if (v !== undefined) broker.checkName(kind, v);
    }
    const conflation = qBool(q, 'conflation', false);
    // commitOnDelivery is the name the reference documents now; autoAck stays as its alias, and
    // either one set to true commits at delivery (docs/http-api.md#pop).
    const autoAck = qBool(q, 'commitOnDelivery', false) || qBool(q, 'autoAck', false);
    if (conflation && (group === undefined || group === '' || group === QUEUE_MODE)) {
      // The queue's built-in group, named or not, never conflates (resolveSubscription).
      throw new QueenError('invalid_request', `conflation requires a named consumerGroup (not the queue's built-in ${QUEUE_MODE})`, { success: false, messages: [] });
    }
    if (conflation && autoAck) {
      throw new QueenError('invalid_request', 'conflation cannot be combined with commitOnDelivery (autoAck)', { success: false, messages: [] });
    }
    const from = qString(q, 'subscriptionFrom');
    if (from?.trim()) parseSubscriptionFrom(from); // a bad value is a 400 now, not only at the group's first contact
    const wait = qBool(q, 'wait', false);
    return {
      queue,
      partition,
      namespace: qString(q, 'namespace') || undefined,
      task: qString(q, 'task') || undefined,
      group: group === undefined || group === '' ? QUEUE_MODE : group,
      batch: qInt(q, 'batch', config.popDefaultBatch, 1, L.maxPopBatch),
      partitions: qInt(q, 'partitions', 1, 1, L.maxPopPartitions),
      wait,
      timeoutMs: qInt(q, 'timeout', config.popDefaultTimeoutMs, 0, L.maxPopTimeoutMs),
      autoAck,
      conflation,
      leaseSeconds: qIntOpt(q, 'leaseSeconds', 1, 2_147_483),
      subscription: { mode: qString(q, 'subscriptionMode'), from, since: undefined, conflation },
      tenant: undefined,
    };
  }

  async function answer(req: FastifyRequest, reply: FastifyReply, pop: PopRequest) {
    const abort = new AbortController();
    const onClose = () => { if (!reply.raw.writableFinished) abort.abort(); };
    reply.raw.once('close', onClose);
    const upstream = upstreamSignal(req.raw); // the embedded proxy's budget ran out (it answered 504)
    upstream?.listen(onClose);
    try {
      pop.tenant = req.tenant; // `pop` is this request's own (parse)
      const result = await broker.pop(pop, abort.signal);
      // Answered by the proxy meanwhile, or the client is gone: nobody receives these messages.
      const unreceived = reply.raw.writableEnded || reply.raw.destroyed || abort.signal.aborted;
      if (unreceived && result && 'leaseId' in result) await broker.handBack(result.leaseId);
      if (reply.raw.writableEnded) return reply;
      if (!result || unreceived) return reply.code(204).send(); // nobody reads an answer to a gone client
      return reply.code(200).send(result);
    } finally {
      reply.raw.off('close', onClose);
      upstream?.unlisten(onClose);
    }
  }

  // Pops change state (leases, auto-acks): no automatic HEAD twin, so a `curl -I` or a monitor's
  // HEAD can never claim or consume anything (it answers 404 no_such_route).
  const noHead = { exposeHeadRoute: false };

  app.get<{ Params: { queue: string }; Querystring: Query } & Replies<'GET /api/v1/pop/queue/:queue'>>('/api/v1/pop/queue/:queue', noHead, async (req, reply) => {
    broker.checkName('queue', req.params.queue);
    return answer(req, reply, parse(req.query, req.params.queue, undefined));
  });

  app.get<{ Params: { queue: string; partition: string }; Querystring: Query } & Replies<'GET /api/v1/pop/queue/:queue/partition/:partition'>>('/api/v1/pop/queue/:queue/partition/:partition',
    noHead,
    async (req, reply) => {
      broker.checkName('queue', req.params.queue);
      broker.checkName('partition', req.params.partition);
      return answer(req, reply, parse(req.query, req.params.queue, req.params.partition));
    },
  );

  app.get<{ Querystring: Query } & Replies<'GET /api/v1/pop'>>('/api/v1/pop', noHead, async (req, reply) => {
    const pop = parse(req.query, undefined, undefined);
    if (!pop.namespace && !pop.task) {
      throw new QueenError('namespace_or_task_required', undefined, { success: false, messages: [] });
    }
    return answer(req, reply, pop);
  });
}
