// The whole-system simulation (issue 5: the article's AC1–AC4 promise), part 1
// of 2: shard 1 of the seeded fault schedules, and every protocol crash point
// against every target. Part 2 (system-shard2.sim.test.ts) runs shard 2 and the
// checker's teeth, so vitest's two workers share the load. Each shard prints
// one line `ac: seeds=N crashes=C partitions=P violations=V (...)`; a failure
// prints the seed, the path and the one command that replays it.

import { expect, test } from 'vitest';
import { Rng } from '../../src/raft/rng.ts';
import { HEAL_AT_MS, LIVENESS_MS } from './system-schedule.ts';
import { REPLAY, runShard, SEEDS } from './system-run.ts';
import { CRASH_POINTS, SystemWorld, type SystemScenario } from './system-world.ts';

test(`AC1–AC4, R1, R4 and Raft safety hold on ${REPLAY ? 'a replayed schedule' : `shard 1 of ${SEEDS} simulated fault schedules`}`, () => {
  const { failed } = runShard(0);
  expect(failed, 'a simulated schedule violated atomic commit (see the replay command above)').toBe(false);
}, 1_800_000);

const POINT_SEEDS = Number(process.env.VERDICT_AC_POINT_SEEDS ?? 4);
const TARGETS = ['leader', 0, 1, 2] as const;
/** "point:target:k" runs one combination with a trace, e.g. VERDICT_AC_POINT='commit-applied:leader:2'. */
const ONE_POINT = process.env.VERDICT_AC_POINT;

/** Three transactions over all three participants, everyone voting YES, and one crash at `point`. */
function pointScenario(point: (typeof CRASH_POINTS)[number], target: 'leader' | number, k: number): SystemScenario {
  const rng = new Rng(0x5eed + 7919 * CRASH_POINTS.indexOf(point) + 104729 * TARGETS.indexOf(target as never) + k);
  return {
    seed: rng.u32() & 0x7fffffff,
    nodes: k % 2 === 0 ? 3 : 5,
    participants: 3,
    txns: [0, 1, 2].map((i) => ({ atMs: i * 400 + rng.int(300), members: [0, 1, 2], no: null, timeoutMs: 2_000 })),
    faults: [],
    crashPoints: [{ point, target, downMs: 100 + rng.int(2_500) }],
    healAtMs: HEAL_AT_MS,
    livenessMs: LIVENESS_MS,
    snapshotEntries: k % 3 === 2 ? 10 : 1_000_000,
  };
}

test.skipIf(REPLAY !== undefined)(
  'AC1–AC4 hold when the leader or a participant crashes at each step of the protocol (crash points)',
  () => {
    const failures: string[] = [];
    const missed: string[] = [];
    let runs = 0;
    let fired = 0;
    for (const point of CRASH_POINTS) {
      for (const target of TARGETS) {
        let firedHere = 0;
        for (let k = 0; k < POINT_SEEDS; k++) {
          const id = `${point}:${target}:${k}`;
          if (ONE_POINT && ONE_POINT !== id) continue;
          const w = new SystemWorld(pointScenario(point, target, k));
          if (ONE_POINT) w.trace = (line) => console.log(line);
          const r = w.run();
          runs++;
          firedHere += r.crashPointsFired;
          if (r.violations.length > 0)
            failures.push(
              `${id}: ${r.violations.join('\n    ')}\n  replay: VERDICT_AC_POINT='${id}' npx vitest run test/sim/system.sim.test.ts -t 'crash points'`,
            );
        }
        fired += firedHere;
        if (firedHere === 0 && !ONE_POINT) missed.push(`${point}:${target}`);
      }
    }
    console.log(
      `ac crash points: ${CRASH_POINTS.length} points × ${TARGETS.length} targets × ${POINT_SEEDS} seeds = ${runs} runs, ${fired} crashes fired, violations=${failures.length}`,
    );
    for (const f of failures.slice(0, 5)) console.error(f);
    // A crash point that never fires tests nothing.
    expect(missed, 'crash points that never fired').toEqual([]);
    expect(failures.length, 'a crash point broke atomic commit (see above)').toBe(0);
  },
  600_000,
);

// Found by this simulation: Raft drops a proposal while leadership is moving
// (or under back-pressure), and the engine left a transaction whose COMMIT was
// dropped in 'deciding' for as long as the same node kept leading — its
// participants in doubt forever (AC4). The engine now proposes it again.
// (Seed 134: since a leader refuses new transactions while leadership moves,
// the earlier seed 38 no longer has the COMMIT dropped.)
test.skipIf(REPLAY !== undefined)(
  'AC4: a COMMIT that Raft drops during a leadership transfer is proposed again, not left in doubt',
  () => {
    const sc: SystemScenario = {
      seed: 134,
      nodes: 3,
      participants: 2,
      txns: [{ atMs: 2479, members: [1, 1, 3], no: null, timeoutMs: 3000 }],
      faults: [
        { kind: 'transfer', at: 4246, to: 2 },
        { kind: 'loss', at: 2483, percent: 36, durMs: 2154 },
        { kind: 'transfer', at: 4325, to: 0 },
        { kind: 'crash-participant', at: 370, participant: 1, downMs: 1760 },
        { kind: 'transfer', at: 256, to: 0 },
      ],
      crashPoints: [],
      healAtMs: HEAL_AT_MS,
      livenessMs: LIVENESS_MS,
      snapshotEntries: 1_000_000,
    };
    const w = new SystemWorld(sc);
    const dropped: string[] = [];
    w.trace = (line) =>
      /proposal decide t1 failed: proposal dropped: leadership is moving/.test(line) && dropped.push(line);
    const r = w.run();
    expect(dropped.length, 'the schedule no longer makes Raft drop the COMMIT; find a new one').toBeGreaterThan(0);
    expect(r.violations).toEqual([]);
    expect(r.committed).toBe(1);
  },
);
