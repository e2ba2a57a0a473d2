// Moving one decision group's leader on purpose (docs/cli.md, "verdict leader
// transfer"): three node processes founded with two groups and
// `"spreadLeaders": false`, so that no placement rule moves a leader back.
// `verdict leader transfer --to NODE --group 1` hands group 1 to the node
// named, the status then shows it leading group 1 (and keeps showing it),
// and group 0 keeps its leader. A --group outside the cluster's
// groups is a usage error naming the range.

import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/util/sleep.ts';
import { Cluster, runCli, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const GROUPS = 2;
/** Node processes can take long to start on a loaded 2-core machine; the first elections wait for all of them. */
const FIRST_LEADERS_WAIT_MS = 60_000;

interface GroupRow {
  group: number;
  leaderId: string;
  term: number;
}

describe('leader transfer of one decision group on real processes', { timeout: 180_000 }, () => {
  it('verdict leader transfer --to NODE --group 1 moves group 1 only, and with spreadLeaders false it stays there', async () => {
    const c = await Cluster.start({ nodes: 3, configExtra: () => ({ groups: GROUPS, spreadLeaders: false }) });
    const endpoints = ['--endpoints', c.nodes.map((n) => n.address).join(',')];
    /** Every group's leader and term as `verdict status --json` shows them; undefined until every group has one. */
    const groups = async (): Promise<GroupRow[] | undefined> => {
      const r = await runCli(['status', '--json', ...endpoints], { timeoutMs: 30_000 });
      if (r.code !== 0) return undefined;
      const st = JSON.parse(r.stdout) as { groups?: GroupRow[] };
      const rows = [...(st.groups ?? [])].sort((a, b) => a.group - b.group);
      return rows.length === GROUPS && rows.every((g) => g.leaderId !== '') ? rows : undefined;
    };
    try {
      const before = await waitFor('a leader in every group', FIRST_LEADERS_WAIT_MS, groups);
      // A node that leads neither group if there is one, so that the move is visible against group 0 too.
      const others = c.nodes.map((n) => n.id).filter((id) => id !== before[1].leaderId);
      const to = others.find((id) => id !== before[0].leaderId) ?? others[0];

      const r = await runCli(['leader', 'transfer', '--to', to, '--group', '1', '--json', ...endpoints], {
        timeoutMs: 60_000,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ group: 1, leaderId: to });
      const after = await waitFor(`group 1 led by ${to} in the status`, 30_000, async () => {
        const rows = await groups();
        return rows?.[1].leaderId === to ? rows : undefined;
      });
      expect(after[1].term).toBeGreaterThan(before[1].term);
      // Group 0 did not move: the same leader (`to` is not it).
      expect(to).not.toBe(before[0].leaderId);
      expect(after[0].leaderId).toBe(before[0].leaderId);

      // Without spreading, nothing hands group 1 back (spreading's hold-off is 3 s).
      await sleep(5_000);
      const later = await waitFor('the status', 30_000, groups);
      expect(later.map((g) => g.leaderId)).toEqual([before[0].leaderId, to]);

      const text = await runCli(['leader', 'transfer', '--to', to, '--group', '1', ...endpoints], {
        timeoutMs: 60_000,
      });
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(new RegExp(`^group 1 leader: ${to} \\(term \\d+\\)$`, 'm'));

      const outside = await runCli(['leader', 'transfer', '--to', to, '--group', '2', ...endpoints], {
        timeoutMs: 30_000,
      });
      expect(outside.code).toBe(64);
      expect(outside.stderr).toMatch(/--group 2 does not exist: this cluster has 2 decision groups \(--group 0 to 1\)/);
      const garbled = await runCli(['leader', 'transfer', '--to', to, '--group', 'one', ...endpoints], {
        timeoutMs: 30_000,
      });
      expect(garbled.code).toBe(64);
      expect(garbled.stderr).toMatch(/--group must be a decision group's number, 0 to G-1/);
    } catch (err) {
      c.printLogTails();
      throw err;
    }
  });
});
