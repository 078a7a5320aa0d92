/**
 * Rendering of command results (docs/cli.md#output-formats): `-o table|wide|json|ndjson|yaml|
 * jsonpath=<expr>`, defaulting to a table on a terminal and JSON in a pipe, as the reference CLI
 * does (queen-mq/queen: clients/client-cli/internal/output/). A command declares a {@link View}:
 * its columns and how to find the rows in the broker's answer. JSON, NDJSON and YAML print those
 * rows as the broker sent them (not the table's cells); jsonpath evaluates on the whole answer.
 */
import Table from 'cli-table3';
import YAML from 'yaml';
import { RawJson, stringifyClientJson } from '../util/json.js';
import { userError } from './errors.js';

export type Format = 'table' | 'wide' | 'json' | 'ndjson' | 'yaml' | 'jsonpath';

export interface Column {
  header: string;
  /** Dotted path into the row (`messages.total`); default: the header lower-cased. */
  path?: string;
  /** The cell's value from the row, when one path is not enough (takes precedence over `path`). */
  value?: (row: Record<string, unknown>) => unknown;
  /** Cell text from the value (default: {@link cell}). */
  format?: (v: unknown) => string;
  /** Shown only with `-o wide`. */
  wide?: boolean;
}

export interface View {
  columns: Column[];
  /** The rows of the answer; absent: the answer is one row. */
  rows?: (data: unknown) => unknown[];
}

/**
 * Reads `-o`.
 * @returns the format and, for jsonpath, its expression
 * @throws CliError exit 1 for an unknown format
 */
export function parseFormat(raw: string | undefined): { format?: Format; expr?: string } {
  const s = (raw ?? '').trim();
  if (s === '') return {};
  const eq = s.indexOf('=');
  if (eq >= 0) {
    const head = s.slice(0, eq).toLowerCase();
    if (head === 'jsonpath' || head === 'json-path') return { format: 'jsonpath', expr: s.slice(eq + 1) };
    throw userError(`unknown output expression "${head}" (use jsonpath=<expr>)`);
  }
  const low = s.toLowerCase();
  if (low === 'jsonl') return { format: 'ndjson' };
  if (['table', 'wide', 'json', 'ndjson', 'yaml'].includes(low)) return { format: low as Format };
  throw userError(`unknown output format "${s}" (table, wide, json, ndjson, yaml, jsonpath=<expr>)`);
}

export interface RendererOptions {
  format: Format;
  expr?: string;
  noHeaders?: boolean;
  color?: boolean;
  out?: NodeJS.WritableStream;
}

/** JSON text of a value, RawJson numbers verbatim; `pretty` indents by two spaces. */
export function toJson(v: unknown, pretty = false): string {
  const text = stringifyClientJson(v ?? null);
  return pretty ? indentJson(text) : text;
}

/** Re-indents compact JSON text without parsing numbers (so exact numbers stay exact). */
function indentJson(text: string): string {
  let out = '';
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inStr) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') { inStr = true; out += c; continue; }
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      if (text[i + 1] === close) { out += c + close; i++; continue; }
      depth++;
      out += `${c}\n${'  '.repeat(depth)}`;
    } else if (c === '}' || c === ']') {
      depth--;
      out += `\n${'  '.repeat(depth)}${c}`;
    } else if (c === ',') out += `,\n${'  '.repeat(depth)}`;
    else if (c === ':') out += ': ';
    else out += c;
  }
  return out;
}

/** A value with RawJson numbers turned into plain values (for YAML and cells). */
export function plain(v: unknown): unknown {
  if (v instanceof RawJson) {
    const n = Number(v.text);
    return Number.isFinite(n) && String(n) === v.text ? n : v.text;
  }
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/**
 * Evaluates a kubectl/jq-style path: `.a.b`, `.items[0].name`, `{.a}` (braces ignored).
 * @throws CliError exit 1 on a malformed path or an index out of range
 */
export function evalPath(data: unknown, expr: string): unknown {
  let e = expr.trim();
  if (e.startsWith('{') && e.endsWith('}')) e = e.slice(1, -1).trim();
  if (e === '' || e === '.') return data;
  if (!e.startsWith('.') && !e.startsWith('[')) e = `.${e}`;
  let cur: unknown = data;
  for (const m of e.matchAll(/\.([^.[\]]+)|\[(-?\d+)\]|(.)/g)) {
    if (m[3] !== undefined) throw userError(`jsonpath: unexpected "${m[3]}" in ${expr}`);
    if (m[1] !== undefined) {
      cur = cur !== null && typeof cur === 'object' && !Array.isArray(cur) ? (cur as Record<string, unknown>)[m[1]] : undefined;
    } else {
      if (!Array.isArray(cur)) throw userError(`jsonpath: cannot index a non-array in ${expr}`);
      const i = Number(m[2]);
      if (i < 0 || i >= cur.length) throw userError(`jsonpath: index ${i} out of range (length ${cur.length})`);
      cur = cur[i];
    }
  }
  return cur;
}

/** "42s", "12m", "3h5m", "2d" from seconds; "-" for nothing. */
export function humanSeconds(v: unknown): string {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n)) return v === undefined || v === null ? '-' : cell(v);
  if (n === 0) return '0s';
  if (n < 1) return `${Math.round(n * 1000)}ms`;
  if (n < 60) return `${Math.round(n)}s`;
  if (n < 3600) return `${Math.floor(n / 60)}m${Math.round(n % 60) ? `${Math.round(n % 60)}s` : ''}`;
  if (n < 86400) return `${Math.floor(n / 3600)}h${Math.floor((n % 3600) / 60) ? `${Math.floor((n % 3600) / 60)}m` : ''}`;
  return `${Math.floor(n / 86400)}d${Math.floor((n % 86400) / 3600) ? `${Math.floor((n % 86400) / 3600)}h` : ''}`;
}

/** Comma-grouped integer. */
export function humanInt(v: unknown): string {
  return typeof v === 'number' ? v.toLocaleString('en-US') : cell(v);
}

/** Default cell text: '-' for nothing, relative age for ISO times, length of lists, keys of objects. */
export function cell(v: unknown, nowMs = Date.now()): string {
  const p = plain(v);
  if (p === null || p === undefined || p === '') return '-';
  if (typeof p === 'string') {
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(p)) {
      const t = Date.parse(p);
      if (!Number.isNaN(t)) {
        const s = Math.round((nowMs - t) / 1000);
        return s >= 0 ? `${humanSeconds(s)} ago` : `in ${humanSeconds(-s)}`;
      }
    }
    return p;
  }
  if (Array.isArray(p)) return String(p.length);
  if (typeof p === 'object') return `{${Object.keys(p).sort().join(',')}}`;
  return String(p as string | number | boolean | bigint);
}

/** Renders a command's result in the chosen format. */
export class Renderer {
  constructor(readonly opts: RendererOptions) {}

  get format(): Format {
    return this.opts.format;
  }

  private write(text: string): void {
    (this.opts.out ?? process.stdout).write(text);
  }

  /** Prints `data` through `view` (a view with no columns prints tables as YAML). */
  render(data: unknown, view: View = { columns: [] }): void {
    const rows = (): unknown[] => (view.rows ? view.rows(data) ?? [] : [data]);
    switch (this.opts.format) {
      case 'json':
        this.write(`${toJson(view.rows ? rows() : data, true)}\n`);
        return;
      case 'ndjson':
        for (const r of view.rows ? rows() : [data]) this.write(`${toJson(r)}\n`);
        return;
      case 'yaml':
        this.write(YAML.stringify(plain(view.rows ? rows() : data)));
        return;
      case 'jsonpath': {
        const v = evalPath(data, this.opts.expr ?? '');
        if (v === null || v === undefined) this.write('\n');
        else if (typeof v === 'object' && !(v instanceof RawJson)) this.write(`${toJson(v, true)}\n`);
        else this.write(`${v instanceof RawJson ? v.text : String(v as string | number | boolean)}\n`);
        return;
      }
      default:
        if (view.columns.length === 0) {
          this.write(YAML.stringify(plain(data)));
          return;
        }
        this.write(this.table(rows(), view.columns.filter((c) => !c.wide || this.opts.format === 'wide')));
    }
  }

  private table(rows: unknown[], cols: Column[]): string {
    const t = new Table({
      head: this.opts.noHeaders ? [] : cols.map((c) => c.header),
      chars: { top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '  ' },
      style: { head: this.opts.color ? ['bold'] : [], border: [], 'padding-left': 0, 'padding-right': 0 },
    });
    for (const r of rows) {
      t.push(cols.map((c) => {
        const v = c.value ? c.value((r ?? {}) as Record<string, unknown>) : c.path ? evalPath(r, c.path) : r !== null && typeof r === 'object' ? (r as Record<string, unknown>)[c.header.toLowerCase()] : r;
        return (c.format ?? cell)(v);
      }));
    }
    return `${t.toString().split('\n').map((l) => l.trimEnd()).join('\n')}\n`;
  }
}
