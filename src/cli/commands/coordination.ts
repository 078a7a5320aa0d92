/**
 * `kv get|put|delete|list` and `timers list|get|cancel`: Queen-TS additions that the reference CLI
 * leaves out (docs/cli.md#kv-and-timers). They map one to one to the HTTP routes
 * (docs/http-api.md#kv, docs/http-api.md#timers). `kv get` of a missing key exits 4.
 */
import type { Command } from 'commander';
import { emptyResult, serverError, userError } from '../errors.js';
import { Session, intFlag } from '../session.js';
import { parseClientJson } from '../../util/json.js';

/**
 * Registers `kv get|put|delete|list`. `kv put` sends `<value>` parsed as JSON, client numbers
 * exact; a value that is not JSON is exit 1 and nothing is written (docs/cli.md#kv-and-timers).
 */
export function registerKv(program: Command): void {
  const kv = program.command('kv').description('Versioned key-value store (Queen-TS)');
  kv.command('get <ns> <key>').description('Read a key (exit 4 when absent)').action(async (ns: string, key: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const r = await s.api().call('GET /api/v1/kv/:ns/*', { params: { ns, '*': key } });
    if (!r?.found) throw emptyResult(`no key ${ns}/${key}`);
    s.renderer('json').render(r);
  });
  kv.command('put <ns> <key> <value>').description('Write a key; <value> is JSON (a string is quoted: \'"text"\'; anything else is exit 1)')
    .option('--ttl <seconds>', 'expire after N seconds', (v) => intFlag('ttl', v))
    .option('--expect <version>', 'write only at this version (0: only when absent)', (v) => intFlag('expect', v))
    .action(async (ns: string, key: string, value: string, o: { ttl?: number; expect?: number }, cmd: Command) => {
      const s = Session.of(cmd);
      let v: unknown;
      try {
        v = parseClientJson(value);
      } catch (e) {
        // eslint-disable-next-line no-control-regex
        const why = (e instanceof Error ? e.message : String(e)).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
        throw userError(`<value> is not JSON: ${why} (a string is quoted: '"text"')`);
      }
      const body = { value: v, ...(o.ttl !== undefined ? { ttlSeconds: o.ttl } : { forever: true }), ...(o.expect !== undefined ? { expect: o.expect } : {}) };
      const r = await s.api().call('PUT /api/v1/kv/:ns/*', { params: { ns, '*': key }, body });
      const res = r as { applied?: boolean; reason?: string; version?: number } | undefined;
      if (res?.applied === false) throw serverError(`not written: ${res.reason ?? 'precondition'}`);
      if (s.formatChosen) s.renderer().render(r);
      else s.say(`put ${ns}/${key} version=${res?.version ?? '?'}`);
    });
  kv.command('delete <ns> <key>').alias('rm').description('Delete a key').action(async (ns: string, key: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const r = await s.api().call('DELETE /api/v1/kv/:ns/*', { params: { ns, '*': key } });
    if (s.formatChosen) s.renderer().render(r);
    else s.say(`deleted ${ns}/${key}`);
  });
  kv.command('list [ns]').alias('ls').description('Keys of a namespace (or the namespaces)')
    .option('--prefix <prefix>', 'keys starting with this')
    .option('--limit <n>', 'keys per page (1..1000)', (v) => intFlag('limit', v), 100)
    .option('--after <key>', 'start after this key')
    .option('--keys-only', 'no values')
    .action(async (ns: string | undefined, o: { prefix?: string; limit: number; after?: string; keysOnly?: boolean }, cmd: Command) => {
      const s = Session.of(cmd);
      if (!ns) {
        const d = await s.api().call('GET /api/v1/resources/kv/namespaces');
        s.renderer().render(d, { columns: [{ header: 'NAMESPACE', path: 'ns' }, { header: 'KEYS', path: 'keys' }], rows: (x) => (x as { namespaces: unknown[] }).namespaces });
        return;
      }
      if (o.limit < 1) throw userError('--limit must be at least 1');
      const d = await s.api().call('POST /api/v1/resources/kv/list', { body: { ns, prefix: o.prefix ?? '', limit: o.limit, ...(o.after ? { after: o.after } : {}), ...(o.keysOnly ? { keysOnly: true } : {}) } });
      s.renderer().render(d, { columns: [{ header: 'KEY' }, { header: 'VERSION' }, { header: 'VALUE', value: (r) => JSON.stringify(r.value) }, { header: 'EXPIRES', path: 'expiresAt' }], rows: (x) => (x as { rows?: unknown[] }).rows ?? [] });
    });
}

export function registerTimers(program: Command): void {
  const timers = program.command('timers').description('Scheduled messages (Queen-TS)');
  timers.command('list <queue>').alias('ls').description('Pending timers of a queue, by key')
    .option('--limit <n>', 'rows (1..1000)', (v) => intFlag('limit', v), 100)
    .option('--after <key>', 'start after this timer key')
    .action(async (queue: string, o: { limit: number; after?: string }, cmd: Command) => {
      const s = Session.of(cmd);
      const d = await s.api().call('GET /api/v1/timers/:queue', { params: { queue }, query: { limit: o.limit, after: o.after } });
      s.renderer().render(d, { columns: [{ header: 'KEY', path: 'timerKey' }, { header: 'PARTITION' }, { header: 'DUE', path: 'deliverAt' }, { header: 'ATTEMPTS' }, { header: 'MESSAGEID', path: 'messageId', wide: true }], rows: (x) => (x as { rows?: unknown[] }).rows ?? [] });
    });
  timers.command('get <queue> <timerKey>').description('One timer (exit 4 when absent)').action(async (queue: string, key: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const d = await s.api().call('GET /api/v1/timers/:queue/*', { params: { queue, '*': key } });
    if (!(d as { found?: boolean } | undefined)?.found) throw emptyResult(`no timer ${queue}/${key}`);
    s.renderer().render(d);
  });
  timers.command('cancel <queue> <timerKey>').description('Cancel a pending timer (exit 4 when absent)').action(async (queue: string, key: string, _o, cmd: Command) => {
    const s = Session.of(cmd);
    const d = await s.api().call('DELETE /api/v1/timers/:queue/*', { params: { queue, '*': key } });
    const r = d as { ok?: boolean; result?: string; verdict?: string } | undefined;
    if (s.formatChosen) s.renderer().render(d);
    else s.say(`cancel ${queue}/${key}: ${r?.result ?? r?.verdict ?? (r?.ok ? 'cancelled' : 'absent')}`);
    if (r?.ok === false) throw emptyResult('nothing cancelled');
  });
}
