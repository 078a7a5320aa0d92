/**
 * KV routes (docs/http-api.md#kv): `POST /api/v1/kv` (batch; the route the JS client uses),
 * `GET|PUT|DELETE /api/v1/kv/:ns/*` (the key is the rest of the path and may contain `/`; query
 * strings are refused), and the console reads `GET /api/v1/resources/kv/namespaces` and
 * `POST /api/v1/resources/kv/list` (query strings refused too). Registers the lock routes (locks.ts) too: locks are KV rows.
 * Verdicts answer 200; only malformed input is a 4xx.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { rowOut, type KvOp } from '../../broker/coordination/kv.js';
import type { RouteContext } from '../app.js';
import { kvBad, kvKey, kvLimits, kvNamespace, page, parseKvBatch, parseKvOp } from './kv-input.js';
import { lockRoutes } from './locks.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';
import { checkNameText } from '../../util/names.js';

type Obj = Record<string, unknown>;
type KvParams = { ns: string; '*': string };

function noQuery(req: FastifyRequest): void {
  if (req.url.includes('?')) throw kvBad('kv_query_not_allowed', 'query strings are not accepted on /api/v1/kv/:ns/<key>; percent-encode the key');
}

/** The console reads take no parameter in the URL (a key or cursor there would reach access logs). */
function noConsoleQuery(req: FastifyRequest): void {
  if (req.url.includes('?')) throw kvBad('kv_query_not_allowed', 'query strings are not accepted on the KV console reads; send their parameters in the body');
}

function objectBody(body: unknown): Obj {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw kvBad('kv_bad_request', 'body must be a JSON object');
  return body as Obj;
}

/** Fastify plugin registering the routes this module describes. */
export async function kvRoutes(app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { services, config } = ctx;
  const kv = services.kv;
  const limits = kvLimits(config.limits);

  app.post<Replies<'POST /api/v1/kv'>>('/api/v1/kv', async (req) => wire(await kv.batch(parseKvBatch(req.body, limits), req.tenant)));

  type PathReq = FastifyRequest<{ Params: KvParams }>;
  const single = async (req: PathReq, build: (ns: string, key: string, body: Obj) => Obj) => {
    noQuery(req);
    const ns = kvNamespace(req.params.ns, 'path');
    const key = kvKey(req.params['*'], 'path key');
    const op: KvOp = parseKvOp(build(ns, key, objectBody(req.body)), 'body', limits);
    const answer = await kv.batch([op], req.tenant);
    if (!answer.ok) return wire(answer);
    const { index: _index, ...result } = answer.results[0]!;
    return { ns, ...result };
  };
  app.get<{ Params: KvParams } & Replies<'GET /api/v1/kv/:ns/*'>>('/api/v1/kv/:ns/*', (req) => single(req, (ns, key) => ({ op: 'get', ns, key })));
  app.put<{ Params: KvParams } & Replies<'PUT /api/v1/kv/:ns/*'>>('/api/v1/kv/:ns/*', (req) => single(req, (ns, key, body) => ({ ...body, op: 'put', ns, key })));
  app.delete<{ Params: KvParams } & Replies<'DELETE /api/v1/kv/:ns/*'>>('/api/v1/kv/:ns/*', (req) => single(req, (ns, key, body) => ({ ...body, op: 'delete', ns, key })));

  app.get<Replies<'GET /api/v1/resources/kv/namespaces'>>('/api/v1/resources/kv/namespaces', async (req) => {
    noConsoleQuery(req);
    return { namespaces: await kv.namespaces(undefined, req.tenant) };
  });

  app.post<Replies<'POST /api/v1/resources/kv/list'>>('/api/v1/resources/kv/list', async (req) => {
    noConsoleQuery(req);
    const body = objectBody(req.body);
    const ns = kvNamespace(body.ns, 'body');
    const prefix = body.prefix === undefined || body.prefix === null ? '' : body.prefix;
    if (typeof prefix !== 'string') throw kvBad('kv_bad_request', 'body.prefix must be a string');
    checkNameText('body.prefix', prefix); // as getPrefix: a NUL or lone surrogate is 400 invalid_name
    const p = page(body, 'body');
    const got = await kv.reader(req.tenant).scan(ns, prefix, p.after, p.limit + 1);
    const truncated = got.length > p.limit;
    const rows = truncated ? got.slice(0, p.limit) : got;
    return { ns, rows: wire(rows.map((r) => rowOut(r, !p.keysOnly))), truncated, nextAfter: truncated ? rows[rows.length - 1]!.key : null };
  });

  await app.register(lockRoutes, ctx);
}
