/**
 * Builds the dashboard into dist/web (git-ignored), which src/http/routes/dashboard.ts serves.
 *   npx vite build --config web/vite.config.ts
 * Dev: `npx vite --config web/vite.config.ts` proxies the API to a broker on 127.0.0.1:6632
 * (override with QUEEN_URL).
 */
import preact from '@preact/preset-vite';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));
const broker = process.env.QUEEN_URL ?? 'http://127.0.0.1:6632';

export default defineConfig({
  root: here,
  base: '/',
  publicDir: path.join(here, 'public'),
  plugins: [preact()],
  build: {
    outDir: path.resolve(here, '../dist/web'),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2020',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    proxy: {
      '/api': broker,
      '/auth': broker,
      '/metrics': broker,
      '/health': broker,
    },
  },
});
