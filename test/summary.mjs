// The summary of a vitest run that `npm test` prints: `tests: N passed,
// M failed`, with a FAILED line for each failure. The rule is strict on
// purpose: every test that was declared to run and did not pass counts as
// failed, so a file whose setup (`beforeAll`) throws fails each of its tests
// instead of hiding them as "skipped". Only tests declared `skip`/`todo`
// (`it.skip`, `it.skipIf(true)`, `it.todo`) are left out of both counts.
//
// Two halves: `SummaryReporter`, a vitest reporter that writes the run as
// plain data to the file named by VERDICT_SUMMARY_FILE, and `summarize()`,
// a pure function of that data (tested in test/unit/test-summary.test.ts).

import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const LINE_CHARS_MAX = 300;

/** The first non-empty line of a message, cut to a readable length. */
export function firstLine(text) {
  const line =
    String(text ?? '')
      .split('\n')
      .find((l) => l.trim() !== '') ?? '';
  return line.length > LINE_CHARS_MAX ? `${line.slice(0, LINE_CHARS_MAX)}…` : line;
}

/**
 * Plain data of one run: { modules: [{ file, errors, suites: [{ name,
 * errors }], tests: [{ name, mode, state, errors, note, setupError }] }],
 * unhandled: [message] }. `setupError` is the first error of the nearest
 * suite or module around the test that has one (a failed hook or load).
 */
export function runData(testModules, unhandledErrors, cwd = process.cwd()) {
  const message = (e) => firstLine(e?.message ?? e);
  const modules = [];
  for (const m of testModules) {
    const mod = { file: relative(cwd, m.moduleId), errors: m.errors().map(message), suites: [], tests: [] };
    const walk = (node, inherited) => {
      for (const c of node.children) {
        if (c.type === 'suite') {
          const errors = c.errors().map(message);
          if (errors.length > 0) mod.suites.push({ name: c.fullName, errors });
          walk(c, errors[0] ?? inherited);
        } else {
          const r = c.result();
          mod.tests.push({
            name: c.fullName,
            mode: c.options.mode,
            state: r.state,
            errors: (r.errors ?? []).map(message),
            note: r.note ?? null,
            setupError: inherited,
          });
        }
      }
    };
    walk(m, mod.errors[0] ?? null);
    modules.push(mod);
  }
  return { modules, unhandled: unhandledErrors.map(message) };
}

/** { passed, failed, failures: [line] } of a run's plain data. */
export function summarize(data) {
  let passed = 0;
  let failed = 0;
  const failures = [];
  for (const m of data.modules) {
    let failedHere = 0;
    const notRun = new Map(); // setup error → tests that did not run because of it
    for (const t of m.tests) {
      if (t.mode === 'skip' || t.mode === 'todo') continue;
      if (t.state === 'passed') {
        passed += 1;
        continue;
      }
      failed += 1;
      failedHere += 1;
      if (t.state === 'failed') failures.push(`${m.file} > ${t.name}: ${t.errors[0] ?? 'failed'}`);
      else if (t.setupError !== null) notRun.set(t.setupError, (notRun.get(t.setupError) ?? 0) + 1);
      else if (t.state === 'skipped')
        failures.push(`${m.file} > ${t.name}: skipped while running${t.note ? ` (${t.note})` : ''}`);
      else failures.push(`${m.file} > ${t.name}: did not finish (${t.state})`);
    }
    for (const [error, n] of notRun) failures.push(`${m.file}: ${n} test(s) did not run, setup failed: ${error}`);
    // A hook error that failed no test (a file that did not load, an afterAll that threw) is one failure of its own.
    const hookErrors = [
      ...m.errors.map((e) => ({ where: 'file', e })),
      ...m.suites.flatMap((s) => s.errors.map((e) => ({ where: s.name, e }))),
    ];
    if (failedHere === 0 && hookErrors.length > 0) {
      failed += 1;
      const { where, e } = hookErrors[0];
      failures.push(
        `${m.file}${where === 'file' ? '' : ` > ${where}`}: ${m.tests.length === 0 ? 'did not load' : 'a hook failed'}: ${e}`,
      );
    }
  }
  for (const e of data.unhandled) {
    failed += 1;
    failures.push(`unhandled error: ${e}`);
  }
  return { passed, failed, failures };
}

/** The reporter `npm test` adds beside vitest's own: writes runData() to VERDICT_SUMMARY_FILE. */
export default class SummaryReporter {
  onTestRunEnd(testModules, unhandledErrors) {
    const file = process.env.VERDICT_SUMMARY_FILE;
    if (file === undefined || file === '') return;
    writeFileSync(file, JSON.stringify(runData(testModules, unhandledErrors)));
  }
}
