// The foundation's acceptance test, on real processes: three nodes on
// loopback replicate, survive kill -9 of the leader, and after kill -9 of
// every node still hold every acknowledged entry. The bulk of the log is log
// probes (entries the state machine applies as no-ops, counted by index);
// participant registrations among them are state every snapshot carries,
// read back on each node. A small snapshotEntries makes snapshots, log
// compaction, snapshot transfer to a lagging node and recovery from a
// snapshot part of the run.

import { describe, expect, it } from 'vitest';
import { Cluster, ELECTION_WAIT_MS, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const FIRST = 1_000;
/** While the old leader is down: more than snapshotEntries, so it can only catch up from a snapshot. */
const SECOND = 600;
const IN_FLIGHT = 64;
const SNAPSHOT_ENTRIES = 300;
/** Participants registered in each phase of writes. */
const REGISTRATIONS = 10;

const value = (i: number): string => `v${i}-${'x'.repeat(i % 17)}`;

describe('three node processes on loopback', () => {
  it('keep every acknowledged entry through kill -9 of the leader and then of every node', async () => {
    const c = await Cluster.start({ nodes: 3, snapshotEntries: SNAPSHOT_ENTRIES, snapshotLogRatio: 0 });
    const first = await c.waitForLeader();

    // 1. Replicate 1,000 entries, 64 in flight, and register participants among them.
    const acked = new Set<number>();
    /** The log index each acknowledged probe applied at. */
    const ackedAt = new Set<number>();
    const registered = new Map<string, string>();
    const register = async (phase: string): Promise<void> => {
      for (let r = 0; r < REGISTRATIONS; r++) {
        const endpoint = `127.0.0.1:${phase === 'first' ? 21_000 + r : 22_000 + r}`;
        await c.registerOnLeader(`p-${phase}-${r}`, endpoint);
        registered.set(`p-${phase}-${r}`, endpoint);
      }
    };
    await Promise.all([
      Cluster.pool(FIRST, IN_FLIGHT, async (i) => {
        ackedAt.add((await c.putOnLeader(`k${i}`, value(i))).index);
        acked.add(i);
      }),
      register('first'),
    ]);
    expect(acked.size).toBe(FIRST);

    // 2. kill -9 the leader: another node takes over in a higher term.
    const old = (await c.waitForLeader()).node;
    const oldStatus = await old.status();
    await old.kill('SIGKILL');
    const second = await c.waitForLeader({ notId: old.id, minTerm: oldStatus.term + 1 });
    expect(second.node.id).not.toBe(old.id);
    expect(second.status.term).toBeGreaterThan(Math.max(oldStatus.term, first.status.term));

    // 3. The two survivors commit more entries; the old leader can learn these registrations only from a snapshot.
    await Promise.all([
      Cluster.pool(SECOND, IN_FLIGHT, async (j) => {
        const i = FIRST + j;
        ackedAt.add((await c.putOnLeader(`k${i}`, value(i))).index);
        acked.add(i);
      }),
      register('second'),
    ]);
    const count = FIRST + SECOND;
    expect(acked.size).toBe(count);
    // Each acknowledged probe is an entry of its own.
    expect(ackedAt.size).toBe(count);
    const beforeCrash = await second.node.status();
    // Snapshots were taken and the log compacted on the way.
    expect(beforeCrash.firstIndex).toBeGreaterThan(1);

    // 4. kill -9 everything, start all three again.
    await Promise.all(c.nodes.map((n) => n.kill('SIGKILL')));
    for (const n of c.nodes) n.start();
    const third = await c.waitForLeader();
    // The old leader missed the last entries and cannot win an election.
    expect(third.node.id).not.toBe(old.id);

    // 5. Every acknowledged entry is there: a linearizable read of the registrations on the leader, and its commit
    // index past every acknowledged probe's.
    const leader = third.node;
    expect(await leader.participants(), `participants on leader ${leader.id}`).toEqual(registered);
    const st = await leader.status();
    expect(st.commitIndex).toBeGreaterThanOrEqual(count + 2 * REGISTRATIONS);
    expect(st.commitIndex).toBeGreaterThanOrEqual(c.maxAckIndex);
    expect(c.maxAckIndex).toBe(Math.max(...ackedAt));
    // Recovered from a snapshot: the log no longer starts at 1.
    expect(st.firstIndex).toBeGreaterThan(1);

    // 6. Each follower catches up (the old leader through a snapshot) and holds the same state.
    for (const f of c.nodes.filter((n) => n !== leader)) {
      const fs = await waitFor(
        `${f.id} to apply up to ${st.commitIndex}`,
        ELECTION_WAIT_MS,
        async () => {
          const s = await f.status();
          return s.appliedIndex >= st.commitIndex ? s : undefined;
        },
        () => `${f.id} has not caught up`,
      );
      expect(fs.role).toBe('follower');
      expect(await f.participants(), `participants on follower ${f.id}`).toEqual(registered);
    }
  });
});
