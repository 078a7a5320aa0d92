import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/config/env.js';
import { prepareDataDir } from '../../src/storage/datadir.js';

const posix = process.platform !== 'win32';
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'queen-datadir-'));
const mode = (p: string) => fs.statSync(p).mode & 0o777;

test('creates a missing directory (and parents) with mode 0700; new files come out 0600', { skip: !posix }, () => {
  const root = tmp();
  const dir = path.join(root, 'a', 'b', 'data');
  const r = prepareDataDir(dir);
  assert.equal(r.created, true);
  assert.equal(r.dir, dir);
  assert.equal(mode(dir), 0o700);
  assert.equal(mode(path.join(root, 'a')), 0o700);
  fs.writeFileSync(path.join(dir, 'queen.db'), 'x', { mode: 0o666 });
  assert.equal(mode(path.join(dir, 'queen.db')), 0o600);
  // an existing private directory is accepted as is
  const again = prepareDataDir(dir);
  assert.deepEqual([again.created, again.tightened, again.warnings], [false, [], []]);
});

test('refuses a directory writable by group or others, naming it, its mode and the fix', { skip: !posix }, () => {
  for (const m of [0o777, 0o770, 0o702, 0o720]) {
    const dir = tmp();
    fs.chmodSync(dir, m);
    assert.throws(() => prepareDataDir(dir), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.ok(e.message.includes(dir));
      assert.match(e.message, /writable by group or others/);
      assert.ok(e.message.includes(`mode 0${m.toString(8)}`));
      assert.match(e.message, /chmod 700/);
      return true;
    });
  }
});

test('tightens files others can read to 0600 and warns on a readable directory', { skip: !posix }, () => {
  const dir = tmp();
  const f = path.join(dir, 'queen.db');
  fs.writeFileSync(f, 'x');
  fs.chmodSync(f, 0o644);
  fs.mkdirSync(path.join(dir, 'sub'));
  fs.chmodSync(dir, 0o755);
  const r = prepareDataDir(dir);
  assert.deepEqual(r.tightened, [f]);
  assert.equal(mode(f), 0o600);
  assert.equal(r.warnings.length, 1);
  assert.match(r.warnings[0]!, /readable by group or others \(mode 0755\)/);
  assert.equal(mode(dir), 0o755, 'the directory mode is the operator\'s call');
});

test('refuses a path that is a file', () => {
  const f = path.join(tmp(), 'file');
  fs.writeFileSync(f, '');
  assert.throws(() => prepareDataDir(f), /exists but is not a directory/);
});
