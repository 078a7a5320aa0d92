/**
 * `npm run openapi`: starts a broker from the build, reads `/openapi.json` and writes it to
 * docs/openapi.json (2-space JSON, trailing newline). test/http/openapi.test.ts fails when the
 * committed file differs from what the broker serves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker } from '../test/helpers/broker.js';

/** docs/openapi.json, resolved from dist/scripts. */
export const OPENAPI_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/openapi.json');

/** The committed text of a document. */
export function render(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

async function main(): Promise<void> {
  const b = await startBroker();
  try {
    const r = await fetch(`${b.url}/openapi.json`);
    if (r.status !== 200) throw new Error(`/openapi.json answered ${r.status}`);
    fs.writeFileSync(OPENAPI_FILE, render(await r.json()));
    console.log(`wrote ${OPENAPI_FILE}`);
  } finally {
    await b.stop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
