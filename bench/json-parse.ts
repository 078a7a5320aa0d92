/**
 * `node dist/bench/json-parse.js`: cost of the lossless client-JSON path in isolation (no HTTP).
 * Parse: a 1-item and a 100-item push body, with plain numbers (fast path: one scan + JSON.parse)
 * and with one big integer per payload (slow path: a second, lossless parse), against the former
 * depth scan + JSON.parse.
 * Answer: a 100-message pop answer built the old way (JSON.parse of each stored payload, then
 * JSON.stringify) and the new way (stored text spliced raw by stringifyClientJson).
 * Env: BENCH_MS (default 1000) per row.
 */
import { parseClientJson, RawJson, scanJsonText, stringifyClientJson } from '../src/util/json.js';

const MS = Number(process.env.BENCH_MS ?? 1000);
const plain = '{"orderId":12345,"customer":"c-0042","amount":99.95,"at":"2024-01-05T10:00:00.000Z","items":["a","b","c"],"note":"' + 'x'.repeat(120) + '"}';
const lossy = plain.replace('12345', '12345678901234567890');
const body = (payload: string, n: number) =>
  `{"items":[${Array.from({ length: n }, (_, i) => `{"queue":"bench","partition":"p${i % 10}","payload":${payload}}`).join(',')}]}`;

/** The depth pre-scan the parser ran before this change (one pass skipping strings), for the "before" rows. */
function oldDepthScan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

function opsPerSec(fn: () => unknown): number {
  let n = 0;
  const end = performance.now() + MS;
  while (performance.now() < end) for (let i = 0; i < 50; i++, n++) fn();
  return Math.round(n / (MS / 1000));
}

const rows: [string, number][] = [];
for (const n of [1, 100]) {
  const p = body(plain, n);
  const l = body(lossy, n);
  rows.push([`parse ${n}-item body, depth scan + JSON.parse (before)`, opsPerSec(() => oldDepthScan(p, 512) || JSON.parse(p))]);
  rows.push([`parse ${n}-item body, scanJsonText + parseClientJson fast path`, opsPerSec(() => parseClientJson(p, scanJsonText(p, 512).inexactNumber))]);
  rows.push([`parse ${n}-item body, scanJsonText + parseClientJson slow path (big int)`, opsPerSec(() => parseClientJson(l, scanJsonText(l, 512).inexactNumber))]);
  const items = (parseClientJson(l) as { items: { payload: unknown }[] }).items;
  rows.push([`store ${n} payloads, stringifyClientJson (lossless values)`, opsPerSec(() => items.map((i) => stringifyClientJson(i.payload)))]);
}
const stored = Array.from({ length: 100 }, () => plain);
const envelope = (data: (s: string) => unknown) => ({
  success: true, messages: stored.map((s, i) => ({ id: `m${i}`, transactionId: `t${i}`, data: data(s), partition: 'p', offset: i })),
});
rows.push(['pop answer 100 msgs, JSON.parse each + JSON.stringify (before)', opsPerSec(() => JSON.stringify(envelope((s) => JSON.parse(s))))]);
rows.push(['pop answer 100 msgs, RawJson splice (after)', opsPerSec(() => stringifyClientJson(envelope((s) => new RawJson(s))))]);
rows.push(['plain answer without client JSON, JSON.stringify', opsPerSec(() => JSON.stringify({ a: 1, b: [1, 2, 3], c: 'x' }))]);
rows.push(['plain answer without client JSON, stringifyClientJson', opsPerSec(() => stringifyClientJson({ a: 1, b: [1, 2, 3], c: 'x' }))]);

console.log('| operation | ops/s |\n|---|---:|');
for (const [name, v] of rows) console.log(`| ${name} | ${v.toLocaleString('en-US')} |`);
