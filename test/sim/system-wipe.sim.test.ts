// A voter restarted on an empty data directory (issue 39, finding 7), in the
// whole-system simulation, which runs the production node core: n1 is cut
// off while n2 and n3 commit, n3's data directory is replaced by an empty
// one, n2 goes down, n1 comes back. The emptied n3 starts rejoining
// (src/raft/raft.ts): it grants n1 no vote, so n1, which lacks the commits,
// is not elected; the cluster waits for n2, and then everything n2 and n3
// decided stands. The control restarts n3 as if the cluster were founded
// again (the mutant 'wiped-refounds'): n1 is elected without the commits and
// the checkers see it.

import { expect, test } from 'vitest';
import { LIVENESS_MS } from './system-schedule.ts';
import { SystemWorld, type SystemScenario } from './system-world.ts';

function wipedVoterSchedule(seed: number): SystemScenario {
  return {
    seed,
    nodes: 3,
    participants: 2,
    // Everything begins while n1 is away: n2 and n3 alone decide it.
    txns: Array.from({ length: 12 }, (_, i) => ({
      atMs: 100 + i * 200,
      members: [0, 1],
      no: i % 5 === 4 ? 1 : null,
      timeoutMs: 2_000,
    })),
    faults: [
      // n1 cut off from everyone (nodes and participants) until 6 s.
      { kind: 'partition', at: 0, side: [1, 0, 0, 0, 0, 0, 0, 0, 0], durMs: 6_000 },
      // n2 goes down at 3.5 s and stays down until the world heals at 10 s.
      { kind: 'crash-node', at: 3_500, node: 1, downMs: 20_000 },
    ],
    // n3's disk is replaced by an empty one at 3 s; it is back 100 ms later.
    diskFaults: [{ kind: 'wipe', at: 3_000, node: 2, downMs: 100 }],
    crashPoints: [],
    healAtMs: 10_000,
    livenessMs: LIVENESS_MS,
    snapshotEntries: 1_000_000,
  };
}

const SEEDS = [1, 2, 3, 4, 5, 6];

test('a wiped voter grants no vote: n1 and the emptied n3 elect nobody, and no answer contradicts what clients were told (6 seeds)', () => {
  for (const seed of SEEDS) {
    const w = new SystemWorld(wipedVoterSchedule(seed));
    const lines: string[] = [];
    w.trace = (line) => lines.push(line);
    const r = w.run();
    expect(
      lines.some((l) => /n3's disk is replaced by an empty one/.test(l)),
      `seed ${seed}: the wipe happened`,
    ).toBe(true);
    expect(r.committed, `seed ${seed}: n2 and n3 committed while n1 was away`).toBeGreaterThan(0);
    expect(r.violations, `seed ${seed}`).toEqual([]);
  }
});

test('control: the emptied n3 restarted as a founder votes for n1, and the checkers see decisions lost', () => {
  const lost = /raft leader completeness|raft election safety|client:|AC1/;
  const caught = SEEDS.filter((seed) =>
    new SystemWorld({ ...wipedVoterSchedule(seed), mutant: 'wiped-refounds' })
      .run()
      .violations.some((v) => lost.test(v)),
  );
  expect(caught.length, 'seeds on which the control broke a safety property').toBeGreaterThan(0);
});
