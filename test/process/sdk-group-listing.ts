// What the Python and Go SDK tests check of a transaction listing across
// decision groups (python-sdk.test.ts, go-sdk.test.ts): three nodes at
// G = 4, leaders spread, two transactions begun and left open in every
// group; the SDK's listing, asked of any node, must hold every one of them,
// each with the group its id is placed in.

import { expect } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { groupOf } from '../../src/domain/group.ts';
import { Cluster, waitFor } from './harness.ts';

const GROUPS = 4;
const WAIT_MS = 60_000;

/** A transaction as an SDK's listing driver prints it. */
export interface ListedTxn {
  txn_id: string;
  group: number;
}

/** Runs the check with `list` (the SDK's listing, asked with these node addresses); `prefix` names the ids. */
export async function checkListingAcrossGroups(
  sdk: string,
  prefix: string,
  list: (nodes: string[]) => Promise<ListedTxn[]>,
): Promise<void> {
  const c = await Cluster.start({ nodes: 3, logLevel: 'warn', configExtra: () => ({ groups: GROUPS }) });
  await c.waitForLeader();
  const nodes = c.nodes.map((n) => n.address);
  // Two transactions in each group, begun and left open: each is listed by its group's leader until it times out.
  const ids: string[] = [];
  for (let i = 0; ids.length < 2 * GROUPS; i++) {
    const id = `${prefix}-${i}`;
    if (ids.filter((x) => groupOf(x, GROUPS) === groupOf(id, GROUPS)).length < 2) ids.push(id);
  }
  const ts = new VerdictClient({ endpoints: nodes, insecure: true, callTimeoutMs: 30_000 });
  try {
    // Leaders spread over the nodes (group g prefers node g mod 3), so group 0's leader alone does not know them all.
    // Waited for before the transactions begin: a hand-over waits for a group's transactions to end, and these stay
    // open, so a node that won every election first would keep every group.
    await waitFor('the groups led by more than one node', WAIT_MS, async () => {
      const s = await ts.status({ callTimeoutMs: 2_000 }).catch(() => undefined);
      const leaders = new Set(s?.groups.map((g) => g.leaderId));
      return s?.groups.length === GROUPS && !leaders.has('') && leaders.size > 1 ? true : undefined;
    });
    for (const txnId of ids) await ts.begin({ txnId, timeoutMs: 300_000 });
  } finally {
    ts.close();
  }
  // Waited for: a transaction is listed once its group's leader has applied its Begin.
  const listed = await waitFor(`every group in the ${sdk} listing`, WAIT_MS, async () => {
    const got = await list(nodes);
    return ids.every((id) => got.some((t) => t.txn_id === id)) ? got : undefined;
  });
  for (const t of listed) expect(t.group, t.txn_id).toBe(groupOf(t.txn_id, GROUPS));
  expect(new Set(listed.map((t) => t.group))).toEqual(new Set([0, 1, 2, 3]));
}
