// `npm run build` (and `prepare`, so `npm ci` on a clean clone builds too):
// src/ to dist/ with declarations, by tsc with tsconfig.build.json. dist/ is
// emptied first so a module deleted from src/ does not linger in dist/.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let tsc;
try {
  tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  console.error('verdict build: typescript is not installed; run `npm ci` in the checkout first');
  process.exit(1);
}
const startedAtMs = Date.now();
rmSync(join(root, 'dist'), { recursive: true, force: true });
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
// tsc rewrites `./x.ts` to `./x.js` in the JavaScript it emits but not in the
// declarations; a project that type-checks against dist/ without
// allowImportingTsExtensions needs `.js` there too.
for (const e of readdirSync(join(root, 'dist'), { withFileTypes: true, recursive: true })) {
  if (!e.isFile() || !e.name.endsWith('.d.ts')) continue;
  const file = join(e.parentPath, e.name);
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(/((?:from|import)\s*\(?\s*['"]\.{1,2}\/[^'"]*)\.ts(['"])/g, '$1.js$2');
  if (fixed !== text) writeFileSync(file, fixed);
}
console.error(`verdict build: dist/ in ${Date.now() - startedAtMs} ms`);
