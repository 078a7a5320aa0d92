/**
 * The ephemeral queue routes (docs/ephemeral.md#routes): push, pop, ack, configure, reset,
 * delete, the two status reads and the kill switch. Every route is gated by the kill switch first
 * (docs/ephemeral.md#common-rules); a push is parsed before it is charged against the tenant's
 * message rate. Refusals answer `{"error","code"}` with the codes of docs/ephemeral.md#status-codes.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkName, MAX_ITEMS, QUEUE_MODE, type AckOutcome, type EphemeralMessage } from '../../broker/ephemeral/engine.js';
import { depth, listing } from '../../broker/ephemeral/status.js';
import { isQueenError, QueenError } from '../../errors.js';
import { upstreamSignal } from '../../model/in-process.js';
import { stringifyClientJson } from '../../util/json.js';
import type { RouteContext } from '../app.js';
import type { Query } from '../query.js';

function bad(message: string): QueenError {
  return new QueenError('ephemeral_bad_request', message);
}

/** The body as an object, or 400. */
function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('body must be a JSON object');
  return body as Record<string, unknown>;
}

/** A required name field (queue, partition, group) checked as docs/ephemeral.md#common-rules says. */
function name(v: unknown, what: string, required: boolean): string | undefined {
  if (v === undefined || v === null || (v === '' && !required)) {
    if (required) throw bad(`${what} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw bad(`${what} must be a string`);
  checkName(v, what);
  return v;
}

/** Query integer clamped into `[min, max]`; not an integer → 400. */
function clampedInt(q: Query, key: string, fallback: number, min: number, max: number): number {
  const raw = q[key];
  const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (v === undefined || v === '') return fallback;
  if (!/^-?\d{1,15}$/.test(v)) throw bad(`${key} must be an integer`);
  return Math.min(max, Math.max(min, Number(v)));
}

function flag(q: Query, key: string): boolean {
  const raw = q[key];
  const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  return v === 'true' || v === '1';
}

/** Normalises an ack status (docs/ephemeral.md#ack). */
function ackStatus(s: unknown): 'completed' | 'failed' {
  return s === undefined || s === null || s === 'completed' || s === 'success' || s === 'acked' || s === 'ok' ? 'completed' : 'failed';
}

/**
 * The pop answer `{queue, messages:[{id, partition, attempts, payload}]}` as JSON text, built
 * directly: each payload is the exact JSON text received at push (docs/ephemeral.md#pop), so it is
 * spliced in as is, and the ids and partitions are JSON-quoted. Same bytes as serializing the
 * object with every payload a RawJson (src/util/json.ts), without the placeholder pass that costs per message.
 */
export function popAnswer(queue: string, messages: readonly EphemeralMessage[]): string {
  let text = `{"queue":${JSON.stringify(queue)},"messages":[`;
  let lastPartition = '';
  let quoted = '""';
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.partition !== lastPartition || i === 0) {
      lastPartition = m.partition;
      quoted = JSON.stringify(m.partition);
    }
    text += `${i === 0 ? '' : ','}{"id":${JSON.stringify(m.id)},"partition":${quoted},"attempts":${m.attempts},"payload":${m.payload}}`;
  }
  return `${text}]}`;
}

/**
 * The ack answer `{results:[{id, outcome}]}` as JSON text when every id is a string (the ids this
 * family hands out); undefined otherwise, and the caller serializes the object losslessly.
 */
export function ackAnswer(acks: readonly { id: unknown }[], outcomes: readonly AckOutcome[]): string | undefined {
  let text = '{"results":[';
  for (let i = 0; i < acks.length; i++) {
    const id = acks[i]!.id;
    if (typeof id !== 'string') return undefined;
    text += `${i === 0 ? '' : ','}{"id":${JSON.stringify(id)},"outcome":"${outcomes[i]!}"}`;
  }
  return `${text}]}`;
}

/** Fastify plugin registering the routes this module describes. */
export async function ephemeralRoutes(app: FastifyInstance, { services, config }: RouteContext): Promise<void> {
  const engine = services.ephemeral;

  // This family answers its own codes: malformed JSON is `ephemeral_bad_request`, and the gates set Retry-After.
  app.setErrorHandler((error: FastifyError, _req: FastifyRequest, reply: FastifyReply) => {
    let e: unknown = error;
    if (isQueenError(error) && (error.code === 'bad_json' || error.code === 'json_too_deep')) e = bad(error.message);
    if (isQueenError(e)) {
      const retry = e.extra?.retryAfterS;
      if (typeof retry === 'number') reply.header('retry-after', String(retry));
      return reply.code(e.status).type('application/json').send({ error: e.message, code: e.code });
    }
    throw error;
  });

  /** The request's tenant once the engine's gates let it through (kill switch, grant, push rate). */
  const gate = (req: FastifyRequest, messages = 0): string => {
    engine.gate(req.tenant, messages);
    return req.tenant;
  };
  const noHead = { exposeHeadRoute: false };

  app.post('/api/v1/ephemeral/push', async (req, reply) => {
    const body = objectBody(req.body);
    const queue = name(body.queue, 'queue', true)!;
    const partition = name(body.partition, 'partition', false) ?? 'Default';
    if (!Array.isArray(body.messages)) throw bad('messages must be an array');
    if (body.messages.length > MAX_ITEMS) throw bad(`at most ${MAX_ITEMS} messages per push`);
    const payloads = body.messages.map((m: unknown, i) => {
      if (m === null || typeof m !== 'object' || Array.isArray(m)) throw bad(`messages[${i}] must be an object like {"payload": …}`);
      const p = (m as { payload?: unknown }).payload;
      return stringifyClientJson(p === undefined ? null : p);
    });
    const tenant = gate(req, payloads.length);
    const pushed = engine.push(tenant, queue, partition, payloads);
    return reply.code(201).send({ pushed });
  });

  app.get('/api/v1/ephemeral/pop', noHead, async (req, reply) => {
    const tenant = gate(req);
    const q = req.query as Query;
    const queue = name(q.queue, 'queue', true)!;
    const partition = name(q.partition, 'partition', false);
    const group = name(q.group, 'group', false) ?? QUEUE_MODE;
    const wait = flag(q, 'wait');
    // Only a long poll can outlive its client: the abort wiring is for those alone.
    const abort = wait ? new AbortController() : undefined;
    const onClose = (): void => { if (!reply.raw.writableFinished) abort!.abort(); };
    const upstream = abort ? upstreamSignal(req.raw) : undefined; // the embedded proxy's budget ran out (it answered 504)
    if (abort) reply.raw.once('close', onClose);
    upstream?.addEventListener('abort', onClose);
    try {
      const messages = await engine.pop(tenant, queue, {
        partition, group,
        batch: clampedInt(q, 'batch', 1, 1, MAX_ITEMS),
        wait,
        timeoutMs: clampedInt(q, 'timeout', Math.min(config.popDefaultTimeoutMs, 300_000), 0, 300_000),
        commitOnDelivery: flag(q, 'commitOnDelivery') || flag(q, 'autoAck'),
        signal: abort?.signal,
      });
      if (reply.raw.writableEnded) return reply; // answered by the proxy meanwhile
      return reply.type('application/json; charset=utf-8').send(popAnswer(queue, messages));
    } finally {
      if (abort) reply.raw.off('close', onClose);
      upstream?.removeEventListener('abort', onClose);
    }
  });

  app.post('/api/v1/ephemeral/ack', async (req, reply) => {
    const tenant = gate(req);
    const body = objectBody(req.body);
    const queue = name(body.queue, 'queue', true)!;
    const group = name(body.group, 'group', false) ?? QUEUE_MODE;
    if (!Array.isArray(body.acks)) throw bad('acks must be an array');
    if (body.acks.length > MAX_ITEMS) throw bad(`at most ${MAX_ITEMS} acks per call`);
    const acks = body.acks.map((a: unknown, i) => {
      if (a === null || typeof a !== 'object' || Array.isArray(a)) throw bad(`acks[${i}] must be an object like {"id": …, "status": "completed"}`);
      const o = a as { id?: unknown; status?: unknown };
      return { id: o.id, status: ackStatus(o.status) };
    });
    const outcomes: AckOutcome[] = engine.ack(tenant, queue, group, acks);
    const text = ackAnswer(acks, outcomes);
    if (text !== undefined) return reply.type('application/json; charset=utf-8').send(text);
    return { results: acks.map((a, i) => ({ id: a.id, outcome: outcomes[i] })) };
  });

  app.post('/api/v1/ephemeral/configure', async (req, reply) => {
    const tenant = gate(req);
    const body = objectBody(req.body);
    const queue = name(body.queue, 'queue', true)!;
    const row = await engine.configure(tenant, queue, body.options);
    return reply.code(201).send({ queue, options: row.options, updatedAt: new Date(row.updatedAt).toISOString() });
  });

  app.post('/api/v1/ephemeral/reset', async (req) => {
    const tenant = gate(req);
    const queue = name(objectBody(req.body).queue, 'queue', true)!;
    return { queue, dropped: engine.reset(tenant, queue) };
  });

  app.delete<{ Params: { queue: string } }>('/api/v1/ephemeral/queue/:queue', async (req) => {
    const tenant = gate(req);
    const queue = name(req.params.queue, 'queue', true)!;
    return { queue, ...(await engine.delete(tenant, queue)) };
  });

  app.get('/api/v1/ephemeral/queues', async (req) => {
    const tenant = gate(req);
    return listing(engine, tenant);
  });

  app.get<{ Params: { queue: string } }>('/api/v1/ephemeral/queues/:queue/depth', async (req) => {
    const tenant = gate(req);
    const queue = name(req.params.queue, 'queue', true)!;
    const group = name((req.query as Query).group, 'group', false);
    const q = engine.find(tenant, queue);
    if (!q) throw new QueenError('ephemeral_queue_not_found');
    return depth(q, group);
  });

  // Relay routes between nodes (docs/ephemeral.md#routes): there is no verified relay on one node.
  const internalOnly = async (): Promise<never> => { throw new QueenError('internal_only'); };
  app.post('/api/v1/ephemeral/_adopt', internalOnly);
  app.post('/api/v1/ephemeral/_leaving', internalOnly);
  app.get('/api/v1/ephemeral/_ready', noHead, internalOnly);

  const killSwitch = () => ({
    ephemeralEnabled: engine.enabled, cellBytes: engine.cellBytes, cellMaxBytes: engine.config.maxBytes, queues: engine.queueCount,
    grantedTenants: 0, requireGrant: engine.config.requireGrant, epoch: engine.epoch,
  });
  app.get('/api/v1/system/ephemeral', async () => killSwitch());
  app.post('/api/v1/system/ephemeral', async (req) => {
    const body = objectBody(req.body);
    if (typeof body.enabled !== 'boolean') throw bad('enabled must be a boolean');
    await engine.setEnabled(body.enabled);
    return killSwitch();
  });
}
