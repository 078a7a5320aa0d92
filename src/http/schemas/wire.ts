/**
 * {@link wire}: hands a domain value (an interface from src/broker) to a route's typed `Reply`
 * unchanged. Interfaces have no implicit index signature, so they are not assignable to the open
 * wire types of src/http/schemas/types.ts (objects there allow unnamed properties); the mapped copy
 * of the type is, and `tsc` still checks every named property against the schema.
 */

/** `T` as a plain object type, recursively (arrays stay arrays, functions and primitives as they are). */
export type Wire<T> = T extends (...args: never[]) => unknown ? T : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;

/** Returns `value` itself, typed as {@link Wire}: no copy, no cost. */
export function wire<T>(value: T): Wire<T> {
  return value as Wire<T>;
}

