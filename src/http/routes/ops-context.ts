/**
 * What the operator route plugins share, apart from `ops.ts` that registers them (so that a route
 * module never imports the module that imports it).
 */
import type { Broker } from '../../broker/broker.js';
import type { AdminJobs } from '../../broker/jobs/admin-jobs.js';
import type { Config } from '../../config/index.js';

/** What the operator route plugins receive. */
export interface OpsContext {
  broker: Broker;
  config: Config;
  ops: AdminJobs;
}

/** The request body as an object (`{}` when empty). @throws nothing; non-objects become `{}` */
export function bodyObject(body: unknown): Record<string, unknown> {
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}
