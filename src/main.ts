/**
 * The broker process (`node dist/src/main.js`): holds back V8's young generation and optimising
 * compilers for the boot (src/util/boot-memory.ts), then loads the composition root (src/boot.ts),
 * which releases them once the broker listens. The hold must come first: ES modules are all loaded
 * and compiled before any of them runs, so src/boot.ts and everything it imports is loaded only
 * after it, by a dynamic import.
 */
import { holdBootMemory } from './util/boot-memory.js';

holdBootMemory();
await import('./boot.js').catch((e: unknown) => {
  process.stderr.write(`fatal: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
