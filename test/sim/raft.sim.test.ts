// The deterministic Raft simulation. `npm test` runs VERDICT_SIM_SEEDS
// schedules (2,000 by default); a failure prints its seed and path and the
// one command that replays it exactly.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { RaftWorld } from './raft-world.ts';
import { faultArb, membershipScenarioArb, scenarioArb } from './raft-schedule.ts';

const seeds = Number(process.env.VERDICT_SIM_SEEDS ?? 2000);
const replay = process.env.VERDICT_SIM_REPLAY; // "seed:path"
const baseSeed = Number(process.env.VERDICT_SIM_SEED ?? 20261130);

test(`raft safety and liveness hold on ${replay ? 'a replayed schedule' : `${seeds} simulated fault schedules`}`, () => {
  let runs = 0;
  let steps = 0;
  let violations = 0;
  let crashes = 0;
  let partitions = 0;
  let diskFaults = 0;
  let refusals = 0;
  const started = Date.now();
  const params: fc.Parameters<[import('./raft-world.ts').Scenario]> = replay
    ? { seed: Number(replay.split(':')[0]), path: replay.split(':').slice(1).join(':'), endOnFailure: true, numRuns: 1 }
    : { seed: baseSeed, numRuns: seeds, endOnFailure: false };
  const out = fc.check(
    fc.property(scenarioArb, (sc) => {
      const r = new RaftWorld(sc).run();
      runs++;
      steps += r.steps;
      crashes += r.crashes;
      partitions += r.partitions;
      diskFaults += r.diskFaults;
      refusals += r.refusals;
      if (r.violations.length > 0) {
        violations++;
        throw new Error(r.violations.join('\n'));
      }
    }),
    params,
  );
  const secs = (Date.now() - started) / 1000;
  console.log(
    `sim: seeds=${runs} steps=${steps} violations=${violations} (crashes=${crashes} partitions=${partitions} diskFaults=${diskFaults} refusedStarts=${refusals}, ${secs.toFixed(1)} s, ${Math.round((runs / secs) * 60)} seeds/min)`,
  );
  if (out.failed) {
    const cmd = `VERDICT_SIM_REPLAY='${out.seed}:${out.counterexamplePath}' npx vitest run test/sim/raft.sim.test.ts`;
    console.error(
      `simulation failed; replay with:\n  ${cmd}\ncounterexample: ${JSON.stringify(out.counterexample)}\n${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
    );
  }
  expect(out.failed, 'a simulated schedule violated Raft safety or liveness (see the replay command above)').toBe(
    false,
  );
}, 1_200_000);

// Membership changes (learners added and promoted, voters and leaders
// removed, dead nodes replaced by new ones with empty disks that catch up by
// snapshot) on top of the same faults: the same safety checks, plus the
// core's own assertion that every node applies the changes in one order.
const memberSeeds = Number(process.env.VERDICT_SIM_MEMBER_SEEDS ?? 300);
const memberReplay = process.env.VERDICT_SIM_MEMBER_REPLAY; // "seed:path"

test(`raft safety and liveness hold with membership changes on ${memberReplay ? 'a replayed schedule' : `${memberSeeds} simulated schedules`}`, () => {
  let runs = 0;
  let violations = 0;
  let confChanges = 0;
  const started = Date.now();
  const params: fc.Parameters<[import('./raft-world.ts').Scenario]> = memberReplay
    ? {
        seed: Number(memberReplay.split(':')[0]),
        path: memberReplay.split(':').slice(1).join(':'),
        endOnFailure: true,
        numRuns: 1,
      }
    : { seed: baseSeed + 1, numRuns: memberSeeds, endOnFailure: false };
  const out = fc.check(
    fc.property(membershipScenarioArb, (sc) => {
      const r = new RaftWorld(sc).run();
      runs++;
      confChanges += r.confChanges;
      if (r.violations.length > 0) {
        violations++;
        throw new Error(r.violations.join('\n'));
      }
    }),
    params,
  );
  const secs = (Date.now() - started) / 1000;
  console.log(
    `sim membership: seeds=${runs} violations=${violations} (membership changes applied on nodes: ${confChanges}, ${secs.toFixed(1)} s)`,
  );
  if (out.failed) {
    const cmd = `VERDICT_SIM_MEMBER_REPLAY='${out.seed}:${out.counterexamplePath}' npx vitest run test/sim/raft.sim.test.ts -t membership`;
    console.error(
      `simulation failed; replay with:\n  ${cmd}\ncounterexample: ${JSON.stringify(out.counterexample)}\n${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
    );
  }
  // The schedules must really change the membership, or this proves nothing.
  expect(confChanges).toBeGreaterThan(runs);
  expect(
    out.failed,
    'a simulated schedule with membership changes violated Raft safety or liveness (see the replay command above)',
  ).toBe(false);
}, 600_000);

// The checker's teeth: with disks that acknowledge a write before it is
// durable (breaking R6), crash schedules must produce a safety violation.
// A checker that never fires proves nothing.
test('the checker catches a disk that acknowledges writes before they are durable (R6 broken)', () => {
  const crashHeavy = fc.record({
    seed: fc.integer({ min: 0, max: 0x7fffffff }),
    nodes: fc.constant(3),
    faults: fc.array(
      faultArb.filter((f) => f.kind === 'crash'),
      { minLength: 6, maxLength: 14 },
    ),
    healAtMs: fc.constant(12_000),
    livenessMs: fc.constant(15_000),
    snapshotEntries: fc.constant(1_000_000),
    lyingDisks: fc.constant(true),
  });
  let caught: string[] = [];
  let tried = 0;
  let assertions = 0;
  fc.check(
    fc.property(crashHeavy, (sc) => {
      tried++;
      let violations: string[];
      try {
        violations = new RaftWorld(sc).run().violations;
      } catch {
        // An invariant assertion in the production code fired first; this
        // test is about the checker, so look at further schedules.
        assertions++;
        return true;
      }
      const safety = violations.filter((v) => !v.includes('liveness'));
      if (safety.length > 0) {
        caught = safety;
        return false;
      }
      return true;
    }),
    { seed: baseSeed, numRuns: 300, endOnFailure: true },
  );
  console.log(
    `sim teeth: lying disk caught after ${tried} schedules (${assertions} stopped earlier by an assertion): ${caught[0] ?? 'not caught'}`,
  );
  expect(caught.length).toBeGreaterThan(0);
}, 300_000);
