/**
 * `POST /api/v1/transaction`: acks and pushes, all or nothing (docs/http-api.md#transaction). 200 in
 * both outcomes; a refusal is `success:false` with `error` and `reason`. Malformed input is a 400
 * with the same failure shape.
 */
import type { FastifyInstance } from 'fastify';
import type { TransactionOp } from '../../broker/messaging/transaction.js';
import { QueenError } from '../../errors.js';
import type { RouteContext } from '../app.js';
import { producerSubOf } from '../identity.js';
import { toAckInput } from './ack.js';
import { toPushItem } from './push.js';
import { kvPreconditionAnswer, kvRider } from './kv-rider.js';
import { parseTimerRider } from './timers.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';
import { checkNameText } from '../../util/names.js';

type Obj = Record<string, unknown>;

/** Malformed input; the route gives it the failure shape ({@link withFailureShape}). */
function bad(message: string): QueenError {
  return new QueenError('invalid_request', message);
}

function str(o: Obj, k: string, where: string, required: boolean): string | undefined {
  const v = o[k];
  if (v === undefined || v === null) {
    if (required) throw bad(`${where}.${k} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw bad(`${where}.${k} must be a string`);
  return v;
}

function pushItem(raw: unknown, where: string): ReturnType<typeof toPushItem> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad(`${where} must be an object`);
  const o = raw as Obj;
  const queue = str(o, 'queue', where, true)!;
  const partition = str(o, 'partition', where, false);
  const transactionId = str(o, 'transactionId', where, false);
  const traceId = str(o, 'traceId', where, false);
  if (!('payload' in o) && !('data' in o)) throw bad(`${where}.payload is required`);
  return toPushItem({ queue, partition, payload: 'payload' in o ? o.payload : o.data, transactionId, traceId }, where);
}

/**
 * `e` with the failure shape every 4xx of this route carries, `{success:false, reason:"bad_request",
 * results:[]}` (docs/http-api.md#transaction), when it refuses malformed input (400 or 413: this
 * route's parsing, a name rule or a limit the broker checks) and is not shaped yet (a rider's own
 * reason stays); anything else (maintenance, contention, storage) unchanged.
 */
function withFailureShape(e: unknown): unknown {
  if (!(e instanceof QueenError) || (e.status !== 400 && e.status !== 413) || e.extra?.success === false) return e;
  return new QueenError(e.code, e.message, { ...e.extra, success: false, reason: 'bad_request', results: [] });
}

/**
 * Parses the operations array.
 * @throws QueenError `invalid_request` with the failure body fields
 */
function parseOps(body: unknown, maxItems: number): { ops: TransactionOp[]; requiredLeases: string[] } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw bad('body must be a JSON object with an operations array');
  const b = body as Obj;
  if (!Array.isArray(b.operations)) throw bad('operations array is required');
  if (b.operations.length === 0) throw bad('operations must not be empty');
  const ops: TransactionOp[] = [];
  let count = 0;
  b.operations.forEach((raw: unknown, i: number) => {
    const where = `operations[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad(`${where} must be an object`);
    const o = raw as Obj;
    if (o.type === 'ack') {
      const transactionId = str(o, 'transactionId', where, true)!;
      const partitionId = str(o, 'partitionId', where, true)!;
      ops.push({ type: 'ack', ack: toAckInput({
        transactionId, partitionId, status: str(o, 'status', where, false), error: str(o, 'error', where, false),
        leaseId: str(o, 'leaseId', where, false), consumerGroup: str(o, 'consumerGroup', where, false),
      }, undefined) });
      count++;
    } else if (o.type === 'push') {
      const items = Array.isArray(o.items) ? o.items.map((it: unknown, k: number) => pushItem(it, `${where}.items[${k}]`)) : [pushItem(o, where)];
      count += items.length;
      ops.push({ type: 'push', items });
    } else {
      throw bad(`${where}.type must be "ack" or "push", got ${JSON.stringify(o.type)}`);
    }
  });
  if (count > maxItems) {
    throw new QueenError('batch_too_large', `transaction has ${count} items; the limit is ${maxItems} (QUEEN_MAX_PUSH_ITEMS)`);
  }
  let requiredLeases: string[] = [];
  if (b.requiredLeases !== undefined && b.requiredLeases !== null) {
    if (!Array.isArray(b.requiredLeases) || b.requiredLeases.some((l) => typeof l !== 'string')) {
      throw bad('requiredLeases must be an array of lease ids');
    }
    requiredLeases = [...new Set((b.requiredLeases as string[]).filter((l) => l !== ''))];
    for (const l of requiredLeases) checkNameText('requiredLeases', l);
  }
  return { ops, requiredLeases };
}

/** Fastify plugin registering the routes this module describes. */
export async function transactionRoutes(app: FastifyInstance, { broker, services, config }: RouteContext): Promise<void> {
  app.post<Replies<'POST /api/v1/transaction'>>('/api/v1/transaction', async (req) => {
    try {
      const { ops, requiredLeases } = parseOps(req.body, config.limits.maxPushItems);
      const timers = parseTimerRider(services.timers, (req.body as Obj).timers, config.limits);
      const kv = kvRider(services.kv, (req.body as Obj).kv, config.limits);
      return wire(await broker.transaction({ operations: ops, requiredLeases, producerSub: producerSubOf(req), timers, kv, tenant: req.tenant }).catch(kvPreconditionAnswer));
    } catch (e) {
      throw withFailureShape(e);
    }
  });
}
