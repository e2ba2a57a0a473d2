// `npm test`: the whole suite with vitest, ending with one summary line,
// `tests: N passed, M failed`, which CI reads.
//
// Two phases on this two-core machine: first everything that starts real
// processes (unit, PostgreSQL, process tests), then the CPU-bound
// simulations. Run together, a simulator worker starves the node processes
// of the other worker and their election timeouts fire for no reason.
// Extra arguments (`npm test -- test/unit/x.test.ts`) run one vitest with them.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

function firstLine(text) {
  const line =
    String(text ?? '')
      .split('\n')
      .find((l) => l.trim() !== '') ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

const extra = process.argv.slice(2);
const phases = extra.length > 0 ? [extra] : [['--exclude', 'test/sim/**'], ['test/sim']];

let passed = 0;
let failed = 0;
let ok = true;
// Named again just before the summary line: CI keeps only the tail of the output.
const failures = [];
for (const [i, args] of phases.entries()) {
  const report = join(tmpdir(), `verdict-vitest-${process.pid}-${i}.json`);
  const r = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args], { stdio: 'inherit' });
  let p = 0;
  let f = 0;
  try {
    const j = JSON.parse(readFileSync(report, 'utf8'));
    p = j.numPassedTests;
    f = j.numFailedTests;
    // A file that failed to load has no tests of its own: count it as one failure.
    for (const s of j.testResults ?? []) {
      const file = relative(process.cwd(), s.name ?? '');
      if (s.status === 'failed' && (s.assertionResults ?? []).length === 0) {
        f += 1;
        failures.push(`${file}: did not load: ${firstLine(s.message)}`);
      }
      for (const a of s.assertionResults ?? []) {
        if (a.status === 'failed') failures.push(`${file} > ${a.fullName}: ${firstLine((a.failureMessages ?? [])[0])}`);
      }
    }
  } catch {
    f = 1;
    failures.push(`phase ${i + 1} (${args.join(' ')}): no report from vitest`);
  }
  rmSync(report, { force: true });
  if ((r.status !== 0 || r.signal) && f === 0) {
    f = 1;
    failures.push(`phase ${i + 1} (${args.join(' ')}): vitest ended with ${r.signal ?? `status ${r.status}`} and no failed test`);
  }
  passed += p;
  failed += f;
  if (r.status !== 0) ok = false;
}
for (const line of failures) console.log(`FAILED ${line}`);
console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(ok && failed === 0 ? 0 : 1);
