/**
 * The operation contract's conformance cases (contract-cases.ts, unchanged) on the PostgreSQL
 * backend: each case on a fresh database of the local server (postgres-backend.ts).
 */
import { describe, test } from 'node:test';
import { contractCases } from './contract-cases.js';
import { streamsCases } from './streams-cases.js';
import { openPostgresBackend } from './postgres-backend.js';

describe('operation contract: postgres (one database per case)', () => {
  for (const c of [...contractCases, ...streamsCases]) {
    test(c.name, async () => {
      const b = await openPostgresBackend();
      try {
        await c.run(b);
      } finally {
        await b.close();
      }
    });
  }
});
