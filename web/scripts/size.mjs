// Fails the build when the JavaScript a first page load fetches is over
// budget (gzip): the entry chunk named by index.html plus everything it
// imports statically (modulepreload links). Lazy chunks are not counted.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET = Number(process.env['SLUICE_UI_BUDGET_KB'] ?? 300) * 1024;
const dist = new URL('../dist/', import.meta.url).pathname;
const html = readFileSync(join(dist, 'index.html'), 'utf8');
const initial = new Set([...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]));
if (initial.size === 0) {
  console.error('size check: index.html references no JavaScript');
  process.exit(1);
}
let total = 0;
for (const f of initial) {
  const gz = gzipSync(readFileSync(join(dist, f)), { level: 9 }).length;
  total += gz;
  console.log(`  ${f}: ${(gz / 1024).toFixed(1)} KiB gzip`);
}
const all = readdirSync(join(dist, 'assets')).filter((f) => f.endsWith('.js')).length;
console.log(`initial JavaScript: ${(total / 1024).toFixed(1)} KiB gzip of ${BUDGET / 1024} KiB budget (${initial.size} of ${all} chunks)`);
if (total > BUDGET) {
  console.error('size check FAILED: the initial JavaScript is over budget');
  process.exit(1);
}
