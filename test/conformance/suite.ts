// Registers the conformance suite for a target with vitest: it runs once
// against the target (beforeAll), then each check is a test named by the
// check, so a failure names the rule that was broken and the participant
// that broke it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_NAMES, type CheckResult, runConformance } from './checks.ts';
import { killTargets, type Target } from './target.ts';

const TARGET_RUN_MS = 240_000;

/** `target` is called inside the describe's beforeAll, after `ready` (a database to start, say). */
export function describeTarget(name: string, target: () => Target, ready: () => Promise<void> = async () => {}): void {
  describe(`conformance: ${name}`, () => {
    const results = new Map<string, CheckResult>();
    beforeAll(async () => {
      await ready();
      const startedAtMs = Date.now();
      for (const r of await runConformance(target())) results.set(r.name, r);
      console.log(
        `conformance: ${name}: ${[...results.values()].filter((r) => r.ok).length} of ${results.size} checks passed in ${Date.now() - startedAtMs} ms`,
      );
    }, TARGET_RUN_MS);
    afterAll(killTargets);
    it.each(CHECK_NAMES)('%s', (check) => {
      const r = results.get(check);
      expect(r, 'the suite did not run').toBeDefined();
      if (r && !r.ok) throw new Error(r.error);
    });
  });
}
