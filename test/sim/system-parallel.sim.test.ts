// The whole-system simulation with parallel commit (issue 20): the leader
// replicates a STAGING record in parallel with PREPARE and answers COMMITTED
// once every YES is in and the record is applied; a new leader recovers a
// staged transaction by the status question and the durable refusal
// (src/commit/parallel-commit.ts). Half the schedules run it on every node,
// half on every other node, so leader changes move between the parallel and
// the classic path; every fault class of the general shards applies.
// AC1–AC4, R1, R4, Raft safety and the clients' answers must hold; the
// checker's teeth are three mutants it must catch. Prints `parallel:
// seeds=N ...`; a failure prints the seed and the command that replays it.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { BASE_SEED, controlRun, huntLine, huntMutant, REPLAY, runShard } from './system-run.ts';
import { systemScenarioArb } from './system-schedule.ts';
import { type Mutant, type SystemScenario } from './system-world.ts';

/** VERDICT_PARALLEL_SEEDS overrides (a soak: VERDICT_PARALLEL_SEEDS=50000). */
const SEEDS = Number(process.env.VERDICT_PARALLEL_SEEDS ?? 10_000);
const parallelArb: fc.Arbitrary<SystemScenario> = systemScenarioArb.chain((sc) =>
  fc.constantFrom('all' as const, 'mixed' as const).map((mode) => ({ ...sc, parallelCommit: mode })),
);

test(`AC1–AC4 hold with parallel commit on ${REPLAY ? 'a replayed schedule' : `${SEEDS} simulated fault schedules`}`, () => {
  const { failed } = runShard(0, {
    arb: parallelArb,
    seeds: SEEDS,
    baseSeed: BASE_SEED + 2_000,
    replayFile: 'test/sim/system-parallel.sim.test.ts',
    label: 'parallel',
  });
  expect(failed, 'a simulated schedule with parallel commit broke a rule (see the replay command above)').toBe(false);
}, 1_800_000);

/**
 * The leader crashes between the last YES and the explicit COMMIT, the
 * moment recovery exists for: schedules of every kind, plus a crash of the
 * leader once a participant has prepared, with slow node disks so that the
 * STAGING record and the COMMIT entry are in flight when it comes.
 */
const leaderCrashAfterYes: fc.Arbitrary<SystemScenario> = parallelArb.chain((sc) =>
  fc
    .record({
      downMs: fc.integer({ min: 10, max: 3_000 }),
      slowMs: fc.integer({ min: 20, max: 300 }),
      point: fc.constantFrom('some-prepared' as const, 'commit-proposed' as const),
    })
    .map(({ downMs, slowMs, point }) => ({
      ...sc,
      parallelCommit: 'all' as const,
      crashPoints: [{ point, target: 'leader' as const, downMs }],
      faults: [
        ...sc.faults,
        ...[0, 1, 2, 3, 4].map((k) => ({
          kind: 'slow-disk' as const,
          at: 0,
          target: k,
          extraMs: slowMs,
          durMs: sc.healAtMs,
        })),
      ],
    })),
);

interface Tooth {
  mutant: Mutant;
  what: string;
  expect: RegExp;
  arb: fc.Arbitrary<SystemScenario>;
  seedsMax: number;
}

const TEETH: Tooth[] = [
  {
    mutant: 'committed-before-staging',
    what: 'COMMITTED answered before the STAGING record is applied',
    expect:
      /client: t\d+ (committed at index \d+ after its client was told ABORTED|was answered COMMITTED|was answered \S+, later)/,
    arb: leaderCrashAfterYes,
    seedsMax: 5_000,
  },
  {
    mutant: 'recover-without-refusal',
    what: 'recovery that logs ABORT without a durable refusal',
    expect: /(AC1 agreement|client: t\d+|R4: )/,
    arb: leaderCrashAfterYes,
    seedsMax: 5_000,
  },
  {
    mutant: 'forget-yes',
    what: 'a participant that forgets its YES',
    expect: /(AC1 agreement|client: t\d+|R4: )/,
    arb: leaderCrashAfterYes,
    seedsMax: 5_000,
  },
];

for (const [i, tooth] of TEETH.entries()) {
  test.skipIf(REPLAY !== undefined)(
    `the checker catches the parallel-commit mutant: ${tooth.what}`,
    () => {
      const hunt = huntMutant(tooth.arb, tooth.mutant, tooth.expect, BASE_SEED + 2_100 + i, tooth.seedsMax);
      const { out } = hunt;
      console.log(`parallel teeth: ${huntLine(tooth.mutant, hunt)}`);
      expect(out.failed, `mutant ${tooth.mutant} went unnoticed for ${tooth.seedsMax} schedules`).toBe(true);
    },
    600_000,
  );
}

test.skipIf(REPLAY !== undefined)(
  'the focused schedules of the parallel teeth pass without their mutant',
  () => {
    const runs = controlRun(leaderCrashAfterYes, BASE_SEED + 2_200, 500);
    console.log(`parallel teeth control: ${runs} focused schedules without a mutant, no violation`);
  },
  600_000,
);
