/**
 * What the operator route plugins share, apart from `ops.ts` that registers them (so that a route
 * module never imports the module that imports it).
 */
import type { AdminViews } from '../../broker/admin/views.js';
import type { AdminJobs } from '../../broker/jobs/admin-jobs.js';
import type { RouteContext } from '../app.js';

/** What the operator route plugins receive. */
export interface OpsContext extends RouteContext {
  /** The admin jobs (`services.jobs`): activity, retention, maintenance, metrics. */
  ops: AdminJobs;
  /** The operator views (`services.views`). */
  views: AdminViews;
}

/** The request body as an object (`{}` when empty). @throws nothing; non-objects become `{}` */
export function bodyObject(body: unknown): Record<string, unknown> {
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}
