// Sagas in the whole-system simulation, part 2 of 2 (part 1:
// system-saga.sim.test.ts): shard 2 of the seeded fault schedules, and the
// checker's teeth — mutants injected from test code, each of which the
// checker must catch within a bounded number of schedules, and whose failing
// schedule must fail again when replayed from its seed.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { runSagaShard, SAGA_REPLAY, SAGA_SEEDS } from './system-saga-run.ts';
import { runSagaWorld, sagaScenarioArb, type SagaMutant, type SagaScenario } from './system-saga.ts';

test.skipIf(SAGA_REPLAY !== undefined)(
  `sagas end FINISHED or COMPENSATED, each effect once, on shard 2 of ${SAGA_SEEDS} simulated fault schedules`,
  () => {
    const { failed } = runSagaShard(1);
    expect(failed, 'a simulated schedule broke a saga rule (see the replay command above)').toBe(false);
  },
  1_800_000,
);

/** Post-pivot steps that error past the abandon bound: what a table that compensates after the pivot gets wrong. */
const erringAfterPivot: fc.Arbitrary<SagaScenario> = sagaScenarioArb.map((sc) => ({
  ...sc,
  sagas: sc.sagas.map((s) => ({
    ...s,
    pivot: 0,
    steps:
      s.steps.length > 1
        ? s.steps.map((st, k) => (k > 0 ? { ...st, errors: 5 } : st))
        : [...s.steps, { service: 1, fail: false, errors: 5, compErrors: 0 }],
  })),
}));

/** Pre-pivot actions that error until the orchestrator abandons them: their compensations find no action. */
const abandoned: fc.Arbitrary<SagaScenario> = sagaScenarioArb.map((sc) => ({
  ...sc,
  sagas: sc.sagas.map((s) => ({ ...s, pivot: null, steps: s.steps.map((st) => ({ ...st, errors: 4 })) })),
}));

/** The same, with duplicated and delayed messages: an old action request can arrive after its compensation. */
const abandonedDuplicated: fc.Arbitrary<SagaScenario> = abandoned.map((sc) => ({
  ...sc,
  faults: [
    ...sc.faults,
    { kind: 'duplicate' as const, at: 0, percent: 50, durMs: sc.healAtMs },
    { kind: 'delay' as const, at: 0, extraMs: 400, durMs: sc.healAtMs },
  ],
}));

interface Tooth {
  mutant: SagaMutant;
  what: string;
  expect: RegExp;
  arb: fc.Arbitrary<SagaScenario>;
  seedsMax: number;
}

const TEETH: Tooth[] = [
  {
    mutant: 'saga-new-key-on-retry',
    what: 'a retried call carries a new key',
    expect: /exactly once: .* ran \d+ times/,
    arb: sagaScenarioArb,
    seedsMax: 2_000,
  },
  {
    mutant: 'saga-compensate-after-pivot',
    what: 'a step after the pivot is compensated',
    expect: /after the pivot/,
    arb: erringAfterPivot,
    seedsMax: 500,
  },
  {
    mutant: 'inbox-no-empty-compensation',
    what: 'a compensation runs though its action never ran',
    expect: /compensated though its action never ran/,
    arb: abandoned,
    seedsMax: 500,
  },
  {
    mutant: 'inbox-hanging-action',
    what: 'an action runs after its compensation was recorded',
    expect: /ran after its compensation was recorded/,
    arb: abandonedDuplicated,
    seedsMax: 2_000,
  },
  {
    mutant: 'saga-start-unlogged',
    what: 'a start answered and step 0 called without its log write',
    expect: /log has no record/,
    arb: sagaScenarioArb,
    seedsMax: 200,
  },
];

for (const tooth of TEETH) {
  test.skipIf(SAGA_REPLAY !== undefined)(
    `the saga checker catches the mutant ${tooth.mutant} (${tooth.what}), and its seed replays`,
    () => {
      const out = fc.check(
        fc.property(tooth.arb, (sc) => {
          const r = runSagaWorld({ ...sc, sagaMutant: tooth.mutant });
          if (r.violations.some((v) => tooth.expect.test(v))) throw new Error(r.violations.join('\n'));
        }),
        { seed: 424242, numRuns: tooth.seedsMax, endOnFailure: true },
      );
      expect(out.failed, `${tooth.mutant} survived ${tooth.seedsMax} schedules`).toBe(true);
      const message = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
      console.log(
        `saga mutant ${tooth.mutant}: caught after ${out.numRuns} schedules (seed ${out.seed}:${out.counterexamplePath}): ${message.split('\n')[0]}`,
      );
      // The replay: the same seed and path give the same schedule, which fails the same way.
      const again = fc.check(
        fc.property(tooth.arb, (sc) => {
          const r = runSagaWorld({ ...sc, sagaMutant: tooth.mutant });
          if (r.violations.some((v) => tooth.expect.test(v))) throw new Error(r.violations.join('\n'));
        }),
        { seed: out.seed, path: out.counterexamplePath ?? undefined, numRuns: 1, endOnFailure: true },
      );
      expect(again.failed).toBe(true);
      expect(again.errorInstance instanceof Error ? again.errorInstance.message : '').toBe(message);
    },
    600_000,
  );
}
