// The whole-system simulation, part 2 of 2 (part 1: system.sim.test.ts): shard
// 2 of the seeded fault schedules, and the checker's teeth — protocol mutants
// that a correct checker must catch within a bounded number of schedules. A
// checker that never fires proves nothing.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { BASE_SEED, controlRun, huntLine, huntMutant, REPLAY, runShard, SEEDS } from './system-run.ts';
import { crashPointArb, systemScenarioArb } from './system-schedule.ts';
import { SystemWorld, type Mutant, type SystemScenario } from './system-world.ts';

test.skipIf(REPLAY !== undefined)(
  `AC1–AC4, R1, R4 and Raft safety hold on shard 2 of ${SEEDS} simulated fault schedules`,
  () => {
    const { failed } = runShard(1);
    expect(failed, 'a simulated schedule violated atomic commit (see the replay command above)').toBe(false);
  },
  1_800_000,
);

/**
 * (a) needs a participant to ask a new leader about T in the moment between
 * its election and its applying the COMMIT that the old leader logged; its
 * schedules crash the leader on the commit path, with slow disks to widen that
 * moment (the general schedules find it too, about once in 10,000).
 */
const leaderCrashOnCommitPath: fc.Arbitrary<SystemScenario> = systemScenarioArb.chain((sc) =>
  fc
    .record({
      first: fc.record({
        point: fc.constantFrom('commit-proposed' as const, 'commit-applied' as const),
        target: fc.constant('leader' as const),
        downMs: fc.integer({ min: 10, max: 3_000 }),
      }),
      more: fc.array(crashPointArb, { maxLength: 2 }),
      slowMs: fc.integer({ min: 50, max: 400 }),
    })
    .map(({ first, more, slowMs }) => ({
      ...sc,
      crashPoints: [first, ...more],
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

/**
 * (a) also shows where a participant asks while the leader is still
 * collecting votes: one participant's disk is slower than the others' wait
 * before they ask, so they ask before the decision exists.
 */
const slowParticipant: fc.Arbitrary<SystemScenario> = systemScenarioArb.chain((sc) =>
  fc.record({ extraMs: fc.integer({ min: 1_500, max: 3_000 }), which: fc.nat(3) }).map(({ extraMs, which }) => ({
    ...sc,
    faults: [
      ...sc.faults,
      { kind: 'slow-disk' as const, at: 0, target: sc.nodes + (which % sc.participants), extraMs, durMs: sc.healAtMs },
    ],
  })),
);

/**
 * Without tombstones a forgotten decision is gone for good, so an early Forget shows (with them, a tombstone still
 * answers for it).
 */
const noTombstones = systemScenarioArb.map((sc) => ({ ...sc, tombstonesMax: 0 }));

interface Tooth {
  mutant: Mutant;
  what: string;
  /** The violation the checker must report. */
  expect: RegExp;
  arb: fc.Arbitrary<SystemScenario>;
  seedsMax: number;
}

const TEETH: Tooth[] = [
  {
    mutant: 'presume-abort-unlogged',
    what: '(a) an in-doubt YES participant answered ABORTED without a log write',
    expect: /^t=\d+ms: AC1 agreement/,
    arb: fc.oneof(slowParticipant, leaderCrashOnCommitPath),
    seedsMax: 3_000,
  },
  {
    mutant: 'commit-on-majority',
    what: '(b) COMMIT on a majority of YES votes',
    expect: /^t=\d+ms: AC2 validity/,
    arb: systemScenarioArb,
    seedsMax: 500,
  },
  {
    mutant: 'vote-before-sync',
    what: '(c) YES sent before the prepared state is synced',
    expect: /^t=\d+ms: R4: .* voted YES/,
    arb: systemScenarioArb,
    seedsMax: 2_000,
  },
  // Participants deciding differently (not a participant refusing a re-decided ABORT, which a run without tombstones
  // shows without the mutant).
  {
    mutant: 'forget-before-acks',
    what: '(d) COMMIT forgotten before every ACK',
    expect: /^t=\d+ms: AC1 agreement: (?!\S+ refused)/,
    arb: noTombstones,
    seedsMax: 500,
  },
  // Issue 10: with participants that drop an aborted transaction, an id sent again after an
  // unlogged ABORT is prepared afresh and can COMMIT what its client was told ABORTED.
  {
    mutant: 'abort-unlogged',
    what: '(e) ABORTED answered from memory, not logged',
    expect:
      /^t=\d+ms: client: t\d+ (committed at index \d+ after its client was told ABORTED|was answered ABORTED, later COMMITTED)/,
    arb: systemScenarioArb,
    seedsMax: 3_000,
  },
  // Issue 14: a decoder of the decision batch entry (src/commit/decision-batch.ts) that loses the
  // last Decide of every entry on every node: the nodes agree with each other, so only the end-to-end
  // checks can see it (a decision that never applies leaves its participants in doubt).
  {
    mutant: 'batch-drops-last',
    what: '(f) a decision batch decoder that drops the last Decide of an entry',
    expect: /^t=\d+ms: AC4 termination: /,
    arb: systemScenarioArb,
    seedsMax: 500,
  },
  // Issue 13: the node core (src/node/core.ts), shared by the node and this simulator, routes only the
  // first result of each applied entry: the other Decides and Forgets of a decision batch apply on every
  // node but never reach the commit engine, so their decisions are never delivered, acknowledged or forgotten.
  {
    mutant: 'route-first-of-entry',
    what: '(h) a node core that routes only the first result of each applied entry',
    expect: /^t=\d+ms: AC4 termination: /,
    arb: systemScenarioArb,
    seedsMax: 500,
  },
  // Issue 13: the SDK's begin rule (src/client/retry-policy.ts), which the simulator's clients run, re-sending begin on
  // a retry after an attempt that may have reached a leader. The engine refuses to begin a decided id, so it shows once
  // the decision is forgotten (no tombstones): the id is begun afresh, and participants that applied the first decision
  // disagree with those that apply the second.
  {
    mutant: 'begin-on-retry',
    what: '(g) a Commit retried with begin after an attempt of unknown fate',
    expect: /^t=\d+ms: AC1 agreement: (?!\S+ refused)/,
    arb: noTombstones,
    seedsMax: 1_000,
  },
];

for (const [i, tooth] of TEETH.entries()) {
  test.skipIf(REPLAY !== undefined)(
    `the checker catches mutant ${tooth.what}`,
    () => {
      const hunt = huntMutant(tooth.arb, tooth.mutant, tooth.expect, BASE_SEED + 100 + i, tooth.seedsMax);
      const { out } = hunt;
      console.log(`ac teeth: ${huntLine(tooth.mutant, hunt)}`);
      expect(out.failed, `mutant ${tooth.mutant} went unnoticed for ${tooth.seedsMax} schedules`).toBe(true);
    },
    600_000,
  );
}

// The same focused schedules without the mutant: a checker that fires on a
// correct protocol proves nothing either.
test.skipIf(REPLAY !== undefined)(
  'the focused schedules of the teeth pass without their mutant',
  () => {
    let runs = controlRun(fc.oneof(slowParticipant, leaderCrashOnCommitPath), BASE_SEED + 200, 400);
    const atomic = /^t=\d+ms: (AC1|R4)/;
    fc.assert(
      fc.property(noTombstones, (sc) => {
        runs++;
        // Without tombstones a retried Commit can re-decide a forgotten transaction (R1, a
        // client answer, and the re-decided ABORT delivered to participants that committed,
        // which refuse it; or an ABORT nobody heard, forgotten, then a COMMIT the participants
        // apply, which R4 compares with the forgotten ABORT): that is what tombstones are for.
        // Participants must still agree.
        const all = new SystemWorld(sc).run().violations;
        const redecided = new Set(
          all.map((x) => /: R1: \S+ took Decide\((\S+), /.exec(x)?.[1]).filter((id) => id !== undefined),
        );
        const v = all.filter((x) => {
          if (!atomic.test(x) || /refused ABORT for \S+: it is COMMITTED there/.test(x)) return false;
          const r4 = /: R4: \S+ committed (\S+) but the log decided ABORT/.exec(x);
          return r4 === null || !redecided.has(r4[1]);
        });
        return v.length === 0;
      }),
      { seed: BASE_SEED + 201, numRuns: 300 },
    );
    console.log(`ac teeth control: ${runs} focused schedules without a mutant, no violation`);
  },
  600_000,
);
