/**
 * The streams routes (docs/streams.md#routes): `POST /streams/v1/queries` (register),
 * `POST /streams/v1/state/get` (read state) and `POST /streams/v1/cycle` (the atomic commit), plus
 * the dashboard's read-only listing `GET /api/v1/streams/queries`. Bodies are validated here
 * (`400 streams_bad_request`, with the reference's extra fields); the cycle answers 200 whenever
 * it ran, `success:false` when it was refused and nothing was committed.
 *
 * Tenancy: every request acts for its own tenant (`req.tenant`, docs/streams.md#tenancy): its
 * queries, state rows, source partitions and sink queues only.
 */
import type { FastifyInstance } from 'fastify';
import { QUEUE_MODE } from '../../broker/broker.js';
import type { CycleAck, CyclePushItem, CycleRequest, CycleStateOp } from '../../broker/streams/cycle.js';
import { StreamsService } from '../../broker/streams/service.js';
import { QueenError } from '../../errors.js';
import { RawJson } from '../../util/json.js';
import { hasBadNameChars } from '../../util/names.js';
import type { RouteContext } from '../app.js';
import { producerSubOf } from '../identity.js';
import type { Query } from '../query.js';

type Obj = Record<string, unknown>;

/** Most state operations, sink items (per cycle) and keys (per read) (docs/streams.md#limits). */
export const MAX_STREAM_ITEMS = 10_000;
/** Longest state key, UTF-8 bytes. */
export const MAX_STATE_KEY_BYTES = 1024;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function bad(message: string, extra: Obj = { success: false }): QueenError {
  return new QueenError('streams_bad_request', message, extra);
}

/** `body` as an object; otherwise 400 `<what> must be a JSON object` (`what`: the request body, or the element's path). */
function objectBody(body: unknown, extra?: Obj, what = 'request body'): Obj {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad(`${what} must be a JSON object`, extra);
  return body as Obj;
}

/** An optional string field; a present non-string is 400. */
function optStr(o: Obj, k: string, where: string): string | undefined {
  const v = o[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw bad(`${where}${k} must be a string`);
  return v;
}

/** A required non-empty string field: `<k> is required` otherwise. */
function reqStr(o: Obj, k: string, extra?: Obj): string {
  const v = o[k];
  if (typeof v !== 'string' || v === '') throw bad(`${k} is required`, extra);
  return v;
}

function uuid(v: string, k: string, extra?: Obj): string {
  if (!UUID.test(v)) throw bad(`${k} must be a UUID`, extra);
  return v.toLowerCase();
}

function arrayField(o: Obj, k: string): unknown[] {
  const v = o[k];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw bad(`${k} must be an array`);
  if (v.length > MAX_STREAM_ITEMS) throw bad(`${k} has ${v.length} entries; at most ${MAX_STREAM_ITEMS} per request`);
  return v;
}

/** A state key (`where`: its path in the body, e.g. `state_ops[3].key`, `keys[0]`); 400 unless a string of at most MAX_STATE_KEY_BYTES without NUL or lone surrogates. */
function stateKey(v: unknown, where: string, extra?: Obj): string {
  if (typeof v !== 'string') throw bad(`${where} must be a string`, extra);
  if (Buffer.byteLength(v, 'utf8') > MAX_STATE_KEY_BYTES) throw bad(`${where} is longer than ${MAX_STATE_KEY_BYTES} bytes`, extra);
  if (hasBadNameChars(v)) throw bad(`${where} must not contain NUL or lone surrogates`, extra);
  return v;
}

/** A JSON number field (lossless numbers included); anything else is absent. */
function jsonNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (v instanceof RawJson) {
    const n = Number(v.text);
    return Number.isNaN(n) ? undefined : n;
  }
  return undefined;
}

function count(v: unknown): number {
  const n = jsonNumber(v);
  if (v === undefined || v === null) return 0;
  if (n === undefined || !Number.isSafeInteger(n) || n < 0) throw bad('ack.count must be a non-negative integer');
  return n;
}

function parseCycle(body: unknown, tenant: string, producerSub: string | null): CycleRequest {
  const b = objectBody(body);
  const queryId = uuid(reqStr(b, 'query_id'), 'query_id');
  const partitionId = uuid(reqStr(b, 'partition_id'), 'partition_id');
  const group = optStr(b, 'consumer_group', '');
  const stateOps = arrayField(b, 'state_ops').map((raw, i): CycleStateOp => {
    const o = objectBody(raw, undefined, `state_ops[${i}]`);
    const type = o.type;
    if (typeof type !== 'string') throw bad(`state_ops[${i}].type must be a string`);
    return { type, key: stateKey(o.key, `state_ops[${i}].key`), ...('value' in o ? { value: o.value } : {}) };
  });
  const pushItems: CyclePushItem[] = [];
  arrayField(b, 'push_items').forEach((raw, i) => {
    const o = objectBody(raw, undefined, `push_items[${i}]`);
    const where = `push_items[${i}].`;
    const queue = optStr(o, 'queue', where) ?? '';
    const partition = optStr(o, 'partition', where);
    const transactionId = optStr(o, 'transactionId', where);
    optStr(o, 'messageId', where);
    if (queue === '') return; // skipped (docs/streams.md#cycle)
    const payload = 'payload' in o ? o.payload : 'data' in o ? o.data : {};
    pushItems.push({ queue, partition: partition === undefined || partition === '' ? 'Default' : partition, payload, transactionId: transactionId || undefined });
  });
  let ack: CycleAck | null = null;
  if (b.ack !== undefined && b.ack !== null) {
    const a = objectBody(b.ack, undefined, 'ack');
    ack = {
      transactionId: optStr(a, 'transactionId', 'ack.'), leaseId: optStr(a, 'leaseId', 'ack.'), status: optStr(a, 'status', 'ack.'), count: count(a.count),
    };
  }
  const release = b.release_lease;
  if (release !== undefined && release !== null && typeof release !== 'boolean') throw bad('release_lease must be a boolean');
  return {
    tenant, queryId, partitionId, consumerGroup: group === undefined || group === '' ? QUEUE_MODE : group,
    stateOps, pushItems, ack, releaseLease: release !== false, producerSub,
  };
}

/** Fastify plugin registering the routes this module describes. */
export async function streamsRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  const streams = new StreamsService(broker);

  app.post('/streams/v1/queries', async (req, reply) => {
    const b = objectBody(req.body);
    const name = reqStr(b, 'name');
    const sourceQueue = reqStr(b, 'source_queue');
    const configHash = reqStr(b, 'config_hash');
    const sink = optStr(b, 'sink_queue', '');
    if (b.reset !== undefined && b.reset !== null && typeof b.reset !== 'boolean') throw bad('reset must be a boolean');
    const r = await streams.register({ tenant: req.tenant, name, sourceQueue, sinkQueue: sink || null, configHash, reset: b.reset === true });
    if (!r.success) {
      return reply.code(409).send({ success: false, query_id: r.query_id, name: r.name, error: r.error, code: 'streams_config_hash_mismatch' });
    }
    return r;
  });

  app.post('/streams/v1/state/get', async (req) => {
    const extra = { success: false, rows: [] };
    const b = objectBody(req.body, extra);
    if (typeof b.query_id !== 'string' || b.query_id === '' || typeof b.partition_id !== 'string' || b.partition_id === '') {
      throw bad('query_id and partition_id are required', extra);
    }
    const queryId = uuid(b.query_id, 'query_id', extra);
    const partitionId = uuid(b.partition_id, 'partition_id', extra);
    let keys: string[] | undefined;
    if (Array.isArray(b.keys)) {
      if (b.keys.length > MAX_STREAM_ITEMS) throw bad(`keys has ${b.keys.length} entries; at most ${MAX_STREAM_ITEMS} per read`, extra);
      keys = b.keys.map((k, i) => stateKey(k, `keys[${i}]`, extra));
    } else if (b.keys !== undefined && b.keys !== null) {
      throw bad('keys must be an array of strings', extra);
    }
    const prefix = b.key_prefix;
    if (prefix !== undefined && prefix !== null && typeof prefix !== 'string') throw bad('key_prefix must be a string', extra);
    const rows = await streams.readState(req.tenant, queryId, partitionId, {
      keys, keyPrefix: typeof prefix === 'string' && prefix !== '' ? prefix : undefined, ripeAtOrBefore: jsonNumber(b.ripe_at_or_before),
    });
    return { success: true, rows: rows.map((r) => ({ key: r.key, value: new RawJson(r.value), updated_at: new Date(r.updatedAt).toISOString() })) };
  });

  app.post('/streams/v1/cycle', async (req) => {
    return streams.cycle(parseCycle(req.body, req.tenant, producerSubOf(req)));
  });

  app.get('/api/v1/streams/queries', async (req) => {
    const raw = (req.query as Query).limit;
    const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    const limit = v === undefined || v === '' ? 100 : Number(v);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new QueenError('invalid_request', `limit must be between 1 and 1000, got ${v}`);
    return { queries: await streams.list(req.tenant, limit) };
  });
}
