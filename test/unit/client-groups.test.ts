// Routing by decision group (docs/architecture.md, "Leaders spread, clients
// route"): against a fake cluster of four nodes and four groups, each group
// led by a different node, the SDK and a participant's cluster link send each
// id straight to the leader of groupOf(id, 4), follow a redirect inside the
// id's group, and correct a stale leader hint. Every fake node refuses what it
// does not lead exactly as a real one does: NOT_LEADER naming the group's
// leader, plus verdict-group.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import type { ResponseOf } from '../../src/client/connection.ts';
import { groupOf } from '../../src/domain/group.ts';
import { ClusterLink } from '../../src/participant/cluster-link.ts';
import {
  FakeCluster,
  STATUS_OK,
  fail,
  type FakeNode,
  type Fail,
  type Script,
} from './fixtures/client-fake-coordinator.ts';

const G = 4;
// One id per group at G = 4 (the vectors of docs/architecture.md, and t10).
const ID_OF_GROUP = ['order-42', 't2', 't10', 't1'] as const;

const cluster = new FakeCluster();
const closers: (() => unknown)[] = [];
const FAST = { backoff: { initialMs: 10, maxMs: 40 }, callTimeoutMs: 3_000 };

afterEach(() => {
  for (const c of closers.splice(0)) c();
  cluster.close();
});

interface GroupCluster {
  nodes: FakeNode[];
  /** Group → index of the node that leads it; a test moves leadership by changing it. */
  leaderOf: number[];
}

/** Four fake nodes; node i leads group i until the test says otherwise; `groupCount` is what ClusterStatus says. */
async function groupCluster(groupCount = G): Promise<GroupCluster> {
  const c: GroupCluster = { nodes: [], leaderOf: [0, 1, 2, 3] };
  const status = (i: number): ResponseOf<'ClusterStatus'> => ({
    ...STATUS_OK,
    nodeId: `n${i}`,
    groupCount,
    groups: c.leaderOf.map((n, group) => ({
      group,
      leaderId: `n${n}`,
      leaderAddress: c.nodes[n]?.address ?? '',
      term: 1,
      commitIndex: 0,
      appliedIndex: 0,
      inFlight: 0,
    })),
  });
  const refusal = (g: number): Fail =>
    fail(grpc.status.UNAVAILABLE, `not the leader of group ${g}`, c.nodes[c.leaderOf[g] as number]?.address, {
      group: g,
    });
  for (let i = 0; i < G; i++) {
    const routed =
      <R>(answer: (txnId: string) => R) =>
      (req: { txnId: string }): R | Fail => {
        const g = groupOf(req.txnId, G);
        return c.leaderOf[g] === i ? answer(req.txnId) : refusal(g);
      };
    const outcome = (txnId: string): ResponseOf<'Commit'> => ({
      txnId,
      outcome: 'OUTCOME_COMMITTED',
      reason: '',
      decisionIndex: 7,
    });
    const script: Script = {
      ClusterStatus: () => status(i),
      Begin: routed((txnId) => ({ txnId, deadlineAtMs: 0, leaderId: `n${i}` })),
      Commit: routed(outcome),
      GetOutcome: routed(outcome),
      Abort: routed((txnId) => ({ txnId, outcome: 'OUTCOME_ABORTED', reason: '', decisionIndex: 8 })),
      GetOutcomes: (req) => {
        const g = groupOf(req.txnIds[0] ?? '', G);
        if (c.leaderOf[g] !== i) return refusal(g);
        return {
          answers: req.txnIds.map((t) =>
            groupOf(t, G) === g
              ? { code: 0, details: '', outcome: outcome(t) }
              : { code: grpc.status.FAILED_PRECONDITION, details: 'another group', outcome: null },
          ),
        };
      },
      AcquireLease: (req) => {
        const g = groupOf(req.name, G);
        return c.leaderOf[g] === i ? { granted: true, reason: '', lease: null, clockAtMs: 1 } : refusal(g);
      },
    };
    c.nodes.push(await cluster.node(script));
  }
  return c;
}

function client(endpoints: string[]): VerdictClient {
  const c = new VerdictClient({ insecure: true, endpoints, ...FAST });
  closers.push(() => c.close());
  return c;
}

async function commit(c: VerdictClient, txnId: string): Promise<string> {
  return (await c.transaction({ txnId }).enlist('p').commit()).outcome;
}

describe('the SDK routes by decision group', () => {
  it('the pinned ids fall one in each group at G = 4', () => {
    expect(ID_OF_GROUP.map((id) => groupOf(id, G))).toEqual([0, 1, 2, 3]);
  });

  it("after connect(), every transaction's Begin, Commit, Abort and GetOutcome go straight to its group's leader", async () => {
    const { nodes } = await groupCluster();
    const c = client([nodes[0]!.address]);
    const st = await c.connect();
    expect(st.groupCount).toBe(G);
    expect(c.connection.routes.groups).toBe(G);

    for (const id of ID_OF_GROUP) expect(await commit(c, id)).toBe('COMMITTED');
    for (const id of ID_OF_GROUP) expect((await c.outcome(id)).outcome).toBe('COMMITTED');
    const b = await c.begin({ txnId: 'order-43' });
    await b.abort();
    const g = groupOf('order-43', G);

    nodes.forEach((n, i) => {
      expect(n.requests('Commit').map((r) => r.txnId)).toEqual([ID_OF_GROUP[i]]);
      expect(n.requests('GetOutcome').map((r) => r.txnId)).toEqual([ID_OF_GROUP[i]]);
      expect(n.count('Begin')).toBe(i === g ? 1 : 0);
      expect(n.count('Abort')).toBe(i === g ? 1 : 0);
    });
    // One status question in all: the connect.
    expect(nodes.map((n) => n.count('ClusterStatus'))).toEqual([1, 0, 0, 0]);
  });

  it("without connect(), the first refusal naming a group teaches the groups, and later transactions go straight to their group's leader", async () => {
    const { nodes } = await groupCluster();
    const c = client([nodes[0]!.address]);
    // t1 is group 3's: node 0 refuses naming node 3 and group 3; the client asks node 0 the status once, then goes to
    // node 3.
    expect(await commit(c, 't1')).toBe('COMMITTED');
    expect(nodes[0]!.requests('Commit').map((r) => r.txnId)).toEqual(['t1']);
    expect(nodes[0]!.count('ClusterStatus')).toBe(1);
    expect(nodes[3]!.requests('Commit').map((r) => r.txnId)).toEqual(['t1']);
    expect(c.connection.routes.groups).toBe(G);

    expect(await commit(c, 't2')).toBe('COMMITTED');
    expect(await commit(c, 't10')).toBe('COMMITTED');
    expect(nodes[1]!.requests('Commit').map((r) => r.txnId)).toEqual(['t2']);
    expect(nodes[2]!.requests('Commit').map((r) => r.txnId)).toEqual(['t10']);
    expect(nodes[0]!.requests('Commit').map((r) => r.txnId)).toEqual(['t1']);
    expect(nodes.map((n) => n.count('ClusterStatus'))).toEqual([1, 0, 0, 0]);
  });

  it("a stale leader hint of one group is corrected by that group's redirect, and the other groups' hints stay", async () => {
    const c4 = await groupCluster();
    const { nodes } = c4;
    const c = client([nodes[0]!.address]);
    await c.connect();
    // Group 1's leadership moves from node 1 to node 2.
    c4.leaderOf[1] = 2;
    expect(await commit(c, 't2')).toBe('COMMITTED');
    expect(nodes[1]!.requests('Commit').map((r) => r.txnId)).toEqual(['t2']);
    expect(nodes[2]!.requests('Commit').map((r) => r.txnId)).toEqual(['t2']);
    // t3 is group 1's too: straight to node 2 now; group 3's t1 still straight to node 3.
    expect(groupOf('t3', G)).toBe(1);
    expect(await commit(c, 't3')).toBe('COMMITTED');
    expect(await commit(c, 't1')).toBe('COMMITTED');
    expect(nodes[1]!.requests('Commit').map((r) => r.txnId)).toEqual(['t2']);
    expect(nodes[2]!.requests('Commit').map((r) => r.txnId)).toEqual(['t2', 't3']);
    expect(nodes[3]!.requests('Commit').map((r) => r.txnId)).toEqual(['t1']);
    // The redirect was followed within the group: no second status question.
    expect(nodes.map((n) => n.count('ClusterStatus'))).toEqual([1, 0, 0, 0]);
  });

  it("leases go to the leader of their name's group", async () => {
    const { nodes } = await groupCluster();
    const c = client([nodes[0]!.address]);
    await c.connect();
    for (const name of ['lease-0', 'lease-1', 'lease-4', 'lease-5']) {
      const r = await c.connection.call('AcquireLease', { name, holder: 'relay-1', epoch: 0, ttlMs: 1_000 });
      expect(r.granted).toBe(true);
    }
    expect(nodes.map((n) => n.requests('AcquireLease').map((r) => r.name))).toEqual([
      ['lease-5'],
      ['lease-4'],
      ['lease-0'],
      ['lease-1'],
    ]);
  });

  it('a cluster that predates groups (group_count 0) is one group: everything goes to the one leader as before', async () => {
    const { nodes } = await groupCluster(0);
    const c = client([nodes[0]!.address]);
    await c.connect();
    expect(c.connection.routes.groups).toBe(1);
    expect(c.connection.routes.known).toBe(true);
  });
});

describe("a participant's cluster link routes by decision group", () => {
  function link(endpoints: string[]): ClusterLink {
    const l = new ClusterLink({ clusterId: 'test-cluster', endpoints });
    closers.push(() => l.close());
    return l;
  }

  it("learns the groups from the first refusal naming one, then asks each id's group leader, GetOutcomes split by group", async () => {
    const { nodes } = await groupCluster();
    const l = link(nodes.map((n) => n.address));
    expect((await l.outcome('t1', 'p')).outcome).toBe('OUTCOME_COMMITTED');
    expect(nodes[0]!.requests('GetOutcome').map((r) => r.txnId)).toEqual(['t1']);
    expect(nodes[0]!.count('ClusterStatus')).toBe(1);
    expect(nodes[3]!.requests('GetOutcome').map((r) => r.txnId)).toEqual(['t1']);

    expect((await l.outcome('t10', 'p')).outcome).toBe('OUTCOME_COMMITTED');
    expect(nodes[2]!.requests('GetOutcome').map((r) => r.txnId)).toEqual(['t10']);

    const asked = ['t1', 't2', 'order-42', 't10', 't5', 't3'];
    const answers = await l.outcomes(asked, 'p');
    expect(answers.map((a) => (a instanceof Error ? a.message : a.txnId))).toEqual(asked);
    expect(nodes.map((n) => n.requests('GetOutcomes').flatMap((r) => r.txnIds))).toEqual([
      ['order-42'],
      ['t2', 't3'],
      ['t10'],
      ['t1', 't5'],
    ]);
    expect(nodes.map((n) => n.count('ClusterStatus'))).toEqual([1, 0, 0, 0]);
  });

  it("Abort goes to the id's group leader", async () => {
    const { nodes } = await groupCluster();
    const l = link([nodes[0]!.address]);
    await l.outcome('t2', 'p');
    expect((await l.abort('t10', 'expired')).outcome).toBe('OUTCOME_ABORTED');
    expect(nodes[2]!.requests('Abort').map((r) => r.txnId)).toEqual(['t10']);
    expect(nodes[0]!.count('Abort')).toBe(0);
  });
});
