// `verdict cluster up` as a child process for tests: ports of its own (three
// consecutive, plus their metrics ports), its output kept, and every process
// it made killed after each test.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach } from 'vitest';
import { CONSOLE_OFFSET, METRICS_OFFSET, portsInUse } from '../../src/cli/cluster.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import type * as grpc from '@grpc/grpc-js';
import { BIN, configDir, ELECTION_WAIT_MS, ROOT, waitFor } from './harness.ts';
import { ephemeralLow, PORT_LOW } from '../free-ports.ts';

/**
 * How long nodes get to stop after their launcher stops or dies: a leader's handover, a flush; generous for a loaded
 * machine.
 */
export const STOP_WAIT_MS = 30_000;

export interface Launcher {
  child: ChildProcess;
  basePort: number;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const launchers: Launcher[] = [];
const nodePids = new Set<number>();

/** Kills, after each test, every launcher started and every node seen. */
export function useLauncherCleanup(): void {
  afterEach(() => {
    for (const l of launchers.splice(0)) l.child.kill('SIGKILL');
    for (const pid of nodePids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    nodePids.clear();
  });
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Where bases start. */
const BASE_LOW = PORT_LOW;

/**
 * Three consecutive free ports, and their metrics and (with --tls) console ports above them, all below the kernel's
 * ephemeral range.
 */
export async function freeBase(): Promise<number> {
  const span = ephemeralLow() - (BASE_LOW + CONSOLE_OFFSET + 3);
  for (let i = 0; i < 50; i++) {
    const base = BASE_LOW + Math.floor(Math.random() * span);
    const ports = [0, 1, 2].flatMap((k) => [base + k, base + METRICS_OFFSET + k, base + CONSOLE_OFFSET + k]);
    if ((await portsInUse(ports)).length === 0) return base;
  }
  throw new Error('no three consecutive free ports found');
}

/**
 * Starts `verdict cluster up`; with `viaShell`, under `sh -c` as `npm start`
 * runs it (the shell stays the launcher's parent and passes no signal on).
 * Plaintext (--insecure) unless `extra` gives --tls or `localTls` asks for
 * what `npm start` does: the local cluster's certificates, made on the first
 * start in this file's configDir() (never the user's ~/.config).
 */
export function launch(
  basePort: number,
  dataDir: string,
  extra: string[] = [],
  viaShell = false,
  localTls = false,
): Launcher {
  const security = localTls || extra.includes('--tls') ? [] : ['--insecure'];
  const argv = [
    BIN,
    'cluster',
    'up',
    '--nodes',
    '3',
    '--base-port',
    String(basePort),
    '--data',
    dataDir,
    ...security,
    ...extra,
  ];
  const [cmd, args] = viaShell
    ? ['sh', ['-c', `${[process.execPath, ...argv].map((a) => `'${a}'`).join(' ')}; exit $?`]]
    : [process.execPath, argv];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VERDICT_CONFIG_DIR: configDir(), VERDICT_LOG_FORMAT: 'pretty' },
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once('exit', (code, signal) => res({ code, signal })),
  );
  const l = { child, basePort, output: () => out, exited };
  launchers.push(l);
  return l;
}

/** Waits for a leader and returns the pid of every node, from `verdict status`'s pid column (NodeStatus.pid). */
export async function nodesUp(l: Launcher, credentials?: grpc.ChannelCredentials): Promise<number[]> {
  const addrs = [0, 1, 2].map((k) => `127.0.0.1:${l.basePort + k}`);
  return waitFor(
    'the three nodes of the launcher to elect a leader',
    ELECTION_WAIT_MS,
    async () => {
      const sts = await Promise.all(
        addrs.map(async (a) => {
          const c = new RaftNodeClient(a, credentials);
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
    },
    () => l.output().slice(-2_000),
  );
}

export async function allGone(pids: number[], what: string): Promise<void> {
  await waitFor(
    what,
    STOP_WAIT_MS,
    async () => (pids.every((p) => !alive(p)) ? true : undefined),
    () => `still running: ${pids.filter(alive).join(', ')}`,
  );
}
