// The project's own lint rules for web/src (tsc --strict does the rest):
// - every module opens with a comment saying what it is (as `//!` in Rust);
// - every components/<Name>/ has a test beside it;
// - no `any`, no `console.log`, no `@ts-ignore`, no non-null `!.` assertions.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const src = new URL('../src/', import.meta.url).pathname;
const problems = [];
const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
const files = walk(src).filter((f) => /\.(ts|tsx)$/.test(f));

for (const f of files) {
  const rel = relative(src, f);
  const text = readFileSync(f, 'utf8');
  const isTest = /\.test\.tsx?$/.test(f);
  if (!isTest && !/^(\/\/|\/\*)/.test(text)) problems.push(`${rel}: missing the opening comment that says what the module is`);
  text.split('\n').forEach((line, i) => {
    const at = `${rel}:${i + 1}`;
    if (/(:|\bas|<)\s*any\b/.test(line)) problems.push(`${at}: \`any\` (use unknown and narrow)`);
    if (/console\.log\(/.test(line)) problems.push(`${at}: console.log`);
    if (/@ts-(ignore|nocheck)/.test(line)) problems.push(`${at}: @ts-ignore`);
    if (!isTest && /\w!\./.test(line)) problems.push(`${at}: non-null assertion`);
  });
}
for (const d of readdirSync(join(src, 'components'))) {
  const dir = join(src, 'components', d);
  if (!readdirSync(dir).some((f) => /\.test\.tsx?$/.test(f))) problems.push(`components/${d}: no test beside the component`);
}
if (problems.length) {
  console.error(problems.join('\n'));
  console.error(`lint: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`lint: ${files.length} files OK`);
