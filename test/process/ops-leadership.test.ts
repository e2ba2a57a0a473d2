// Moving leadership on purpose: `verdict leader transfer --to NODE`, and a
// graceful SIGTERM of the leader, which hands leadership over before it exits
// so that the cluster has a new leader within a few ticks instead of an
// election timeout. Also: every subcommand answers --help.

import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { sleep } from '../../src/util/sleep.ts';
import { Cluster, runCli, useProcessCleanup } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const stops: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const s of stops.splice(0)) await s();
});

/** A node process can take long to start on a loaded 2-core machine; the first election waits for all of them. */
const FIRST_LEADER_WAIT_MS = 60_000;

/** Participants shop and ledger and a client of every node, each stopped after the file. */
async function withShopAndLedger(c: Cluster): Promise<VerdictClient> {
  const parts: Participants = await startParticipants(c, ['shop', 'ledger']);
  stops.push(() => parts.stop());
  const client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
  stops.push(() => client.close());
  return client;
}

const endpointsFlag = (c: Cluster): string[] => ['--endpoints', c.nodes.map((n) => n.address).join(',')];

describe('leadership', { timeout: 180_000 }, () => {
  it('verdict leader transfer --to n2 makes n2 the leader', async () => {
    const c = await Cluster.start({ nodes: 3 });
    const { node: first } = await c.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
    // Transfer away from n2 first if it happens to lead, so that both moves are real.
    const hops = first.id === 'n2' ? ['n3', 'n2'] : ['n2'];
    for (const to of hops) {
      const before = (await c.waitForLeader()).status.term;
      const r = await runCli(['leader', 'transfer', '--to', to, ...endpointsFlag(c)], { timeoutMs: 30_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^leader: ${to} \\(term \\d+\\)$`, 'm'));
      const { node, status } = await c.waitForLeader();
      expect(node.id).toBe(to);
      expect(status.term).toBeGreaterThan(before);
    }
    // Already the leader: nothing to do, and it says so.
    const again = await runCli(['leader', 'transfer', '--to', 'n2', '--json', ...endpointsFlag(c)], {
      timeoutMs: 30_000,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ leaderId: 'n2' });

    const bad = await runCli(['leader', 'transfer', '--to', 'n9', ...endpointsFlag(c)], { timeoutMs: 30_000 });
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/no node "n9" in the cluster \(nodes: n1, n2, n3\)/);
  });

  it('SIGTERM on the leader: it hands leadership over, another node leads at once, and it exits 0', async () => {
    const c = await Cluster.start({ nodes: 3 });
    const { node: old, status } = await c.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
    const client = await withShopAndLedger(c);
    const commit = async (key: string): Promise<string> =>
      (
        await (
          await client.begin({ timeoutMs: 5_000 })
        )
          .enlist('shop', { set: { [key]: '1' } })
          .enlist('ledger', { set: { [key]: '1' } })
          .commit()
      ).outcome;
    expect(await commit('before')).toBe('COMMITTED');

    const startedAt = Date.now();
    await old.kill('SIGTERM', 15_000);
    const exitedMs = Date.now() - startedAt;
    expect(old.lastExit, old.logTail()).toEqual({ code: 0, signal: null });
    // The hand-over happened before the exit, so the others agree on a leader right away;
    // the old leader's log names it (a crash would leave them to an election instead).
    const { node: next, status: now } = await c.waitForLeader({ notId: old.id, timeoutMs: 5_000 });
    expect(now.term).toBeGreaterThan(status.term);
    expect(exitedMs).toBeLessThan(10_000);

    const log = old.logTail(200);
    expect(log).toMatch(new RegExp(`"msg":"transferred leadership to ${next.id}"`));
    expect(log).not.toMatch(/leadership transfer did not complete/);
    expect(log).toMatch(/"msg":"node stopped"/);
    // Work goes on at the new leader.
    expect(await commit('after')).toBe('COMMITTED');
  });

  it('verdict leader transfer under a steady stream of transactions: the leader drains first, so every one of them commits; one kept open past the wait refuses the move unless --force', async () => {
    const c = await Cluster.start({ nodes: 3 });
    const { node: first } = await c.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
    const client = await withShopAndLedger(c);
    const outcomes = new Map<string, number>();
    const failures: string[] = [];
    let running = true;
    let n = 0;
    // Four clients commit back to back, each transaction over two participants, until both transfers are done.
    const worker = async (w: number): Promise<void> => {
      while (running) {
        const key = `w${w}-${n++}`;
        try {
          const txn = await client.begin({ timeoutMs: 5_000 });
          const { outcome } = await txn
            .enlist('shop', { set: { [key]: '1' } })
            .enlist('ledger', { set: { [key]: '1' } })
            .commit();
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        } catch (err) {
          failures.push(`${key}: ${(err as Error).message}`);
        }
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    stops.push(async () => {
      running = false;
      await Promise.all(workers);
    });
    const committedBy = async (count: number): Promise<void> => {
      const deadlineAtMs = Date.now() + 30_000;
      while ((outcomes.get('COMMITTED') ?? 0) < count && Date.now() < deadlineAtMs) await sleep(50);
    };
    await committedBy(20);
    // Two moves away from the first leader and back, each with transactions in flight at the moment it was asked.
    const others = c.nodes.map((x) => x.id).filter((id) => id !== first.id);
    for (const to of [others[0], first.id]) {
      const before = outcomes.get('COMMITTED') ?? 0;
      const r = await runCli(['leader', 'transfer', '--to', to, ...endpointsFlag(c)], { timeoutMs: 30_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^leader: ${to} \\(term \\d+\\)$`, 'm'));
      expect((await c.waitForLeader()).node.id).toBe(to);
      // Work goes on at the new leader before the next move.
      await committedBy(before + 20);
    }
    running = false;
    await Promise.all(workers);
    expect(failures).toEqual([]);
    expect([...outcomes.keys()]).toEqual(['COMMITTED']);
    expect(outcomes.get('COMMITTED')).toBeGreaterThanOrEqual(60);

    // A transaction kept open past the wait: the transfer is refused (retryable) and leadership stays; --force moves
    // it and says how many were in flight.
    const open = await client.begin({ timeoutMs: 60_000 });
    expect(open.txnId).toBeTruthy();
    const held = first.id;
    const refused = await runCli(['leader', 'transfer', '--to', others[1], ...endpointsFlag(c)], { timeoutMs: 30_000 });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(`UNAVAILABLE: leadership stays on ${held}: 1 transaction\\(s\\) were still in flight after \\d+ ms`),
    );
    expect((await c.waitForLeader()).node.id).toBe(held);
    const forced = await runCli(['leader', 'transfer', '--to', others[1], '--force', ...endpointsFlag(c)], {
      timeoutMs: 30_000,
    });
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(
      new RegExp(`^leader: ${others[1]} \\(term \\d+\\) \\(forced: 1 transaction\\(s\\) were still in flight`, 'm'),
    );
    expect((await c.waitForLeader()).node.id).toBe(others[1]);
  });

  it('every subcommand answers --help with its own usage', async () => {
    const cases: [string[], RegExp][] = [
      [['txn', '--help'], /verdict txn show ID/],
      [['txn', 'show', '--help'], /verdict txn show ID/],
      [['status', '--help'], /verdict status \[--json\]/],
      [['leader', '--help'], /verdict leader transfer --to NODE/],
      [['member', '--help'], /verdict member add ID ADDRESS/],
      [['member', 'remove', '--help'], /verdict member remove ID/],
      [['participant', '--help'], /--metrics-listen HOST:PORT/],
      [['node', '--help'], /verdict node --config FILE/],
      [['cluster', '--help'], /verdict cluster up/],
    ];
    // Two at a time: each is a Node process compiling TypeScript on a 2-core machine.
    const results: Awaited<ReturnType<typeof runCli>>[] = [];
    for (let i = 0; i < cases.length; i += 2)
      results.push(...(await Promise.all(cases.slice(i, i + 2).map(([args]) => runCli(args, { timeoutMs: 30_000 })))));
    for (const [i, [args, want]] of cases.entries()) {
      const r = results[i];
      expect(r.code, `verdict ${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout, `verdict ${args.join(' ')}`).toMatch(want);
    }
    // The key/value commands are gone; the one line says so rather than "unknown command".
    const removed = await runCli(['put', 'k', 'v'], { timeoutMs: 30_000 });
    expect(removed.code).not.toBe(0);
    expect(removed.stderr).toMatch(/verdict put was removed: nodes keep no key\/value data/);
  });
});
