// `verdict status` against a running three-node cluster, as a user runs it:
// one address is enough to see every node, the leader is named, and a dead
// node is shown as unreachable without failing the command.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Cluster, ROOT, runCli, useProcessCleanup, type NodeProc } from './harness.ts';

useProcessCleanup();

interface StatusJson {
  leader: string | null;
  nodes: {
    id: string | null;
    address: string;
    reachable: boolean;
    error?: string;
    role?: string;
    term?: number;
    commitIndex?: number;
    lastIndex?: number;
    version?: string;
  }[];
}

async function statusJson(endpoints: string[]): Promise<StatusJson> {
  const r = await runCli(['status', '--json', '--endpoints', endpoints.join(',')]);
  expect(r.code, r.stderr).toBe(0);
  const st = JSON.parse(r.stdout) as StatusJson & { healthy: boolean; problem: string | null };
  // Exit 0 goes with a leader and a majority answering, and --json says so.
  expect(st).toMatchObject({ healthy: true, problem: null });
  return st;
}

describe('verdict status', () => {
  let c: Cluster;
  let leader: NodeProc;
  let followers: NodeProc[];

  beforeAll(async () => {
    // A slower election clock than the default: an idle cluster on a loaded CI machine must not change leader mid-test.
    c = await Cluster.start({ nodes: 3, tickMs: 100, electionTicks: 20 });
    leader = (await c.waitForLeader()).node;
    followers = c.nodes.filter((n) => n !== leader);
    for (let i = 0; i < 5; i++) await c.putOnLeader(`s${i}`, 'x');
    // Every node has applied the puts, so the commit indexes below are settled.
    await c.waitForLeader();
  });

  const expectWholeCluster = (st: StatusJson): void => {
    expect(st.leader).toBe(leader.id);
    expect(st.nodes.map((n) => n.id)).toEqual(c.nodes.map((n) => n.id));
    for (const n of st.nodes) {
      const proc = c.node(n.id as string);
      expect(n.address).toBe(proc.address);
      expect(n.reachable).toBe(true);
      expect(n.role).toBe(proc === leader ? 'leader' : 'follower');
      expect(n.term).toBeGreaterThanOrEqual(1);
      expect(n.commitIndex).toBeGreaterThanOrEqual(5);
      expect(n.lastIndex).toBeGreaterThanOrEqual(n.commitIndex as number);
    }
    expect(new Set(st.nodes.map((n) => n.term)).size).toBe(1);
  };

  it('--json discovers all three nodes from the leader’s address alone', async () => {
    expectWholeCluster(await statusJson([leader.address]));
  });

  it('--json discovers all three nodes from a follower’s address alone', async () => {
    expectWholeCluster(await statusJson([followers[0].address]));
  });

  it('the table names the leader and lists every node', async () => {
    const r = await runCli(['status', '--endpoints', followers[1].address]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`leader: ${leader.id}`);
    expect(lines[1]).toMatch(/^NODE\s+ADDRESS\s+PID\s+ROLE\s+TERM\s+COMMIT\s+APPLIED\s+LAST\s+VERSION$/);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const n of c.nodes) {
      const row = lines.find((l) => l.startsWith(`${n.id} `));
      expect(row, r.stdout).toBeDefined();
      expect(row).toContain(n.address);
      // The pid `kill` needs for the failure drill.
      expect(row).toMatch(new RegExp(`\\s${n.child?.pid}\\s`));
      expect(row).toMatch(n === leader ? /\sleader\s/ : /\sfollower\s/);
      // The version each node runs, as --json gives it too.
      expect(row?.endsWith(` ${version}`), row).toBe(true);
    }
    expect((await statusJson([leader.address])).nodes.map((n) => n.version)).toEqual(c.nodes.map(() => version));
  });

  it('with a node killed: exits 0, names the leader and shows the dead node unreachable', async () => {
    const dead = followers[1];
    await dead.kill('SIGKILL');
    // From one endpoint: the survivors know the dead node's address from the config.
    for (const from of [leader, followers[0]]) {
      const st = await statusJson([from.address]);
      expect(st.leader).toBe(leader.id);
      expect(st.nodes).toHaveLength(3);
      const down = st.nodes.find((n) => n.address === dead.address);
      expect(down, JSON.stringify(st)).toMatchObject({ id: dead.id, reachable: false });
      expect(down?.error).toBeTruthy();
      expect(st.nodes.filter((n) => n.reachable).map((n) => n.id)).toEqual(
        c.nodes.filter((n) => n !== dead).map((n) => n.id),
      );
    }
    const r = await runCli(['status', '--endpoints', leader.address]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`leader: ${leader.id}`);
    const row = r.stdout.split('\n').find((l) => l.includes(dead.address));
    expect(row, r.stdout).toMatch(
      new RegExp(`^${dead.id}\\s+${dead.address.replace(/\./g, '\\.')}\\s+unreachable \\(`),
    );
  });

  it('with the leader killed too, a majority is gone: exits 1 and says why, in --json too (a health check can use the code)', async () => {
    await leader.kill('SIGKILL');
    const r = await runCli(['status', '--json', '--endpoints', followers[0].address]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('verdict: a majority of the nodes is unreachable (1 of 3 answer)\n');
    const st = JSON.parse(r.stdout) as StatusJson & { healthy: boolean; problem: string | null };
    expect(st).toMatchObject({ healthy: false, problem: 'a majority of the nodes is unreachable (1 of 3 answer)' });
    expect(st.nodes.filter((n) => n.reachable).map((n) => n.id)).toEqual([followers[0].id]);
  });

  it('with every endpoint dead: exits non-zero and says so', async () => {
    const addrs = c.nodes.map((n) => n.address);
    await Promise.all(c.nodes.map((n) => n.kill('SIGKILL')));
    const r = await runCli(['status', '--json', '--endpoints', addrs.join(',')]);
    expect(r.code).not.toBe(0);
    const st = JSON.parse(r.stdout) as StatusJson;
    expect(st.leader).toBeNull();
    expect(st.nodes.every((n) => !n.reachable)).toBe(true);
  });
});
