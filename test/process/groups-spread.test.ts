// Leaders spread over the nodes (docs/operations.md, "Decision groups"): three
// node processes founded with four groups end with each group's leader on its
// preferred node (group g on node g mod 3 of the sorted ids), so more than one
// node leads. A node that is killed loses its groups to the others; restarted,
// it gets them back once caught up. Meanwhile clients commit without a pause,
// and every transaction commits: a hand-over refuses new transactions as not
// the leader (the SDK retries them at the next) and waits for those in flight
// to decide, so a transfer never aborts one that could have committed.

import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const GROUPS = 4;
/** A hold-off of 3 s per hand-over, an election or two, and a busy machine. */
const SPREAD_WAIT_MS = 60_000;
let parts: Participants | null = null;
afterAll(async () => {
  await parts?.stop();
});

/** Each group's leader as a client sees it ('' while a group has none). */
async function leaders(client: VerdictClient): Promise<string[] | undefined> {
  const s = await client.status({ callTimeoutMs: 2_000 }).catch(() => undefined);
  if (s === undefined || s.groups.length !== GROUPS) return undefined;
  return [...s.groups].sort((a, b) => a.group - b.group).map((g) => g.leaderId);
}

/**
 * Clients committing transactions one after another, `workers` at a time, alternating a Commit that begins and a Begin
 * then Commit, until stopped; each id with the outcome the cluster answered (or the error, then its outcome asked).
 */
function commitLoad(client: VerdictClient, tag: string, workers: number) {
  const outcomes = new Map<string, string>();
  let stopped = false;
  let n = 0;
  const one = async (): Promise<void> => {
    const txnId = `${tag}-${n++}`;
    try {
      const tx =
        n % 2 === 0 ? client.transaction({ txnId, timeoutMs: 5_000 }) : await client.begin({ txnId, timeoutMs: 5_000 });
      const r = await tx
        .enlist('shop', { set: { [txnId]: '1' } })
        .enlist('ledger', { set: { [txnId]: '1' } })
        .commit();
      outcomes.set(txnId, r.outcome);
    } catch (err) {
      const o = await waitFor(`the outcome of ${txnId}`, 30_000, async () => {
        const a = await client.outcome(txnId).catch(() => undefined);
        return a !== undefined && a.outcome !== 'IN_PROGRESS' ? a : undefined;
      });
      outcomes.set(txnId, `${o.outcome} (the commit call failed: ${(err as Error).message})`);
    }
  };
  const running = Array.from({ length: workers }, async () => {
    while (!stopped) await one();
  });
  return {
    outcomes,
    stop: async (): Promise<Map<string, string>> => {
      stopped = true;
      await Promise.all(running);
      return outcomes;
    },
  };
}

describe('leaders spread over the nodes of a four-group cluster on real processes', () => {
  it('after cluster init the leaders end on more than one node (g mod N); a node stopped and restarted gets its groups back; no transaction aborts meanwhile', async () => {
    const c = await Cluster.start({ nodes: 3, configExtra: () => ({ groups: GROUPS }) });
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 20_000,
    });
    try {
      const ids = c.nodes.map((n) => n.id).sort();
      const preferred = Array.from({ length: GROUPS }, (_, g) => ids[g % ids.length]);
      // Whoever Raft elected first, each group ends on its preferred node: n1, n2, n3, n1.
      await waitFor('every group led by its preferred node', SPREAD_WAIT_MS, async () => {
        const l = await leaders(client);
        return l?.every((id, g) => id === preferred[g]) ? l : undefined;
      });
      const spread = await leaders(client);
      expect(new Set(spread).size).toBeGreaterThan(1);

      parts = await startParticipants(c, ['shop', 'ledger']);
      // n2 (group 1's preferred node) is stopped: group 1 is led elsewhere, nothing is handed to the absent node.
      const n2 = c.node(preferred[1]);
      await n2.kill('SIGKILL');
      const without = await waitFor(`every group led without ${n2.id}`, SPREAD_WAIT_MS, async () => {
        const l = await leaders(client);
        return l?.every((id) => id !== '' && id !== n2.id) ? l : undefined;
      });
      expect(without[1]).not.toBe(n2.id);

      // Clients commit all along the return and the hand-back.
      const load = commitLoad(client, `spread-${c.clusterId}`, 4);
      n2.start();
      const back = await waitFor(`${n2.id} leads its groups again`, SPREAD_WAIT_MS, async () => {
        const l = await leaders(client);
        return l?.every((id, g) => id === preferred[g]) ? l : undefined;
      });
      expect(back[1]).toBe(n2.id);
      // A few more after the hand-back, so some transactions land on the returned leader.
      const after = load.outcomes.size;
      await waitFor('transactions after the hand-back', 30_000, async () =>
        load.outcomes.size >= after + 8 ? true : undefined,
      );
      const outcomes = await load.stop();
      console.log(`groups spread: ${outcomes.size} transactions during the return and hand-back`);
      const notCommitted = [...outcomes].filter(([, o]) => o !== 'COMMITTED');
      expect(outcomes.size).toBeGreaterThan(8);
      expect(notCommitted, 'every transaction of the load commits through the transfers').toEqual([]);
    } catch (err) {
      c.printLogTails();
      throw err;
    } finally {
      await client.close();
    }
  }, 240_000);
});
