// The whole-system simulation with TCC participants (issue 16): every other
// participant runs Try / Confirm / Cancel through the barrier, with reserves
// that expire by asking the cluster (test/sim/system-tcc.ts), beside memory
// participants in the same transactions, under the usual faults. AC1–AC4,
// R1, R4, Raft safety and the TCC checks must hold; the checker's teeth are
// two TCC mutants (no barrier; cancel on a bare timer), injected from
// test/sim/system-tcc.ts, which it must catch. Prints `tcc: seeds=N ...`; a
// failure prints the seed and the command that replays it.
import { expect, test } from 'vitest';
import { BASE_SEED, huntMutant, REPLAY, runShard } from './system-run.ts';
import { systemScenarioArb } from './system-schedule.ts';
import type { TccMutant } from './system-tcc.ts';
import { SystemWorld } from './system-world.ts';

/** VERDICT_TCC_SEEDS overrides (a soak: VERDICT_TCC_SEEDS=50000). */
const SEEDS = Number(process.env.VERDICT_TCC_SEEDS ?? 20_000);
const tccArb = systemScenarioArb.map((sc) => ({ ...sc, tcc: true }));

test(`AC1–AC4 and the TCC barrier and TTL hold on ${REPLAY ? 'a replayed schedule' : `${SEEDS} simulated fault schedules with TCC participants`}`, () => {
  const { failed } = runShard(0, {
    arb: tccArb,
    seeds: SEEDS,
    baseSeed: BASE_SEED + 1_000,
    replayFile: 'test/sim/system-tcc.sim.test.ts',
    label: 'tcc',
  });
  expect(failed, 'a simulated schedule with TCC participants broke a rule (see the replay command above)').toBe(false);
}, 1_800_000);

interface Tooth {
  mutant: TccMutant;
  what: string;
  expect: RegExp;
  seedsMax: number;
}

const TEETH: Tooth[] = [
  {
    mutant: 'tcc-no-barrier',
    what: 'no barrier: a Confirm or Cancel redelivered after a crash runs again',
    expect: /TCC barrier: .*applied twice/,
    seedsMax: 3_000,
  },
  // The ABORT must overtake its own Try: since decisions go to the log through the batcher (one more
  // instant before the ABORT entry), this seed's first such schedule is the 6,105th (it was the 972nd).
  {
    mutant: 'tcc-no-barrier',
    what: 'no barrier: a Try that arrives after its Cancel reserves (hanging Try)',
    expect: /TCC hanging Try/,
    seedsMax: 10_000,
  },
  {
    mutant: 'tcc-cancel-on-timer',
    what: 'an expired reserve cancelled on a bare timer, without asking the cluster',
    expect: /(AC1 agreement|R4: \S+ aborted)/,
    seedsMax: 3_000,
  },
];

for (const [i, tooth] of TEETH.entries()) {
  test.skipIf(REPLAY !== undefined)(
    `the checker catches TCC mutant: ${tooth.what}; the failing seed replays`,
    () => {
      const { out, tried, caught, other } = huntMutant(
        tccArb,
        tooth.mutant,
        tooth.expect,
        BASE_SEED + 1_100 + i,
        tooth.seedsMax,
      );
      console.log(
        `tcc teeth: ${tooth.mutant} ${out.failed ? `caught after ${tried} schedules` : `NOT caught in ${tried} schedules`}: ${caught ?? other ?? 'no violation at all'}`,
      );
      expect(out.failed, `mutant ${tooth.mutant} went unnoticed for ${tooth.seedsMax} schedules`).toBe(true);
      // The counterexample replays: the same scenario gives the same violation again.
      const sc = out.counterexample?.[0];
      expect(sc).toBeDefined();
      if (sc === undefined) return;
      const again = new SystemWorld({ ...sc, mutant: tooth.mutant }).run().violations;
      const first = new SystemWorld({ ...sc, mutant: tooth.mutant }).run().violations;
      expect(again).toEqual(first);
      expect(again.some((x) => tooth.expect.test(x))).toBe(true);
    },
    600_000,
  );
}
