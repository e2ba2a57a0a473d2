// Membership at G > 1 on real processes (docs/operations.md, "Decision
// groups" and "Membership"): three node processes founded with four decision
// groups; an operator adds a fourth node with `verdict member add`, which
// changes group 0, and every other group's leader repeats the change in its
// own group. The test waits, bounded, until the new node is a voter of every
// group (`verdict member list --group G`) and has applied what each group's
// leader had committed, then removes an original node with `verdict member
// remove`: every group drops it, still has a leader and still commits, and
// every transaction decided before the change (in every group) is still
// answered from the new configuration, as is every lease granted before it.

import { afterAll, expect, test } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { groupOf } from '../../src/domain/group.ts';
import type { Members } from '../../src/transport/proto.ts';
import { Cluster, runCli, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const GROUPS = 4;
const TXN_TIMEOUT_MS = 5_000;
const CLI_MS = 90_000;
/** How long every group may take to follow group 0's change (one change per group every few ticks, plus catch-up). */
const FOLLOW_MS = 60_000;
/** The longest TTL a lease takes; the holder renews it between the changes, as a relay renews its lease. */
const LEASE_TTL_MS = 300_000;

let parts: Participants | null = null;
const clients: VerdictClient[] = [];
afterAll(async () => {
  await parts?.stop();
  for (const cl of clients) await cl.close();
});

/** `perGroup` ids in each group, in group order. */
function idsInEveryGroup(tag: string, perGroup: number): string[][] {
  const out: string[][] = Array.from({ length: GROUPS }, () => []);
  for (let i = 0; out.some((l) => l.length < perGroup); i++) {
    const id = `${tag}-${i}`;
    const l = out[groupOf(id, GROUPS)];
    if (l.length < perGroup) l.push(id);
  }
  return out;
}

function clientOf(nodes: NodeProc[]): VerdictClient {
  const cl = new VerdictClient({ insecure: true, endpoints: nodes.map((n) => n.address), callTimeoutMs: 20_000 });
  clients.push(cl);
  return cl;
}

/** `verdict member ARGS --json` against the running nodes; null when it did not exit 0 (the caller retries). */
async function member(c: Cluster, args: string[]): Promise<{ m: Members | null; stderr: string }> {
  const endpoints = c
    .running()
    .map((n) => n.address)
    .join(',');
  const r = await runCli(['member', ...args, '--json', '--endpoints', endpoints], { timeoutMs: CLI_MS });
  return { m: r.code === 0 ? (JSON.parse(r.stdout) as Members) : null, stderr: r.stderr };
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

/** Waits until every group lists exactly `want` as voters, no learner, and a leader; returns each group's listing. */
async function everyGroupHas(c: Cluster, want: string[], what: string): Promise<Members[]> {
  let last = '';
  return waitFor(
    what,
    FOLLOW_MS,
    async () => {
      const out: Members[] = [];
      for (let g = 0; g < GROUPS; g++) {
        const { m, stderr } = await member(c, ['list', '--group', String(g)]);
        if (m === null) last = `group ${g}: ${stderr.trim()}`;
        else
          last = `group ${g}: leader ${m.leaderId || 'none'}, voters ${voters(m).join(',')}, learners ${learners(m).join(',') || '-'}`;
        if (m === null || m.leaderId === '' || voters(m).join() !== want.join() || learners(m).length > 0)
          return undefined;
        out.push(m);
      }
      return out;
    },
    () => last,
  );
}

/** One transaction over both participants, retried through leader changes; its recorded outcome. */
async function decide(client: VerdictClient, txnId: string, ledger: 'yes' | 'no'): Promise<string> {
  const r = await waitFor(`${txnId} decided`, 45_000, async () => {
    try {
      const tx = await client.begin({ txnId, timeoutMs: TXN_TIMEOUT_MS });
      return await tx
        .enlist('shop', { set: { [txnId]: '1' } })
        .enlist('ledger', ledger === 'yes' ? { set: { [txnId]: '1' } } : { fail: `no funds for ${txnId}` })
        .commit();
    } catch {
      // A retry of an id whose first attempt reached the cluster is answered with its recorded outcome (R7).
      const o = await client.outcome(txnId).catch(() => undefined);
      return o !== undefined && (o.outcome === 'COMMITTED' || o.outcome === 'ABORTED') ? o : undefined;
    }
  });
  return r.outcome;
}

test('at G = 4: a node added with `member add` becomes a voter of every group and catches up; an original removed with `member remove` leaves every group, which keeps a leader, commits, and answers what was decided before', async () => {
  const c = await Cluster.start({ nodes: 3, configExtra: () => ({ groups: GROUPS }) });
  const client = clientOf(c.nodes);
  await waitFor('a leader in every group', 45_000, async () => {
    const s = await client.status().catch(() => undefined);
    return s !== undefined && s.groups.length === GROUPS && s.groups.every((g) => g.leaderId !== '') ? s : undefined;
  });
  parts = await startParticipants(c, ['shop', 'ledger']);

  // Before the change: a commit and an abort in every group, and a lease in every group.
  const before = new Map<string, string>();
  for (const [g, [commitId, abortId]] of idsInEveryGroup(`before-${c.clusterId}`, 2).entries()) {
    expect(await decide(client, commitId, 'yes'), `commit in group ${g}`).toBe('COMMITTED');
    expect(await decide(client, abortId, 'no'), `abort in group ${g}`).toBe('ABORTED');
    before.set(commitId, 'COMMITTED');
    before.set(abortId, 'ABORTED');
  }
  const leases = new Map<string, number>();
  for (const [name] of idsInEveryGroup(`lease-${c.clusterId}`, 1)) {
    const r = await client.connection.call('AcquireLease', { name, holder: 'relay-a', epoch: 0, ttlMs: LEASE_TTL_MS });
    expect(r.granted, `lease ${name} (group ${groupOf(name, GROUPS)})`).toBe(true);
    leases.set(name, r.lease?.epoch ?? 0);
  }
  const three = ['n1', 'n2', 'n3'];
  await everyGroupHas(c, three, 'every group lists n1, n2, n3 as its voters');

  // ---- add n4: `member add` answers once it is a voter of group 0; every other group follows -------------------
  const n4 = await c.addNode('n4');
  n4.start();
  const add = await member(c, ['add', 'n4', n4.address]);
  expect(add.m, `verdict member add n4: ${add.stderr}`).not.toBeNull();
  expect(voters(add.m as Members)).toContain('n4');
  const four = ['n1', 'n2', 'n3', 'n4'];
  const lists = await everyGroupHas(c, four, 'n4 a voter of every group');
  // Caught up in every group: n4 has applied what each group's leader had committed when it listed n4 as a voter.
  const committedAt = await Promise.all(
    lists.map(async (m, g) => {
      const leader = c.node(m.leaderId);
      const s = await clientOf([leader]).status();
      return s.groups[g].commitIndex;
    }),
  );
  const n4Client = clientOf([n4]);
  await waitFor('n4 caught up in every group', FOLLOW_MS, async () => {
    const s = await n4Client.status().catch(() => undefined);
    return s?.groups.every((row, g) => row.leaderId !== '' && row.appliedIndex >= committedAt[g]) ? s : undefined;
  });
  // The leader of each group sees n4 replicating.
  for (const [g, m] of lists.entries()) {
    const row = m.members.find((x) => x.nodeId === 'n4');
    expect(row?.state, `group ${g}: n4's replication as ${m.leaderId} sees it`).toMatch(/^(replicate|probe)$/);
  }

  // The holder renews its leases across the add (every group now has four voters).
  for (const [name, epoch] of leases) {
    const renewed = await client.connection.call('RenewLease', { name, holder: 'relay-a', epoch, ttlMs: LEASE_TTL_MS });
    expect(renewed.granted, `lease ${name} renewed after the add: ${JSON.stringify(renewed)}`).toBe(true);
  }

  // ---- remove n1: every group drops it ---------------------------------------------------------------------
  const remove = await member(c, ['remove', 'n1']);
  expect(remove.m, `verdict member remove n1: ${remove.stderr}`).not.toBeNull();
  expect(voters(remove.m as Members)).not.toContain('n1');
  const after = ['n2', 'n3', 'n4'];
  await everyGroupHas(c, after, 'every group without n1');
  await c.forget('n1');
  const rest = c.running();
  expect(rest.map((n) => n.id).sort()).toEqual(after);
  const newClient = clientOf(rest);

  // Every group has a leader among the new members and commits.
  const st = await waitFor('a leader of every group among n2, n3, n4', 45_000, async () => {
    const s = await newClient.status().catch(() => undefined);
    return s?.groups.every((g) => after.includes(g.leaderId)) ? s : undefined;
  });
  expect(st.groups.map((g) => g.group)).toEqual([0, 1, 2, 3]);
  for (const [g, [id]] of idsInEveryGroup(`after-${c.clusterId}`, 1).entries())
    expect(await decide(newClient, id, 'yes'), `commit in group ${g} after the change`).toBe('COMMITTED');

  // What was decided before the change is answered from the new configuration, by each of its nodes.
  for (const n of rest) {
    const pc = clientOf([n]);
    for (const [id, want] of before) {
      const got = await waitFor(`${n.id} answers ${id}`, 20_000, async () => {
        const o = await pc.outcome(id).catch(() => undefined);
        return o !== undefined && o.outcome !== 'UNKNOWN' && o.outcome !== 'IN_PROGRESS' ? o : undefined;
      });
      expect(got.outcome, `${id} (group ${groupOf(id, GROUPS)}) asked of ${n.id}`).toBe(want);
    }
  }
  // A lease granted before the change is still its holder's: renewed at its epoch, refused to another holder.
  for (const [name, epoch] of leases) {
    const renewed = await newClient.connection.call('RenewLease', {
      name,
      holder: 'relay-a',
      epoch,
      ttlMs: LEASE_TTL_MS,
    });
    expect(renewed.granted, `lease ${name} renewed after the removal: ${JSON.stringify(renewed)}`).toBe(true);
    const other = await newClient.connection.call('AcquireLease', {
      name,
      holder: 'relay-b',
      epoch: 0,
      ttlMs: LEASE_TTL_MS,
    });
    expect(other.granted, `lease ${name} taken by another holder after the change`).toBe(false);
  }
}, 600_000);
