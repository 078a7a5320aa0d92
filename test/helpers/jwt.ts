/**
 * Test helpers for broker JWT: key generation, token minting (jose), a real JWKS server on
 * 127.0.0.1 that counts its fetches, a raw HTTP client (no URL normalisation), and a broker
 * spawner that captures the boot log. Loopback only; every wait is bounded.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CompactSign, exportJWK, SignJWT, type JWK } from 'jose';
import { MAIN, startBroker } from './broker.js';
import { within } from './wait.js';

// ---------------------------------------------------------------------------------------------
// keys and tokens

export interface AsymmetricKeys {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** SPKI `PUBLIC KEY` PEM. */
  readonly publicPem: string;
}

/** A fresh RSA key pair (2048-bit unless told). */
export function rsaKeys(modulusLength = 2048): AsymmetricKeys & { readonly pkcs1Pem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength });
  return {
    privateKey,
    publicKey,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    pkcs1Pem: publicKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
  };
}

/** A fresh Ed25519 key pair. */
export function edKeys(): AsymmetricKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** The public JWK of a key pair, with a `kid`. */
export async function publicJwk(keys: AsymmetricKeys, kid?: string): Promise<JWK> {
  const jwk = await exportJWK(keys.publicKey);
  return kid === undefined ? jwk : { ...jwk, kid };
}

export type SigningKey = KeyObject | Uint8Array;

/** HMAC key bytes of a secret string (the broker uses `JWT_SECRET`'s UTF-8 bytes). */
export function hsKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * A signed compact JWT with exactly `claims` and the header `{alg, ...header}`.
 * `alg` may be any JWS alg jose can sign with.
 */
export async function mint(alg: string, key: SigningKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  // jose signs through WebCrypto on the thread pool; bounded so a stuck signature names itself.
  return within(new SignJWT(claims).setProtectedHeader({ ...header, alg }).sign(key), 20_000, `signing a ${alg} token`);
}


/** A compact JWS over arbitrary payload bytes (for non-object payloads). */
export async function signRaw(alg: string, key: SigningKey, payload: string, header: Record<string, unknown> = {}): Promise<string> {
  return within(new CompactSign(new TextEncoder().encode(payload)).setProtectedHeader({ ...header, alg }).sign(key), 20_000, `signing a raw ${alg} payload`);
}

/** base64url of a JSON value or string. */
export function b64(v: unknown): string {
  return Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
}

/** An unsigned (or arbitrarily "signed") token from a header and payload. */
export function rawToken(header: unknown, payload: unknown, signature = ''): string {
  return `${b64(header)}.${b64(payload)}.${signature}`;
}

/** Flips one bit in the signature segment of a compact JWS (the first byte). */
export function flipSignatureBit(token: string): string {
  const [h, p, s] = token.split('.') as [string, string, string];
  const sig = Buffer.from(s, 'base64url');
  sig[0] = sig[0]! ^ 0x01;
  return `${h}.${p}.${sig.toString('base64url')}`;
}

/** Current Unix time in whole seconds. */
export function nowSec(): number {
  return Math.floor(Date.now() / 1000);
}

/** Waits until the wall clock is just past a second boundary (so a request fits in the same second). */
export async function freshSecond(): Promise<number> {
  const ms = Date.now() % 1000;
  if (ms > 50) await sleep(1000 - ms + 5);
  return nowSec();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---------------------------------------------------------------------------------------------
// raw HTTP

export interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  /** The parsed JSON body, or undefined. */
  readonly json: any;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One HTTP request, the path sent exactly as given (no normalisation).
 * @param base `http://127.0.0.1:port`
 */
export function request(base: string, method: string, pathAndQuery: string, headers: Record<string, string> = {}, body?: string): Promise<HttpAnswer> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method, path: pathAndQuery, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers }, agent, timeout: 15_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`request ${method} ${pathAndQuery} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** `{Authorization: Bearer <token>}`. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** The auth refusal messages (docs/security.md#refusals), for telling "refused by auth" from "passed auth". */
export const AUTH_MESSAGES: ReadonlySet<string> = new Set([
  'Authentication required', 'Bad token header', 'Unsupported token algorithm', 'Invalid token signature',
  'Token has expired', 'Token not yet valid', 'Token issued in the future', 'Invalid token issuer',
  'Invalid token audience', 'Unknown key ID', 'Insufficient permissions', 'HS secret not configured',
  'invalid RSA public key PEM', 'invalid Ed public key PEM', 'Token has no expiry', 'Token lifetime too long',
]);

/** True when the auth layer let the request through (the answer is the route's own). */
export function passedAuth(a: HttpAnswer): boolean {
  return !(typeof a.json?.error === 'string' && AUTH_MESSAGES.has(a.json.error));
}

// ---------------------------------------------------------------------------------------------
// JWKS server

export type JwksResponder = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A real JWKS endpoint on 127.0.0.1 that counts its fetches. */
export class JwksServer {
  /** Requests received (every path). */
  fetches = 0;
  /** When each request arrived (ms since the epoch). */
  readonly times: number[] = [];
  /** Paths requested, in order. */
  readonly paths: string[] = [];
  /** The document served by the default responder. */
  doc: unknown = { keys: [] };
  /** Replace to change behaviour (redirects, large bodies, delays). */
  responder: JwksResponder = (_req, res) => {
    const body = JSON.stringify(this.doc);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  private server: http.Server | undefined;
  private port = 0;

  /** Starts listening; returns the document URL. */
  async start(): Promise<string> {
    this.server = http.createServer((req, res) => {
      this.fetches++;
      this.times.push(Date.now());
      this.paths.push(req.url ?? '');
      this.responder(req, res);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/.well-known/jwks.json`;
  }

  /** The base URL (for redirects to other paths). */
  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Waits until `ms` have passed since the last request (bounded by `ms`). */
  async quietFor(ms: number): Promise<void> {
    const last = this.times[this.times.length - 1] ?? 0;
    const wait = last + ms - Date.now();
    if (wait > 0) await sleep(Math.min(wait, ms));
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}

// ---------------------------------------------------------------------------------------------
// the real broker


export interface SpawnedBroker {
  readonly url: string;
  readonly port: number;
  /** stdout + stderr lines so far. */
  logs(): string[];
  /** The parsed pino lines whose `msg` equals `msg`. */
  logLines(msg: string): Record<string, unknown>[];
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
}

/**
 * Spawns the real broker (`startBroker` of test/helpers/broker.ts) at `LOG_LEVEL=info` so the
 * boot lines can be asserted; resolves once `/health` answers 200.
 */
export async function spawnBroker(env: Record<string, string>): Promise<SpawnedBroker> {
  // startBroker resolves after it has read the listening line, and every boot line precedes it on
  // the same pipe, so the boot lines are all in the output by then.
  const b = await startBroker({ env: { LOG_LEVEL: 'info', ...env } });
  const logs = (): string[] => b.output().split('\n').filter((l) => l.trim() !== '');
  return {
    url: b.url,
    port: b.port,
    logs,
    logLines: (msg) =>
      logs().flatMap((l) => {
        try {
          const o = JSON.parse(l) as Record<string, unknown>;
          return o.msg === msg ? [o] : [];
        } catch {
          return [];
        }
      }),
    async stop() {
      await b.stop();
      rmSync(b.dataDir, { recursive: true, force: true });
    },
  };
}

function minimalEnv(port: number, dataDir: string, env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), QUEEN_BIND_ADDR: '127.0.0.1', QUEEN_DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  return { ...base, ...env };
}

export interface BootFailure {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
  /** Connections the broker made to (i.e. accepted on) the port we held: always 0 if it never bound. */
  readonly portTouched: boolean;
}

/**
 * Runs the broker with `env` and expects it to exit (bounded by `timeoutMs`). The port handed to it
 * is held by the test, so a broker that tried to bind would fail with a bind error instead.
 */
export async function runUntilExit(env: Record<string, string>, timeoutMs = 15_000): Promise<BootFailure> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'queen-auth-boot-'));
  const holder = net.createServer((s) => s.destroy());
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const port = (holder.address() as AddressInfo).port;
  try {
    const child = spawn(process.execPath, [MAIN], { env: minimalEnv(port, dataDir, env), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (output += b.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('close', (c, s) => r([c, s])));
    clearTimeout(timer);
    return { code, signal, output, portTouched: /cannot bind|EADDRINUSE|listening/i.test(output) };
  } finally {
    holder.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
