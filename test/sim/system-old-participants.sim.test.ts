// Parallel commit beside participants built from the oldest supported
// protocol (docs/protocol.md, "Compatibility"): every other participant
// registers without `serves` and answers UNIMPLEMENTED to Status. A
// transaction commits in parallel only when each of its participants serves
// Status, otherwise the classic way, so a new leader never waits for a status
// answer that cannot come, and AC1–AC4 hold with the leader crashing after a
// participant prepared. The tooth: a coordinator that stages regardless
// (stage-regardless) leaves such a transaction undecided for good when the
// old participant never prepared (AC4). Prints `parallel-old: seeds=N ...`;
// a failure prints the seed and the command that replays it.
import type fc from 'fast-check';
import { expect, test } from 'vitest';
import { BASE_SEED, controlRun, huntLine, huntMutant, REPLAY, runShard } from './system-run.ts';
import { systemScenarioArb } from './system-schedule.ts';
import type { SystemScenario } from './system-world.ts';

/** VERDICT_OLD_PARTICIPANT_SEEDS overrides (a soak: VERDICT_OLD_PARTICIPANT_SEEDS=20000). */
const SEEDS = Number(process.env.VERDICT_OLD_PARTICIPANT_SEEDS ?? 5_000);

/**
 * Parallel commit on every node, old participants, and a leader that crashes once a participant has prepared, with slow
 * disks.
 */
const oldBeside: fc.Arbitrary<SystemScenario> = systemScenarioArb.map((sc) => ({
  ...sc,
  participants: Math.max(sc.participants, 2),
  parallelCommit: 'all' as const,
  oldParticipants: true,
  crashPoints: [{ point: 'some-prepared' as const, target: 'leader' as const, downMs: 1_500 }],
  faults: [
    ...sc.faults,
    ...[0, 1, 2, 3, 4].map((k) => ({ kind: 'slow-disk' as const, at: 0, target: k, extraMs: 150, durMs: sc.healAtMs })),
  ],
}));

test(`AC1–AC4 hold with participants that do not serve Status on ${REPLAY ? 'a replayed schedule' : `${SEEDS} simulated fault schedules`}`, () => {
  const { failed } = runShard(0, {
    arb: oldBeside,
    seeds: SEEDS,
    baseSeed: BASE_SEED + 2_400,
    replayFile: 'test/sim/system-old-participants.sim.test.ts',
    label: 'parallel-old',
  });
  expect(failed, 'a simulated schedule with old participants broke a rule (see the replay command above)').toBe(false);
}, 1_800_000);

test.skipIf(REPLAY !== undefined)(
  'the checker catches a coordinator that stages a transaction with a participant that does not serve Status (AC4)',
  () => {
    const hunt = huntMutant(
      oldBeside,
      'stage-regardless',
      /AC4 termination: .*(staged and undecided|in doubt on)/,
      BASE_SEED + 2_410,
      3_000,
    );
    console.log(`parallel-old teeth: ${huntLine('stage-regardless', hunt)}`);
    expect(hunt.out.failed, `mutant stage-regardless went unnoticed for ${hunt.tried} schedules`).toBe(true);
  },
  600_000,
);

test.skipIf(REPLAY !== undefined)(
  'a control: the same focused schedules without the mutant',
  () => {
    const runs = controlRun(oldBeside, BASE_SEED + 2_410, 300);
    console.log(`parallel-old teeth control: ${runs} focused schedules without a mutant, no violation`);
  },
  600_000,
);
