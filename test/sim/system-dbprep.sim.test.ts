// The whole-system simulation with participants whose prepared state lives
// in a database (the PostgreSQL resource's model, test/sim/system-dbprep.ts):
// every other participant votes YES once its database has prepared, without
// waiting for its journal's sync, except for transactions whose name in the
// database is hashed; on restart recovery merges the journal with the
// database's list of prepared transactions. AC1–AC4, R1, R4 and Raft safety
// must hold under the usual faults and at every crash point. The checker's
// teeth are two mutants (recovery that ignores the database; hashed names not
// synced), which it must catch. Prints `dbprep: seeds=N ...`; a failure prints
// the seed and the command that replays it.
import { expect, test } from 'vitest';
import { Rng } from '../../src/raft/rng.ts';
import type { DbMutant } from './system-dbprep.ts';
import { BASE_SEED, huntLine, huntMutant, REPLAY, runShard } from './system-run.ts';
import { HEAL_AT_MS, LIVENESS_MS, systemScenarioArb } from './system-schedule.ts';
import { CRASH_POINTS, SystemWorld, type SystemScenario } from './system-world.ts';

/** VERDICT_DBPREP_SEEDS overrides (a soak: VERDICT_DBPREP_SEEDS=50000). */
const SEEDS = Number(process.env.VERDICT_DBPREP_SEEDS ?? 5_000);
const dbArb = systemScenarioArb.map((sc) => ({ ...sc, dbPrepare: true }));

test(`AC1–AC4 and R4 hold on ${REPLAY ? 'a replayed schedule' : `${SEEDS} simulated fault schedules with participants prepared in a database`}`, () => {
  const { failed } = runShard(0, {
    arb: dbArb,
    seeds: SEEDS,
    baseSeed: BASE_SEED + 2_000,
    replayFile: 'test/sim/system-dbprep.sim.test.ts',
    label: 'dbprep',
  });
  expect(failed, 'a simulated schedule with database participants broke a rule (see the replay command above)').toBe(
    false,
  );
}, 1_800_000);

/** Participants 0 and 2 keep their prepared state in a database; 1 is a memory participant beside them. */
const TARGETS = ['leader', 0, 1, 2] as const;
const POINT_SEEDS = 4;

test.skipIf(REPLAY !== undefined)(
  'AC1–AC4 hold when a participant prepared in a database (or the leader) crashes at each step of the protocol',
  () => {
    const failures: string[] = [];
    let fired = 0;
    for (const point of CRASH_POINTS) {
      for (const target of TARGETS) {
        for (let k = 0; k < POINT_SEEDS; k++) {
          const rng = new Rng(0xdb + 7919 * CRASH_POINTS.indexOf(point) + 104729 * TARGETS.indexOf(target) + k);
          const sc: SystemScenario = {
            seed: rng.u32() & 0x7fffffff,
            nodes: 3,
            participants: 3,
            txns: [0, 1, 2, 3, 4, 5].map((i) => ({
              atMs: i * 250 + rng.int(300),
              members: [0, 1, 2],
              no: null,
              timeoutMs: 2_000,
            })),
            faults: [],
            crashPoints: [{ point, target, downMs: 100 + rng.int(2_500) }],
            healAtMs: HEAL_AT_MS,
            livenessMs: LIVENESS_MS,
            snapshotEntries: 1_000_000,
            dbPrepare: true,
          };
          const r = new SystemWorld(sc).run();
          fired += r.crashPointsFired;
          if (r.violations.length > 0)
            failures.push(`${point}:${target}:${k} (seed ${sc.seed}): ${r.violations.join('; ')}`);
        }
      }
    }
    console.log(
      `dbprep crash points: ${CRASH_POINTS.length} points × ${TARGETS.length} targets × ${POINT_SEEDS} seeds, ${fired} crashes fired, violations=${failures.length}`,
    );
    for (const f of failures.slice(0, 5)) console.error(f);
    expect(fired).toBeGreaterThan(CRASH_POINTS.length * TARGETS.length);
    expect(failures).toEqual([]);
  },
  600_000,
);

interface Tooth {
  mutant: DbMutant;
  what: string;
  expect: RegExp;
  seedsMax: number;
}

const TEETH: Tooth[] = [
  { mutant: 'db-no-adopt', what: "recovery ignores the database's prepared list", expect: /R4: /, seedsMax: 5_000 },
  {
    mutant: 'db-hashed-unsynced',
    what: 'a hashed name voted YES before its prepared record is synced',
    expect: /R4: /,
    seedsMax: 10_000,
  },
];

for (const [i, tooth] of TEETH.entries()) {
  test.skipIf(REPLAY !== undefined)(
    `R4: the checker catches database mutant: ${tooth.what}; the failing seed replays`,
    () => {
      const hunt = huntMutant(dbArb, tooth.mutant, tooth.expect, BASE_SEED + 2_100 + i, tooth.seedsMax);
      const { out } = hunt;
      console.log(`dbprep teeth: ${huntLine(tooth.mutant, hunt)}`);
      expect(out.failed, `mutant ${tooth.mutant} went unnoticed for ${tooth.seedsMax} schedules`).toBe(true);
      const sc = out.counterexample?.[0];
      expect(sc).toBeDefined();
      if (sc === undefined) return;
      const first = new SystemWorld({ ...sc, mutant: tooth.mutant }).run().violations;
      const again = new SystemWorld({ ...sc, mutant: tooth.mutant }).run().violations;
      expect(again).toEqual(first);
      expect(again.some((x) => tooth.expect.test(x))).toBe(true);
    },
    600_000,
  );
}
