/**
 * Route validators compiled on first use, with the compiler Fastify uses by default.
 *
 * Fastify compiles a validator for the query string, path parameters and body of every route (the
 * HEAD twin of every GET again) while the app is built: a few hundred Ajv compilations whose
 * generated code, schemas and closures stay in the heap for the life of the process, while an
 * idle broker uses none of them and a busy one a handful. {@link lazyValidators} gives Fastify a
 * stand-in per route part instead ({@link RouteValidators}): its first call builds the Ajv instance (Fastify's own
 * `@fastify/ajv-compiler`, with the app's `ajv` options and shared schemas, loaded then) and
 * compiles the part's schema, and every call validates with that one validator and leaves Ajv's
 * `errors` on the stand-in, where Fastify reads them. The first request of a route pays the
 * compilation of its schemas once (a fraction of a millisecond each).
 *
 * A schema Ajv refuses now fails its route's first request (a 500) instead of the boot, so
 * test/http/route-validators.test.ts compiles every route's validators. Header schemas are refused
 * here, at boot: Fastify lower-cases their property names only for its own compiler.
 */
import type { ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError, FastifyServerOptions } from 'fastify';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Ajv's second argument: the parent object and property of the value, so that Ajv can coerce or default a root value. */
type ValidationContext = Parameters<ValidateFunction>[1];

/** The stand-in, called by Fastify as it calls an Ajv validator. */
export interface StandIn {
  (data: unknown, context?: ValidationContext): boolean;
  errors?: FastifySchemaValidationError[] | null;
  /** Set on Ajv validators; Fastify then passes the `context` argument. */
  schemaEnv?: unknown;
}

/** What Fastify gives a validator compiler for one route part. */
interface RoutePart {
  schema: unknown;
  method?: string;
  url?: string;
  httpPart?: string;
}

/** Fastify's default builder (`@fastify/ajv-compiler`): Ajv instance per shared schemas and options → compile. */
type AjvCompile = (part: RoutePart) => ValidateFunction;
type BuildAjv = (externalSchemas: unknown, options: unknown) => AjvCompile;
/** Fastify's `schemaController.compilersFactory.buildValidator` type (it expects Ajv's validator type; the stand-in is called the same way). */
type FastifyValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

/** Fastify's options for the Ajv instance of its validators (the `ajv` server option). */
export const AJV_OPTIONS = { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } } satisfies FastifyServerOptions['ajv'];

/** Fastify's default validator builder, loaded on the first compilation (one pool of Ajv instances per process, as in Fastify). */
let fastifyBuilder: BuildAjv | undefined;

/** When route validators are compiled: on their route's first request (the broker), or while the app is built (tests). */
export type CompileValidators = 'first-use' | 'boot';

/** The route validators of one app (see the module comment). */
export class RouteValidators {
  constructor(private readonly when: CompileValidators = 'first-use') {}

  /**
   * A validator compiled by `compile`: a stand-in that compiles on its first call and then
   * delegates (`first-use`), or the compiled validator itself (`boot`).
   * @throws Error from `compile` when the schema does not compile: at the first call (Fastify then
   *   answers 500), or here at `boot`
   */
  wrap(compile: () => ValidateFunction): StandIn {
    if (this.when === 'boot') return compile() as StandIn;
    let validator: ValidateFunction | undefined;
    const standIn: StandIn = (data, context) => {
      validator ??= compile();
      const result = validator(data, context);
      standIn.errors = validator.errors;
      return result;
    };
    standIn.schemaEnv = true;
    return standIn;
  }

  /**
   * `schemaController.compilersFactory.buildValidator` for Fastify: Fastify's own compiler
   * (`@fastify/ajv-compiler`, with the shared schemas and `ajv` options Fastify passes), behind
   * {@link wrap}.
   * @throws Error at route registration, for a header schema
   */
  factory(): FastifyValidatorFactory {
    const build = (externalSchemas: unknown, options: unknown) => {
      let compile: AjvCompile | undefined;
      return (part: RoutePart): StandIn => {
        if (part.httpPart === 'headers') throw new Error(`${part.method} ${part.url}: header schemas are not supported (src/http/schemas/validators.ts)`);
        return this.wrap(() => {
          fastifyBuilder ??= (require('@fastify/ajv-compiler') as () => BuildAjv)();
          compile ??= fastifyBuilder(externalSchemas, options);
          return compile(part);
        });
      };
    };
    return build as unknown as FastifyValidatorFactory;
  }
}
