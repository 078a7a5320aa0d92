/**
 * Wire types of the HTTP answers, derived from the route schemas with `FromSchema`
 * (json-schema-to-ts), so a handler's answer and its documented schema cannot drift: the route
 * handlers (src/http/routes) declare these as their `Reply`, and the dashboard (web/src/api.ts)
 * reads them. Type-only: importing this module adds no code to either side (keep every import
 * here `import type`, and import nothing Node-specific, since web/tsconfig.json checks it too).
 *
 * Objects allow properties their schema does not name (`additionalProperties: true`), so a named
 * property has its documented type and any other reads as `unknown`. Client JSON (`data`,
 * `payload`, `value`) is `unknown`: it is any JSON value, returned as sent.
 */
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { adminSchemas } from './admin.js';
import type { coordinationSchemas } from './coordination.js';
import type { messagingSchemas } from './messaging.js';

type Table = typeof messagingSchemas & typeof coordinationSchemas & typeof adminSchemas;

/** `"METHOD /path"` of every tabled route. */
export type RouteKey = keyof Table;

/** Routes whose success answer is a JSON document (not text, not a dashboard file). */
export type JsonRoute = { [K in RouteKey]: Table[K]['response'] extends { '4xx': unknown } ? K : never }[RouteKey];

/** The success status a route documents (200 unless it answers 201). */
type OkStatus<K extends JsonRoute> = Extract<keyof Table[K]['response'], '200' | '201'>;

/**
 * The success answer of a route, e.g. `Answer<'GET /api/v1/status'>`: what its handler returns and
 * what a client reads.
 */
export type Answer<K extends JsonRoute> = FromSchema<OkSchema<K>>;

type OkSchema<K extends JsonRoute> = Table[K]['response'][OkStatus<K>] extends infer S extends JSONSchema ? S : never;

/** The error envelope of every refusal: `{"error": message, "code": stable code}` (codes: src/errors.ts). */
export type ErrorAnswer = { error: string; code: string; [extra: string]: unknown };

/**
 * Fastify route generic for a route's `Reply`: `app.get<Replies<'GET /health'>>(...)`. The
 * handler's return value and `reply.send(…)` must then be the route's {@link Answer}; refusals are
 * thrown as `QueenError` (src/errors.ts) and answer {@link ErrorAnswer}.
 */
export interface Replies<K extends JsonRoute> {
  Reply: Answer<K>;
}

// Named answers the dashboard and the handlers share.
export type ConfigureAnswer = Answer<'POST /api/v1/configure'>;
export type PushAnswer = Answer<'POST /api/v1/push'>;
export type PopAnswer = Answer<'GET /api/v1/pop/queue/:queue'>;
export type PoppedMessage = PopAnswer['messages'] extends (infer M)[] | undefined ? M : never;
export type AckAnswer = Answer<'POST /api/v1/ack/batch'>;
export type QueuesAnswer = Answer<'GET /api/v1/resources/queues'>;
export type QueueAnswer = Answer<'GET /api/v1/resources/queues/:queue'>;
export type OverviewAnswer = Answer<'GET /api/v1/resources/overview'>;
export type StatusAnswer = Answer<'GET /api/v1/status'>;
export type StatusQueuesAnswer = Answer<'GET /api/v1/status/queues'>;
export type StatusQueueAnswer = Answer<'GET /api/v1/status/queues/:queue'>;
export type AnalyticsAnswer = Answer<'GET /api/v1/status/analytics'>;
export type ConsumerGroupsAnswer = Answer<'GET /api/v1/consumer-groups'>;
export type ConsumerGroupAnswer = Answer<'GET /api/v1/consumer-groups/:group'>;
export type LaggingAnswer = Answer<'GET /api/v1/consumer-groups/lagging'>;
export type DlqAnswer = Answer<'GET /api/v1/dlq'>;
export type MessagesAnswer = Answer<'GET /api/v1/messages'>;
export type MessageAnswer = Answer<'GET /api/v1/messages/:partitionId/:transactionId'>;
export type TracesAnswer = Answer<'GET /api/v1/traces/:partitionId/:transactionId'>;
export type TracesByNameAnswer = Answer<'GET /api/v1/traces/by-name/:traceName'>;
export type TraceNamesAnswer = Answer<'GET /api/v1/traces/names'>;
export type KvAnswer = Answer<'GET /api/v1/kv/:ns/*'>;
export type KvBatchAnswer = Answer<'POST /api/v1/kv'>;
export type SystemMetricsAnswer = Answer<'GET /api/v1/analytics/system-metrics'>;
export type MaintenanceAnswer = Answer<'GET /api/v1/system/maintenance'>;
export type HealthAnswer = Answer<'GET /health'>;
export type MeAnswer = Answer<'GET /auth/me'>;
