/** `GET /metrics/prometheus` (docs/operations.md#prometheus-series): Prometheus text format, public. */
import type { FastifyInstance } from 'fastify';
import type { OpsContext } from './ops-context.js';

/** Fastify plugin registering the routes this module describes. */
export async function prometheusRoutes(app: FastifyInstance, { ops }: OpsContext): Promise<void> {
  app.get('/metrics/prometheus', async (_req, reply) => {
    const { contentType, body } = await ops.metrics.render();
    return reply.header('cache-control', 'no-cache').type(contentType).send(body);
  });
}
