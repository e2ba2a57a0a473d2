#!/usr/bin/env node
// The `verdict` command: runs the compiled CLI, dist/cli/main.js (built by
// `npm run build`, and by `npm ci` / `npm install` through `prepare`).
//
// In a checkout whose src/ changed after the last build, it runs the
// TypeScript source through tsx instead (a development dependency), so a
// stale build is never what runs; `npm run build` makes start-up fast again.
// An installed package has no src/ and always runs dist/.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist', 'cli', 'main.js');
const source = join(root, 'src', 'cli', 'main.ts');

/** The newest modification time under dir, in ms. */
function newestMs(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) newest = Math.max(newest, statSync(join(e.parentPath ?? e.path, e.name)).mtimeMs);
  }
  return newest;
}

const hasSource = existsSync(source);
const built = existsSync(compiled);
if (built && (!hasSource || statSync(compiled).mtimeMs >= newestMs(join(root, 'src')))) {
  await import(pathToFileURL(compiled).href);
} else if (hasSource) {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      `verdict: ${built ? 'dist/ is older than src/' : `${compiled} is missing`} and tsx is not installed to run the source: run \`npm ci\` then \`npm run build\` in ${root}\n`,
    );
    process.exit(1);
  }
  register();
  await import(pathToFileURL(source).href);
} else {
  process.stderr.write(`verdict: ${compiled} is missing: this install of verdict was not built; reinstall it\n`);
  process.exit(1);
}
