/**
 * `GET /health` (storage reachable?), `GET /metrics` (JSON counters; both public) and `GET /status`
 * (engine and the front doors' blocks, e.g. `kafka`; read-only) (docs/http-api.md#health-and-metrics).
 */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../app.js';
import type { Replies } from '../schemas/types.js';

/** The broker's version, as /health and the OpenAPI document report it. */
export const VERSION = '0.1.0';

/** Fastify plugin registering the routes this module describes. */
export async function healthRoutes(app: FastifyInstance, { broker, services }: RouteContext): Promise<void> {
  app.get<Replies<'GET /health'>>('/health', async (_req, reply) => {
    const ok = broker.healthy();
    const c = broker.storage.cluster;
    return reply.code(ok ? 200 : 503).send({
      status: ok ? 'healthy' : 'unhealthy', database: !ok ? 'disconnected' : c?.role === 'read_only' ? 'read-only' : 'connected', engine: broker.storage.kind, version: VERSION,
      ...(c ? { cluster: { serverId: c.serverId, epoch: c.epoch, nodes: c.members().filter((m) => m.live).length, role: c.role } } : {}),
    });
  });

  app.get<Replies<'GET /status'>>('/status', async () => {
    const c = broker.storage.cluster;
    return {
      status: 'ok', engine: broker.storage.kind, ...services.frontDoorStatus(),
      ...(c ? {
        membership: {
          serverId: c.serverId, epoch: c.epoch, role: c.role, clockSkewMs: c.clockSkewMs, nodes: c.members().filter((m) => m.live).length, members: c.members().map((m) => ({ ...m })),
          singletons: c.singletons().map((h) => ({ ...h, lastRunAt: h.lastRunAt === null ? null : new Date(h.lastRunAt).toISOString(), here: c.holds(h.task) })),
        },
      } : {}),
    };
  });

  app.get<Replies<'GET /metrics'>>('/metrics', async () => {
    const c = broker.counters;
    const uptime = services.views.uptimeSeconds();
    const requests = c.pushRequests + c.popRequests + c.ackRequests + c.transactions;
    const mem = process.memoryUsage();
    const cpu = process.cpuUsage();
    return {
      uptime,
      requests: { total: requests, rate: uptime > 0 ? requests / uptime : 0 },
      messages: { total: c.pushMessages, rate: uptime > 0 ? c.pushMessages / uptime : 0 },
      push: { requests: c.pushRequests, messages: c.pushMessages },
      pop: { requests: c.popRequests, messages: c.popMessages, empty: c.popEmpty },
      ack: { requests: c.ackRequests, messages: c.ackMessages, failed: c.ackFailed },
      transactions: c.transactions,
      dlq: { messages: c.dlqMessages },
      encryption: { integrityFailures: c.payloadIntegrityFailures },
      parkedConsumers: broker.parkedConsumers,
      // One embedded SQLite connection; the fields keep the reference's shape for its clients.
      database: { poolSize: 1, idleConnections: 1, waitingRequests: 0 },
      memory: { rss: mem.rss, heapTotal: mem.heapTotal, heapUsed: mem.heapUsed, external: mem.external, arrayBuffers: mem.arrayBuffers },
      cpu: { user: cpu.user, system: cpu.system },
    };
  });
}
