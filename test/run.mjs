// `npm test`: run the whole suite with vitest and end with one summary line,
// `tests: N passed, M failed`, which CI reads. Extra arguments go to vitest.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const report = join(tmpdir(), `verdict-vitest-${process.pid}.json`);
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)];
const child = spawn('npx', args, { stdio: 'inherit' });
child.on('exit', (code, signal) => {
  let passed = 0;
  let failed = 0;
  try {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    passed = r.numPassedTests;
    failed = r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0) + (r.numFailedTestSuites ?? 0 ? 0 : 0);
    // A suite that failed to load has no tests of its own: count it as one failure.
    for (const s of r.testResults ?? []) if (s.status === 'failed' && (s.assertionResults ?? []).length === 0) failed += 1;
  } catch {
    failed = Math.max(failed, 1);
  }
  rmSync(report, { force: true });
  if ((code !== 0 || signal) && failed === 0) failed = 1;
  console.log(`tests: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && code === 0 ? 0 : 1);
});
