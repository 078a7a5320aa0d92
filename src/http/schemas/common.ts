/**
 * Building blocks of the route schemas: query strings and path parameters (strings, as they
 * arrive), the error envelope, and response shapes. Response schemas document the answers; they
 * are serialized with `JSON.stringify` (see `schemas/index.ts`), so a property a schema does not
 * name is never dropped and a number never loses digits.
 */

/** A JSON schema fragment (the subset the route tables use). */
export type Schema = Record<string, unknown>;

/** The schemas of one route, as Fastify's `schema` route option takes them. */
export interface RouteSchema {
  summary?: string;
  description?: string;
  tags?: string[];
  /** Left out of the OpenAPI document (dashboard files). */
  hide?: boolean;
  querystring?: Schema;
  params?: Schema;
  body?: Schema;
  response?: Record<string, Schema>;
}

/** A route table: `"METHOD /path"` (Fastify's route syntax) → its schemas. */
export type RouteTable = Record<string, RouteSchema>;

/** `$id` of the shared error envelope schema. */
export const ERROR_ID = 'QueenError';

/** The error envelope every refusal answers: `{"error": message, "code": stable code}`. */
export const errorSchema: Schema = {
  $id: ERROR_ID,
  type: 'object',
  description: 'Every refusal: the codes are listed in src/errors.ts. Some routes add fields (success, reason, results).',
  required: ['error', 'code'],
  properties: { error: { type: 'string' }, code: { type: 'string' } },
  additionalProperties: true,
};

/** A string with a description. */
export function str(description?: string, extra: Schema = {}): Schema {
  return { type: 'string', ...(description ? { description } : {}), ...extra };
}

/** A query string: every parameter is a string as it arrives; the handler reads and bounds it. */
export function query(props: Record<string, string>): Schema {
  return {
    type: 'object',
    properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, str(d)])),
    additionalProperties: true,
  };
}

/** Path parameters, all required strings. */
export function params(props: Record<string, string>): Schema {
  return {
    type: 'object',
    required: Object.keys(props),
    properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, str(d)])),
  };
}

/**
 * A request body the handler validates itself (its refusals carry route-specific codes, e.g.
 * `kv_bad_ttl`): the schema documents the shape and Fastify does not enforce it
 * (`x-hand-validated`).
 */
export function handBody(schema: Schema): Schema {
  return { ...schema, 'x-hand-validated': true };
}

/** An object with the named properties (more may appear). */
export function obj(properties: Record<string, Schema> = {}, description?: string, required?: string[]): Schema {
  return {
    type: 'object', properties, additionalProperties: true,
    ...(description ? { description } : {}), ...(required ? { required } : {}),
  };
}

/** An array of `items`. */
export function arr(items: Schema, description?: string): Schema {
  return { type: 'array', items, ...(description ? { description } : {}) };
}

/** Any JSON value (a client's payload, a KV value). */
export const anyValue: Schema = { description: 'Any JSON value, returned as sent' };

export const int: Schema = { type: 'integer' };
export const num: Schema = { type: 'number' };
export const bool: Schema = { type: 'boolean' };
export const isoTime: Schema = { type: 'string', description: 'ISO-8601 timestamp' };
export const nullableStr: Schema = { type: ['string', 'null'] };

/** `limit`/`offset` page echo with the true total of matching rows. */
export const offsetPage: Schema = obj({ limit: int, offset: int, total: { type: 'integer', description: 'rows matching the filter, not the page length' } });

/**
 * Responses of a route: `ok` under `status` (200 unless given), the error envelope for 4xx/5xx.
 */
export function answers(ok: Schema, description: string, status = 200): Record<string, Schema> {
  return {
    [String(status)]: { description, ...ok },
    '4xx': { description: 'Refused: `{"error","code"}`', $ref: `${ERROR_ID}#` },
    '5xx': { description: 'Storage or internal failure: `{"error","code"}`', $ref: `${ERROR_ID}#` },
  };
}
