// Real-process test harness: Verdict nodes as child processes on loopback.
//
// Every wait here has a deadline and says what it was waiting for when it
// gives up. Every child is killed by cleanup(), which the test files install
// with useProcessCleanup(); a test that fails prints the tail of each node's
// log (stderr), kept in the cluster's temp dir.

import * as grpc from '@grpc/grpc-js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, type TestContext } from 'vitest';
import { foundDataDir } from '../../src/storage/founding.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import {
  coordinatorService,
  type ListParticipantsRequest,
  type ListParticipantsResponse,
  type RegisterParticipantRequest,
  type RegisterParticipantResponse,
} from '../../src/transport/coordinator-rpc.ts';
import { callLeader, LeaderFinder, namedLeader, NoLeaderError } from '../../src/transport/leader-finder.ts';
import type { NodeStatus, PutResponse } from '../../src/transport/proto.ts';
import { unaryCall } from '../../src/transport/unary.ts';
import { sleep } from '../../src/util/sleep.ts';
import { freePorts } from '../free-ports.ts';

export { freePorts, sleep };

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = join(ROOT, 'bin', 'verdict.mjs');

/** Elections on a loaded 2-core CI machine can take a while; this is the default bound. */
// Generous: the process tests share two cores with each other and with node start-up (tsx compiles on start).
export const ELECTION_WAIT_MS = 45_000;
const POLL_MS = 100;
const STATUS_DEADLINE_MS = 1_000;
const LOG_TAIL_LINES = 40;

/** Whether `p` settles within `ms`; the timer does not outlive the race. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `probe` until it returns a value other than undefined; throws `what` (with the last probe note) at the
 * deadline.
 */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  note?: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = null;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const detail = note?.() ?? (lastErr instanceof Error ? lastErr.message : lastErr === null ? '' : String(lastErr));
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `: ${detail}` : ''}`);
    }
    await sleep(POLL_MS);
  }
}

/** A temp dir that cleanup() deletes (or keeps, when the test failed). */
export function tempDir(prefix = 'verdict-proc-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.set(dir, scope);
  return dir;
}

/**
 * A temp dir kept until the file's cleanup, even when made inside a test:
 * for what outlives its test (a participant the file's afterAll stops).
 */
export function fileTempDir(prefix = 'verdict-proc-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.set(dir, 'file');
  return dir;
}

export function uniqueClusterId(): string {
  return `t-${process.pid}-${randomBytes(4).toString('hex')}`;
}

export interface NodeConfigFile {
  clusterId: string;
  nodeId: string;
  listen: string;
  metricsListen?: string;
  dataDir: string;
  peers: Record<string, string>;
  peerDial?: Record<string, string>;
  tickMs: number;
  electionTicks: number;
  heartbeatTicks: number;
  snapshotEntries: number;
  snapshotLogRatio?: number;
  logLevel: string;
  /** A node added to a running cluster (`verdict member add`). */
  join?: boolean;
  /**
   * Plaintext, said explicitly (a node without TLS refuses to start otherwise); dropped when configExtra gives `tls`.
   */
  insecure?: boolean;
}

export interface ClusterOptions {
  nodes: number;
  snapshotEntries?: number;
  /** The node's snapshotLogRatio; 0 for a test that needs a snapshot every snapshotEntries entries. */
  snapshotLogRatio?: number;
  tickMs?: number;
  electionTicks?: number;
  heartbeatTicks?: number;
  logLevel?: string;
  /** Give every node a Prometheus endpoint (metricsListen) on a free port. */
  metrics?: boolean;
  /**
   * Where node `from` connects to reach node `to` (its config's peerDial),
   * given `to`'s own address: e.g. a fault-injecting proxy per directed link
   * (test/chaos/proxy.ts). Clients still use the nodes' own addresses.
   */
  dialPeer?: (from: string, to: string, address: string) => Promise<string>;
  /** The cluster's id; a unique one by default. */
  clusterId?: string;
  /** Keys added to node `id`'s config file (e.g. a `tls` block). */
  configExtra?: (id: string) => Record<string, unknown>;
  /** How the harness's own clients (status, put) connect to the nodes; plaintext by default. */
  clientCredentials?: grpc.ChannelCredentials;
  /**
   * Found the new cluster (what `verdict cluster init` does) before any node
   * starts: true by default. False leaves every data directory empty, so
   * every node starts rejoining and none votes (docs/storage.md).
   */
  found?: boolean;
}

export class NodeProc {
  child: ChildProcess | null = null;
  /** Stopped with SIGSTOP and not yet continued. */
  paused = false;
  /** How the last run of the process ended (null while it runs or before it ever ran). */
  lastExit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private exit: Promise<void> = Promise.resolve();
  private client: RaftNodeClient | null = null;
  /** How api() connects (TLS for a TLS cluster); plaintext when null. */
  credentials: grpc.ChannelCredentials | null = null;
  /** The `verdict` launcher the process runs: this checkout's, or another build's (the rolling-upgrade test). */
  bin = BIN;

  constructor(
    readonly id: string,
    readonly address: string,
    readonly configFile: string,
    readonly dataDir: string,
    readonly logFile: string,
    /** host:port of the node's metrics endpoint, when the cluster was made with metrics. */
    readonly metricsAddress: string | null = null,
  ) {}

  get running(): boolean {
    return this.child !== null;
  }

  start(): void {
    if (this.child) throw new Error(`node ${this.id} is already running (pid ${this.child.pid})`);
    const fd = openSync(this.logFile, 'a');
    try {
      writeFileSync(fd, `--- harness: starting ${this.id} at ${new Date().toISOString()}\n`);
      // The child writes its log straight into the file: no pipe to drain, nothing lost if we stop reading.
      const child = spawn(process.execPath, [this.bin, ...this.command()], { cwd: ROOT, stdio: ['ignore', fd, fd] });
      this.child = child;
      this.paused = false;
      this.lastExit = null;
      live.add(this);
      this.exit = new Promise<void>((res) => {
        const gone = (code: number | null = null, signal: NodeJS.Signals | null = null): void => {
          if (this.child === child) {
            this.child = null;
            this.lastExit = { code, signal };
            live.delete(this);
          }
          res();
        };
        child.once('exit', (code, signal) => gone(code, signal));
        child.once('error', () => gone());
      });
    } finally {
      closeSync(fd);
    }
  }

  /** The `verdict` arguments the process runs with. */
  protected command(): string[] {
    return ['node', '--config', this.configFile];
  }

  /** SIGSTOP: the process stays, its sockets stay open, it answers nothing until resume(). */
  pause(): void {
    if (!this.child) throw new Error(`${this.id} is not running; nothing to pause`);
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** SIGCONT after pause(); a no-op when not paused. */
  resume(): void {
    if (this.child && this.paused) this.child.kill('SIGCONT');
    this.paused = false;
  }

  /** Sends the signal and waits (bounded) for the process to be gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL', timeoutMs = 10_000): Promise<void> {
    const child = this.child;
    this.closeClient();
    if (!child) return;
    child.kill(signal);
    // A stopped process only sees a catchable signal once it runs again.
    if (this.paused && signal !== 'SIGKILL') child.kill('SIGCONT');
    const gone = await settlesWithin(this.exit, timeoutMs);
    if (!gone) {
      child.kill('SIGKILL');
      const killed = await settlesWithin(this.exit, 5_000);
      if (!killed) throw new Error(`node ${this.id} (pid ${child.pid}) did not exit after ${signal} and SIGKILL`);
      if (signal !== 'SIGKILL')
        throw new Error(`node ${this.id} did not exit within ${timeoutMs} ms of ${signal}; it was killed`);
    }
  }

  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    this.start();
  }

  /** A client for this node; a fresh one after every restart, so no reconnect backoff carries over. */
  api(): RaftNodeClient {
    this.client ??= new RaftNodeClient(this.address, this.credentials ?? undefined);
    return this.client;
  }

  closeClient(): void {
    this.client?.close();
    this.client = null;
  }

  /** One Coordinator call on this node (a client of its own, closed after). */
  async coordinatorCall<Req, Res>(
    method: 'RegisterParticipant' | 'ListParticipants',
    req: Req,
    callTimeoutMs: number,
  ): Promise<Res> {
    const client = new grpc.Client(this.address, this.credentials ?? grpc.credentials.createInsecure());
    try {
      const m = coordinatorService[method] as unknown as grpc.MethodDefinition<Req, Res>;
      return await unaryCall(client, m, req, callTimeoutMs);
    } finally {
      client.close();
    }
  }

  /**
   * The participants this node's state machine holds, id → endpoint: ListParticipants answered by this node from its
   * own applied table once it applied the leader's commit index (ReadIndex), a follower included.
   */
  async participants(callTimeoutMs = 10_000): Promise<Map<string, string>> {
    const r = await this.coordinatorCall<ListParticipantsRequest, ListParticipantsResponse>(
      'ListParticipants',
      { withActivity: false },
      callTimeoutMs,
    );
    return new Map(r.participants.map((p) => [p.participantId, p.endpoint]));
  }

  async status(callTimeoutMs = STATUS_DEADLINE_MS): Promise<NodeStatus> {
    return this.api().status(callTimeoutMs);
  }

  logTail(lines = LOG_TAIL_LINES): string {
    if (!existsSync(this.logFile)) return '(no log)';
    const all = readFileSync(this.logFile, 'utf8').trimEnd().split('\n');
    return all.slice(-lines).join('\n');
  }

  /** Synchronous last resort for process exit. */
  killNow(): void {
    this.closeClient();
    this.child?.kill('SIGKILL');
  }
}

/** Node `id`'s config file as the harness writes it: its own data dir, the cluster's timing and log level. */
function nodeConfig(
  o: ClusterOptions,
  clusterId: string,
  id: string,
  listen: string,
  peers: Record<string, string>,
): NodeConfigFile {
  return {
    clusterId,
    nodeId: id,
    listen,
    dataDir: `data-${id}`,
    peers,
    tickMs: o.tickMs ?? 50,
    electionTicks: o.electionTicks ?? 20,
    heartbeatTicks: o.heartbeatTicks ?? 2,
    snapshotEntries: o.snapshotEntries ?? 10_000,
    snapshotLogRatio: o.snapshotLogRatio,
    logLevel: o.logLevel ?? 'info',
    insecure: true,
  };
}

export class Cluster {
  private destroyed = false;
  /** Index of the last acknowledged log probe (putOnLeader), from its response. */
  maxAckIndex = 0;
  private leaderHint: NodeProc | null = null;

  private constructor(
    readonly dir: string,
    readonly clusterId: string,
    readonly nodes: NodeProc[],
    /** The options the cluster was made with, for nodes added later. */
    private readonly opts: ClusterOptions | null = null,
  ) {}

  /** Writes configs for N nodes on free loopback ports and starts them all. */
  static async start(o: ClusterOptions): Promise<Cluster> {
    const c = await Cluster.create(o);
    for (const n of c.nodes) n.start();
    return c;
  }

  /** Like start(), but leaves the processes to the caller. */
  static async create(o: ClusterOptions): Promise<Cluster> {
    const dir = tempDir();
    const clusterId = o.clusterId ?? uniqueClusterId();
    const ports = await freePorts(o.metrics ? 2 * o.nodes : o.nodes);
    const peers: Record<string, string> = {};
    ports.slice(0, o.nodes).forEach((p, i) => (peers[`n${i + 1}`] = `127.0.0.1:${p}`));
    const nodes: NodeProc[] = [];
    for (const [i, [id, address]] of Object.entries(peers).entries()) {
      const metricsListen = o.metrics ? `127.0.0.1:${ports[o.nodes + i]}` : undefined;
      const cfg: NodeConfigFile = {
        ...nodeConfig(o, clusterId, id, address, peers),
        ...(metricsListen ? { metricsListen } : {}),
      };
      if (o.dialPeer) {
        const dial: Record<string, string> = {};
        for (const [to, addr] of Object.entries(peers)) if (to !== id) dial[to] = await o.dialPeer(id, to, addr);
        cfg.peerDial = dial;
      }
      const file = join(dir, `${id}.json`);
      const extra = o.configExtra?.(id) ?? {};
      // A TLS cluster's nodes are not plaintext: without "insecure" too.
      writeFileSync(
        file,
        JSON.stringify({ ...cfg, ...extra, ...('tls' in extra ? { insecure: undefined } : {}) }, null, 2) + '\n',
      );
      const n = new NodeProc(id, address, file, join(dir, cfg.dataDir), join(dir, `${id}.log`), metricsListen ?? null);
      n.credentials = o.clientCredentials ?? null;
      // Founded as `verdict cluster init` does, with the cluster's number of decision groups.
      const groups = typeof extra.groups === 'number' ? extra.groups : 1;
      if (o.found !== false) await foundDataDir(n.dataDir, { clusterId, nodeId: id }, groups);
      nodes.push(n);
    }
    const c = new Cluster(dir, clusterId, nodes, o);
    clusters.set(c, scope);
    return c;
  }

  /**
   * Writes the config of a new node that joins this cluster ("join": true,
   * an empty data dir, the current nodes as its peers) on a free port, and
   * adds it to `nodes`; the caller starts it and runs `verdict member add`.
   */
  async addNode(id: string): Promise<NodeProc> {
    if (this.nodes.some((n) => n.id === id)) throw new Error(`node ${id} is already in this cluster`);
    const o = this.opts ?? { nodes: 0 };
    const [port] = await freePorts(1);
    const address = `127.0.0.1:${port}`;
    const peers: Record<string, string> = {};
    for (const n of this.nodes) peers[n.id] = n.address;
    peers[id] = address;
    const cfg: NodeConfigFile = { ...nodeConfig(o, this.clusterId, id, address, peers), join: true };
    const file = join(this.dir, `${id}.json`);
    // The cluster's own settings too (its decision groups above all: a node of another G could not join).
    const extra = o.configExtra?.(id) ?? {};
    writeFileSync(
      file,
      JSON.stringify({ ...cfg, ...extra, ...('tls' in extra ? { insecure: undefined } : {}) }, null, 2) + '\n',
    );
    const n = new NodeProc(id, address, file, join(this.dir, cfg.dataDir), join(this.dir, `${id}.log`));
    this.nodes.push(n);
    return n;
  }

  /** Kills a node that left the cluster and drops it from `nodes` (its log stays in the temp dir). */
  async forget(id: string): Promise<void> {
    const n = this.node(id);
    await n.kill('SIGKILL');
    this.nodes.splice(this.nodes.indexOf(n), 1);
    if (this.leaderHint === n) this.leaderHint = null;
  }

  node(id: string): NodeProc {
    const n = this.nodes.find((x) => x.id === id);
    if (!n) throw new Error(`no node ${id} in this cluster`);
    return n;
  }

  running(): NodeProc[] {
    return this.nodes.filter((n) => n.running);
  }

  /** Status of every running node; an unreachable node maps to its error. */
  async statuses(): Promise<Map<NodeProc, NodeStatus | Error>> {
    const out = new Map<NodeProc, NodeStatus | Error>();
    await Promise.all(
      this.running().map(async (n) => {
        try {
          out.set(n, await n.status());
        } catch (err) {
          out.set(n, err as Error);
        }
      }),
    );
    return out;
  }

  /**
   * Waits until a running node is leader and every other running node that
   * answers agrees on it (same term, same leader id).
   */
  async waitForLeader(
    o: { notId?: string; minTerm?: number; timeoutMs?: number } = {},
  ): Promise<{ node: NodeProc; status: NodeStatus }> {
    let last = '';
    const r = await waitFor(
      `a leader of cluster ${this.clusterId}${o.notId ? ` other than ${o.notId}` : ''}${o.minTerm ? ` in a term >= ${o.minTerm}` : ''}`,
      o.timeoutMs ?? ELECTION_WAIT_MS,
      async () => {
        const st = await this.statuses();
        last = [...st]
          .map(([n, s]) =>
            s instanceof Error
              ? `${n.id}: ${(s as grpc.ServiceError).details ?? s.message}`
              : `${n.id}: ${s.role} term ${s.term} leader ${s.leaderId || '-'} commit ${s.commitIndex}`,
          )
          .join('; ');
        const leaders = [...st].filter(([, s]) => !(s instanceof Error) && s.role === 'leader') as [
          NodeProc,
          NodeStatus,
        ][];
        if (leaders.length === 0) return undefined;
        leaders.sort((a, b) => b[1].term - a[1].term);
        const [node, status] = leaders[0];
        if (o.notId !== undefined && node.id === o.notId) return undefined;
        if (o.minTerm !== undefined && status.term < o.minTerm) return undefined;
        const agree = [...st].every(
          ([, s]) => s instanceof Error || (s.term === status.term && s.leaderId === node.id),
        );
        if (!agree) return undefined;
        return { node, status };
      },
      () => last,
    );
    this.leaderHint = r.node;
    return r;
  }

  /**
   * A log probe through the leader (an opaque entry the state machine applies
   * as a no-op), found by the one leader finder (src/transport/leader-finder.ts):
   * the last leader first, then the running nodes, following
   * `verdict-leader-address` redirects and trying again while an election
   * runs. Resolves only once the entry is committed (acknowledged by the
   * leader), with the index it applied at.
   */
  async putOnLeader(key: string, value: Uint8Array | string, timeoutMs = ELECTION_WAIT_MS): Promise<PutResponse> {
    const v = typeof value === 'string' ? Buffer.from(value) : value;
    const r = await this.onLeader(`put ${key}`, timeoutMs, (node, callTimeoutMs) =>
      node.api().put({ key, value: v }, callTimeoutMs),
    );
    if (r.index > this.maxAckIndex) this.maxAckIndex = r.index;
    return r;
  }

  /**
   * Registers participant `id` at `endpoint` through the leader (as putOnLeader finds it): a write to the decision
   * table, which every node keeps in its snapshots, read back with NodeProc.participants().
   */
  async registerOnLeader(id: string, endpoint: string, timeoutMs = ELECTION_WAIT_MS): Promise<void> {
    const r = await this.onLeader(`register ${id}`, timeoutMs, (node, callTimeoutMs) =>
      node.coordinatorCall<RegisterParticipantRequest, RegisterParticipantResponse>(
        'RegisterParticipant',
        { clusterId: this.clusterId, participantId: id, endpoint, resourceKind: 'memory', serves: [] },
        callTimeoutMs,
      ),
    );
    if (r.participant?.endpoint !== endpoint) throw new Error(`register ${id}: answered ${JSON.stringify(r)}`);
  }

  /** `call` on the leader, retried (following redirects) until it answers or `timeoutMs` passes. */
  private async onLeader<T>(
    what: string,
    timeoutMs: number,
    call: (node: NodeProc, callTimeoutMs: number) => Promise<T>,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    const first = this.leaderHint?.running ? [this.leaderHint] : [];
    const finder = new LeaderFinder(
      [...first, ...this.running(), ...this.nodes].map((n) => n.address),
      { redirectsMax: this.nodes.length + 2 },
    );
    try {
      const { node, r } = await callLeader(
        finder,
        async (address) => {
          const node = this.nodes.find((n) => n.address === address);
          if (!node?.running) throw new Error(`${address} is not running`);
          return { node, r: await call(node, Math.max(500, Math.min(5_000, deadline - Date.now()))) };
        },
        // Every failure is worth another try until the deadline: the cluster may be electing, or the node restarting.
        {
          retryable: (err) => ({
            why: (err as grpc.ServiceError).details || (err as Error).message,
            hint: namedLeader(err),
          }),
          roundsMax: Math.ceil(timeoutMs / POLL_MS) + 1,
          pauseMs: () => POLL_MS,
          giveUpAtMs: deadline,
        },
      );
      this.leaderHint = node;
      return r;
    } catch (err) {
      if (!(err instanceof NoLeaderError)) throw err;
      this.leaderHint = null;
      const e = err.last as grpc.ServiceError | null;
      throw new Error(
        `${what} was not acknowledged within ${timeoutMs} ms: ${e?.details || e?.message || 'no running node'}`,
      );
    }
  }

  /** Runs `f(i)` for i in [0, count) with at most `inFlight` at once; rejects on the first failure. */
  static async pool(count: number, inFlight: number, f: (i: number) => Promise<void>): Promise<void> {
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      try {
        while (next < count && !failed) await f(next++);
      } catch (err) {
        // The others stop taking work, so nothing keeps running after the test fails.
        failed = true;
        throw err;
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
  }

  printLogTails(): void {
    printLogTails(this.nodes);
  }

  /** Kills every node (SIGKILL) and deletes the temp dir unless `keep`. */
  async destroy(keep = false): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    clusters.delete(this);
    await Promise.all(this.nodes.map((n) => n.kill('SIGKILL')));
    dirs.delete(this.dir);
    if (keep) console.error(`kept ${this.dir} for inspection`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One CLI invocation run to completion (bounded). */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

/**
 * The environment of the CLI processes tests start: plaintext said
 * explicitly (the harness's clusters serve it; TLS flags still win), and
 * the local cluster's certificate folder in a temp dir, never the user's.
 */
export function cliEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, VERDICT_INSECURE: 'true', VERDICT_CONFIG_DIR: configDir(), ...env };
}

let configDirOfFile: string | null = null;
/**
 * This file's stand-in for ~/.config/verdict (VERDICT_CONFIG_DIR), made on first use and removed with the file's temp
 * dirs.
 */
export function configDir(): string {
  if (configDirOfFile === null || !existsSync(configDirOfFile)) configDirOfFile = fileTempDir('verdict-config-');
  return configDirOfFile;
}

export async function runCli(
  args: string[],
  o: { timeoutMs?: number; cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  const timeoutMs = o.timeoutMs ?? 15_000;
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: o.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: cliEnv(o.env),
  });
  const proc = { killNow: () => child.kill('SIGKILL') };
  cliChildren.add(proc);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  try {
    return await new Promise<CliResult>((res, rej) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        rej(new Error(`verdict ${args.join(' ')} did not exit within ${timeoutMs} ms; stderr so far:\n${stderr}`));
      }, timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        rej(err);
      });
      // 'close': both pipes are drained.
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        res({ code, signal, stdout, stderr, elapsedMs: Date.now() - started });
      });
    });
  } finally {
    cliChildren.delete(proc);
  }
}

/** Recursive listing with a sha256 of each file: equal fingerprints mean an untouched tree. */
export function fingerprint(dir: string): string {
  if (!existsSync(dir)) return '(missing)';
  const lines: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) {
        lines.push(`${relative(dir, p)}/`);
        walk(p);
      } else {
        lines.push(`${relative(dir, p)} ${st.size} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`);
      }
    }
  };
  walk(dir);
  return lines.join('\n');
}

/**
 * What cleanup() owns. Things made inside a test (between beforeEach and
 * afterEach) are cleaned after that test; things made in beforeAll (or
 * outside vitest) live until afterAll.
 */
type Scope = 'test' | 'file';
let scope: Scope = 'file';
let failedInFile = false;
const clusters = new Map<Cluster, Scope>();
const dirs = new Map<string, Scope>();
/** Every node process started and not yet seen dead, whatever its scope: the last-resort kill list. */
const live = new Set<NodeProc>();
const cliChildren = new Set<{ killNow(): void }>();

export function printLogTails(nodes: Iterable<NodeProc>): void {
  for (const n of nodes) console.error(`----- ${n.id} (${n.address}) log tail, from ${n.logFile}:\n${n.logTail()}\n`);
}

/**
 * Kills the children of the given scopes (every child for 'file', which
 * includes 'test'). After a failure each node's log tail is printed first
 * and the temp dirs are kept for a closer look; otherwise they are deleted
 * (unless VERDICT_KEEP_TEST_DIRS=1).
 */
export async function cleanup(which: Scope = 'file', failed = false): Promise<void> {
  const mine = (s: Scope): boolean => which === 'file' || s === 'test';
  const keep = failed || failedInFile || process.env.VERDICT_KEEP_TEST_DIRS === '1';
  if (failed) printLogTails([...clusters.keys()].flatMap((c) => c.nodes));
  for (const c of cliChildren) c.killNow();
  await Promise.all([...clusters].filter(([, s]) => mine(s)).map(([c]) => c.destroy(keep)));
  if (which === 'file') await Promise.all([...live].map((n) => n.kill('SIGKILL')));
  for (const [d, s] of dirs) {
    if (!mine(s)) continue;
    dirs.delete(d);
    if (keep) console.error(`kept ${d} for inspection`);
    // Retried: a child killed a moment ago may still be writing in it.
    else rmSync(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
}

let installed = false;

/** Installs the cleanup hooks in the calling test file. */
export function useProcessCleanup(): void {
  beforeEach(() => {
    scope = 'test';
  });
  afterEach(async ({ task }: TestContext) => {
    scope = 'file';
    const failed = task.result?.state === 'fail';
    failedInFile ||= failed;
    await cleanup('test', failed);
  });
  // vitest reads the first parameter as fixtures (it must be destructured); the suite comes second.
  // eslint-disable-next-line no-empty-pattern
  afterAll(async ({}, file) => {
    // A failed beforeAll fails no test of its own (its errors sit on the suite): print the logs here.
    const hookFailed = (t: unknown): boolean => {
      const task = t as { type?: string; result?: { errors?: unknown[] }; tasks?: unknown[] };
      if (task.type === 'test') return false;
      return (task.result?.errors?.length ?? 0) > 0 || (task.tasks ?? []).some(hookFailed);
    };
    const failed = hookFailed(file);
    await cleanup('file', failed);
  });
  if (!installed) {
    installed = true;
    // If the worker goes down some other way, do not leave nodes behind.
    process.once('exit', () => {
      for (const n of live) n.killNow();
      for (const c of cliChildren) c.killNow();
    });
  }
}
