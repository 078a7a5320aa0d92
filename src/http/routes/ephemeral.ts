/**
 * The ephemeral queue routes (docs/ephemeral.md#routes): push, pop, ack, configure, reset,
 * delete, the two status reads and the kill switch. Every route is gated by the kill switch first
 * (docs/ephemeral.md#common-rules); a push is parsed before it is charged against the tenant's
 * message rate. Refusals answer `{"error","code"}` with the codes of docs/ephemeral.md#status-codes.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkName, MAX_ITEMS, QUEUE_MODE, type AckOutcome, type EphemeralMessage, type ShippedRing } from '../../broker/ephemeral/engine.js';
import { parseId } from '../../broker/ephemeral/ids.js';
import { RELAY_MS, type EphemeralNode, type EphemeralNodes as EphemeralNodesOf } from '../../broker/ephemeral/nodes.js';
import { sameSecret } from '../../util/secret.js';
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

/** Deadline of each peer's answer to a fanned-out admin verb, ms. */
const FAN_OUT_MS = 5000;

/** Fastify plugin registering the routes this module describes. */
export async function ephemeralRoutes(app: FastifyInstance, { services, config }: RouteContext): Promise<void> {
  const engine = services.ephemeral;
  const nodes = services.ephemeralNodes;
  const raftToken = config.tenancy.raftToken;
  const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
  /** The request came from another node (`x-queen-eph-fwd`): it is never relayed again. */
  const isRelay = (req: FastifyRequest): boolean => req.headers['x-queen-eph-fwd'] !== undefined;
  /** A relay that proves itself with `QUEEN_RAFT_TOKEN` (docs/cluster.md#the-node-token). */
  const verified = (req: FastifyRequest): boolean => {
    const token = one(req.headers['x-queen-raft-token']);
    return isRelay(req) && raftToken !== undefined && token !== undefined && sameSecret(token, raftToken);
  };

  /**
   * Serves a request on the partition's owner (docs/ephemeral.md#multi-node): true when it was
   * relayed and answered, false when this node owns the partition (serve it here).
   * @throws QueenError `owner_moved` (a relay reached a node that does not own the partition, or the
   *   owner moved twice), `ephemeral_forward_failed` (the owner did not answer, twice)
   */
  const relay = async (req: FastifyRequest, reply: FastifyReply, tenant: string, queue: string, partition: string,
    path: string, body: string | undefined, deadlineMs: number, signal?: AbortSignal): Promise<boolean> => {
    if (!nodes) return false;
    let owner: EphemeralNode = nodes.owner(tenant, queue, partition);
    if (owner.self) return false;
    // A relay is never relayed again; a stopping node says so, and the relaying node excludes it.
    if (isRelay(req)) throw new QueenError(nodes.stopping ? 'leaving' : 'owner_moved');
    // What this node still holds for the partition goes to the owner first.
    await nodes.shipOne(tenant, queue, partition);
    for (let attempt = 0; ; attempt++) {
      let failed = false;
      try {
        const r = await nodes.forward(owner, req.method, path, tenant, one(req.headers.authorization), body, deadlineMs, signal);
        if (!(r.status === 503 && (r.code === 'owner_moved' || r.code === 'leaving'))) {
          if (r.retryAfter !== undefined) reply.header('retry-after', r.retryAfter);
          reply.code(r.status).type(r.contentType).send(r.body);
          return true;
        }
        if (r.code === 'leaving') nodes.leavingAnswered(owner);
      } catch (e) {
        if (signal?.aborted) throw e;
        failed = true;
      }
      if (attempt > 0) throw new QueenError(failed ? 'ephemeral_forward_failed' : 'owner_moved');
      nodes.recompute();
      owner = nodes.owner(tenant, queue, partition);
      if (owner.self) return false;
    }
  };

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

  /**
   * Acks split by the owner of each id's partition (docs/ephemeral.md#multi-node): this node's
   * share is acked here, every other owner's share is relayed in one call per owner; the outcomes
   * come back in the order sent.
   * @throws QueenError `ephemeral_forward_failed` when an owner does not answer
   */
  const ackAcross = async (req: FastifyRequest, tenant: string, queue: string, group: string,
    acks: { id: unknown; status: 'completed' | 'failed' }[]): Promise<AckOutcome[]> => {
    const remote = new Map<string, { node: EphemeralNode; idx: number[] }>();
    const local: number[] = [];
    acks.forEach((a, i) => {
      const parsed = parseId(a.id);
      const owner = parsed ? nodes!.owner(tenant, queue, parsed.partition) : undefined;
      if (!owner || owner.self) return void local.push(i);
      let r = remote.get(owner.serverId);
      if (!r) remote.set(owner.serverId, (r = { node: owner, idx: [] }));
      r.idx.push(i);
    });
    const out: AckOutcome[] = new Array<AckOutcome>(acks.length);
    const mine = engine.ack(tenant, queue, group, local.map((i) => acks[i]!));
    local.forEach((i, k) => { out[i] = mine[k]!; });
    await Promise.all([...remote.values()].map(async ({ node, idx }) => {
      const body = JSON.stringify({ queue, group, acks: idx.map((i) => ({ id: acks[i]!.id, status: acks[i]!.status })) });
      let answer: { results?: { outcome?: unknown }[] } | undefined;
      try {
        const r = await nodes!.forward(node, 'POST', '/api/v1/ephemeral/ack', tenant, one(req.headers.authorization), body, RELAY_MS);
        if (r.status === 200) answer = JSON.parse(r.body.toString('utf8')) as typeof answer;
      } catch { /* answered below */ }
      if (!answer || !Array.isArray(answer.results)) throw new QueenError('ephemeral_forward_failed');
      idx.forEach((i, k) => {
        const o = answer!.results![k]?.outcome;
        out[i] = o === 'acked' || o === 'redelivered' || o === 'stale' || o === 'unknown' ? o : 'unknown';
      });
    }));
    return out;
  };

  /**
   * Sends an admin verb (configure, reset, delete) to every other node (docs/ephemeral.md#multi-node),
   * each bounded by {@link FAN_OUT_MS}; a relayed request is not fanned out again.
   * @returns the JSON answers of the peers that answered 2xx (the others are logged and skipped)
   */
  const fanOut = async (req: FastifyRequest, tenant: string, method: string, path: string, body: string | undefined): Promise<Record<string, unknown>[]> => {
    if (!nodes || isRelay(req)) return [];
    const answers = await Promise.all(nodes.peers().map(async (peer) => {
      try {
        const r = await nodes.forward(peer, method, path, tenant, one(req.headers.authorization), body, FAN_OUT_MS);
        if (r.status >= 200 && r.status < 300) return JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
        req.log.warn({ peer: peer.serverId, status: r.status, path }, 'a peer refused an ephemeral admin verb');
      } catch (e) {
        req.log.warn({ peer: peer.serverId, err: e, path }, 'a peer did not answer an ephemeral admin verb');
      }
      return undefined;
    }));
    return answers.filter((a): a is Record<string, unknown> => a !== undefined);
  };

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
    if (nodes && !nodes.owner(req.tenant, queue, partition).self) {
      engine.gate(req.tenant, 0); // the owner charges the message rate
      const text = `{"queue":${JSON.stringify(queue)},"partition":${JSON.stringify(partition)},"messages":[${payloads.map((p) => `{"payload":${p}}`).join(',')}]}`;
      if (await relay(req, reply, req.tenant, queue, partition, '/api/v1/ephemeral/push', text, RELAY_MS)) return reply;
    }
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
    const abort = wait || (nodes && partition !== undefined) ? new AbortController() : undefined;
    const onClose = (): void => { if (!reply.raw.writableFinished) abort!.abort(); };
    const upstream = abort ? upstreamSignal(req.raw) : undefined; // the embedded proxy's budget ran out (it answered 504)
    if (abort) reply.raw.once('close', onClose);
    upstream?.listen(onClose);
    try {
      // A pop naming a partition is served by its owner; one naming none serves what this node holds.
      if (nodes && partition !== undefined) {
        const timeoutMs = clampedInt(q, 'timeout', Math.min(config.popDefaultTimeoutMs, 300_000), 0, 300_000);
        if (await relay(req, reply, tenant, queue, partition, req.url, undefined, wait ? timeoutMs + 5000 : RELAY_MS, abort?.signal)) return reply;
      }
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
      upstream?.unlisten(onClose);
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
    const outcomes: AckOutcome[] = nodes && !isRelay(req) ? await ackAcross(req, tenant, queue, group, acks) : engine.ack(tenant, queue, group, acks);
    const text = ackAnswer(acks, outcomes);
    if (text !== undefined) return reply.type('application/json; charset=utf-8').send(text);
    return { results: acks.map((a, i) => ({ id: a.id, outcome: outcomes[i] })) };
  });

  app.post('/api/v1/ephemeral/configure', async (req, reply) => {
    const tenant = gate(req);
    const body = objectBody(req.body);
    const queue = name(body.queue, 'queue', true)!;
    const row = await engine.configure(tenant, queue, body.options);
    await fanOut(req, tenant, 'POST', '/api/v1/ephemeral/configure', JSON.stringify({ queue, options: row.options }));
    return reply.code(201).send({ queue, options: row.options, updatedAt: new Date(row.updatedAt).toISOString() });
  });

  app.post('/api/v1/ephemeral/reset', async (req) => {
    const tenant = gate(req);
    const queue = name(objectBody(req.body).queue, 'queue', true)!;
    let dropped = engine.reset(tenant, queue);
    for (const a of await fanOut(req, tenant, 'POST', '/api/v1/ephemeral/reset', JSON.stringify({ queue }))) if (typeof a.dropped === 'number') dropped += a.dropped;
    return { queue, dropped };
  });

  app.delete<{ Params: { queue: string } }>('/api/v1/ephemeral/queue/:queue', async (req) => {
    const tenant = gate(req);
    const queue = name(req.params.queue, 'queue', true)!;
    const r = await engine.delete(tenant, queue);
    await fanOut(req, tenant, 'DELETE', `/api/v1/ephemeral/queue/${encodeURIComponent(queue)}`, undefined);
    return { queue, ...r };
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

  // Relay routes between nodes (docs/ephemeral.md#multi-node): a verified relay only, and only
  // where there are nodes (on SQLite there is no verified relay).
  const internal = (req: FastifyRequest): EphemeralNodesOf => {
    if (!nodes || !verified(req)) throw new QueenError('internal_only');
    return nodes;
  };
  app.post('/api/v1/ephemeral/_adopt', async (req) => {
    const n = internal(req);
    if (n.stopping) throw new QueenError('leaving');
    const body = objectBody(req.body);
    if (!Array.isArray(body.rings)) throw bad('rings must be an array');
    let malformed = 0;
    const rings: ShippedRing[] = [];
    for (const r of body.rings as unknown[]) {
      const o = (r ?? {}) as Record<string, unknown>;
      if (typeof o.queue !== 'string' || typeof o.partition !== 'string' || !Array.isArray(o.messages)) {
        malformed++;
        continue;
      }
      const messages = (o.messages as unknown[]).map((m) => {
        const x = (m ?? {}) as { t?: unknown; p?: unknown };
        return { t: typeof x.t === 'number' && Number.isFinite(x.t) ? x.t : Date.now(), p: stringifyClientJson(x.p === undefined ? null : x.p) };
      });
      const groups = (Array.isArray(o.groups) ? o.groups as unknown[] : []).map((g) => {
        const x = (g ?? {}) as Record<string, unknown>;
        const nums = (v: unknown): number[] => (Array.isArray(v) ? v.filter((y): y is number => Number.isSafeInteger(y)) : []);
        return {
          g: typeof x.g === 'string' ? x.g : '', next: Number.isSafeInteger(x.next) ? x.next as number : 0, redeliver: nums(x.redeliver),
          attempts: (Array.isArray(x.attempts) ? x.attempts as unknown[] : []).filter((p): p is [number, number] => Array.isArray(p) && p.length === 2 && Number.isSafeInteger(p[0]) && Number.isSafeInteger(p[1])),
          skipped: Number.isSafeInteger(x.skipped) ? x.skipped as number : 0,
        };
      });
      rings.push({ queue: o.queue, partition: o.partition, messages, groups });
    }
    const l = (body.leaving ?? {}) as { node?: unknown; epoch?: unknown };
    const epoch = Number(l.epoch);
    const leaving = typeof l.node === 'string' && l.node !== '' ? { node: l.node, epoch: Number.isSafeInteger(epoch) ? epoch : Number.MAX_SAFE_INTEGER } : undefined;
    const r = await n.receive(req.tenant, rings, { hop: body.hop === true, leaving });
    return { adopted: r.adopted, refusedRings: r.refusedRings + malformed };
  });
  app.post('/api/v1/ephemeral/_leaving', async (req) => {
    const n = internal(req);
    const body = objectBody(req.body);
    if (typeof body.node !== 'string' || body.node === '') throw bad('node is required');
    const epoch = Number(body.epoch);
    n.markLeaving(body.node, Number.isSafeInteger(epoch) ? epoch : Number.MAX_SAFE_INTEGER);
    return { ok: true };
  });
  app.get('/api/v1/ephemeral/_ready', noHead, async (req) => {
    const n = internal(req);
    if (n.stopping) throw new QueenError('leaving');
    return { node: n.serverId, epoch: String(n.epoch) };
  });

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
