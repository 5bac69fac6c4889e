// Vite builds the UI into dist/, which crates/api embeds into the binary.
// `npm run dev` serves it with hot reload and proxies the API to a running
// node (SLUICE_API, default http://127.0.0.1:8080).
import { defineConfig } from 'vitest/config';

const api = process.env['SLUICE_API'] ?? 'http://127.0.0.1:8080';

export default defineConfig({
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    assetsInlineLimit: 0,
  },
  server: {
    proxy: { '/api': api, '/_node': api, '/metrics': api },
  },
  test: {
    environment: 'happy-dom',
    include: ['src/**/*.test.{ts,tsx}'],
  },
});
