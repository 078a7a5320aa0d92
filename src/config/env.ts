/**
 * Typed readers for environment variables. Each reader throws {@link ConfigError} naming the
 * variable and the expected format, so boot fails loudly instead of running on a guess.
 */

/** A fatal configuration problem; `main` prints the message and exits non-zero before binding. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The raw value, or undefined when unset (an empty string counts as set). */
export function raw(env: Env, name: string): string | undefined {
  return env[name];
}

/** A string, `fallback` when unset or empty. */
export function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

/**
 * An integer in `[min, max]`, `fallback` when unset or empty.
 * @throws ConfigError when not a base-10 integer or out of range.
 */
export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = env[name];
  if (v === undefined || v.trim() === '') return fallback;
  if (!/^-?\d+$/.test(v.trim())) {
    throw new ConfigError(`${name}=${JSON.stringify(v)} is not an integer (expected ${min}..${max})`);
  }
  const n = Number(v.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name}=${v} is out of range (expected ${min}..${max})`);
  }
  return n;
}

/**
 * A boolean: `true/1/yes/on` or `false/0/no/off` (case-insensitive), `fallback` when unset or empty.
 * @throws ConfigError on any other value.
 */
export function bool(env: Env, name: string, fallback: boolean): boolean {
  const v = env[name];
  if (v === undefined || v.trim() === '') return fallback;
  const s = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off'].includes(s)) return false;
  throw new ConfigError(`${name}=${JSON.stringify(v)} is not a boolean (expected true/false, 1/0, yes/no, on/off)`);
}

/**
 * One of `allowed` (case-insensitive), `fallback` when unset or empty.
 * @throws ConfigError naming the allowed set.
 */
export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const v = env[name];
  if (v === undefined || v.trim() === '') return fallback;
  const hit = allowed.find((a) => a.toLowerCase() === v.trim().toLowerCase());
  if (!hit) throw new ConfigError(`${name}=${JSON.stringify(v)} is not one of ${allowed.join(', ')}`);
  return hit;
}
