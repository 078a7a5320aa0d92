/**
 * The operator routes (docs/http-api.md#operator-routes), registered as one plugin: resources,
 * messages, dead-letter administration, consumer groups, traces, status, system, Prometheus.
 */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../app.js';
import type { OpsContext } from './ops-context.js';
import { consumerGroupRoutes } from './consumer-groups.js';
import { dlqAdminRoutes } from './dlq-admin.js';
import { messageRoutes } from './messages.js';
import { prometheusRoutes } from './prometheus.js';
import { resourceAdminRoutes } from './resources-admin.js';
import { statusRoutes } from './status.js';
import { systemRoutes } from './system.js';
import { traceRoutes } from './traces.js';

/** Registers every operator route for `broker` (its {@link AdminJobs} are created on first use). */
export async function opsRoutes(app: FastifyInstance, opts: RouteContext): Promise<void> {
  const ctx: OpsContext = { ...opts, ops: opts.services.jobs, views: opts.services.views };
  await app.register(resourceAdminRoutes, ctx);
  await app.register(messageRoutes, ctx);
  await app.register(dlqAdminRoutes, ctx);
  await app.register(consumerGroupRoutes, ctx);
  await app.register(traceRoutes, ctx);
  await app.register(statusRoutes, ctx);
  await app.register(systemRoutes, ctx);
  await app.register(prometheusRoutes, ctx);
}
