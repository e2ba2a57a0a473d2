// `verdict cluster up` (what `npm start` runs) owns its nodes: SIGTERM,
// SIGINT or SIGHUP to the launcher stops every node before it exits, a
// launcher killed outright (SIGKILL) takes its nodes with it, and a second
// launcher on the same ports says so in one line instead of starting nodes
// that fail one by one. Real processes on loopback ports of their own.
// And it serves mutual TLS by default, with certificates it makes on its
// first start outside the checkout, which the CLI then finds.
import { describe, expect, it } from 'vitest';
import { portsInUse } from '../../src/cli/cluster.ts';
import * as grpc from '@grpc/grpc-js';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tlsCredentials } from '../../src/client/tls.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import {
  BIN,
  cliEnv,
  configDir,
  freePorts,
  ROOT,
  runCli,
  sleep,
  tempDir,
  useProcessCleanup,
  waitFor,
} from './harness.ts';
import { alive, allGone, freeBase, launch, nodesUp, STOP_WAIT_MS, useLauncherCleanup } from './launcher-helpers.ts';

useProcessCleanup();
useLauncherCleanup();

describe('verdict cluster up', () => {
  it('its first start founds the cluster; a later start founds nothing, and a node whose directory was emptied rejoins and is proven whole', async () => {
    const data = tempDir();
    const base = await freeBase();
    const first = launch(base, data);
    await nodesUp(first);
    expect(first.output()).toMatch(/verdict: first start: founded a new cluster of 3 node\(s\)/);
    // An entry in the log before the restart (a log probe, answered by whichever node leads), for n3 to catch up to.
    const probe = await waitFor('a node to take a log probe', 30_000, async () => {
      for (const k of [0, 1, 2]) {
        const api = new RaftNodeClient(`127.0.0.1:${base + k}`);
        try {
          return await api.put({ key: 'k', value: Buffer.from('v') }, 5_000);
        } catch {
          // A follower refuses it; the leader takes it.
        } finally {
          api.close();
        }
      }
      return undefined;
    });
    expect(probe.index).toBeGreaterThan(0);
    first.child.kill('SIGTERM');
    expect(await Promise.race([first.exited, sleep(STOP_WAIT_MS).then(() => null)])).toEqual({ code: 0, signal: null });
    // n3's disk is replaced by an empty one.
    const n3 = join(data, `cluster-3-${base}`, 'n3');
    rmSync(n3, { recursive: true, force: true });
    mkdirSync(n3);
    const again = launch(base, data);
    await nodesUp(again);
    expect(again.output()).not.toMatch(/founded a new cluster/);
    expect(again.output()).toMatch(
      /\[n3\] \S+ holds no Raft state of its own: n3 rejoins the cluster and votes once a leader has caught it up/,
    );
    await waitFor(
      'n3 to say it rejoined',
      60_000,
      async () => (/rejoined: the leader caught this node up/.test(again.output()) ? true : undefined),
      () => again.output().slice(-2_000),
    );
    again.child.kill('SIGTERM');
    expect(await Promise.race([again.exited, sleep(STOP_WAIT_MS).then(() => null)])).toEqual({ code: 0, signal: null });
  }, 240_000);

  it("forwards SIGTERM to its nodes and exits 0 once all stopped, logging the leader's lost handover at info; a second launcher on the same ports refuses in one line", async () => {
    const l = launch(await freeBase(), tempDir());
    const pids = await nodesUp(l);
    expect(new Set(pids).size).toBe(3);
    expect(pids).not.toContain(l.child.pid);
    // Each node's pid is on its log lines (for kill) and in the banner.
    for (const pid of pids) expect(l.output()).toContain(`pid ${pid}`);

    const second = await runCli(
      ['cluster', 'up', '--nodes', '3', '--base-port', String(l.basePort), '--data', tempDir()],
      { timeoutMs: 60_000 },
    );
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      new RegExp(
        `^verdict: cannot start the local cluster: 127\\.0\\.0\\.1 ports ${l.basePort}, ${l.basePort + 1}, ${l.basePort + 2}, .* are in use\\. Another cluster may be running`,
      ),
    );
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

  it("the failure drill: kill -9 of the leader's pid from status, the launcher prints the restart command, and that command brings the node back; SIGHUP then stops the cluster", async () => {
    const l = launch(await freeBase(), tempDir());
    const pids = await nodesUp(l);
    const ep = ['--endpoints', `127.0.0.1:${l.basePort}`];
    const before = JSON.parse((await runCli(['status', '--json', ...ep], { timeoutMs: 60_000 })).stdout) as {
      leader: string;
      nodes: { id: string; pid: number }[];
    };
    const victim = before.nodes.find((n) => n.id === before.leader);
    expect(victim?.pid).toBeGreaterThan(0);
    process.kill(victim?.pid as number, 'SIGKILL');
    const restart = await waitFor(
      'the launcher to print the restart command',
      30_000,
      async () =>
        new RegExp(
          `\\[${victim?.id}\\] exited \\(SIGKILL\\); the other nodes keep running\\. Restart it with: npx verdict node --config (\\S+)`,
        ).exec(l.output())?.[1],
    );
    const again = spawn(process.execPath, [BIN, 'node', '--config', restart], { cwd: ROOT, stdio: 'ignore' });
    try {
      await waitFor(`${victim?.id} to be back in verdict status`, 90_000, async () => {
        const r = await runCli(['status', '--json', ...ep], { timeoutMs: 60_000 });
        const st = JSON.parse(r.stdout) as { nodes: { id: string; reachable: boolean; pid?: number }[] };
        return st.nodes.find((n) => n.id === victim?.id && n.reachable && n.pid === again.pid) ? true : undefined;
      });
    } finally {
      again.kill('SIGTERM');
    }
    l.child.kill('SIGHUP');
    const exit = await Promise.race([l.exited, sleep(STOP_WAIT_MS).then(() => null)]);
    expect(exit, l.output().slice(-3_000)).toEqual({ code: 0, signal: null });
    expect(pids.filter(alive)).toEqual([]);
  }, 300_000);

  it('a launcher whose parent shell dies (SIGTERM to `npm start`: npm ends the shell, which passes nothing on) stops the cluster', async () => {
    const l = launch(await freeBase(), tempDir(), [], true);
    const pids = await nodesUp(l);
    const launcher = await launcherPid(l.child.pid as number);
    expect(alive(launcher)).toBe(true);
    l.child.kill('SIGTERM');
    await l.exited;
    await allGone([...pids, launcher], 'the orphaned launcher and its nodes to stop');
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

describe('verdict cluster up is secure by default (npm start)', () => {
  it('on its first start makes the local CA and certificates outside the checkout and serves mutual TLS: a plaintext client is refused; the CLI finds the certificates, a participant gets its own, and the first transaction commits', async () => {
    const l = launch(await freeBase(), tempDir(), [], false, true);
    const certs = join(configDir(), 'local');
    const admin = { ca: join(certs, 'ca.crt'), cert: join(certs, 'ops-admin.crt'), key: join(certs, 'ops-admin.key') };
    await waitFor(
      'the launcher to say it serves mutual TLS',
      60_000,
      async () => (l.output().includes(`mutual TLS with the certificates in ${certs};`) ? true : undefined),
      () => l.output(),
    );
    expect(l.output()).toContain(`verdict: made ${join(certs, 'ca.crt')}`);
    expect(relative(ROOT, certs).startsWith('..')).toBe(true);
    for (const f of ['ca.key', 'n1.key', 'n2.key', 'n3.key', 'ops-admin.key', 'alice.key'])
      expect(existsSync(join(certs, f)), f).toBe(true);
    await nodesUp(l, tlsCredentials(admin));
    const endpoints = [0, 1, 2].map((k) => `127.0.0.1:${l.basePort + k}`).join(',');

    // A plaintext client is refused by every node.
    const plain = new RaftNodeClient(`127.0.0.1:${l.basePort}`);
    try {
      await expect(plain.status(5_000)).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    } finally {
      plain.close();
    }
    const insecure = await runCli(['status', '--insecure', '--endpoints', endpoints], { timeoutMs: 60_000 });
    expect(insecure.code).toBe(1);
    expect(insecure.stderr).toMatch(/it may require TLS/);

    // The README's commands, as written (no TLS flag, no --insecure): the CLI and the participant find the local
    // cluster's certificates.
    const asWritten = { VERDICT_INSECURE: '', VERDICT_ENDPOINTS: endpoints };
    const status = await runCli(['status'], { timeoutMs: 60_000, env: asWritten });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^leader: n\d/);
    const [port] = await freePorts(1);
    const participant = spawn(
      process.execPath,
      [BIN, 'participant', '--id', 'carts', '--listen', `127.0.0.1:${port}`, '--data', join(tempDir(), 'carts')],
      {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: cliEnv(asWritten),
      },
    );
    let log = '';
    participant.stderr?.setEncoding('utf8').on('data', (d: string) => (log += d));
    try {
      await waitFor(
        'the participant to register over TLS',
        60_000,
        async () => (log.includes('registered with the cluster') ? true : undefined),
        () => log,
      );
      expect(log).toContain(`made ${join(certs, 'carts.crt')}`);
      const commit = await runCli(['txn', 'commit', '--participant', 'carts={"set":{"c":"1"}}'], {
        timeoutMs: 60_000,
        env: asWritten,
      });
      expect(commit.stdout, commit.stderr).toMatch(/^COMMITTED /);
      expect(commit.code).toBe(0);
    } finally {
      participant.kill('SIGKILL');
    }
  }, 240_000);
});

/** The pid of the launcher started by shell `shellPid` (its only child). */
async function launcherPid(shellPid: number): Promise<number> {
  const { readFileSync, readdirSync } = await import('node:fs');
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === shellPid) return Number(d);
    } catch {
      // The process ended while we looked.
    }
  }
  throw new Error(`no child of shell ${shellPid}`);
}
