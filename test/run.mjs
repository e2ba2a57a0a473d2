// `npm test`: the whole suite with vitest, ending with one summary line,
// `tests: N passed, M failed`, which CI reads.
//
// 1. scripts/test-deps.mjs checks the system components the suite uses and
//    installs what is missing (as root, from Debian's packages), or stops
//    here naming each with its install command.
// 2. dist/ is built again when src/ changed since the last build: the
//    examples run the built package (`verdict/client`, `verdict/saga`).
// 3. Two phases on this two-core machine: first everything that starts real
//    processes (unit, PostgreSQL, process tests), then the CPU-bound
//    simulations. Run together, a simulator worker starves the node
//    processes of the other worker and their election timeouts fire for no
//    reason. Extra arguments (`npm test -- test/unit/x.test.ts`) run one
//    vitest with them.
// 4. After each phase, no process the tests started may still run
//    (test/survivors.mjs): each survivor is named, killed and counted as a
//    failure.
//
// The counts come from test/summary.mjs: a test that did not run because
// its file's setup failed counts as failed.
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize } from './summary.mjs';
import { MARKER, reapSurvivors } from './survivors.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const runId = `${process.pid}-${Date.now()}`;

function finish(passed, failed, failures, ok) {
  // Named again just before the summary line: CI keeps only the tail of the output.
  for (const line of failures) console.log(`FAILED ${line}`);
  console.log(`tests: ${passed} passed, ${failed} failed`);
  process.exit(ok && failed === 0 ? 0 : 1);
}

const deps = spawnSync(process.execPath, [join(ROOT, 'scripts', 'test-deps.mjs')], { stdio: 'inherit' });
if (deps.status !== 0)
  finish(0, 1, ['the system components the tests need are missing (scripts/test-deps.mjs, above)'], false);

/** The newest modification time of a file under dir, in ms. */
function newestMs(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

const built = join(ROOT, 'dist', 'cli', 'main.js');
if (!existsSync(built) || statSync(built).mtimeMs < newestMs(join(ROOT, 'src'))) {
  console.log('npm test: dist/ is missing or older than src/: building it first (the examples run the built package)');
  const b = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
  if (b.status !== 0) finish(0, 1, ['npm run build failed (above)'], false);
}

/** Runs vitest with `args`; resolves to its exit status, or its signal. */
function vitest(args, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...args], {
      stdio: 'inherit',
      env,
    });
    // Ctrl-C reaches vitest through the terminal; SIGTERM to this runner is passed on.
    const pass = () => child.kill('SIGTERM');
    process.once('SIGTERM', pass);
    child.once('exit', (status, signal) => {
      process.off('SIGTERM', pass);
      resolve({ status, signal });
    });
  });
}

const extra = process.argv.slice(2);
const phases = extra.length > 0 ? [extra] : [['--exclude', 'test/sim/**'], ['test/sim']];

let passed = 0;
let failed = 0;
let ok = true;
const failures = [];
for (const [i, args] of phases.entries()) {
  const report = join(tmpdir(), `verdict-summary-${runId}-${i}.json`);
  const env = { ...process.env, VERDICT_SUMMARY_FILE: report, [MARKER]: runId };
  const r = await vitest(['--reporter=default', `--reporter=${join(ROOT, 'test', 'summary.mjs')}`, ...args], env);
  let s = { passed: 0, failed: 0, failures: [] };
  if (existsSync(report)) {
    try {
      s = summarize(JSON.parse(readFileSync(report, 'utf8')));
    } catch (err) {
      s = { passed: 0, failed: 1, failures: [`phase ${i + 1} (${args.join(' ')}): unreadable report: ${err.message}`] };
    }
  } else {
    s = { passed: 0, failed: 1, failures: [`phase ${i + 1} (${args.join(' ')}): no report from vitest`] };
  }
  rmSync(report, { force: true });
  if ((r.status !== 0 || r.signal) && s.failed === 0) {
    s.failed = 1;
    s.failures.push(
      `phase ${i + 1} (${args.join(' ')}): vitest ended with ${r.signal ?? `status ${r.status}`} and no failed test`,
    );
  }
  for (const p of await reapSurvivors(runId)) {
    s.failed += 1;
    s.failures.push(`left running after phase ${i + 1}, killed: pid ${p.pid}: ${p.command}`);
  }
  passed += s.passed;
  failed += s.failed;
  failures.push(...s.failures);
  if (r.status !== 0) ok = false;
}
finish(passed, failed, failures, ok);
