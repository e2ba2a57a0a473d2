// `verdict cluster up` (what `npm start` runs) owns its nodes: SIGTERM,
// SIGINT or SIGHUP to the launcher stops every node before it exits, a
// launcher killed outright (SIGKILL) takes its nodes with it, and a second
// launcher on the same ports says so in one line instead of starting nodes
// that fail one by one. Real processes on loopback ports of their own.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { portsInUse } from '../../src/cli/cluster.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { BIN, ELECTION_WAIT_MS, ROOT, runCli, sleep, tempDir, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

/** How long nodes get to stop after their launcher stops or dies: a leader's handover, a flush; generous for a loaded machine. */
const STOP_WAIT_MS = 30_000;

interface Launcher {
  child: ChildProcess;
  basePort: number;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const launchers: Launcher[] = [];
const nodePids = new Set<number>();

afterEach(() => {
  for (const l of launchers.splice(0)) l.child.kill('SIGKILL');
  for (const pid of nodePids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  nodePids.clear();
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Three consecutive free ports, and their metrics ports 2100 above. */
async function freeBase(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const ports = [0, 1, 2].flatMap((k) => [base + k, base + 2_100 + k]);
    if ((await portsInUse(ports)).length === 0) return base;
  }
  throw new Error('no three consecutive free ports found');
}

function launch(basePort: number, dataDir: string): Launcher {
  const child = spawn(process.execPath, [BIN, 'cluster', 'up', '--nodes', '3', '--base-port', String(basePort), '--data', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, VERDICT_LOG_FORMAT: 'pretty' } });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.once('exit', (code, signal) => res({ code, signal })));
  const l = { child, basePort, output: () => out, exited };
  launchers.push(l);
  return l;
}

/** Waits for a leader and returns the pid of every node, from `verdict status`'s pid column (NodeStatus.pid). */
async function nodesUp(l: Launcher): Promise<number[]> {
  const addrs = [0, 1, 2].map((k) => `127.0.0.1:${l.basePort + k}`);
  return waitFor('the three nodes of the launcher to elect a leader', ELECTION_WAIT_MS, async () => {
    const sts = await Promise.all(
      addrs.map(async (a) => {
        const c = new RaftNodeClient(a);
        try {
          return await c.status(1_000);
        } finally {
          c.close();
        }
      }),
    );
    if (!sts.some((s) => s.role === 'leader')) return undefined;
    for (const s of sts) nodePids.add(s.pid);
    return sts.map((s) => s.pid);
  }, () => l.output().slice(-2_000));
}

async function allGone(pids: number[], what: string): Promise<void> {
  await waitFor(what, STOP_WAIT_MS, async () => (pids.every((p) => !alive(p)) ? true : undefined), () => `still running: ${pids.filter(alive).join(', ')}`);
}

describe('verdict cluster up', () => {
  it('forwards SIGTERM to its nodes and exits 0 once all stopped, logging the leader\'s lost handover at info; a second launcher on the same ports refuses in one line', async () => {
    const l = launch(await freeBase(), tempDir());
    const pids = await nodesUp(l);
    expect(new Set(pids).size).toBe(3);
    expect(pids).not.toContain(l.child.pid);
    // Each node's pid is on its log lines (for kill) and in the banner.
    for (const pid of pids) expect(l.output()).toContain(`pid ${pid}`);

    const second = await runCli(['cluster', 'up', '--nodes', '3', '--base-port', String(l.basePort), '--data', tempDir()], { timeoutMs: 60_000 });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`^verdict: cannot start the local cluster: 127\\.0\\.0\\.1 ports ${l.basePort}, ${l.basePort + 1}, ${l.basePort + 2}, .* are in use\\. Another cluster may be running`));
    expect(second.stderr.trim().split('\n')).toHaveLength(1);

    l.child.kill('SIGTERM');
    const exit = await Promise.race([l.exited, sleep(STOP_WAIT_MS).then(() => null)]);
    expect(exit, l.output().slice(-3_000)).toEqual({ code: 0, signal: null });
    // The launcher waited for them: none is left when it is gone.
    expect(pids.filter(alive)).toEqual([]);
    expect(l.output()).toMatch(/verdict: SIGTERM: stopping the cluster/);
    expect(l.output()).not.toMatch(/exited \(.*\); the other nodes keep running/);
    // Stopping the whole cluster is expected: a leader that cannot hand over says so at info, not WARN.
    expect(l.output()).not.toMatch(/WARN .*leadership transfer did not complete/);
  }, 180_000);

  it('SIGHUP stops the cluster too', async () => {
    const l = launch(await freeBase(), tempDir());
    const pids = await nodesUp(l);
    l.child.kill('SIGHUP');
    const exit = await Promise.race([l.exited, sleep(STOP_WAIT_MS).then(() => null)]);
    expect(exit, l.output().slice(-3_000)).toEqual({ code: 0, signal: null });
    expect(pids.filter(alive)).toEqual([]);
  }, 180_000);

  it('nodes whose launcher is killed outright (SIGKILL) stop by themselves and free their ports', async () => {
    const l = launch(await freeBase(), tempDir());
    const pids = await nodesUp(l);
    l.child.kill('SIGKILL');
    await l.exited;
    await allGone(pids, 'the orphaned nodes to stop');
    const ports = [0, 1, 2].map((k) => l.basePort + k);
    expect(await portsInUse(ports)).toEqual([]);
  }, 180_000);
});
