// A voter restarted on an empty data directory, on real node processes
// (issue 39, finding 7; docs/storage.md, "A node with an empty data
// directory"). n1 is away while n2 and n3 acknowledge writes; n3's data
// directory is replaced by an empty one and n3 restarts; n2 goes down; n1
// comes back. The emptied n3 starts rejoining: it grants n1 no vote, so n1,
// which lacks the writes, is not elected, and nothing is answered from its
// log. `verdict cluster init` refuses to found the emptied n3 again while a
// peer holds state. Once n2 is back, a leader with the writes is elected, n3
// is caught up and says so, and every acknowledged write reads back.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Cluster, ELECTION_WAIT_MS, runCli, sleep, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const WRITES = 60;
/** Many election timeouts of the harness's nodes (20 ticks × 50 ms): ample time for n1 to win, were n3 to vote. */
const NO_LEADER_WINDOW_MS = 8_000;

describe('a voter restarted on an empty data directory does not vote', () => {
  it('n1 and the emptied n3 elect nobody; init refuses to found n3 again; with n2 back every acknowledged write reads back', async () => {
    const c = await Cluster.start({ nodes: 3 });
    const [n1, n2, n3] = c.nodes;
    await c.waitForLeader();
    await n1.kill('SIGKILL');
    // Log probes, and every tenth write a participant registration: state n1 lacks, read back at the end.
    const registered = new Map<string, string>();
    for (let i = 0; i < WRITES; i++) {
      await c.putOnLeader(`k${i}`, `v${i}`);
      if (i % 10 !== 9) continue;
      await c.registerOnLeader(`p${i}`, `127.0.0.1:${23_000 + i}`);
      registered.set(`p${i}`, `127.0.0.1:${23_000 + i}`);
    }

    // n3 loses its whole disk: the same directory, empty.
    await n3.kill('SIGKILL');
    rmSync(n3.dataDir, { recursive: true, force: true });
    mkdirSync(n3.dataDir);
    n3.start();
    await waitFor('n3 to log that it is rejoining', ELECTION_WAIT_MS, async () =>
      /rejoining: this data directory holds no Raft state/.test(readFileSync(n3.logFile, 'utf8')) ? true : undefined,
    );

    // The bootstrap act refuses while a peer (n2) holds the cluster's state.
    await n3.kill('SIGTERM');
    const init = await runCli(['cluster', 'init', '--config', n3.configFile]);
    expect(init.code).toBe(64);
    expect(init.stderr).toMatch(/not founding: n2 at \S+ \(term \d+, log up to index \d+\) already holds Raft state/);
    n3.start();

    await n2.kill('SIGKILL');
    n1.start();
    // n1 (without the writes) and the emptied n3 are a majority by count; n3 must not make it one by vote.
    const deadline = Date.now() + NO_LEADER_WINDOW_MS;
    while (Date.now() < deadline) {
      const st = await c.statuses();
      for (const [n, s] of st)
        if (!(s instanceof Error)) expect(s.role, `${n.id} must not lead (term ${s.term})`).not.toBe('leader');
      await sleep(250);
    }
    const n1Status = await n1.status();
    expect(n1Status.lastIndex).toBeLessThan(c.maxAckIndex);

    // n2 returns: a leader with the writes, n3 caught up and proven whole.
    n2.start();
    const { node: leader } = await c.waitForLeader();
    expect(leader.id).not.toBe('n3');
    await waitFor('n3 to log that it rejoined', ELECTION_WAIT_MS, async () =>
      /rejoined: the leader caught this node up/.test(readFileSync(n3.logFile, 'utf8')) ? true : undefined,
    );
    expect(await leader.participants(), `participants on leader ${leader.id}`).toEqual(registered);
    expect((await leader.status()).commitIndex).toBeGreaterThanOrEqual(c.maxAckIndex);
    // Whole again, n3 counts: with n1 gone, n2 and n3 commit.
    await n1.kill('SIGKILL');
    await c.putOnLeader('after', 'x');
  }, 240_000);

  it('a damaged LevelDB (CURRENT deleted): the refusal names verdict node repair, which moves the directory aside; the node rejoins and is proven whole', async () => {
    const c = await Cluster.start({ nodes: 3 });
    const n3 = c.nodes[2];
    await c.waitForLeader();
    for (let i = 0; i < 20; i++) await c.putOnLeader(`r${i}`, `v${i}`);
    await n3.kill('SIGTERM');
    rmSync(`${n3.dataDir}/raft/CURRENT`);
    const refused = await runCli(['node', '--config', n3.configFile]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/run `verdict node repair --config <this node's config>` with the node stopped/);
    expect(refused.stderr).not.toMatch(/\bdelete\b|\bremove\b|empty directory|backup/);
    const repair = await runCli(['node', 'repair', '--config', n3.configFile]);
    expect(repair.code, repair.stderr).toBe(0);
    const aside = /moved (\S+) aside to (\S+) and left/.exec(repair.stdout);
    expect(aside, repair.stdout).not.toBeNull();
    expect(existsSync(`${aside?.[2]}/raft`)).toBe(true);
    expect(readdirSync(n3.dataDir)).toEqual([]);
    expect(readdirSync(dirname(n3.dataDir)).some((f) => f.startsWith('data-n3.damaged-'))).toBe(true);
    n3.start();
    await waitFor('n3 to rejoin and be proven whole', ELECTION_WAIT_MS, async () => {
      const log = readFileSync(n3.logFile, 'utf8');
      return /rejoining: this data directory holds no Raft state/.test(log) &&
        /rejoined: the leader caught this node up/.test(log)
        ? true
        : undefined;
    });
    // Whole again, it counts: with another node gone, the leader and n3 commit.
    const { node: leader } = await c.waitForLeader();
    await c.nodes.find((n) => n !== leader && n !== n3)?.kill('SIGKILL');
    await c.putOnLeader('after-repair', 'x');
  }, 180_000);
});
