// ABORT is delivered like COMMIT (docs/protocol-outcomes.md): retried until
// every participant that was sent PREPARE acknowledges it. Here participants
// never ask about a prepared transaction (only after a restart, as the
// protocol requires), so they terminate (AC4) only if every decision reaches
// them; with ABORT sent once (the abort-unlogged mutant, the old behaviour)
// a lost message leaves one in doubt for good.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { BASE_SEED, REPLAY } from './system-run.ts';
import { systemScenarioArb } from './system-schedule.ts';
import { SystemWorld, type SystemScenario } from './system-world.ts';

const SEEDS = Number(process.env.VERDICT_AC_DELIVERY_SEEDS ?? 300);
const waiting: fc.Arbitrary<SystemScenario> = systemScenarioArb.map((sc) => ({ ...sc, participantsWait: true }));

test.skipIf(REPLAY !== undefined)(
  `ABORT delivery: participants that never ask still learn every decision (AC4) on ${SEEDS} fault schedules`,
  () => {
    let first: string | null = null;
    let runs = 0;
    const out = fc.check(
      fc.property(waiting, (sc) => {
        runs++;
        const v = new SystemWorld(sc).run().violations;
        first ??= v[0] ?? null;
        return v.length === 0;
      }),
      { seed: BASE_SEED + 300, numRuns: SEEDS, endOnFailure: true },
    );
    console.log(`ac abort delivery: ${runs} schedules, participants never ask: ${first ?? 'no violation'}`);
    expect(out.failed, `a waiting participant was left without its decision: ${first}`).toBe(false);
  },
  600_000,
);

test.skipIf(REPLAY !== undefined)(
  'ABORT delivery: the checker catches ABORT sent once (abort-unlogged) as a participant left in doubt',
  () => {
    let caught: string | null = null;
    let tried = 0;
    const out = fc.check(
      fc.property(waiting, (sc) => {
        tried++;
        caught =
          new SystemWorld({ ...sc, mutant: 'abort-unlogged' })
            .run()
            .violations.find((x) => /AC4 termination: .* in doubt on/.test(x)) ?? null;
        return caught === null;
      }),
      { seed: BASE_SEED + 301, numRuns: 2_000, endOnFailure: true },
    );
    console.log(
      `ac abort delivery teeth: ${out.failed ? `caught after ${tried} schedules` : `NOT caught in ${tried} schedules`}: ${caught ?? ''}`,
    );
    expect(out.failed).toBe(true);
  },
  600_000,
);
