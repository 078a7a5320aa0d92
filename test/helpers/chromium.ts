/**
 * What the dashboard's headless-Chromium tests share: where the built dashboard and the
 * screenshots live, the Chromium binary and its flags (no background networking: this machine's
 * network is closed), the skip reason when Chromium is missing, and a build of `dist/web` when it
 * is absent.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository root (this file runs from dist/test/helpers/). */
export const ROOT = path.resolve(here, '../../..');
export const WEB_OUT = path.join(ROOT, 'dist', 'web');
export const SHOTS = path.join(ROOT, 'test-output', 'screenshots');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROME_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-dev-shm-usage'];
/** The `skip` reason of a describe block when no Chromium exists, else undefined. */
export const chromiumMissing = !fs.existsSync(CHROMIUM) ? `no Chromium at ${CHROMIUM}` : undefined;

/**
 * Builds the dashboard when dist/web is missing (the build script normally does it).
 * @throws Error with vite's output when the build fails
 */
export function ensureBuilt(): void {
  if (fs.existsSync(path.join(WEB_OUT, 'index.html'))) return;
  const vite = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const r = spawnSync(process.execPath, [vite, 'build', '--config', path.join(ROOT, 'web', 'vite.config.ts'), '--logLevel', 'warn'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`vite build failed:\n${r.stdout}\n${r.stderr}`);
}

/** A headless Chromium on a throw-away profile, and its first page. */
export interface DashboardBrowser {
  ctx: import('playwright-core').BrowserContext;
  page: import('playwright-core').Page;
  /** Removes the profile after closing the browser; safe to call twice. */
  close(): Promise<void>;
}

/** Launches Chromium (1366×900, en-GB, UTC, 10 s default timeout) on a fresh profile directory. */
export async function launchDashboardBrowser(): Promise<DashboardBrowser> {
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROME_ARGS, viewport: { width: 1366, height: 900 }, locale: 'en-GB', timezoneId: 'UTC' });
  ctx.setDefaultTimeout(10_000);
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  return {
    ctx, page,
    close: async () => {
      await ctx.close().catch(() => undefined);
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
