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

/** A string (its description is documentation only). */
export function str(description?: string, extra: Schema = {}): { type: 'string' } {
  return { type: 'string', ...(description ? { description } : {}), ...extra } as { type: 'string' };
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

/**
 * The static type of an {@link obj} schema: what `FromSchema` (json-schema-to-ts) reads to derive
 * the wire types of src/http/schemas/types.ts. `required` is `[]` when none is named.
 */
export type ObjSchema<P extends Record<string, Schema>, R extends readonly string[]> = {
  type: 'object';
  properties: P;
  additionalProperties: true;
  required: R;
};

/**
 * An object with the named properties (more may appear); `required` names the ones every answer
 * carries. The return type keeps the literal property schemas, so wire types derive from it.
 */
export function obj<const P extends Record<string, Schema> = Record<never, never>, const R extends readonly (keyof P & string)[] = []>(
  properties: P = {} as P, description?: string, required?: R,
): ObjSchema<P, R> {
  return {
    type: 'object', properties, additionalProperties: true,
    ...(description ? { description } : {}), ...(required ? { required } : {}),
  } as unknown as ObjSchema<P, R>;
}

/** An array of `items`. */
export function arr<const I extends Schema>(items: I, description?: string): { type: 'array'; items: I } {
  return { type: 'array', items, ...(description ? { description } : {}) };
}

/** Any JSON value (a client's payload, a KV value). */
export const anyValue = { description: 'Any JSON value, returned as sent' } as const;

export const int = { type: 'integer' } as const;
export const num = { type: 'number' } as const;
export const bool = { type: 'boolean' } as const;
export const isoTime = { type: 'string', description: 'ISO-8601 timestamp' } as const;
export const nullableStr = { type: ['string', 'null'] } as const;

/** `limit`/`offset` page echo with the true total of matching rows. */
export const offsetPage = obj({ limit: int, offset: int, total: { type: 'integer', description: 'rows matching the filter, not the page length' } });

/**
 * Responses of a route: `ok` under `status` (200 unless given), the error envelope for 4xx/5xx.
 * The return type keeps `ok`'s literal type under its status, for src/http/schemas/types.ts.
 */
export function answers<const O extends Schema, const S extends number = 200>(
  ok: O, description: string, status: S = 200 as S,
): { [K in `${S}`]: O } & { '4xx': Schema; '5xx': Schema } {
  return {
    [String(status)]: { description, ...ok },
    '4xx': { description: 'Refused: `{"error","code"}`', $ref: `${ERROR_ID}#` },
    '5xx': { description: 'Storage or internal failure: `{"error","code"}`', $ref: `${ERROR_ID}#` },
  } as unknown as { [K in `${S}`]: O } & { '4xx': Schema; '5xx': Schema };
}
