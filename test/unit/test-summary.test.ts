// `npm test`'s own bookkeeping (test/run.mjs): the summary line counts a test
// that did not run because its file's setup failed as failed, names the file
// with its setup error on a FAILED line, leaves deliberate skips out, and
// the survivor check finds and kills a process carrying the run's marker.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { summarize } from '../summary.mjs';
import { MARKER, reapSurvivors, survivors } from '../survivors.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(ROOT, 'test', 'unit', 'fixtures', 'summary');
const tmp = mkdtempSync(join(tmpdir(), 'verdict-summary-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs the fixture files with the summary reporter, as test/run.mjs does; returns the summary. */
function runFixtures(files: string[]): ReturnType<typeof summarize> {
  const report = join(tmp, `${files.join('-')}.json`);
  const r = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--root',
      FIXTURES,
      '--reporter=dot',
      `--reporter=${join(ROOT, 'test', 'summary.mjs')}`,
      ...files,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, VERDICT_SUMMARY_FILE: report, VITEST_POOL_ID: '' },
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  expect(r.status, r.stderr).toBe(1); // every fixture run has a failure
  return summarize(JSON.parse(readFileSync(report, 'utf8')));
}

describe('the summary line of npm test', () => {
  it('counts every test of a file whose beforeAll throws as failed, and names the file with its setup error', () => {
    const s = runFixtures(['setup-throws.fixture.ts']);
    expect(s.passed).toBe(0);
    expect(s.failed).toBe(3);
    expect(s.failures).toEqual([
      'test/unit/fixtures/summary/setup-throws.fixture.ts: 3 test(s) did not run, setup failed: nats-server not found',
    ]);
  });

  it('counts failures, failed setups of a describe, a failed afterAll and a file that did not load; leaves skip and todo out', () => {
    const s = runFixtures(['mixed.fixture.ts', 'after-throws.fixture.ts', 'load-fails.fixture.ts']);
    // passed: mixed "passes" and after-throws "passes"
    expect(s.passed).toBe(2);
    // failed: "fails", "group > never runs", the afterAll, the file that did not load
    expect(s.failed).toBe(4);
    const text = s.failures.join('\n');
    expect(text).toContain('mixed.fixture.ts > fails: expected 1 to be 2');
    expect(text).toContain('mixed.fixture.ts: 1 test(s) did not run, setup failed: group setup');
    expect(text).toContain('after-throws.fixture.ts: a hook failed: cleanup failed');
    expect(text).toContain('load-fails.fixture.ts: did not load: ');
    expect(text).not.toContain('skipped on purpose');
    expect(text).not.toContain('later');
  });

  it('counts a test skipped while running (a missing component) as failed', () => {
    const s = summarize({
      modules: [
        {
          file: 'x.test.ts',
          errors: [],
          suites: [],
          tests: [
            { name: 'needs etcd', mode: 'run', state: 'skipped', errors: [], note: 'etcd missing', setupError: null },
          ],
        },
      ],
      unhandled: ['boom'],
    });
    expect(s).toEqual({
      passed: 0,
      failed: 2,
      failures: ['x.test.ts > needs etcd: skipped while running (etcd missing)', 'unhandled error: boom'],
    });
  });
});

describe('nothing outlives a test run', () => {
  it('finds a process carrying the run marker, and kills it', async () => {
    const runId = `summary-test-${process.pid}-${Date.now()}`;
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      env: { ...process.env, [MARKER]: runId },
      stdio: 'ignore',
    });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      // The child's environment is readable once it has started: wait for it with a bound.
      const deadline = Date.now() + 10_000;
      while (survivors(runId).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(survivors(runId).map((s) => s.pid)).toEqual([child.pid]);
      expect(survivors('another-run')).toEqual([]);
      const reaped = await reapSurvivors(runId, 300);
      expect(reaped.map((s) => s.pid)).toEqual([child.pid]);
      await exited;
      expect(survivors(runId)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
