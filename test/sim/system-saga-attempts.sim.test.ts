// Attempts count across leaders, in the whole-system simulator: the
// production SagaEngine on every node over the same log, leaders crashed,
// isolated and replaced on a seeded schedule, and sagas whose step 0 (at or
// before the pivot) errors on every call.
//
// The bound. A leader makes a call only once the failure of its previous
// call is applied (saga.attempt), so of the calls one leadership makes, only
// its last can go uncounted: it was in flight, or its failure not yet logged,
// when the leadership ended. With actionAbandonAfterMs 0 the action is
// abandoned at the call that fails with actionAttemptsMax counted, so
//
//   calls ≤ actionAttemptsMax + (leaderships that called it − 1)
//         ≤ actionAttemptsMax + leader changes,
//
// counting the calls the engines made (a duplicating network may deliver
// more; the inbox answers those). Every such saga must end COMPENSATED, and
// the checker's rules of system-saga.ts hold as in every run. With a minimum
// time (actionAbandonAfterMs), the action is never abandoned before that time
// has passed since its first failure, by the log's clock, on any leader.
// VERDICT_SAGA_ATTEMPT_SEEDS overrides the number of schedules.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { triesOf } from '../../src/saga/state.ts';
import { runSagaWorld, sagaScenarioArb, type SagaScenario } from './system-saga.ts';
import type { SysFault } from './system-world.ts';

const SEEDS = Number(process.env.VERDICT_SAGA_ATTEMPT_SEEDS ?? 400);
const BASE_SEED = Number(process.env.VERDICT_SAGA_SEED ?? 20261215);
const ATTEMPTS_MAX = 6;

/** Leader faults, several per schedule: crashes, isolations, transfers. */
const leaderFaultArb: fc.Arbitrary<SysFault> = fc.oneof(
  fc.record({
    kind: fc.constant('crash-leader' as const),
    at: fc.integer({ min: 0, max: 4_999 }),
    downMs: fc.integer({ min: 10, max: 2_000 }),
  }),
  fc.record({
    kind: fc.constant('isolate-leader' as const),
    at: fc.integer({ min: 0, max: 4_999 }),
    durMs: fc.integer({ min: 50, max: 2_000 }),
  }),
  fc.record({ kind: fc.constant('transfer' as const), at: fc.integer({ min: 0, max: 4_999 }), to: fc.nat(4) }),
);

/** Every saga's step 0 errors on every call; the world's other faults stay, with leader faults added. */
function failingArb(cfg: SagaScenario['sagaConfig']): fc.Arbitrary<SagaScenario> {
  return fc
    .tuple(sagaScenarioArb, fc.array(leaderFaultArb, { minLength: 2, maxLength: 12 }))
    .map(([sc, leaderFaults]) => ({
      ...sc,
      faults: [...sc.faults, ...leaderFaults],
      sagaConfig: cfg,
      sagas: sc.sagas.map((p) => ({
        ...p,
        atMs: p.atMs % 1_000,
        steps: p.steps.map((st, k) => (k === 0 ? { ...st, errors: 1_000_000_000, fail: false } : st)),
      })),
    }));
}

test(`an always-failing action before the pivot is called at most actionAttemptsMax plus one per later leadership, and its saga ends COMPENSATED (${SEEDS} schedules)`, () => {
  const t = {
    runs: 0,
    sagas: 0,
    leaderChanges: 0,
    mostLeaderChanges: 0,
    mostCalls: 0,
    boundAtMostCalls: 0,
    mostOverMax: 0,
  };
  const out = fc.check(
    fc.property(failingArb({ actionAttemptsMax: ATTEMPTS_MAX, actionAbandonAfterMs: 0 }), (sc) => {
      const r = runSagaWorld(sc);
      const ext = r.ext;
      if (!ext) throw new Error('no saga extension');
      if (r.violations.length > 0) throw new Error(r.violations.join('\n'));
      const table = ext.finalTable();
      t.runs++;
      const changes = Math.max(0, ext.leaderships - 1);
      t.leaderChanges += changes;
      t.mostLeaderChanges = Math.max(t.mostLeaderChanges, changes);
      for (const [i] of sc.sagas.entries()) {
        const id = `s${i + 1}`;
        const s = table?.sagas.get(id);
        if (!s) continue; // a start refused for good would be a violation above; an unstarted saga has no calls
        t.sagas++;
        if (s.state !== 'compensated') throw new Error(`${id} ended ${s.state}, not compensated`);
        const made = ext.callsByKey.get(`${id}/0/action`);
        const calls = made?.calls ?? 0;
        const bound = ATTEMPTS_MAX + Math.max(0, (made?.leaderships.size ?? 1) - 1);
        if (calls > bound)
          throw new Error(
            `${id}: step 0's action was called ${calls} times by ${made?.leaderships.size} leaderships (bound ${bound})`,
          );
        if (calls > ATTEMPTS_MAX + changes)
          throw new Error(`${id}: ${calls} calls, past actionAttemptsMax + ${changes} leader changes`);
        if (calls > t.mostCalls || (calls === t.mostCalls && bound > t.boundAtMostCalls)) {
          t.mostCalls = calls;
          t.boundAtMostCalls = bound;
        }
        t.mostOverMax = Math.max(t.mostOverMax, calls - ATTEMPTS_MAX);
      }
    }),
    { seed: BASE_SEED, numRuns: SEEDS, endOnFailure: true },
  );
  console.log(
    `saga attempts: seeds=${t.runs} (base seed ${BASE_SEED}) sagas=${t.sagas} leaderChanges=${t.leaderChanges} (most in one run ${t.mostLeaderChanges}) actionAttemptsMax=${ATTEMPTS_MAX} mostCalls=${t.mostCalls} (its bound ${t.boundAtMostCalls}) mostCallsOverMax=${t.mostOverMax}`,
  );
  if (out.failed)
    console.error(
      `replay: seed ${out.seed} path ${out.counterexamplePath}\n${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
    );
  expect(out.failed).toBe(false);
  expect(t.sagas).toBeGreaterThan(0);
  expect(t.leaderChanges).toBeGreaterThan(t.runs);
}, 1_800_000);

test(`with actionAbandonAfterMs, an action before the pivot is never abandoned sooner after its first failure, across leaders (${Math.ceil(SEEDS / 4)} schedules)`, () => {
  const ABANDON_AFTER_MS = 3_000;
  let abandoned = 0;
  let shortest = Number.POSITIVE_INFINITY;
  const out = fc.check(
    fc.property(failingArb({ actionAttemptsMax: 2, actionAbandonAfterMs: ABANDON_AFTER_MS }), (sc) => {
      const r = runSagaWorld(sc);
      if (r.violations.length > 0) throw new Error(r.violations.join('\n'));
      const table = r.ext?.finalTable();
      for (const s of table?.sagas.values() ?? []) {
        if (s.state !== 'compensated') throw new Error(`${s.id} ended ${s.state}, not compensated`);
        const first = triesOf(s, 0, 'action')?.firstFailureAtMs;
        const gaveUp = s.timeline.find((e) => e.what === 'abandoned' && e.step === 0);
        if (first === undefined || first === null || !gaveUp)
          throw new Error(`${s.id}: no failure or no abandonment recorded`);
        abandoned++;
        shortest = Math.min(shortest, gaveUp.atMs - first);
        if (gaveUp.atMs - first < ABANDON_AFTER_MS)
          throw new Error(
            `${s.id}: abandoned ${gaveUp.atMs - first} ms after its first failure (minimum ${ABANDON_AFTER_MS})`,
          );
      }
    }),
    { seed: BASE_SEED + 1, numRuns: Math.ceil(SEEDS / 4), endOnFailure: true },
  );
  console.log(
    `saga abandon time: sagas=${abandoned} shortest time from first failure to abandonment ${shortest} ms (minimum ${ABANDON_AFTER_MS} ms)`,
  );
  if (out.failed)
    console.error(
      `replay: seed ${out.seed} path ${out.counterexamplePath}\n${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
    );
  expect(out.failed).toBe(false);
  expect(abandoned).toBeGreaterThan(0);
}, 1_800_000);
