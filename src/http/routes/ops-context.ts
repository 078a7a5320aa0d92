/**
 * What the operator route plugins share, apart from `ops.ts` that registers them (so that a route
 * module never imports the module that imports it).
 */
import type { AdminViews } from '../../broker/admin/views.js';
import type { AdminJobs } from '../../broker/jobs/admin-jobs.js';
import { QueenError } from '../../errors.js';
import type { RouteContext } from '../app.js';

/** What the operator route plugins receive. */
export interface OpsContext extends RouteContext {
  /** The admin jobs (`services.jobs`): activity, retention, maintenance, metrics. */
  ops: AdminJobs;
  /** The operator views (`services.views`). */
  views: AdminViews;
}

/**
 * The request body as an object: `{}` when there is none (an empty body, or JSON `null`).
 * @param extra fields of the refusal's body (a route's failure shape, e.g. `{success:false}`)
 * @throws QueenError `invalid_request` for any other value that is not an object (an array, a
 *   string, a number): an operator action (a replay, a seek, maintenance) never runs on a body it
 *   could not read
 */
export function bodyObject(body: unknown, extra?: Record<string, unknown>): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new QueenError('invalid_request', `the body must be a JSON object, got ${Array.isArray(body) ? 'an array' : `a ${typeof body}`}`, extra);
  }
  return body as Record<string, unknown>;
}
