// Every process the benchmark starts, and the local clusters it measures.
//
// Each child is registered here from spawn to exit, so one call stops them
// all: at the end of a run, on Ctrl-C / SIGTERM, and (synchronously, with
// SIGKILL) when the orchestrator exits any other way. Load generators also
// exit by themselves when their stdin closes, i.e. when the orchestrator is
// gone. Everything listens on 127.0.0.1 only.
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VerdictClient } from '../../src/client/client.ts';
import { foundDataDir } from '../../src/storage/founding.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import type { NodeStatus } from '../../src/transport/proto.ts';
import { freePorts } from '../../test/free-ports.ts';

export { freePorts };

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'verdict.mjs');

/**
 * VERDICT_BENCH_CPU_PROF=DIR: node and participant processes, and the
 * bench's own children (load generators, direct floors), run with
 * `--cpu-prof` and write their profiles (DIR/<cluster>-<process>-<stamp>/ or
 * DIR/<script>-<pid>-<stamp>/, one
 * .cpuprofile per thread, the largest is the main thread's; open them in Chrome
 * DevTools or speedscope) when they stop; nodes are then stopped with
 * SIGTERM instead of SIGKILL so the profile gets written. For finding what is
 * in the way, not for measuring: the profiler itself costs CPU.
 */
const CPU_PROF_DIR = process.env.VERDICT_BENCH_CPU_PROF ?? '';

/**
 * Node flags that make a product process write a CPU profile named after it, when VERDICT_BENCH_CPU_PROF asks for it.
 */
function profileFlags(name: string): string[] {
  // A folder per process: Node writes one profile per thread (tsx's loader runs in a worker) under its default names.
  return CPU_PROF_DIR === ''
    ? []
    : ['--cpu-prof', `--cpu-prof-dir=${join(resolve(CPU_PROF_DIR), `${name}-${Date.now().toString(36)}`)}`];
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `--name N` of a bench script's command line: a positive integer, or fallback when absent; anything else refused. */
export function intFlag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0)
    throw new Error(`--${name} needs a positive integer, not ${process.argv[i + 1] ?? '(nothing)'}`);
  return v;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Child {
  label: string;
  proc: ChildProcess;
  exited: Promise<Exit>;
  /** Where its stderr (and for product processes, stdout) goes. */
  logFile: string;
}

const live = new Set<Child>();

/** Spawns `node args...` in the repository root, its output into logFile, and registers it. */
export function spawnChild(
  label: string,
  args: string[],
  logFile: string,
  pipes: { stdin?: boolean; stdout?: boolean } = {},
): Child {
  return spawnProgram(label, process.execPath, args, logFile, pipes);
}

/** Spawns `program args...` (another system's server, e.g. etcd) the same way: registered, output into logFile. */
export function spawnProgram(
  label: string,
  program: string,
  args: string[],
  logFile: string,
  pipes: { stdin?: boolean; stdout?: boolean } = {},
): Child {
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  let proc: ChildProcess;
  try {
    proc = spawn(program, args, {
      cwd: ROOT,
      stdio: [pipes.stdin ? 'pipe' : 'ignore', pipes.stdout ? 'pipe' : fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<Exit>((res) => {
    proc.once('exit', (code, signal) => res({ code, signal }));
    proc.once('error', () => res({ code: null, signal: null }));
  });
  const child: Child = { label, proc, exited, logFile };
  live.add(child);
  void exited.then(() => live.delete(child));
  return child;
}

/** Sends `signal`, waits up to graceMs for the exit, then SIGKILLs. */
export async function stopChild(c: Child, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<Exit> {
  if (!live.has(c)) return c.exited;
  c.proc.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    c.exited.then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
  ]);
  clearTimeout(timer);
  if (timedOut) c.proc.kill('SIGKILL');
  return c.exited;
}

export function liveChildren(): number {
  return live.size;
}

/** Stops every child still running: SIGTERM, then SIGKILL after graceMs. */
export async function stopAll(graceMs = 3_000): Promise<void> {
  await Promise.all([...live].map((c) => stopChild(c, 'SIGTERM', graceMs)));
}

/** Last resort, synchronous: for process 'exit'. */
export function killAllNow(): void {
  for (const c of live) c.proc.kill('SIGKILL');
}

export function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Runs a tsx script (a path under bench/) as a child with one JSON config argument and returns the
 * JSON object on the last line of its stdout. Lines before it go to onLine
 * (a child may announce progress that way). Bounded by timeoutMs.
 */
export async function runJsonChild<T>(
  label: string,
  script: string,
  config: object,
  logFile: string,
  timeoutMs: number,
  hooks: { onLine?: (line: string, child: Child) => void } = {},
): Promise<T> {
  const child = spawnChild(
    label,
    [
      ...profileFlags(`${basename(script, '.ts')}-${process.pid}`),
      '--import',
      'tsx',
      join(ROOT, 'bench', script),
      JSON.stringify(config),
    ],
    logFile,
    {
      stdin: true,
      stdout: true,
    },
  );
  let out = '';
  let pending = '';
  child.proc.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    pending += d;
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      hooks.onLine?.(line, child);
    }
  });
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    child.exited,
    new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (exit === 'timeout') {
    await stopChild(child, 'SIGKILL');
    throw new Error(`${label} did not finish within ${timeoutMs} ms; its log ${logFile}:\n${logTail(logFile)}`);
  }
  const last = out.trimEnd().split('\n').pop() ?? '';
  if (exit.code !== 0 || !last.startsWith('{')) {
    throw new Error(
      `${label} failed (${exit.signal ?? `exit code ${exit.code}`}); its log ${logFile}:\n${logTail(logFile)}`,
    );
  }
  return JSON.parse(last) as T;
}

/** Thrown by a probe when waiting longer cannot help. */
export class FatalError extends Error {}

/** Polls probe until it returns a value; throws naming `what` at the deadline, or at once on a FatalError. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  pollMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      if (err instanceof FatalError) throw err;
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ''}`);
    await sleep(pollMs);
  }
}

/** A server child's address once it printed "listening <port>" on its stdout (started with a stdout pipe). */
export function listeningAddress(c: Child, timeoutMs = 30_000): Promise<string> {
  let out = '';
  c.proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  return waitFor(`${c.label} to listen`, timeoutMs, async () => /listening (\d+)/.exec(out)?.[1], 50).then(
    (port) => `127.0.0.1:${port}`,
  );
}

/** How long BenchCluster.waitForLeader waits by default (see there). */
export const LEADER_WAIT_MS = 180_000;

/** Node timing as shipped in cluster/n1.json, so the figures are what a user of the local cluster gets. */
export const NODE_TIMING = {
  tickMs: 100,
  electionTicks: 10,
  heartbeatTicks: 1,
  snapshotEntries: 10_000,
  snapshotLogRatio: 1,
};

export interface BenchNode {
  id: string;
  address: string;
  configFile: string;
  child: Child | null;
  /** host:port of its Prometheus metrics, when the cluster was started with them. */
  metricsAddress?: string | null;
}

export interface Leader {
  id: string;
  address: string;
  term: number;
}

/** A local cluster of node processes and memory participants, in its own directory. */
export class BenchCluster {
  readonly participants = new Map<string, Child>();
  private readonly admin = new Map<string, RaftNodeClient>();

  private constructor(
    readonly dir: string,
    readonly clusterId: string,
    readonly nodes: BenchNode[],
    readonly logLevel: string,
  ) {}

  /**
   * `logLevel`: of the nodes and participants ('info' for a failover timeline from their logs; 'warn' keeps measured
   * runs quiet). `o.groups`: the decision groups the cluster is founded with (1); `o.metrics`: each node serves
   * Prometheus metrics on a port of its own (metricsAddress); `o.config`: more keys of every node's config.
   */
  static async start(
    dir: string,
    size: number,
    tag: string,
    logLevel = 'warn',
    o: { groups?: number; metrics?: boolean; config?: Record<string, unknown> } = {},
  ): Promise<BenchCluster> {
    mkdirSync(dir, { recursive: true });
    const clusterId = `bench-${tag}-${process.pid}`;
    const groups = o.groups ?? 1;
    const ports = await freePorts(size);
    const metricsPorts = o.metrics === true ? await freePorts(size) : [];
    const peers: Record<string, string> = {};
    ports.forEach((p, i) => (peers[`n${i + 1}`] = `127.0.0.1:${p}`));
    const nodes: BenchNode[] = [];
    for (const [id, address] of Object.entries(peers)) {
      const cfg = {
        clusterId,
        nodeId: id,
        listen: address,
        dataDir: `data-${id}`,
        peers,
        ...NODE_TIMING,
        logLevel,
        insecure: true,
        ...(groups === 1 ? {} : { groups }),
        ...(metricsPorts.length > 0 ? { metricsListen: `127.0.0.1:${metricsPorts[nodes.length]}` } : {}),
        ...o.config,
      };
      const configFile = join(dir, `${id}.json`);
      writeFileSync(configFile, JSON.stringify(cfg, null, 2) + '\n');
      // A new cluster is founded before its first start (what `verdict cluster init` does; docs/storage.md).
      await foundDataDir(join(dir, cfg.dataDir), { clusterId, nodeId: id }, groups);
      const metricsAddress = metricsPorts.length > 0 ? `127.0.0.1:${metricsPorts[nodes.length]}` : null;
      nodes.push({ id, address, configFile, child: null, metricsAddress });
    }
    const c = new BenchCluster(dir, clusterId, nodes, logLevel);
    for (const n of nodes) c.startNode(n);
    await c.waitForLeader();
    return c;
  }

  get endpoints(): string[] {
    return this.nodes.map((n) => n.address);
  }

  private startNode(n: BenchNode): void {
    n.child = spawnChild(
      `node ${n.id}`,
      [...profileFlags(`${this.clusterId}-${n.id}`), BIN, 'node', '--config', n.configFile],
      join(this.dir, `${n.id}.log`),
    );
  }

  private api(n: BenchNode): RaftNodeClient {
    let c = this.admin.get(n.id);
    if (c === undefined) {
      c = new RaftNodeClient(n.address);
      this.admin.set(n.id, c);
    }
    return c;
  }

  async statuses(): Promise<Map<BenchNode, NodeStatus | null>> {
    const out = new Map<BenchNode, NodeStatus | null>();
    const up = this.nodes.filter((n) => n.child !== null);
    await Promise.all(
      up.map(async (n) =>
        out.set(
          n,
          await this.api(n)
            .status(1_000)
            .catch(() => null),
        ),
      ),
    );
    return out;
  }

  /**
   * A leader every answering node agrees on (same term, same leader id);
   * optionally not `notId`. The default wait is generous: on a shared
   * machine at a load of 30 and more, three node processes starting cold
   * (JIT, LevelDB, gRPC) may take well over 30 s to elect a first leader.
   * At the deadline the error says what each node last reported and the
   * load average, so a slow machine is told apart from a broken cluster.
   */
  async waitForLeader(
    o: { notId?: string; minTerm?: number; timeoutMs?: number; pollMs?: number } = {},
  ): Promise<Leader> {
    let seen = 'no node answered yet';
    const timeoutMs = o.timeoutMs ?? LEADER_WAIT_MS;
    return waitFor(
      `a leader of ${this.clusterId}${o.notId ? ` other than ${o.notId}` : ''}`,
      timeoutMs,
      async () => {
        // A node that died on its own will not elect anyone: say why at once instead of at the deadline.
        const dead = this.nodes.find((n) => n.child !== null && !isRunning(n.child));
        if (dead?.child)
          throw new FatalError(
            `node ${dead.id} exited (${dead.child.proc.signalCode ?? `code ${dead.child.proc.exitCode}`}); its log ${dead.child.logFile}:\n${logTail(dead.child.logFile)}`,
          );
        const st = [...(await this.statuses())];
        seen = st
          .map(([n, x]) =>
            x === null ? `${n.id} not answering` : `${n.id} ${x.role} term ${x.term} leader ${x.leaderId || '-'}`,
          )
          .join('; ');
        const leaders = st.filter(([, s]) => s?.role === 'leader') as [BenchNode, NodeStatus][];
        if (leaders.length === 0) return undefined;
        leaders.sort((a, b) => b[1].term - a[1].term);
        const [node, s] = leaders[0];
        if (node.id === o.notId || s.term < (o.minTerm ?? 0)) return undefined;
        if (!st.every(([, x]) => x === null || (x.term === s.term && x.leaderId === node.id))) return undefined;
        return { id: node.id, address: node.address, term: s.term };
      },
      o.pollMs ?? 100,
    ).catch((err: Error) => {
      if (err instanceof FatalError) throw err;
      const load = loadavg()
        .map((x) => x.toFixed(1))
        .join(' ');
      throw new Error(`${err.message} (last seen: ${seen}; load average ${load}; logs in ${this.dir})`);
    });
  }

  /** SIGKILL of one node; resolves once the process is gone. */
  async killNode(id: string): Promise<void> {
    const n = this.nodes.find((x) => x.id === id);
    if (!n?.child) throw new Error(`node ${id} is not running`);
    this.admin.get(id)?.close();
    this.admin.delete(id);
    const c = n.child;
    n.child = null;
    await stopChild(c, 'SIGKILL');
  }

  participantDir(id: string): string {
    return join(this.dir, 'participants', id);
  }

  /**
   * Starts participants (`verdict participant`), one process each, and waits until the cluster lists them all.
   * Memory participants unless extraArgs gives a participant other flags (`--resource postgres ...`).
   */
  async startParticipants(ids: string[], extraArgs: (id: string) => string[] = () => []): Promise<void> {
    const ports = await freePorts(ids.length);
    for (const [i, id] of ids.entries()) {
      const args = [
        ...profileFlags(`${this.clusterId}-participant-${id}`),
        BIN,
        'participant',
        '--id',
        id,
        '--listen',
        `127.0.0.1:${ports[i]}`,
        '--data',
        this.participantDir(id),
      ];
      args.push(
        '--cluster-id',
        this.clusterId,
        '--endpoints',
        this.endpoints.join(','),
        '--log-level',
        this.logLevel,
        '--insecure',
        ...extraArgs(id),
      );
      this.participants.set(id, spawnChild(`participant ${id}`, args, join(this.dir, `participant-${id}.log`)));
    }
    const client = new VerdictClient({ insecure: true, endpoints: this.endpoints, clusterId: this.clusterId });
    try {
      await waitFor(
        `participants ${ids.join(', ')} registered`,
        60_000,
        async () => {
          for (const [id, c] of this.participants)
            if (!isRunning(c))
              throw new FatalError(`participant ${id} exited; its log ${c.logFile}:\n${logTail(c.logFile)}`);
          const known = new Set((await client.participants({}, { callTimeoutMs: 2_000 })).map((p) => p.participantId));
          return ids.every((id) => known.has(id)) ? true : undefined;
        },
        200,
      );
    } finally {
      client.close();
    }
  }

  /** Stops one participant cleanly (SIGTERM); it stays registered. */
  async stopParticipant(id: string): Promise<void> {
    const c = this.participants.get(id);
    if (c === undefined) return;
    this.participants.delete(id);
    await stopChild(c, 'SIGTERM', 5_000);
  }

  /** Stops the participants cleanly (SIGTERM: the journal is closed), so their journals can be read. */
  async stopParticipants(): Promise<void> {
    await Promise.all([...this.participants.values()].map((c) => stopChild(c, 'SIGTERM', 5_000)));
    this.participants.clear();
  }

  async destroy(): Promise<void> {
    for (const c of this.admin.values()) c.close();
    this.admin.clear();
    await this.stopParticipants();
    await Promise.all(
      this.nodes.map(async (n) => {
        if (n.child) await stopChild(n.child, CPU_PROF_DIR === '' ? 'SIGKILL' : 'SIGTERM');
        n.child = null;
      }),
    );
  }
}

function isRunning(c: Child): boolean {
  return c.proc.exitCode === null && c.proc.signalCode === null;
}
