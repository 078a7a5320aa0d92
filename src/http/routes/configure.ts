/** `POST /api/v1/configure`: create or reconfigure a queue (docs/http-api.md#configure). */
import type { FastifyInstance } from 'fastify';
import { QueenError } from '../../errors.js';
import type { RouteContext } from '../app.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

const bodySchema = {
  type: 'object',
  properties: {
    queue: { type: 'string' },
    namespace: { type: ['string', 'null'] },
    task: { type: ['string', 'null'] },
    options: { type: ['object', 'null'] },
    mode: {},
  },
} as const;

interface ConfigureBody {
  queue?: unknown;
  namespace?: string | null;
  task?: string | null;
  options?: Record<string, unknown> | null;
  mode?: unknown;
  [k: string]: unknown;
}

/** Fastify plugin registering the routes this module describes. */
export async function configureRoutes(app: FastifyInstance, { broker }: RouteContext): Promise<void> {
  app.post<{ Body: ConfigureBody } & Replies<'POST /api/v1/configure'>>('/api/v1/configure', {
    preValidation: async (req) => {
      const b = req.body as unknown;
      if (b === undefined || b === null || typeof b !== 'object' || Array.isArray(b)) {
        throw new QueenError('queue_required', 'queue is required (body must be a JSON object)');
      }
      const queue = (b as ConfigureBody).queue as unknown;
      if (queue === undefined || queue === null) throw new QueenError('queue_required');
      if (typeof queue !== 'string') throw new QueenError('queue_required', `queue must be a string, got ${Array.isArray(queue) ? 'array' : typeof queue}`);
    },
    schema: { body: bodySchema },
  }, async (req) => {
    const b = req.body;
    const mode = b.mode === undefined || b.mode === null ? 'merge' : b.mode;
    if (mode !== 'merge' && mode !== 'replace') {
      throw new QueenError('invalid_request', `mode must be "merge" or "replace", got ${JSON.stringify(mode)}`);
    }
    let options: Record<string, unknown>;
    if (b.options && typeof b.options === 'object') {
      options = b.options;
    } else {
      const { queue: _q, namespace: _n, task: _t, options: _o, mode: _m, ...rest } = b;
      options = rest;
    }
    return wire(await broker.configure({ queue: b.queue as string, namespace: b.namespace, task: b.task, options, mode, tenant: req.tenant }));
  });
}
