// Vite builds the UI into dist/, which crates/api embeds into the binary.
// `npm run dev` serves it with hot reload and proxies the API to a running
// node (SLUICE_API, default http://127.0.0.1:8080).
import { defineConfig } from 'vitest/config';

const api = process.env['SLUICE_API'] ?? 'http://127.0.0.1:8080';

/** Tests that mock modules (uPlot needs a canvas the test DOM lacks). */
const MOCKS = ['src/components/Chart/*.test.tsx', 'src/components/Sparkline/*.test.tsx', 'src/components/Panel/*.chart.test.tsx'];

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
    projects: [
      {
        // One DOM for all files (each cleans up after itself): 15× faster here.
        test: { name: 'shared', environment: 'happy-dom', include: ['src/**/*.test.{ts,tsx}'], exclude: MOCKS, isolate: false },
      },
      {
        // Files that replace modules with vi.mock need their own module graph.
        test: { name: 'isolated', environment: 'happy-dom', include: MOCKS },
      },
    ],
  },
});
