// Membership change with real processes, as an operator does it with the
// `verdict member` command: grow a three-node cluster to five (new nodes
// start with empty disks and "join": true), shrink it back to three —
// removing the leader among others — and replace a node whose disk is gone
// by a new one that catches up from a snapshot (the log was compacted).

import { rmSync } from 'node:fs';
import { expect, test } from 'vitest';
import type { Members } from '../../src/transport/proto.ts';
import { Cluster, freePorts, runCli, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';

useProcessCleanup();

const CLI_MS = 90_000;

async function member(c: Cluster, args: string[]): Promise<Members> {
  const endpoints = c.nodes
    .filter((n) => n.running)
    .map((n) => n.address)
    .join(',');
  const r = await runCli(['member', ...args, '--json', '--endpoints', endpoints], { timeoutMs: CLI_MS });
  expect(r.code, `verdict member ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as Members;
}

const voters = (m: Members): string[] =>
  m.members
    .filter((x) => x.voter)
    .map((x) => x.nodeId)
    .sort();
const learners = (m: Members): string[] =>
  m.members
    .filter((x) => !x.voter)
    .map((x) => x.nodeId)
    .sort();

/**
 * `n` holds everything written so far: read linearizably on `n`, its participant table is exactly the registrations
 * made, and it applied every acknowledged log probe.
 */
async function expectAllData(c: Cluster, n: NodeProc, registered: Map<string, string>): Promise<void> {
  expect(await n.participants(10_000), `participants on ${n.id}`).toEqual(registered);
  // The read above waited for n to apply the leader's commit index, which every acknowledged probe is below.
  expect((await n.status()).appliedIndex, `${n.id} applied every acknowledged probe`).toBeGreaterThanOrEqual(
    c.maxAckIndex,
  );
}

test('grow 3 → 5, shrink back to 3 removing the leader, replace a dead node from a snapshot', async () => {
  // Frequent snapshots, so that the replacement cannot be fed from the log.
  const c = await Cluster.start({ nodes: 3, snapshotEntries: 20, snapshotLogRatio: 0 });
  await c.waitForLeader();
  // Each batch of writes: log probes (the log's bulk, compacted into snapshots) and one participant registration
  // (state every snapshot carries, read back on the node that must hold it).
  const registered = new Map<string, string>();
  const write = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) await c.putOnLeader(`k${i}`, `v${i}`);
    const endpoint = `127.0.0.1:${20_000 + from}`;
    await c.registerOnLeader(`p${from}`, endpoint);
    registered.set(`p${from}`, endpoint);
  };
  await write(0, 30);

  // ---- grow to five ---------------------------------------------------
  for (const id of ['n4', 'n5']) {
    const n = await c.addNode(id);
    n.start();
    const m = await member(c, ['add', id, n.address]);
    expect(voters(m)).toContain(id);
    expect(m.members.find((x) => x.nodeId === id)?.address).toBe(n.address);
  }
  let m = await member(c, ['list']);
  expect(voters(m)).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
  expect(learners(m)).toEqual([]);
  // Adding again is a no-op (idempotent), not an error.
  m = await member(c, ['add', 'n5', c.node('n5').address]);
  expect(voters(m)).toHaveLength(5);
  await write(30, 45);
  await expectAllData(c, c.node('n4'), registered);

  // ---- shrink to three, removing the leader first ---------------------
  const { node: oldLeader } = await c.waitForLeader();
  m = await member(c, ['remove', oldLeader.id]);
  expect(voters(m)).not.toContain(oldLeader.id);
  expect(voters(m)).toHaveLength(4);
  await c.forget(oldLeader.id);
  const { node: leader2 } = await c.waitForLeader();
  expect(leader2.id).not.toBe(oldLeader.id);
  const other = c.nodes.find((n) => n !== leader2) as NodeProc;
  m = await member(c, ['remove', other.id]);
  expect(voters(m)).toHaveLength(3);
  await c.forget(other.id);
  await write(45, 60);
  // Removing a non-member is a no-op; removing the last voters is refused elsewhere (unit tests).
  m = await member(c, ['remove', other.id]);
  expect(voters(m)).toHaveLength(3);

  // ---- replace a node whose disk is gone -----------------------------
  const { node: leader3 } = await c.waitForLeader();
  const dead = c.nodes.find((n) => n !== leader3) as NodeProc;
  await dead.kill('SIGKILL');
  rmSync(dead.dataDir, { recursive: true, force: true });
  m = await member(c, ['remove', dead.id]);
  expect(voters(m)).not.toContain(dead.id);
  await c.forget(dead.id);
  // Two voters left: writes still commit, and enough of them to compact the log well past its start.
  await write(60, 100);
  const before = await c.waitForLeader();
  expect(before.status.firstIndex, 'the leader compacted its log').toBeGreaterThan(1);

  const n6 = await c.addNode('n6');
  n6.start();
  m = await member(c, ['add', 'n6', n6.address]);
  expect(voters(m)).toHaveLength(3);
  expect(voters(m)).toContain('n6');
  await write(100, 105);
  const leaderCommit = (await c.waitForLeader()).status.commitIndex;
  const s6 = await waitFor(`n6 to apply index ${leaderCommit}`, 30_000, async () => {
    const s = await n6.status();
    return s.appliedIndex >= leaderCommit ? s : undefined;
  });
  // Its log starts after a snapshot: it was not fed from index 1.
  expect(s6.firstIndex).toBeGreaterThan(1);
  await expectAllData(c, n6, registered);

  // A node that never shows up: the add fails with a clear timeout and leaves a learner, which can be removed.
  const [ghostPort] = await freePorts(1);
  const endpoints = c.nodes.map((n) => n.address).join(',');
  const ghost = await runCli(
    ['member', 'add', 'n9', `127.0.0.1:${ghostPort}`, '--timeout-ms', '1500', '--endpoints', endpoints],
    { timeoutMs: CLI_MS },
  );
  expect(ghost.code).toBe(1);
  expect(ghost.stderr).toMatch(/n9 at 127\.0\.0\.1:\d+ did not catch up within 1500 ms .*stays a learner/);
  expect(learners(await member(c, ['list']))).toEqual(['n9']);
  m = await member(c, ['remove', 'n9']);
  expect(m.members.map((x) => x.nodeId)).not.toContain('n9');

  // The new member counts: with n6 it takes two of three to commit; stop one old node and write on.
  const { node: leader4 } = await c.waitForLeader();
  const oldOne = c.nodes.find((n) => n !== leader4 && n !== n6) as NodeProc;
  await oldOne.kill('SIGKILL');
  await write(105, 110);
  await expectAllData(c, n6, registered);
}, 300_000);
