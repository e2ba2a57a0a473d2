// When the driver takes a local snapshot: after snapshotEntries applied
// entries, and (snapshotLogRatio) only once the entries applied since the
// last snapshot hold that many times its bytes, both bounds stretched by the
// node's snapshotStagger. One voter on the simulator's disk and clock.
import { describe, expect, it } from 'vitest';
import { Driver, snapshotStagger, type StateMachine } from '../../src/node/driver.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { Entry } from '../../src/raft/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { SimDisk } from '../sim/sim-disk.ts';

/** A state machine whose snapshot is `stateFactor` bytes per command byte applied. */
class Machine implements StateMachine<null> {
  appliedBytes = 0;
  constructor(private readonly stateFactor: number) {}
  apply(e: Entry): null {
    this.appliedBytes += e.data.byteLength;
    return null;
  }
  snapshot(): Uint8Array {
    return new Uint8Array(this.appliedBytes * this.stateFactor);
  }
  restore(data: Uint8Array): void {
    this.appliedBytes = data.byteLength / this.stateFactor;
  }
}

interface Taken {
  index: number;
  bytes: number;
  /** Command bytes applied (in total) when it was taken. */
  appliedBytes: number;
}

/** Proposes `commands` commands of `commandBytes` bytes, one at a time, and returns the snapshots taken. */
function run(o: {
  snapshotEntries: number;
  snapshotLogRatio?: number;
  snapshotStagger?: number;
  stateFactor: number;
  commands: number;
  commandBytes: number;
}): Taken[] {
  const q = new EventQueue();
  const rng = new Rng(7);
  const disk = new SimDisk(q, new Rng(rng.u32()));
  disk.found();
  const raw = RawNode.restart(
    { id: 'a', random: new Rng(rng.u32()).asRandom(), electionTicks: 10, heartbeatTicks: 1 },
    disk.recover(),
    { voters: ['a'], learners: [], votersOutgoing: [] },
  );
  const sm = new Machine(o.stateFactor);
  const taken: Taken[] = [];
  const d = new Driver<null>({
    node: raw,
    store: disk,
    transport: { send: () => {} },
    sm,
    snapshotEntries: o.snapshotEntries,
    snapshotLogRatio: o.snapshotLogRatio,
    snapshotStagger: o.snapshotStagger,
    snapshotKeepEntries: 2,
    waitersMax: 100,
    onFatal: (err) => {
      throw err;
    },
    onSnapshot: (phase, index, bytes) => {
      if (phase === 'taken') taken.push({ index, bytes, appliedBytes: sm.appliedBytes });
    },
  });
  const tick = (): void => {
    d.tick();
    q.after(100, tick);
  };
  q.after(0, tick);
  for (let i = 0; i < 100 && !d.isLeader(); i++) q.runUntil(q.now + 100);
  expect(d.isLeader()).toBe(true);
  for (let i = 0; i < o.commands; i++) {
    let done = false;
    d.propose(new Uint8Array(o.commandBytes).fill(1), (err) => {
      if (err) throw err;
      done = true;
    });
    for (let t = 0; t < 100 && !done; t++) q.runUntil(q.now + 10);
    expect(done).toBe(true);
  }
  return taken;
}

function gaps(taken: Taken[]): number[] {
  return taken.slice(1).map((t, i) => t.index - taken[i].index);
}

describe('driver: when a local snapshot is taken', () => {
  it('by count alone (snapshotLogRatio 0): every snapshotEntries applied entries', () => {
    const taken = run({ snapshotEntries: 10, snapshotLogRatio: 0, stateFactor: 10, commands: 60, commandBytes: 20 });
    expect(taken.length).toBeGreaterThanOrEqual(5);
    for (const g of gaps(taken)) expect(g).toBe(10);
  });

  it('with snapshotLogRatio 1: the next snapshot waits for as many command bytes as the last one held, so the gaps grow with the state', () => {
    const taken = run({ snapshotEntries: 10, snapshotLogRatio: 1, stateFactor: 3, commands: 200, commandBytes: 20 });
    expect(taken.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < taken.length; i++) {
      expect(taken[i].appliedBytes - taken[i - 1].appliedBytes).toBeGreaterThanOrEqual(taken[i - 1].bytes);
    }
    // The state grows with the log, so each gap is wider than the one before.
    const g = gaps(taken);
    for (let i = 1; i < g.length; i++) expect(g[i]).toBeGreaterThan(g[i - 1]);
    // By count alone the same load takes a snapshot every 10 entries.
    expect(
      run({ snapshotEntries: 10, snapshotLogRatio: 0, stateFactor: 3, commands: 200, commandBytes: 20 }).length,
    ).toBeGreaterThan(taken.length * 4);
  });

  it('a small state still snapshots every snapshotEntries entries with the ratio on', () => {
    // A state that stays tiny next to the log: the ratio bound is met long before the count.
    const taken = run({ snapshotEntries: 10, snapshotLogRatio: 1, stateFactor: 0.01, commands: 60, commandBytes: 100 });
    expect(taken.length).toBeGreaterThanOrEqual(5);
    for (const g of gaps(taken)) expect(g).toBe(10);
  });

  it('the stagger stretches both bounds by the node share', () => {
    const taken = run({
      snapshotEntries: 10,
      snapshotLogRatio: 0,
      snapshotStagger: 0.5,
      stateFactor: 10,
      commands: 60,
      commandBytes: 20,
    });
    expect(taken.length).toBeGreaterThanOrEqual(3);
    for (const g of gaps(taken)) expect(g).toBe(15);
    const ratio = run({
      snapshotEntries: 1,
      snapshotLogRatio: 1,
      snapshotStagger: 0.5,
      stateFactor: 3,
      commands: 100,
      commandBytes: 20,
    });
    expect(ratio.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < ratio.length; i++)
      expect(ratio[i].appliedBytes - ratio[i - 1].appliedBytes).toBeGreaterThanOrEqual(ratio[i - 1].bytes * 1.5);
  });

  it('snapshotStagger gives each node id its own share in [0, 0.5), the same on every call', () => {
    const ids = ['n1', 'n2', 'n3', 'n4', 'n5', 'alpha', 'beta'];
    const shares = ids.map(snapshotStagger);
    for (const s of shares) {
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThan(0.5);
    }
    expect(new Set(shares.slice(0, 3)).size).toBe(3);
    expect(ids.map(snapshotStagger)).toEqual(shares);
  });
});
