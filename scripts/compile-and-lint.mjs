#!/usr/bin/env node
/**
 * `tsc -p tsconfig.json` and `eslint .` on one TypeScript program (test/README.md#how-npm-test-runs).
 *
 * Typed ESLint (`eslint.config.js`, typescript-eslint's type-checked rules) builds and type-checks
 * the same program that `tsc -p tsconfig.json` builds: the same files, the same compiler options.
 * Run one after the other they do that work twice, about a third of `npm test`'s static checks.
 * Here the program is built and checked once: it is emitted to dist/ exactly as `tsc -p
 * tsconfig.json` would (its diagnostics fail the run the same way), then ESLint lints with the
 * configuration of `eslint.config.js`, handed that program instead of opening a project service.
 * A file ESLint lints that is not in the program is an error of typescript-eslint, never skipped.
 *
 * Usage: node scripts/compile-and-lint.mjs [--no-lint]   (`--no-lint`: emit only, like `tsc -p tsconfig.json`)
 * Exit code 0 when both pass; 1 otherwise, with tsc's and ESLint's own messages. When started with
 * an IPC channel (child_process.fork), it sends `{ emitted: true }` once dist/ is written, so that
 * the caller can start what needs the build while ESLint runs.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ESLint } from 'eslint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

const host = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => root,
  getNewLine: () => ts.sys.newLine,
};

function report(diagnostics) {
  if (diagnostics.length === 0) return false;
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  process.stdout.write(format(diagnostics, host));
  process.stdout.write(`\ntsc: ${diagnostics.length} error(s)\n`);
  return true;
}

// --- tsc -p tsconfig.json ---
const configPath = path.join(root, 'tsconfig.json');
const read = ts.readConfigFile(configPath, ts.sys.readFile);
if (read.error) {
  report([read.error]);
  process.exit(1);
}
const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configPath);
// `incremental` only writes dist/.tsbuildinfo for a later `tsc -p`: a program built here is whole.
const options = { ...parsed.options, incremental: undefined, tsBuildInfoFile: undefined };
const program = ts.createProgram({ rootNames: parsed.fileNames, options, projectReferences: parsed.projectReferences, configFileParsingDiagnostics: parsed.errors });
let failed = report([...parsed.errors, ...ts.getPreEmitDiagnostics(program)]);
const emitted = program.emit();
failed = report(emitted.diagnostics) || failed;
if (emitted.emitSkipped) failed = true;
if (process.send) process.send({ emitted: !failed });

// --- eslint . ---
if (process.argv.includes('--no-lint')) {
  process.exitCode = failed ? 1 : 0;
  process.exit();
}
const eslint = new ESLint({
  cwd: root,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, programs: [program] } } },
});
const results = await eslint.lintFiles(['.']);
const errors = results.reduce((n, r) => n + r.errorCount + r.fatalErrorCount, 0);
const text = (await eslint.loadFormatter('stylish')).format(results);
if (text) process.stdout.write(text);
if (errors > 0) failed = true;
process.exitCode = failed ? 1 : 0;
