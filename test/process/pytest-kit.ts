// Running a pytest suite of the Python SDK from vitest, one vitest test per
// pytest test, so the summary line counts them one by one and a failure is
// named by its pytest id (test/process/python-pytest.test.ts for
// sdk/python/tests, test/pg/python-pg-pytest.test.ts for sdk/python/tests_pg
// on a real PostgreSQL). The tests are listed when the file loads (pytest
// --collect-only), run once in beforeAll with a JUnit XML report, and each
// vitest test asserts its own pytest result. A collection that fails is one
// failing test, never a silent zero.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './harness.ts';

const PYTHON = '/usr/bin/python3';
const SDK = join(ROOT, 'sdk', 'python');

type Result = { state: 'passed' | 'failed' | 'skipped'; message: string };

/**
 * pytest's ids of every test in `folder`, e.g. tests/test_retry.py::test_classify[...]; or why they could not be
 * listed.
 */
function collect(folder: string, env: NodeJS.ProcessEnv): { ids: string[]; problem: string | null } {
  const r = spawnSync(PYTHON, ['-m', 'pytest', folder, '-p', 'no:cacheprovider', '--collect-only', '-q'], {
    cwd: SDK,
    encoding: 'utf8',
    env,
    timeout: 60_000,
  });
  const ids = (r.stdout ?? '').split('\n').filter((l) => l.startsWith(`${folder}/`) && /\.py::/.test(l));
  if (r.status !== 0 || ids.length === 0)
    return {
      ids,
      problem: `pytest --collect-only ended with ${r.status ?? r.signal}: ${(r.stdout ?? '').slice(-1_500)}${(r.stderr ?? '').slice(-1_500)}`,
    };
  return { ids, problem: null };
}

/** Per pytest id, its result in a JUnit XML report (classname tests.test_x, name test_y[...]). */
function junitResults(xml: string): Map<string, Result> {
  const out = new Map<string, Result>();
  const unescape = (s: string): string =>
    s
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
      .replace(/&amp;/g, '&');
  const re = /<testcase classname="([^"]*)" name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const file = `${m[1].replace(/\./g, '/')}.py`;
    const body = m[4] ?? '';
    const bad = /<(failure|error)[^>]*message="([^"]*)"/.exec(body);
    const state = bad !== null ? 'failed' : /<skipped/.test(body) ? 'skipped' : 'passed';
    out.set(`${file}::${unescape(m[2])}`, { state, message: bad === null ? '' : unescape(bad[2]) });
  }
  return out;
}

/**
 * Declares the vitest tests of the pytest tests in sdk/python/`folder`.
 * `env` gives what they need (a database URL); `setUp` runs first in
 * beforeAll (start a server) and may return more environment.
 */
export function describePytest(
  title: string,
  folder: string,
  o: { env?: NodeJS.ProcessEnv; setUp?: () => Promise<NodeJS.ProcessEnv>; timeoutMs?: number } = {},
): void {
  const base = { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...o.env };
  // Listed with a stand-in for what setUp gives (the URL is only known then): the listing must not depend on it.
  const { ids, problem } = collect(folder, { ...base, VERDICT_TEST_LISTING: '1' });
  let results = new Map<string, Result>();
  let runOutput = '';
  const dir = mkdtempSync(join(tmpdir(), 'verdict-pytest-'));
  beforeAll(
    async () => {
      if (problem !== null) return;
      const env = { ...base, ...(o.setUp === undefined ? {} : await o.setUp()) };
      const report = join(dir, 'pytest.xml');
      const r = spawnSync(PYTHON, ['-m', 'pytest', folder, '-p', 'no:cacheprovider', '-q', `--junitxml=${report}`], {
        cwd: SDK,
        encoding: 'utf8',
        env,
        timeout: o.timeoutMs ?? 170_000,
      });
      runOutput = `${(r.stdout ?? '').slice(-3_000)}${(r.stderr ?? '').slice(-1_000)}`;
      try {
        results = junitResults(readFileSync(report, 'utf8'));
      } catch {
        results = new Map();
      }
    },
    (o.timeoutMs ?? 170_000) + 60_000,
  );
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe(title, () => {
    it(`collects the Python SDK tests of ${folder}`, () => {
      expect(problem).toBeNull();
      expect(ids.length).toBeGreaterThan(0);
    });
    for (const id of ids) {
      it(id, () => {
        const r = results.get(id);
        if (r === undefined) throw new Error(`pytest reported no result for ${id}; its output: ${runOutput}`);
        if (r.state === 'failed') throw new Error(`${id}: ${r.message}`);
        expect(r.state).toBe('passed');
      });
    }
  });
}
