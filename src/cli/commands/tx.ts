/**
 * `queenctl tx -f <bundle>`: one atomic transaction from a JSON or YAML file (or stdin with `-`)
 * (docs/cli.md#transactions). The bundle is the body of `POST /api/v1/transaction`
 * (docs/http-api.md#transaction): `{operations:[{type:"ack",…}|{type:"push",…}], requiredLeases?,
 * kv?, timers?}`. Lines printed follow the reference CLI (queen-mq/queen:
 * clients/client-cli/cmd/tx.go): `transaction committed`, or exit 2 with the broker's reason.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import YAML from 'yaml';
import { serverError, userError } from '../errors.js';
import { Session } from '../session.js';
import { parseClientJson } from '../../util/json.js';

/** Reads a file or stdin (`-`) as text. @throws CliError exit 1 when unreadable */
export async function readInput(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw userError(`open ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** JSON (numbers kept exact) or, failing that, YAML. @throws CliError exit 1 */
export function parseDocument(text: string): unknown {
  try {
    return parseClientJson(text);
  } catch {
    try {
      return YAML.parse(text) as unknown;
    } catch (e) {
      throw userError(`parse: ${(e as Error).message}`);
    }
  }
}

export function registerTx(program: Command): void {
  program.command('tx').description('Commit acks and pushes atomically from a bundle file')
    .option('-f, --file <path>', 'bundle (JSON or YAML; - for stdin)')
    .option('--dry-run', 'parse and check, send nothing')
    .action(async (o: { file?: string; dryRun?: boolean }, cmd: Command) => {
      if (!o.file) throw userError('--file is required');
      const bundle = parseDocument(await readInput(o.file)) as { operations?: unknown; requiredLeases?: unknown };
      if (bundle === null || typeof bundle !== 'object' || Array.isArray(bundle)) throw userError('the bundle must be an object {operations, requiredLeases?}');
      if (!Array.isArray(bundle.operations) || bundle.operations.length === 0) throw userError('transaction has no operations');
      for (const [i, op] of bundle.operations.entries()) {
        const type = (op as { type?: unknown } | null)?.type;
        if (type !== 'ack' && type !== 'push') throw userError(`operation ${i}: unsupported type ${JSON.stringify(type)} (ack or push)`);
      }
      const leases = Array.isArray(bundle.requiredLeases) ? bundle.requiredLeases.length : 0;
      if (o.dryRun) {
        process.stdout.write(`[dry-run] ${bundle.operations.length} operations, ${leases} required leases\n`);
        return;
      }
      const s = Session.of(cmd);
      const res = await s.api().call('POST /api/v1/transaction', { body: bundle });
      const r = res as { success?: boolean; error?: string; reason?: string } | undefined;
      if (!r?.success) throw serverError(`transaction failed: ${r?.error ?? r?.reason ?? 'unknown'}`);
      if (s.formatChosen) s.renderer().render(res);
      else s.say('transaction committed');
    });
}
