#!/usr/bin/env node
/**
 * Keeps code comments citing only what a reader can open: files of this repository (docs/…) or
 * the public reference by repository path (queen-mq/queen: <path>).
 *
 * Usage (from the repository root, or with --root):
 *   node scripts/check-citations.mjs            exit 1 and list every comment that still cites an
 *                                               outside spec section (spec §…, security.md §…),
 *                                               a seed file, a TS-n decision, an issue number, or
 *                                               a file outside the repository (../shared, DESIGN.md)
 *   node scripts/check-citations.mjs --fix      rewrite those citations in comments per
 *                                               scripts/citations.json, then check
 *   node scripts/check-citations.mjs --dry-run  like --fix, printing the changed comment lines only
 *   node scripts/check-citations.mjs --table    print the citation → docs anchor table (Markdown)
 *   node scripts/check-citations.mjs --anchors  exit 1 when a docs/…md#anchor named in the map or
 *                                               in a comment has no matching heading
 *   --root DIR                                  work on another checkout (e.g. a throwaway copy)
 *
 * Only comments are read or rewritten (found with the TypeScript parser), never code or strings;
 * Markdown files under the scanned folders are read as prose.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const rootArg = args.indexOf('--root');
const root = path.resolve(rootArg >= 0 ? args[rootArg + 1] : path.join(here, '..'));
const ts = createRequire(path.join(here, '..', 'package.json'))('typescript');

/** Folders scanned, relative to the root, and single files read as prose. */
const SCAN_DIRS = ['src', 'web/src', 'bench', 'test'];
const SCAN_FILES = ['web/README.md'];
const CODE_EXT = new Set(['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs', '.jsx']);

/** What counts as a citation a newcomer cannot open. Each has a name for the report. */
const FORBIDDEN = [
  ['section of an outside spec', /(?<!RFC [0-9]+ )§\s?[0-9]/g],
  ['outside spec file', /(?<![\w/.-])(?:http-api|security|cluster|kafka|ephemeral-streams)\.md\b/g],
  ['TS decision', /\bTS-[0-9]+\b|\bdecision [0-9]+\b/g],
  ['seed file', /\b[0-9]{3}_[0-9a-f]{16}\.txt\b/g],
  ['seed', /\b[Ss]eeds?(?:'s|')?(?= (?:[0-9]{3}\b|"|table|tables|row|item|message|messages|error|default|defaults|says)|[,.;:)]|$)|\bthe seeds?\b|beyond[- ]the[- ]seeds?/g],
  ['issue number', /\b[Ii]ssue #?[0-9]+\b/g],
  ['file outside the repository', /\.\.\/shared\/|\b(?:DESIGN|STYLE)\.md\b/g],
];

function walk(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

function files() {
  const out = [];
  for (const d of SCAN_DIRS) walk(path.join(root, d), out);
  for (const f of SCAN_FILES) if (fs.existsSync(path.join(root, f))) out.push(path.join(root, f));
  return out.filter((f) => CODE_EXT.has(path.extname(f)) || f.endsWith('.css') || f.endsWith('.md')).sort();
}

/**
 * The comment ranges of a file as [start, end) offsets. Code: every comment the TypeScript parser
 * attaches to a token; CSS: block comments; Markdown: the whole file.
 */
function commentRanges(file, text) {
  if (file.endsWith('.md')) return [[0, text.length]];
  if (file.endsWith('.css')) return [...text.matchAll(/\/\*[\s\S]*?\*\//g)].map((m) => [m.index, m.index + m[0].length]);
  const kind = file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const seen = new Map();
  const add = (ranges) => { for (const r of ranges ?? []) seen.set(r.pos, r.end); };
  const visit = (node) => {
    add(ts.getLeadingCommentRanges(text, node.pos));
    add(ts.getTrailingCommentRanges(text, node.end));
    for (const c of node.getChildren(sf)) visit(c);
  };
  visit(sf);
  return [...seen].sort((a, b) => a[0] - b[0]);
}

function lineOf(text, offset) {
  let n = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

function lineAt(text, offset) {
  const s = text.lastIndexOf('\n', offset - 1) + 1;
  const e = text.indexOf('\n', offset);
  return text.slice(s, e === -1 ? text.length : e);
}

/** Every forbidden citation in the comments of the scanned files. */
function findings() {
  const out = [];
  const keys = new Set();
  for (const file of files()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const [s, e] of commentRanges(file, text)) {
      const comment = text.slice(s, e);
      for (const [name, re] of FORBIDDEN) {
        for (const m of comment.matchAll(re)) {
          const at = s + m.index;
          const f = { file: path.relative(root, file), line: lineOf(text, at), kind: name, text: m[0], context: lineAt(text, at).trim() };
          const key = `${f.file}:${f.line}:${f.kind}:${f.text}`;
          if (!keys.has(key)) { keys.add(key); out.push(f); }
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------- fixing

function loadMap() {
  const raw = JSON.parse(fs.readFileSync(path.join(here, 'citations.json'), 'utf8'));
  return raw.rules.map((r) => ({ ...r, re: new RegExp(r.find, 'g'), whenRe: r.when ? new RegExp(r.when) : undefined }));
}

const REF = String.raw`docs/[\w.-]+\.md(?:#[\w-]+)?`;
/** Tidies what the substitution leaves: repeated references, empty brackets, dangling separators. */
function tidy(line) {
  let prev;
  do {
    prev = line;
    line = line
      .replace(new RegExp(String.raw`(${REF})((?:[,;] | and )\1)+\b`, 'g'), '$1')
      .replace(new RegExp(String.raw`(${REF}) \((?:\1(?:, )?)+\)`, 'g'), '$1')
      .replace(new RegExp(String.raw`\((${REF})\) \(\1\)`, 'g'), '($1)')
      .replace(/\(\s*,\s*/g, '(')
      .replace(/,\s*\)/g, ')')
      .replace(/ \(\)/g, '')
      .replace(/;\s*\./g, '.');
  } while (line !== prev);
  return line;
}

/** Applies the map to one comment's text, line by line; returns the new text and the hits. */
function fixComment(comment, rules) {
  const hits = [];
  const lines = comment.split('\n').map((line) => {
    let out = line;
    for (const r of rules) {
      if (r.whenRe && !r.whenRe.test(line)) continue;
      out = out.replace(r.re, (...a) => {
        const groups = a.slice(1, -2);
        const to = r.replace.replace(/\$([1-9])/g, (_, i) => groups[Number(i) - 1] ?? '');
        hits.push({ found: a[0], replace: to, cites: r.cites });
        return to;
      });
    }
    return out === line ? line : tidy(out);
  });
  return { text: lines.join('\n'), hits };
}

/** Rewrites every scanned file (with `write` false: only computes, printing changed lines when `print`). */
function fixAll(write, print = !write) {
  const rules = loadMap();
  const all = [];
  let changedFiles = 0;
  for (const file of files()) {
    const text = fs.readFileSync(file, 'utf8');
    let out = '';
    let last = 0;
    for (const [s, e] of commentRanges(file, text)) {
      const { text: fixed, hits } = fixComment(text.slice(s, e), rules);
      for (const h of hits) all.push({ ...h, file: path.relative(root, file) });
      out += text.slice(last, s) + fixed;
      last = e;
    }
    out += text.slice(last);
    if (out !== text) {
      changedFiles++;
      if (write) fs.writeFileSync(file, out);
      else if (print) {
        const a = text.split('\n');
        const b = out.split('\n');
        for (let i = 0; i < Math.max(a.length, b.length); i++) {
          if (a[i] !== b[i]) console.log(`${path.relative(root, file)}:${i + 1}\n  - ${a[i]?.trim()}\n  + ${b[i]?.trim()}`);
        }
      }
    }
  }
  return { hits: all, changedFiles };
}

// --------------------------------------------------------------------------------------- anchors

/** GitHub's heading slug: lowercase, punctuation dropped, spaces to dashes. */
function slug(heading) {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchorsOf(docFile) {
  const p = path.join(root, docFile);
  if (!fs.existsSync(p)) return undefined;
  const seen = new Map();
  const out = new Set();
  for (const m of fs.readFileSync(p, 'utf8').matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1].replace(/`/g, ''));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function checkAnchors() {
  const refs = new Map();
  for (const r of loadMap()) for (const m of r.replace.matchAll(new RegExp(REF, 'g'))) refs.set(m[0], 'scripts/citations.json');
  for (const file of files()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const [s, e] of commentRanges(file, text)) {
      for (const m of text.slice(s, e).matchAll(new RegExp(REF, 'g'))) refs.set(m[0], `${path.relative(root, file)}:${lineOf(text, s + m.index)}`);
    }
  }
  const bad = [];
  for (const [ref, where] of refs) {
    const [file, anchor] = ref.split('#');
    const anchors = anchorsOf(file);
    if (!anchors || (anchor && !anchors.has(anchor))) bad.push(`${where}: ${ref} ${anchors ? 'names no heading' : 'does not exist'}`);
  }
  return bad;
}

// ------------------------------------------------------------------------------------------ main

function report(list) {
  if (list.length === 0) {
    console.log('check-citations: no comment cites a spec section, seed, TS-n, issue number or outside file');
    return 0;
  }
  for (const f of list) console.log(`${f.file}:${f.line}: ${f.kind}: "${f.text}"  |  ${f.context}`);
  console.log(`\ncheck-citations: ${list.length} citation(s) a reader cannot open; cite docs/… instead (node scripts/check-citations.mjs --fix rewrites the known ones)`);
  return 1;
}

if (flag('--table')) {
  const { hits } = fixAll(false, false);
  const rows = new Map();
  for (const h of hits) {
    const k = `${h.found}\u0000${h.replace}`;
    const row = rows.get(k) ?? { ...h, files: new Set(), n: 0 };
    row.files.add(h.file);
    row.n++;
    rows.set(k, row);
  }
  console.log('| Citation as found | What it cited | Replaced by | Uses | Files |');
  console.log('|---|---|---|---:|---|');
  const cell = (s) => s.replace(/\|/g, '\\|');
  const code = (s) => (s.includes('`') ? `\`\` ${cell(s)} \`\`` : `\`${cell(s)}\``);
  for (const r of [...rows.values()].sort((a, b) => a.found.localeCompare(b.found) || a.replace.localeCompare(b.replace))) {
    console.log(`| ${code(r.found)} | ${cell(r.cites)} | ${r.replace.trim() === '' || /^\s*\*\s*$/.test(r.replace) ? '(removed)' : code(r.replace)} | ${r.n} | ${[...r.files].sort().map((f) => `\`${f}\``).join(', ')} |`);
  }
} else if (flag('--anchors')) {
  const bad = checkAnchors();
  for (const b of bad) console.log(b);
  console.log(bad.length === 0 ? 'check-citations: every docs anchor exists' : `\ncheck-citations: ${bad.length} reference(s) to missing docs anchors`);
  process.exitCode = bad.length === 0 ? 0 : 1;
} else if (flag('--dry-run')) {
  const { hits, changedFiles } = fixAll(false);
  console.log(`\n${hits.length} citation(s) in ${changedFiles} file(s) would be rewritten`);
} else {
  if (flag('--fix')) {
    const { hits, changedFiles } = fixAll(true);
    console.log(`check-citations --fix: rewrote ${hits.length} citation(s) in ${changedFiles} file(s)`);
  }
  process.exitCode = report(findings());
}
