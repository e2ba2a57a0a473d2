// `verdict cluster up`: a local cluster in the foreground, one process per
// node, serving mutual TLS with the local cluster's CA and certificates,
// made on the first start outside the checkout (~/.config/verdict/local/,
// src/transport/local-cluster.ts; `verdict certs` makes them). Plaintext
// only with --insecure: then three nodes on the default ports use the ready
// configs in cluster/ (which say "insecure": true); everything else gets
// generated configs.
//
// The launcher owns its nodes: SIGTERM, SIGINT and SIGHUP are forwarded to
// every node and the launcher waits until each has stopped; a node whose
// launcher dies (even by SIGKILL) stops too, because it watches the IPC
// channel to its parent (see runNode in main.ts). So no node outlives the
// `npm start` that made it and holds its port for the next one.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../node/config.ts';
import { logFormat } from '../node/logger.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';
import { foundDataDir, raftStateIn, type RaftDirState } from '../storage/founding.ts';
import { bool, UsageError } from './args.ts';
import { ensureLocalClusterCerts } from './certs.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'verdict.mjs');
export const DEFAULT_BASE_PORT = 7001;
/** Metrics ports sit this far above the node ports (7001 → 9101). */
export const METRICS_OFFSET = 2_100;
/** With TLS, the HTTPS web console's ports sit this far above the node ports (7001 → 9201). */
export const CONSOLE_OFFSET = 2_200;
/** How often the launcher checks that its parent (npm, a shell) is still there. */
const PARENT_POLL_MS = 500;
/** How long the launcher waits for its nodes to stop before it kills them. */
const STOP_WAIT_MS = 10_000;

/** Set in the nodes' environment: they treat the IPC channel to their parent as a lifeline (main.ts). */
export const LAUNCHER_ENV = 'VERDICT_LAUNCHED_BY_CLUSTER_UP';

/** The message the launcher sends its nodes before SIGTERM: the whole cluster stops, so a leader need not hand over. */
export const CLUSTER_STOP_MESSAGE = 'verdict:cluster-stop';

export interface ClusterUpOptions {
  nodes: number;
  /** The first node's port; node i listens on basePort + i - 1. */
  basePort?: number;
  /** Where generated configs and the nodes' data go; `data/` of the checkout by default. */
  dataDir?: string;
  /**
   * A folder made by `verdict certs`: every node serves mutual TLS with DIR/ca.crt and DIR/<nodeId>.crt, admin
   * ops-admin.
   */
  tlsDir?: string;
  /**
   * Plaintext, chosen knowingly (--insecure); otherwise clusterUp() serves TLS, with the local cluster's certificates
   * when tlsDir is not given.
   */
  insecure?: boolean;
}

export function localConfigs(o: ClusterUpOptions): string[] {
  const n = o.nodes;
  const basePort = o.basePort ?? DEFAULT_BASE_PORT;
  if (n === 3 && basePort === DEFAULT_BASE_PORT && o.dataDir === undefined && o.tlsDir === undefined)
    return [1, 2, 3].map((i) => join(ROOT, 'cluster', `n${i}.json`));
  const dir = join(
    resolve(o.dataDir ?? join(ROOT, 'data')),
    `cluster-${n}-${basePort}${o.tlsDir !== undefined ? '-tls' : ''}`,
  );
  const tlsDir = o.tlsDir === undefined ? undefined : resolve(o.tlsDir);
  mkdirSync(dir, { recursive: true });
  const peers: Record<string, string> = {};
  for (let i = 1; i <= n; i++) peers[`n${i}`] = `127.0.0.1:${basePort + i - 1}`;
  const files: string[] = [];
  for (let i = 1; i <= n; i++) {
    const file = join(dir, `n${i}.json`);
    // The cluster id goes into certificates (OU), so the TLS cluster keeps the name `verdict certs` uses by default.
    const clusterId = (n === 3 && basePort === DEFAULT_BASE_PORT) || tlsDir !== undefined ? 'local' : `local-${n}`;
    const tls =
      tlsDir === undefined
        ? {}
        : {
            tls: {
              ca: join(tlsDir, 'ca.crt'),
              cert: join(tlsDir, `n${i}.crt`),
              key: join(tlsDir, `n${i}.key`),
              adminNames: ['ops-admin'],
            },
          };
    const cfg = {
      clusterId,
      nodeId: `n${i}`,
      listen: peers[`n${i}`],
      metricsListen: `127.0.0.1:${basePort + METRICS_OFFSET + i - 1}`,
      // With TLS, actions from the web console need the browser's admin certificate, over HTTPS (docs/console.md).
      ...(tlsDir !== undefined ? { consoleListen: `127.0.0.1:${basePort + CONSOLE_OFFSET + i - 1}` } : {}),
      dataDir: `n${i}`,
      peers,
      tickMs: 100,
      electionTicks: 10,
      heartbeatTicks: 1,
      snapshotEntries: 10000,
      snapshotLogRatio: 1,
      logLevel: 'info',
      ...(tlsDir === undefined ? { insecure: true } : tls),
    };
    writeFileSync(file, JSON.stringify(cfg, null, 2) + '\n');
    files.push(file);
  }
  return files;
}

/** The ports the cluster needs that something else already holds. */
export async function portsInUse(ports: number[]): Promise<number[]> {
  const busy: number[] = [];
  for (const port of ports) {
    const free = await new Promise<boolean>((res) => {
      const s = createServer();
      s.once('error', () => res(false));
      s.listen({ host: '127.0.0.1', port, exclusive: true }, () => s.close(() => res(true)));
    });
    if (!free) busy.push(port);
  }
  return busy;
}

export function parseClusterUpArgs(
  args: string[],
  flag: (args: string[], name: string) => string | undefined,
): ClusterUpOptions {
  const n = Number(flag(args, '--nodes') ?? 3);
  if (![1, 3, 5].includes(n)) throw new UsageError('--nodes must be 1, 3 or 5');
  const baseText = flag(args, '--base-port');
  const basePort = baseText === undefined ? DEFAULT_BASE_PORT : Number(baseText);
  if (!Number.isInteger(basePort) || basePort < 1024 || basePort + n - 1 + CONSOLE_OFFSET > 65_535)
    throw new UsageError(
      `--base-port must be an integer from 1024 to ${65_535 - CONSOLE_OFFSET - n + 1}, not "${baseText}"`,
    );
  const dataDir = flag(args, '--data');
  const tlsDir = flag(args, '--tls');
  const insecure = bool(args, '--insecure');
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; usage: ${CLUSTER_UP_USAGE}`);
  if (insecure && tlsDir !== undefined) throw new UsageError('--insecure and --tls were both given: choose one');
  if (tlsDir !== undefined) {
    const missing = ['ca', ...Array.from({ length: n }, (_, i) => `n${i + 1}`)]
      .map((f) => join(tlsDir, `${f}.crt`))
      .filter((f) => !existsSync(f));
    if (missing.length > 0)
      throw new UsageError(
        `--tls ${tlsDir}: missing ${missing.join(', ')}; make them with: npx verdict certs --dir ${tlsDir} --nodes ${n}${basePort !== DEFAULT_BASE_PORT ? ` --base-port ${basePort}` : ''}`,
      );
  }
  return {
    nodes: n,
    basePort,
    ...(dataDir !== undefined ? { dataDir } : {}),
    ...(tlsDir !== undefined ? { tlsDir } : {}),
    ...(insecure ? { insecure } : {}),
  };
}

export const CLUSTER_UP_USAGE =
  'verdict cluster up [--nodes N] [--base-port PORT] [--data DIR] [--tls CERTS-DIR | --insecure]';

/**
 * Mutual TLS unless --insecure: without --tls, the local cluster's certificates, made where missing (on the first
 * start).
 */
function withTls(o: ClusterUpOptions): ClusterUpOptions {
  if (o.tlsDir !== undefined || o.insecure === true) return o;
  const tlsDir = ensureLocalClusterCerts(o.nodes, o.basePort ?? DEFAULT_BASE_PORT, (line) =>
    process.stderr.write(`verdict: ${line.replace(/\s+/g, ' ')}\n`),
  );
  return { ...o, tlsDir };
}

export async function clusterUp(options: ClusterUpOptions): Promise<void> {
  const n = options.nodes;
  const basePort = options.basePort ?? DEFAULT_BASE_PORT;
  const nodePorts = Array.from({ length: n }, (_, i) => basePort + i);
  const metricsPorts = nodePorts.map((p) => p + METRICS_OFFSET);
  if (options.insecure !== true) metricsPorts.push(...nodePorts.map((p) => p + CONSOLE_OFFSET));
  // A second `npm start` (or anything else on these ports) is told so once,
  // before any node starts, instead of three nodes each failing on its own.
  const busy = await portsInUse([...nodePorts, ...metricsPorts]);
  if (busy.length > 0) {
    process.stderr.write(
      `verdict: cannot start the local cluster: 127.0.0.1 port${busy.length > 1 ? 's' : ''} ${busy.join(', ')} ${busy.length > 1 ? 'are' : 'is'} in use. ` +
        `Another cluster may be running (try \`npx verdict status\`); stop it, or pick other ports with --base-port\n`,
    );
    process.exitCode = 1;
    return;
  }
  const o = withTls(options);
  const configs = localConfigs(o);
  await foundOnFirstStart(configs);
  const children = new Map<string, ChildProcess>();
  let stopping = false;
  for (const [i, file] of configs.entries()) {
    const id = `n${i + 1}`;
    // The children's stderr is a pipe to us: tell them whether a person is watching.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      VERDICT_LOG_FORMAT: process.env.VERDICT_LOG_FORMAT ?? logFormat(),
    };
    // The local cluster's configs are complete: node config overrides meant for
    // a single node or for client commands (VERDICT_NODE_ID, VERDICT_TLS_CA, ...)
    // would turn three nodes into three copies of one, or half-configure TLS.
    for (const key of Object.keys(OVERRIDABLE)) delete env[envName(key)];
    env[LAUNCHER_ENV] = '1';
    // The IPC channel is the node's lifeline: when it closes (we died), the node stops.
    const child = spawn(process.execPath, [BIN, 'node', '--config', file], {
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      env,
    });
    children.set(id, child);
    // Log lines name their node themselves (`[n1 pid 4242]` in the pretty
    // format, "node" in JSON); anything else a node prints (a refusal to
    // start) gets the node id in front, so three streams stay readable.
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) =>
      process.stderr.write(isLogLine(line) ? `${line}\n` : `[${id}] ${line}\n`),
    );
    // 'close', not 'exit': the node's last log lines must be read before we go.
    child.on('close', (code, signal) => {
      children.delete(id);
      if (!stopping)
        process.stderr.write(
          `[${id}] exited (${signal ?? `code ${code}`}); the other nodes keep running. Restart it with: npx verdict node --config ${file}\n`,
        );
      if (children.size === 0) process.exit(stopping ? 0 : 1);
    });
  }
  const pids = [...children].map(([id, c]) => `${id} pid ${c.pid}`).join(', ');
  process.stderr.write(
    `verdict: local cluster of ${n} node(s) on 127.0.0.1:${basePort}${n > 1 ? `-${basePort + n - 1}` : ''} (${pids}), metrics on http://127.0.0.1:${metricsPorts[0]}/metrics${n > 1 ? ` (-${metricsPorts[n - 1]})` : ''}; ` +
      `${o.tlsDir !== undefined ? `mutual TLS with the certificates in ${resolve(o.tlsDir)}` : 'PLAINTEXT (--insecure)'}; try \`npx verdict status\`; Ctrl-C stops it\n`,
  );
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(
      `verdict: ${process.ppid !== parentPid ? 'the process that started us is gone' : signal}: stopping the cluster\n`,
    );
    for (const c of children.values()) {
      // Tell the node the whole cluster stops (so a leader that cannot hand over is expected), then stop it.
      if (c.connected) c.send(CLUSTER_STOP_MESSAGE, () => {});
      c.kill('SIGTERM');
    }
    // A node that does not stop in time is killed; the launcher still waits for its 'close'.
    setTimeout(() => {
      for (const c of children.values()) c.kill('SIGKILL');
    }, STOP_WAIT_MS).unref();
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => stop(sig));
  // `npm start` runs us under `sh -c`, and SIGTERM to npm ends that shell
  // without passing the signal on: we are reparented. A launcher whose parent
  // is gone stops the cluster, as if it had been told to.
  const parentPid = process.ppid;
  setInterval(() => {
    if (process.ppid !== parentPid) stop('SIGHUP');
  }, PARENT_POLL_MS).unref();
}

/**
 * The first start of a new local cluster is its founding (the act that
 * \`verdict cluster init\` is for other clusters; docs/storage.md): when no
 * node's data directory holds Raft state, each is founded before any node
 * starts. When some do, the cluster exists: nothing is founded, and a node
 * whose directory is empty (deleted, or a new disk) starts rejoining — it
 * votes once a leader has caught it up, and says so here.
 */
export async function foundOnFirstStart(configs: string[]): Promise<'founded' | 'exists'> {
  const nodes: {
    id: string;
    dir: string;
    identity: { clusterId: string; nodeId: string };
    groups: number;
    state: RaftDirState | null;
  }[] = [];
  for (const file of configs) {
    const cfg = loadConfig(file, { env: {}, sets: [] });
    const identity = { clusterId: cfg.clusterId, nodeId: cfg.nodeId };
    // A directory that cannot be read is left to the node, which refuses it with the reason.
    const state = await raftStateIn(cfg.dataDir, identity, cfg.groups).catch(() => null);
    nodes.push({ id: cfg.nodeId, dir: cfg.dataDir, identity, groups: cfg.groups, state });
  }
  if (nodes.every((n) => n.state?.kind === 'empty')) {
    for (const n of nodes) await foundDataDir(n.dir, n.identity, n.groups);
    process.stderr.write(
      `verdict: first start: founded a new cluster of ${nodes.length} node(s) in ${nodes.length > 1 ? dirname(nodes[0].dir) : nodes[0].dir}\n`,
    );
    return 'founded';
  }
  for (const n of nodes) {
    if (n.state?.kind === 'empty' || (n.state?.kind === 'state' && n.state.rejoining))
      process.stderr.write(
        `verdict: [${n.id}] ${n.dir} holds no Raft state of its own: ${n.id} rejoins the cluster and votes once a leader has caught it up\n`,
      );
  }
  return 'exists';
}

/** A pino line: JSON, or the pretty format's `HH:MM:SS.mmm LEVEL` start. */
export function isLogLine(line: string): boolean {
  return line.startsWith('{"level"') || /^\d\d:\d\d:\d\d\.\d{3} /.test(line);
}
