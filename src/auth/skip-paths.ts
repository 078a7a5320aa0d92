/**
 * `JWT_SKIP_PATHS` matching. An entry matches a request path exactly; an entry longer than one
 * character that ends in `/` also matches as a prefix (`/assets/` skips everything below it, `/`
 * only the root document). No globbing, case-sensitive, query string excluded. Evaluated before the
 * route's access level, so a skip entry overrides the route table.
 *
 * Source: docs/security.md#skip-paths.
 */

/** A compiled skip list. */
export interface SkipMatcher {
  /** True when `path` (no query string) is skipped. */
  (path: string): boolean;
}

/** True when one skip entry matches `path`. */
export function skipEntryMatches(entry: string, path: string): boolean {
  if (path === entry) return true;
  return entry.length > 1 && entry.endsWith('/') && path.startsWith(entry);
}

/** Compiles the skip list once at boot. */
export function compileSkipPaths(entries: readonly string[]): SkipMatcher {
  const exact = new Set(entries);
  const prefixes = entries.filter((e) => e.length > 1 && e.endsWith('/'));
  return (path: string) => exact.has(path) || prefixes.some((p) => path.startsWith(p));
}
