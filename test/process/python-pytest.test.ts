// The Python SDK's pytest suite (sdk/python/tests) as part of `npm test`:
// each pytest test is one vitest test here, so the summary line counts
// them one by one and a failure is named by its pytest id. The tests are
// listed when this file loads (pytest --collect-only), run once in
// beforeAll with a JUnit XML report, and each vitest test asserts its own
// pytest result. A collection that fails is one failing test, never a
// silent zero.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './harness.ts';

const PYTHON = '/usr/bin/python3';
const SDK = join(ROOT, 'sdk', 'python');
const PYTEST = ['-m', 'pytest', 'tests', '-p', 'no:cacheprovider'];
const ENV = { ...process.env, PYTHONDONTWRITEBYTECODE: '1' };

/** pytest's ids of every test, e.g. tests/test_retry.py::test_classify[...]; or why they could not be listed. */
function collect(): { ids: string[]; problem: string | null } {
  const r = spawnSync(PYTHON, [...PYTEST, '--collect-only', '-q'], { cwd: SDK, encoding: 'utf8', env: ENV, timeout: 60_000 });
  const ids = (r.stdout ?? '').split('\n').filter((l) => /^tests\/\S+\.py::/.test(l));
  if (r.status !== 0 || ids.length === 0) return { ids, problem: `pytest --collect-only ended with ${r.status ?? r.signal}: ${(r.stdout ?? '').slice(-1_500)}${(r.stderr ?? '').slice(-1_500)}` };
  return { ids, problem: null };
}

type Result = { state: 'passed' | 'failed' | 'skipped'; message: string };

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

const { ids, problem } = collect();
let results = new Map<string, Result>();
let runOutput = '';
const dir = mkdtempSync(join(tmpdir(), 'verdict-pytest-'));

beforeAll(() => {
  if (problem !== null) return;
  const report = join(dir, 'pytest.xml');
  const r = spawnSync(PYTHON, [...PYTEST, '-q', `--junitxml=${report}`], { cwd: SDK, encoding: 'utf8', env: ENV, timeout: 170_000 });
  runOutput = `${(r.stdout ?? '').slice(-3_000)}${(r.stderr ?? '').slice(-1_000)}`;
  try {
    results = junitResults(readFileSync(report, 'utf8'));
  } catch {
    results = new Map();
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sdk/python pytest', () => {
  it('collects the Python SDK tests', () => {
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
