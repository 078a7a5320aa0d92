/**
 * Keeps what the boot leaves resident small: V8's young generation and its compilers above the
 * interpreter are held back while the broker loads and builds itself, and released once it listens.
 *
 * Booting loads a few hundred modules, registers the routes and compiles their schemas: a burst of
 * allocation that mostly survives, and code that runs a few hundred times and then never again.
 * Left to its defaults, V8 doubles the new space (two semi-spaces) while the boot allocates, and
 * compiles the functions that are hot during the boot (the module loader, route registration,
 * Ajv's code generation) with Sparkplug and Turbofan: their code and deoptimisation data in the
 * heap, the compiler's zone memory on its worker threads (malloc arenas that keep the pages), and
 * the compilers' own machine code paged in from the `node` binary. A process that then goes idle
 * gives little of it back. Measured on a fresh SQLite broker: README, "The push path: profile, CPU
 * per message, idle memory".
 *
 * {@link holdBootMemory} sets `--semi-space-growth-factor=1`, `--no-turbofan` and `--no-sparkplug`;
 * {@link releaseBootMemory} puts back V8's defaults (2, on, on), so under load functions tier up and
 * the new space grows exactly as without the hold. V8 reads these flags each time it decides to grow
 * the new space or to compile a function, so setting them at run time (`v8.setFlagsFromString`)
 * takes effect, in either direction. A flag that the operator set (node's command line or
 * `NODE_OPTIONS`) is left as given. The compiler hold applies on x64 and arm64 only, where both
 * compilers are on by default in every Node release this runs on (so that restoring "on" restores
 * the default); Maglev (on by default from Node 22) is left alone.
 *
 * `src/main.ts` holds before it imports anything else: ES modules are all loaded and compiled
 * before the first of them runs, so the hold must come before the broker's module graph is loaded.
 */
import v8 from 'node:v8';

/** V8's default `--semi-space-growth-factor`. */
const DEFAULT_GROWTH_FACTOR = 2;

/** The node flags the operator gave, normalised (`_` → `-`). */
function operatorFlags(): string[] {
  const fromEnv = (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter((f) => f.startsWith('--'));
  return [...process.execArgv, ...fromEnv].map((f) => f.replace(/_/g, '-'));
}

/** What {@link holdBootMemory} changed, for {@link releaseBootMemory} to restore. */
const held = { youngGeneration: false, compilers: false };

/**
 * Holds the young generation at its initial size and the optimising compilers off. Call once,
 * first thing in the process, before the broker's modules are imported.
 */
export function holdBootMemory(): void {
  const flags = operatorFlags();
  const given = (re: RegExp) => flags.some((f) => re.test(f));
  if (!given(/^--semi-space-growth-factor\b/)) {
    v8.setFlagsFromString('--semi-space-growth-factor=1');
    held.youngGeneration = true;
  }
  if ((process.arch === 'x64' || process.arch === 'arm64') && !given(/^--(no-)?(turbofan|opt|sparkplug|always-sparkplug|jitless)\b/)) {
    v8.setFlagsFromString('--no-turbofan');
    v8.setFlagsFromString('--no-sparkplug');
    held.compilers = true;
  }
}

/** Restores V8's defaults for what {@link holdBootMemory} held; call once the broker is listening. Idempotent. */
export function releaseBootMemory(): void {
  if (held.youngGeneration) v8.setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
  if (held.compilers) {
    v8.setFlagsFromString('--turbofan');
    v8.setFlagsFromString('--sparkplug');
  }
  held.youngGeneration = false;
  held.compilers = false;
}
