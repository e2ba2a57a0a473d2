// Sagas over decision groups in the whole-system simulator: every node
// process is the production GroupHost over G node cores, each replica with
// its own saga core (as src/node/node.ts attaches one per group), and a saga
// is started, run, asked about and decided in groupOf(sagaId, G). The world's
// general fault schedules (crashes, partitions, loss, duplication, delay,
// disk faults on a node, which hit every group's records on it) run at G = 2
// and G = 4 with saga clients beside the commit clients; the saga checker of
// system-saga.ts holds every saga to its rules (it ends FINISHED or
// COMPENSATED, each effect once, actions in step order, compensations in
// reverse and never given up, no step the log had not reached when it decided
// the saga ever runs, no action after its compensation) and to its group:
// no other group's engine calls its steps and no other group's log holds it.
// A family more runs sagas through an operator's member remove and re-add.
// Each family prints its `saga groups …:` line; a failure prints its replay.
// Teeth: a client that starts every saga in group 0, and an orchestrator that
// calls a step the log never reached once it decided to compensate, must be
// caught, and their seeds must replay.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { runSagaShard, SAGA_REPLAY } from './system-saga-run.ts';
import { runSagaWorld, sagaScenarioArb, type SagaScenario } from './system-saga.ts';

/**
 * Schedules per G per run (a schedule costs about 10–15 ms of CPU); VERDICT_SAGA_GROUP_SEEDS overrides (a soak: 20000).
 */
const SEEDS = Number(process.env.VERDICT_SAGA_GROUP_SEEDS ?? 1_000);
/** Schedules of sagas through a member's removal and re-add, per G. */
const MEMBER_SEEDS = Number(process.env.VERDICT_SAGA_MEMBER_SEEDS ?? 100);
const BASE_SEED = Number(process.env.VERDICT_SAGA_GROUP_SEED ?? 20261246);
/** Which G to run, e.g. VERDICT_GROUPS=4 (with a replay: the G of the failure). */
const GROUPS = (process.env.VERDICT_GROUPS ?? '2,4').split(',').map(Number);

const withGroups = (groups: number): fc.Arbitrary<SagaScenario> => sagaScenarioArb.map((sc) => ({ ...sc, groups }));

for (const groups of GROUPS) {
  test(`G = ${groups}: every saga finishes or compensates by its rules, in the group its id is placed in, on ${SAGA_REPLAY ? 'a replayed schedule' : `${SEEDS} simulated fault schedules`}`, () => {
    const { failed, quietFaults } = runSagaShard(0, {
      arb: withGroups(groups),
      seeds: SEEDS,
      baseSeed: BASE_SEED + groups,
      replayFile: `test/sim/system-saga-groups.sim.test.ts -t 'G = ${groups}:'`,
      label: `saga groups G=${groups}`,
    });
    expect(failed, `a schedule at G = ${groups} broke a saga rule (see the replay command above)`).toBe(false);
    // Idle groups quiesce (src/raft/raft.ts, Raft.quiesced): some schedules must strike a node leading a quiesced
    // group.
    if (!SAGA_REPLAY) expect(quietFaults, 'no schedule struck a node leading a quiesced group').toBeGreaterThan(0);
  }, 1_800_000);
}

for (const groups of GROUPS) {
  test(`G = ${groups}, membership: sagas run through a node's removal and re-add that every group follows (${SAGA_REPLAY ? 'a replayed schedule' : `${MEMBER_SEEDS} schedules`})`, () => {
    const churn = fc.record({
      node: fc.nat(4),
      removeAtMs: fc.integer({ min: 0, max: 2_000 }),
      gapMs: fc.integer({ min: 200, max: 2_500 }),
    });
    const { failed } = runSagaShard(0, {
      // No disk faults, as in system-groups.sim.test.ts's membership family (a member is removed only while the others
      // are healthy, docs/operations.md).
      arb: fc.tuple(withGroups(groups), churn).map(([sc, c]) => ({
        ...sc,
        diskFaults: [],
        memberChurn: { node: c.node, removeAtMs: c.removeAtMs, readdAtMs: c.removeAtMs + c.gapMs },
      })),
      seeds: MEMBER_SEEDS,
      baseSeed: BASE_SEED + 500 + groups,
      replayFile: `test/sim/system-saga-groups.sim.test.ts -t 'G = ${groups}, membership'`,
      label: `saga groups members G=${groups}`,
    });
    expect(failed, `a member change at G = ${groups} broke a saga rule (see the replay command above)`).toBe(false);
  }, 1_800_000);
}

test.skipIf(SAGA_REPLAY !== undefined)(
  'teeth: a saga client that starts and asks every saga in group 0 is caught (a saga run outside its group), and its seed replays',
  () => {
    const property = fc.property(withGroups(4), (sc) => {
      const r = runSagaWorld({ ...sc, sagaMutant: 'saga-misrouted-client' });
      if (r.violations.some((v) => /placement: /.test(v))) throw new Error(r.violations.join('\n'));
    });
    const out = fc.check(property, { seed: BASE_SEED, numRuns: 50, endOnFailure: true });
    expect(out.failed, 'saga-misrouted-client survived 50 schedules').toBe(true);
    const message = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
    console.log(
      `saga groups teeth: saga-misrouted-client caught after ${out.numRuns} schedules (seed ${out.seed}:${out.counterexamplePath}): ${message.split('\n')[0]}`,
    );
    const again = fc.check(property, {
      seed: out.seed,
      path: out.counterexamplePath ?? undefined,
      numRuns: 1,
      endOnFailure: true,
    });
    expect(again.failed).toBe(true);
    expect(again.errorInstance instanceof Error ? again.errorInstance.message : '').toBe(message);
  },
  600_000,
);

test.skipIf(SAGA_REPLAY !== undefined)(
  'teeth: an orchestrator that calls a step the log never reached once it decided to compensate is caught at G = 2, and its seed replays',
  () => {
    const property = fc.property(withGroups(2), (sc) => {
      const r = runSagaWorld({ ...sc, sagaMutant: 'saga-act-after-decision' });
      if (r.violations.some((v) => /had decided the saga/.test(v))) throw new Error(r.violations.join('\n'));
    });
    const out = fc.check(property, { seed: BASE_SEED, numRuns: 500, endOnFailure: true });
    expect(out.failed, 'saga-act-after-decision survived 500 schedules').toBe(true);
    const message = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
    console.log(
      `saga groups teeth: saga-act-after-decision caught after ${out.numRuns} schedules (seed ${out.seed}:${out.counterexamplePath}): ${message.split('\n')[0]}`,
    );
    const again = fc.check(property, {
      seed: out.seed,
      path: out.counterexamplePath ?? undefined,
      numRuns: 1,
      endOnFailure: true,
    });
    expect(again.failed).toBe(true);
    expect(again.errorInstance instanceof Error ? again.errorInstance.message : '').toBe(message);
  },
  600_000,
);
