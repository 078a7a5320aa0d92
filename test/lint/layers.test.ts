/**
 * The import checks of `npm run lint` can fail: the repository's own dependency-cruiser rules
 * (.dependency-cruiser.cjs) and madge settings (.madgerc) run on a throw-away tree of small
 * modules, one per row of the table below, and must report exactly the forbidden rows.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const DEPCRUISE = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const MADGE = path.join(ROOT, 'node_modules/madge/bin/cli.js');

/** One import from `from` to `to` (paths under src/, without extension) and the rule it breaks. */
interface Row { from: string; to: string; rule: string | null; typeOnly?: boolean }

const ROWS: Row[] = [
  { from: 'storage/a', to: 'broker/a', rule: 'storage-crypto-below-domain' },
  { from: 'storage/b', to: 'broker/b', rule: 'storage-crypto-below-domain', typeOnly: true },
  { from: 'crypto/a', to: 'broker/c', rule: 'storage-crypto-below-domain' },
  { from: 'storage/c', to: 'crypto/b', rule: 'storage-not-to-crypto' },
  { from: 'config/a', to: 'broker/d', rule: 'config-reads-leaves-only' },
  { from: 'config/b', to: 'auth/a', rule: 'config-reads-leaves-only' },
  { from: 'config/c', to: 'storage/d', rule: 'config-reads-leaves-only' },
  { from: 'observability/a', to: 'broker/e', rule: 'observability-is-a-leaf', typeOnly: true },
  { from: 'model/a', to: 'storage/e', rule: 'model-util-are-leaves' },
  { from: 'util/a', to: 'config/d', rule: 'model-util-are-leaves' },
  { from: 'http/routes/a', to: 'storage/f', rule: 'front-doors-not-to-storage', typeOnly: true },
  { from: 'http/e', to: 'storage/j', rule: 'front-doors-not-to-storage' },
  { from: 'http/routes/c', to: 'broker/messaging/waiters', rule: 'front-doors-not-to-engine', typeOnly: true },
  { from: 'http/f', to: 'broker/messaging/positions', rule: 'front-doors-not-to-engine' },
  { from: 'http/routes/d', to: 'broker/messaging/pop', rule: null },
  { from: 'broker/f', to: 'http/a', rule: 'domain-not-to-front-doors' },
  { from: 'auth/b', to: 'http/b', rule: 'domain-not-to-front-doors' },
  { from: 'auth/c', to: 'broker/g', rule: 'auth-broker-apart' },
  { from: 'broker/h', to: 'auth/d', rule: 'auth-broker-apart' },
  { from: 'http/c', to: 'proxy/a', rule: 'front-doors-apart' },
  { from: 'broker/i', to: 'main', rule: 'src-stays-in-src' },
  { from: 'broker/o', to: 'boot', rule: 'boot-from-main-only' },
  { from: 'broker/messaging/a', to: 'broker/admin/a', rule: 'messaging-not-to-admin-or-jobs' },
  { from: 'broker/messaging/b', to: 'broker/jobs/a', rule: 'messaging-not-to-admin-or-jobs', typeOnly: true },
  { from: 'cli/a', to: 'broker/n', rule: 'cli-is-a-client' },
  { from: 'cli/b', to: 'storage/k', rule: 'cli-is-a-client', typeOnly: true },
  { from: 'cli/c', to: 'http/app', rule: 'cli-is-a-client' },
  { from: 'cli/d', to: 'config/h', rule: 'cli-is-a-client' },
  { from: 'http/g', to: 'cli/e', rule: 'nothing-imports-the-cli' },
  { from: 'broker/messaging/e', to: 'storage/sqlite/engine-backend', rule: 'domain-on-the-contract' },
  { from: 'broker/admin/c', to: 'storage/sqlite/state', rule: 'domain-on-the-contract', typeOnly: true },
  { from: 'broker/jobs/b', to: 'storage/postgres/backend', rule: 'domain-on-the-contract' },
  { from: 'broker/broker', to: 'storage/sqlite/engine-units', rule: 'domain-on-the-contract', typeOnly: true },
  { from: 'broker/services', to: 'storage/sqlite/log-read', rule: 'domain-on-the-contract' },
  { from: 'broker/coordination/c', to: 'storage/postgres/db', rule: 'domain-on-the-contract', typeOnly: true },
  // Allowed: downward, or into a leaf.
  { from: 'cli/f', to: 'http/schemas/types', rule: null, typeOnly: true },
  { from: 'cli/g', to: 'util/d', rule: null },
  { from: 'broker/services', to: 'storage/runtime', rule: null, typeOnly: true },
  { from: 'storage/open', to: 'storage/sqlite/runtime', rule: null },
  { from: 'storage/n', to: 'storage/postgres/runtime', rule: null },
  { from: 'broker/coordination/b', to: 'storage/contract', rule: null },
  { from: 'http/routes/b', to: 'broker/j', rule: null },
  { from: 'http/d', to: 'auth/e', rule: null },
  { from: 'broker/k', to: 'storage/g', rule: null },
  { from: 'broker/l', to: 'crypto/c', rule: null },
  { from: 'crypto/d', to: 'storage/h', rule: null },
  { from: 'storage/i', to: 'config/e', rule: null },
  { from: 'auth/f', to: 'config/f', rule: null },
  { from: 'config/g', to: 'model/b', rule: null },
  { from: 'broker/m', to: 'observability/b', rule: null },
  { from: 'observability/c', to: 'util/b', rule: null },
  { from: 'model/c', to: 'errors', rule: null },
  { from: 'broker/admin/b', to: 'broker/messaging/c', rule: null },
  { from: 'broker/messaging/d', to: 'broker/coordination/a', rule: null },
  { from: 'main', to: 'boot', rule: null },
];

const dirs: string[] = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

/** A throw-away project (tsconfig + src/ files) with the repository's check configuration. */
function project(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-layers-'));
  dirs.push(dir);
  fs.copyFileSync(path.join(ROOT, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
  fs.copyFileSync(path.join(ROOT, '.madgerc'), path.join(dir, '.madgerc'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

function importLine(fromFile: string, toFile: string, name: string, typeOnly: boolean): string {
  let rel = path.relative(path.dirname(fromFile), toFile);
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return `import ${typeOnly ? 'type ' : ''}{ ${name} } from '${rel}.js';\n`;
}

test('the layer rules report every forbidden import, and only those', () => {
  const files: Record<string, string> = {};
  ROWS.forEach((r, i) => {
    const name = `v${i}`;
    const from = `src/${r.from}`;
    const to = `src/${r.to}`;
    files[`${to}.ts`] = `${files[`${to}.ts`] ?? ''}export ${r.typeOnly ? `type ${name} = number` : `const ${name} = ${i}`};\n`;
    files[`${from}.ts`] = `${files[`${from}.ts`] ?? ''}${importLine(from, to, name, r.typeOnly === true)}export const u${i} = ${r.typeOnly ? `0 as ${name}` : name};\n`;
  });
  files['src/util/c.ts'] = "import { gone } from './missing.js';\nexport const c = gone;\n";
  const dir = project(files);

  const out = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', path.join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'], { cwd: dir, encoding: 'utf8' });
  assert.ok(out.stdout.length > 0, out.stderr);
  const result = JSON.parse(out.stdout) as { summary: { violations: { from: string; to: string; rule: { name: string } }[]; totalCruised: number } };
  assert.ok(result.summary.totalCruised >= ROWS.length, 'the fixture was cruised');
  const found = new Map(result.summary.violations.map((v) => [`${v.from} -> ${v.to}`, v.rule.name]));

  for (const r of ROWS) {
    const key = `src/${r.from}.ts -> src/${r.to}.ts`;
    assert.equal(found.get(key) ?? null, r.rule, key);
    found.delete(key);
  }
  assert.equal(found.get('src/util/c.ts -> ./missing.js'), 'resolvable');
  found.delete('src/util/c.ts -> ./missing.js');
  assert.deepEqual([...found], [], 'no other violation');
});

test('madge reports a runtime import cycle and leaves a type-only one aside', () => {
  const dir = project({
    'src/broker/a.ts': "import { b } from './b.js';\nexport const a = 1 + b;\nexport function f(): number { return a; }\n",
    'src/broker/b.ts': "import { f } from './a.js';\nexport const b = 2;\nexport const g = (): number => f();\n",
    'src/storage/c.ts': "import type { D } from './d.js';\nexport type C = { d?: D };\nexport const c = 3;\n",
    'src/storage/d.ts': "import type { C } from './c.js';\nexport type D = { c?: C };\nexport const d = 4;\n",
  });
  const out = spawnSync(process.execPath, [MADGE, '--circular', '--json', '--ts-config', 'tsconfig.json', '--extensions', 'ts', 'src'], { cwd: dir, encoding: 'utf8' });
  assert.equal(out.status, 1, out.stderr);
  const cycles = JSON.parse(out.stdout) as string[][];
  assert.deepEqual(cycles, [['broker/a.ts', 'broker/b.ts']]);
});
