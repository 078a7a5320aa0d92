/**
 * scripts/check-citations.mjs on throwaway trees: it flags citations a reader cannot open only in
 * comments (never in code or strings), exits 1 while one is left, and `--fix` rewrites them to the
 * docs/ anchors of scripts/citations.json without touching code.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../../scripts/check-citations.mjs', import.meta.url));

function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-citations-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

function run(dir: string, ...args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [SCRIPT, '--root', dir, ...args], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout + r.stderr };
}

const CODE = [
  '/** Applies acknowledgements (spec §3.4). */',
  "export const label = 'spec §3.4 and TS-9 stay: this is a string';",
  'export function seedReady(): number {',
  '  return 1; // retry budget (spec http-api.md §2.3, newest semantics)',
  '}',
  '',
].join('\n');

describe('check-citations', () => {
  it('exits 1 naming each comment citation, and ignores strings and identifiers', () => {
    const dir = tree({ 'src/ack.ts': CODE, 'test/x.test.ts': '// covers issue 7\nexport {};\n' });
    const r = run(dir);
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /src\/ack\.ts:1: .*spec §3\.4/);
    assert.match(r.out, /src\/ack\.ts:4: .*§2\.3/);
    assert.match(r.out, /test\/x\.test\.ts:1: issue number: "issue 7"/);
    assert.doesNotMatch(r.out, /src\/ack\.ts:2:/, 'a string literal is not a comment');
    assert.doesNotMatch(r.out, /src\/ack\.ts:3:/, 'seedReady is an identifier, not a citation');
  });

  it('--fix rewrites comment citations to docs anchors and leaves code byte for byte', () => {
    const dir = tree({ 'src/ack.ts': CODE });
    const r = run(dir, '--fix');
    assert.equal(r.status, 0, r.out);
    const after = fs.readFileSync(path.join(dir, 'src/ack.ts'), 'utf8');
    assert.equal(after.split('\n')[0], '/** Applies acknowledgements (docs/http-api.md#ack). */');
    assert.equal(after.split('\n')[3], '  return 1; // retry budget (docs/http-api.md#ack-statuses)');
    const code = (t: string) => t.split('\n').filter((_, i) => i !== 0 && i !== 3);
    assert.deepEqual(code(after), code(CODE));
    assert.equal(run(dir).status, 0);
  });

  it('passes a tree that cites only docs/ and public standards', () => {
    const dir = tree({ 'src/a.ts': '// HEAD is safe (RFC 9110 §9.2.1), see docs/http-api.md#pop\nexport {};\n' });
    const r = run(dir);
    assert.equal(r.status, 0, r.out);
  });

  it('every anchor the map points at exists in docs/', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '--anchors'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});
