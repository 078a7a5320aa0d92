/**
 * `login` and `logout` (docs/cli.md#login). The token is stored in the context as a `literal:`
 * reference inside the 0600 config file (this CLI has no OS keychain). Methods, as in the
 * reference CLI (queen-mq/queen: clients/client-cli/cmd/login.go, internal/auth/login.go):
 *
 * - `token` (default): a pasted JWT (`--token`, or one line on stdin, not echoed on a terminal);
 * - `password`: `POST <server>/api/login {username, password}` on the Queen proxy, the JWT read
 *   from its `token` cookie (the reference proxy) or its `token` field (ours). A 401 exits 3;
 * - `google`: prints the proxy's `/api/auth/google` URL and reads the pasted JWT.
 *
 * `logout` forgets the token and, for a stored literal, asks the proxy to end its session
 * (`POST /auth/logout`, best effort). Neither the token nor the password is ever printed.
 */
import readline from 'node:readline';
import type { Command } from 'commander';
import { findContext, saveConfig } from '../config.js';
import { authError, serverError, userError } from '../errors.js';
import { Session } from '../session.js';

/** Lines of a piped stdin, shared by successive prompts (a second reader would lose buffered lines). */
let piped: AsyncIterator<string> | undefined;

/** Reads one line typed on the terminal without echoing it (raw mode). */
function hiddenLine(): Promise<string> {
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  let text = '';
  return new Promise((resolve, reject) => {
    const done = (): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string): void => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n') {
          done();
          resolve(text);
          return;
        }
        if (c === '\u0003') {
          done();
          reject(userError('interrupted'));
          return;
        }
        text = c === '\u007f' || c === '\b' ? text.slice(0, -1) : text + c;
      }
    };
    stdin.on('data', onData);
  });
}

/** Reads one line from stdin after a prompt on stderr; not echoed when `hidden` and stdin is a terminal. */
async function prompt(question: string, hidden: boolean): Promise<string> {
  process.stderr.write(question);
  if (hidden && process.stdin.isTTY) return (await hiddenLine()).trim();
  piped ??= readline.createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const next = await piped.next();
  return next.done ? '' : next.value.trim();
}

/** The JWT from a login answer: the `token` cookie, else a `token` field of a JSON body. */
function tokenFrom(res: Response, body: string): string | undefined {
  for (const c of res.headers.getSetCookie()) {
    const m = /^\s*token=([^;]*)/.exec(c);
    if (m && m[1]) return decodeURIComponent(m[1]);
  }
  try {
    const o = JSON.parse(body) as { token?: unknown };
    if (typeof o.token === 'string' && o.token) return o.token;
  } catch { /* not JSON */ }
  return undefined;
}

/**
 * Password login through the proxy: `POST <server>/api/login` with JSON `{username, password}`,
 * as the reference CLI does (queen-mq/queen: clients/client-cli/internal/auth/login.go); our
 * proxy answers the same route (docs/proxy.md#sessions).
 * @returns the session JWT, used afterwards as `Authorization: Bearer`
 * @throws CliError exit 3 on 401/403, exit 2 when unreachable, refused otherwise or no token came back
 */
export async function passwordLogin(server: string, username: string, password: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(`${server}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }), redirect: 'manual', signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    throw serverError(`login: server unreachable (${server}): ${(e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message}`);
  }
  const body = await res.text();
  if (res.status === 401 || res.status === 403) throw authError('invalid credentials');
  if (res.status === 404) throw serverError('login: the server has no /api/login route (is this the Queen proxy?)');
  if (res.status >= 400) throw serverError(`login failed: HTTP ${res.status}`);
  const token = tokenFrom(res, body);
  if (!token) throw serverError('login succeeded but no token was returned');
  return token;
}

/**
 * Ends the session of a token the proxy minted (`POST <server>/auth/logout` with it as bearer,
 * docs/proxy.md#sessions), best effort: any failure is ignored, as a server without sessions
 * has nothing to end. Bounded by 5 s.
 */
async function endSession(server: string, token: string): Promise<void> {
  try {
    await fetch(`${server}/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, redirect: 'manual', signal: AbortSignal.timeout(5_000) });
  } catch { /* unreachable or no such route: the token is forgotten locally anyway */ }
}

/** Obtains a token by `method` and stores it in context `name`. */
async function login(s: Session, name: string, server: string, method: string, o: { user?: string; password?: string }): Promise<void> {
  let token: string;
  if (method === 'token') token = s.g.token?.trim() || (await prompt('Paste JWT and press Enter: ', true));
  else if (method === 'password') {
    const user = o.user ?? (await prompt('Username: ', false));
    const password = o.password ?? (await prompt('Password: ', true));
    token = await passwordLogin(server, user, password);
  } else if (method === 'google') {
    process.stderr.write(`Open ${server}/api/auth/google in a browser, sign in, then copy the dashboard's CLI token.\n`);
    token = await prompt('Paste JWT: ', true);
  } else throw userError(`unknown --method "${method}" (token, password, google)`);
  if (!token) throw userError('no token captured');
  const cfg = s.config();
  const ctx = findContext(cfg, name);
  if (!ctx) throw userError(`context "${name}" does not exist`);
  ctx['token-ref'] = `literal:${token}`;
  saveConfig(s.configFile, cfg);
  s.say(`logged in as context=${name} server=${server} (token stored in ${s.configFile})`);
}

export function registerLogin(program: Command): void {
  program.command('login').description('Store a token in the current (or --context) context')
    .option('--method <method>', 'token | password | google')
    .option('-u, --user <name>', 'username (password method)')
    .option('--password <password>', 'password (prefer the prompt)')
    .option('--no-browser', 'accepted for compatibility (the URL is printed, never opened)')
    .action(async (o: { method?: string; user?: string; password?: string }, cmd: Command) => {
      const s = Session.of(cmd);
      const cfg = s.config();
      const name = s.g.context || process.env.QUEEN_CONTEXT || cfg['current-context'];
      if (!name) throw userError("no context selected; run 'queenctl config set-context' first");
      const ctx = findContext(cfg, name);
      if (!ctx) throw userError(`context "${name}" does not exist`);
      const server = (s.g.server ?? ctx.server ?? '').replace(/\/+$/, '');
      if (!server) throw userError(`context "${name}" has no server URL`);
      const method = o.method ?? (o.user ? 'password' : 'token');
      try {
        await login(s, name, server, method, o);
      } finally {
        await piped?.return?.(); // closes the shared stdin reader
      }
    });

  program.command('logout').description('Forget the token of the current (or --context) context').action(async (_o, cmd: Command) => {
    const s = Session.of(cmd);
    const cfg = s.config();
    const name = s.g.context || process.env.QUEEN_CONTEXT || cfg['current-context'];
    if (!name) throw userError('no context selected');
    const ctx = findContext(cfg, name);
    if (!ctx) throw userError(`no such context "${name}"`);
    const ref = ctx['token-ref'];
    const server = (s.g.server ?? ctx.server ?? '').replace(/\/+$/, '');
    if (ref?.startsWith('literal:') && /^https?:\/\//.test(server)) await endSession(server, ref.slice('literal:'.length));
    delete ctx['token-ref'];
    saveConfig(s.configFile, cfg);
    s.say(`logged out from ${name}`);
  });
}
