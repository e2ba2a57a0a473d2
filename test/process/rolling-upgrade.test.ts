// A rolling upgrade, tested: three nodes run a build of an earlier commit of
// this repository (checked out from git history into a temp dir, its own
// dependencies installed with `npm ci`), then each is stopped with SIGTERM
// and started again on the same data directory with this build, one at a
// time (followers first, the leader last), while a client commits
// transactions across two participants without pause.
//
// The earlier commit is the oldest whose nodes may run side by side with
// this build (docs/versioning.md): its log entries, snapshot and the rules
// that apply them are this build's. Earlier builds of the same storage
// format wrote log entries this build does not read (a Decide as a JSON
// entry of its own, a registration without a resource kind): upgrading from
// them takes a stop of every node and `verdict node repair`. It predates
// explicit founding, so its nodes found themselves on first start.
//
// Checked: every transaction the client began got a definite outcome (the
// SDK rides out each node's restart and the one leader hand-over, with its
// own retries), every outcome is still the cluster's answer after the
// upgrade, both participants applied exactly the committed transactions,
// and the longest time without a successful commit is reported.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, ROOT, runCli, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

/** The oldest commit with today's storage format (src/storage/codec.ts FORMAT_VERSION = 2). */
const FROM_COMMIT = '84f2f5a631c47b501f1cc588ecd373376fd7e48c';

const stops: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Whether this checkout has FROM_COMMIT (a shallow clone or an exported tree does not). */
function hasHistory(): boolean {
  try {
    git(['cat-file', '-e', `${FROM_COMMIT}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * The earlier build: FROM_COMMIT's tree exported with `git archive` into a
 * temp dir and its locked dependencies installed. Kept across runs of this
 * file on one machine (a marker file says it is complete).
 */
function earlierBuild(): string {
  const dir = join(tmpdir(), `verdict-upgrade-from-${FROM_COMMIT.slice(0, 12)}`);
  const done = join(dir, '.verdict-test-ready');
  if (existsSync(done)) return dir;
  mkdirSync(dir, { recursive: true });
  const archive = spawnSync('sh', ['-c', `git archive ${FROM_COMMIT} | tar -x -C "${dir}"`], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (archive.status !== 0) throw new Error(`git archive ${FROM_COMMIT} failed: ${archive.stderr}`);
  const ci = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (ci.status !== 0) throw new Error(`npm ci in the earlier build (${dir}) failed: ${ci.stderr.slice(-2000)}`);
  writeFileSync(done, `${FROM_COMMIT}\n`);
  return dir;
}

const history = hasHistory();
if (!history) {
  console.warn(
    `rolling-upgrade.test.ts: commit ${FROM_COMMIT} is not in this checkout (a shallow clone?); the upgrade test cannot build the earlier version and is skipped`,
  );
}

describe.skipIf(!history)('rolling upgrade from an earlier build', { timeout: 600_000 }, () => {
  it('three nodes of the earlier build upgraded one at a time under load: no lost decision, every request answered', async () => {
    const earlier = earlierBuild();
    const c = await Cluster.create({ nodes: 3, found: false, tickMs: 50, electionTicks: 20 });
    for (const n of c.nodes) {
      n.bin = join(earlier, 'bin', 'verdict.mjs');
      n.start();
    }
    await c.waitForLeader({ timeoutMs: 90_000 });
    for (const n of c.nodes) {
      const v = await waitFor(`${n.id} to answer`, 60_000, async () => {
        n.closeClient();
        return await n.status();
      });
      // The earlier build predates NodeStatus.version.
      expect(v.version ?? '', `${n.id} runs the earlier build`).toBe('');
    }

    const parts: Participants = await startParticipants(c, ['shop', 'ledger']);
    stops.push(() => parts.stop());
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 20_000,
    });
    stops.push(() => client.close());

    // The load: one transaction after another until told to stop; every third one aborts (a NO vote).
    const told = new Map<string, { txnId: string; outcome: 'COMMITTED' | 'ABORTED' }>();
    const failures: string[] = [];
    let lastSuccessAtMs = Date.now();
    let longestGapMs = 0;
    let running = true;
    let seq = 0;
    const load = (async () => {
      while (running) {
        const i = seq++;
        const key = `k${i}`;
        try {
          const t = await client.begin({ timeoutMs: 30_000 });
          t.enlist('shop', { set: { [key]: String(i) } });
          t.enlist(
            'ledger',
            i % 3 === 2 ? { set: { [key]: String(i) }, fail: 'a NO vote on purpose' } : { set: { [key]: String(i) } },
          );
          const r = await t.commit();
          told.set(key, { txnId: r.txnId, outcome: r.outcome });
          const now = Date.now();
          longestGapMs = Math.max(longestGapMs, now - lastSuccessAtMs);
          lastSuccessAtMs = now;
        } catch (err) {
          failures.push(`${key}: ${(err as Error).message}`);
        }
      }
    })();
    stops.push(async () => {
      running = false;
      await load;
    });

    const committedCount = async (): Promise<number> => told.size;
    const waitForProgress = async (what: string): Promise<void> => {
      const base = await committedCount();
      await waitFor(`five more transactions ${what}`, 60_000, async () =>
        (await committedCount()) >= base + 5 ? true : undefined,
      );
    };
    await waitForProgress('on the earlier build');

    // Followers first, the leader last: one leader hand-over in all.
    const { node: leader } = await c.waitForLeader();
    const order = [...c.nodes.filter((n) => n !== leader), leader];
    for (const n of order) {
      await n.kill('SIGTERM', 30_000);
      expect(n.lastExit, n.logTail()).toEqual({ code: 0, signal: null });
      n.bin = join(ROOT, 'bin', 'verdict.mjs');
      n.start();
      await waitFor(`${n.id} on this build to answer with its version`, 90_000, async () => {
        n.closeClient();
        const s = await n.status();
        return s.version ? s : undefined;
      });
      const { status: ls } = await c.waitForLeader({ timeoutMs: 60_000 });
      await waitFor(`${n.id} to catch up with the leader's commit index ${ls.commitIndex}`, 60_000, async () =>
        (await n.status()).commitIndex >= ls.commitIndex ? true : undefined,
      );
      await waitForProgress(`after ${n.id} was upgraded`);
    }

    running = false;
    await load;
    expect(failures, failures.join('\n')).toEqual([]);
    expect(told.size).toBeGreaterThanOrEqual(20);
    console.log(`rolling upgrade: ${told.size} transactions, longest time without a commit ${longestGapMs} ms`);

    // Every node now runs this build.
    const r = await runCli(['status', '--json', '--endpoints', c.nodes.map((n) => n.address).join(',')], {
      timeoutMs: 30_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const want = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
    for (const n of c.nodes) expect((await n.status()).version, n.id).toBe(want);

    // No lost decision: the upgraded cluster gives every outcome the client was told.
    expect([...told.values()].some((t) => t.outcome === 'ABORTED')).toBe(true);
    for (const [key, { txnId, outcome }] of told) {
      const now = await client.outcome(txnId);
      expect(now.outcome, `${key} (${txnId})`).toBe(outcome);
    }
    // Both participants applied exactly the committed transactions.
    const shop = parts.runtimes.get('shop');
    const ledger = parts.runtimes.get('ledger');
    if (!shop || !ledger) throw new Error('participants missing');
    await waitFor('both participants to apply every decision', 60_000, async () => {
      for (const [key, { outcome }] of told) {
        const want = outcome === 'COMMITTED' ? key.slice(1) : undefined;
        if (shop.resource.get(key) !== want || ledger.resource.get(key) !== want) return undefined;
      }
      return true;
    });
  });
});
