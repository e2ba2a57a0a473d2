// Decision groups (docs/architecture.md, "Decision groups"): the same
// cluster founded with G = 1, 2 and 4 groups, leaders spread over the nodes
// (`spreadLeaders` in every node's config), two memory participants, the
// load generator of the concurrency sweep (bench/harness/loadgen.ts, classic
// two-phase commit) at a few client counts; the peak is the best of them, as
// peak_tps is the best of the sweep. At each point, over exactly the load
// generator's measured window:
//   - CPU per committed transaction of every node process, and of the
//     participants and the load generator apart (bench/harness/cpu-sample.ts);
//     on a machine of few cores this is the figure that must not rise with G;
//   - fsyncs: each node's segment-log fsyncs (the shared writer's at G > 1,
//     its synced persists at G = 1: one each) and group batches per fsync,
//     from the nodes' metrics, and the disk's own flush count
//     (bench/harness/disk-flushes.ts; other work on the disk counts too);
//   - messages: Raft messages (and the stream writes they went in) and
//     participant requests and answers, from the nodes' metrics;
//   - where each group's leader was before and after the window.
// Each G of `together` is measured once more on the first cluster size with
// every group's leader on one node (`spreadLeaders` off, each group moved
// there with `verdict leader transfer --group`): beside G = 1, that is what
// the groups themselves cost, apart from spreading the leaders (each node's
// batches then carry its share of the transactions only).
// The capacity model (bench/analysis/scale-model.ts) is fitted to these
// points by bench/analysis/groups-model.ts; its shapes are declared here,
// with the rest of the results file's `groups` key.
//
// `npm run bench -- groups` runs it alone (bench/analysis/groups-run.ts);
// bench/main.ts runs measureGroups() in the full run under the results key
// `groups`.

import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { VerdictClient } from '../../src/client/client.ts';
import { preferredLeader } from '../../src/node/group-host.ts';
import { childProc, cpuMsOf, CpuWindow, type CpuFigures } from '../harness/cpu-sample.ts';
import { flushCounterOrNull, usPerFlush, type FlushReading } from '../harness/disk-flushes.ts';
import type { CommitLoad, LoadResult } from '../harness/loadgen.ts';
import { countsBetween, scrapeNode, type NodeCounts } from '../harness/node-metrics.ts';
import { BenchCluster, runJsonChild, sleep } from '../harness/procs.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';

export interface GroupsOptions {
  nodes: number[];
  groups: number[];
  clients: number[];
  warmupMs: number;
  measureMs: number;
  /** How long to wait for the leaders to reach their preferred nodes before measuring anyway. */
  spreadWaitMs: number;
  /** A window with no load before the first: what the nodes spend on ticks and heartbeats alone. */
  idleMs: number;
  /** Group counts measured again on nodes[0] nodes with every leader on one node. */
  together: number[];
  log: (line: string) => void;
}

export function groupsPlan(quick: boolean): Omit<GroupsOptions, 'log'> {
  return quick
    ? {
        nodes: [3],
        groups: [1, 2, 4],
        clients: [16, 64, 256],
        warmupMs: 1_500,
        measureMs: 3_000,
        spreadWaitMs: 15_000,
        idleMs: 3_000,
        together: [4],
      }
    : {
        nodes: [3, 5],
        groups: [1, 2, 4],
        // Up to 4 × 256: G = 4 gets windows with as many transactions in flight per group as G = 1 has at 16, 64
        // and 256 (the comparison at equal load per group, bench/report/groups-section.ts).
        clients: [16, 64, 256, 1024],
        warmupMs: 10_000,
        measureMs: 8_000,
        spreadWaitMs: 30_000,
        idleMs: 5_000,
        together: [4],
      };
}

export interface GroupsWindow {
  clients: number;
  tps: number;
  p50_us: number;
  p99_us: number;
  aborted: number;
  errors: number;
  load_avg: number;
  cpu: CpuFigures | null;
  /** Every node's CPU ms per committed transaction, and the groups it led. */
  by_node: { node: string; groups_led: number; cpu_ms_per_txn: number; raft_bytes_per_txn: number }[];
  cpu_ms_per_txn_nodes: number;
  cpu_ms_per_txn_participants: number;
  cpu_ms_per_txn_loadgen: number;
  /** Segment fsyncs per committed transaction, every node together; and per node. */
  fsyncs_per_txn: number;
  fsyncs_per_txn_per_node: number;
  /** Group batches (synced persists of a group) per segment fsync: above 1 when groups share a sync. */
  group_batches_per_fsync: number;
  /** The disk's own flushes per committed transaction and their mean time; null where the device has no counters. */
  disk_flushes_per_txn: number | null;
  disk_us_per_flush: number | null;
  raft_messages_per_txn: number;
  raft_stream_writes_per_txn: number;
  raft_bytes_per_txn: number;
  participant_messages_per_txn: number;
  participant_grpc_messages_per_txn: number;
}

export interface GroupsPoint {
  nodes: number;
  groups: number;
  peak_tps: number;
  peak_clients: number;
  p50_us_at_peak: number;
  /** Each group's leader (index = group) before the first window and after the last. */
  leaders_before: string[];
  leaders_after: string[];
  /**
   * With no load: every node's CPU ms a second and Raft messages a second, all nodes together (ticks, heartbeats and
   * their answers: a cost per group, not per transaction), and the stream writes they went in (every group's
   * heartbeats of one tick to one peer share a write).
   */
  idle: { cpu_ms_per_s: number; raft_messages_per_s: number; raft_stream_writes_per_s: number; load_avg: number };
  /** Every group led by its preferred node (group g by node g mod N) before the windows. */
  spread: boolean;
  /** Every group's leader put on one node (spreadLeaders off); absent in results of earlier runs. */
  together?: boolean;
  windows: GroupsWindow[];
}

/** The capacity model's parameters (bench/analysis/scale-model.ts, fitParams). */
export interface ScaleParams {
  /** A node's CPU a second with no load: base + groups × perGroup, ms. */
  idleMsPerSecBase: number;
  idleMsPerSecPerGroup: number;
  /** The leader's CPU per transaction apart from replication, batches and idle work, ms. */
  leaderBaseMs: number;
  /** CPU per transaction of each follower, and of the leader for each follower it replicates to, ms. */
  perFollowerMs: number;
  /**
   * The leader's CPU per group batch apart from replication (participant batch, its persist, the engine's turn), ms.
   */
  leaderBatchMs: number;
  /** CPU per group batch of each follower (append, persist, ack), and of the leader for each follower, ms. */
  perFollowerBatchMs: number;
  /** Root mean square of the node figures' relative difference from the fit. */
  nodeResidual: number;
  /** Participants and clients, CPU ms per transaction and per group batch (off the node machines in a deployment). */
  clientMs: number;
  clientBatchMs: number;
  /**
   * The group batches a transaction waits through (at G = 1, and at G > 1): a batch carries max(1, transactions in
   * flight / G) / phases.
   */
  phasesOneGroup: number;
  phases: number;
  /** Raft bytes per transaction the leader sends to one follower. */
  leaderBytesPerFollower: number;
  /** Raft bytes per transaction a follower sends back to the leader. */
  followerBytes: number;
  /** Raft messages and participant requests and answers per transaction (the G = 1 windows' mean). */
  raftMessagesPerTxn: number;
  participantMessagesPerTxn: number;
  /** The points the parameters came from (nodes × groups). */
  fittedOn: string[];
}

/** The model's throughput for a shape, and which ceiling sets it. */
export interface Prediction {
  tps: number;
  bound: 'cpu' | 'disk' | 'network';
  cpuTps: number;
  diskTps: number;
  networkTps: number;
  /** Of the transactions, the share the busiest machine leads. */
  busiestLeaderShare: number;
  /** CPU ms per transaction on the busiest machine at tps, idle work left out. */
  busiestCpuMsPerTxn: number;
  /** CPU ms a second a node spends with no load. */
  idleMsPerSec: number;
  /** Transactions per group batch at tps. */
  txnsPerBatch: number;
  /** The cores of a machine the node keeps busy (one event loop: about one). */
  usableCores: number;
  /** The latency the clients accept, ms, and the transactions they then keep in flight at tps (Little's law). */
  latencyMs: number;
  inFlight: number;
}

/**
 * One loaded window beside the model's prediction for this machine; errors are (measured − predicted) / predicted.
 * CPU per transaction is every sampled process's (nodes, participants, load generator, idle work included),
 * predicted at the measured throughput with the batch size the model expects there; at_measured_batches uses the
 * measured batch size instead (the costs alone, without the batch-size model). The throughput is predicted for the
 * CPU the window's processes got (busy × cores: other work on the machine took the rest), and, as ceiling_tps, for
 * every core.
 */
export interface ValidationRow {
  nodes: number;
  groups: number;
  clients: number;
  /** The point's peak window. */
  peak: boolean;
  measured_tps: number;
  predicted_tps: number;
  error: number;
  ceiling_tps: number;
  measured_cpu_ms_per_txn: number;
  predicted_cpu_ms_per_txn: number;
  cpu_error: number;
  cpu_ms_per_txn_at_measured_batches: number;
  cpu_error_at_measured_batches: number;
  measured_txns_per_batch: number;
  predicted_txns_per_batch: number;
  /** Of the window, the fraction of all cores the sampled processes kept busy. */
  busy: number;
  load_avg: number;
}

export interface GroupsFigures {
  settings: Omit<GroupsOptions, 'log' | 'together'> & {
    /** Absent in results of earlier runs. */
    together?: number[];
    cores: number;
    participants: number;
    commit: 'classic';
  };
  points: GroupsPoint[];
  /** The disk's mean time per flush over the windows (1 ms when the device has no counters): the model's fsync time. */
  fsync_ms: number;
  model: GroupsModel | null;
}

/** The least and greatest of a set of errors, and their mean absolute value. */
export interface ErrorRange {
  min: number;
  max: number;
  mean_abs: number;
}

/** The capacity model fitted to the points (bench/analysis/groups-model.ts). */
export interface GroupsModel {
  params: ScaleParams;
  /** Every loaded window beside the model fitted on every point (in sample). */
  validation: ValidationRow[];
  /** Each nodes × G point left out in turn: fitted on the others, predicting its windows. */
  leave_one_out: ValidationRow[];
  /** Fitted on the smallest cluster's points alone, predicting the larger clusters' windows. */
  validation_from_smallest: ValidationRow[];
  /** The error ranges of leave_one_out and validation_from_smallest. */
  errors: {
    leave_one_out: { cpu: ErrorRange; tps: ErrorRange };
    from_smallest: { cpu: ErrorRange; tps: ErrorRange } | null;
  };
  /** The prediction for 9 machines of 16 cores, one node each, G chosen by the model. */
  nine_by_16: {
    groups: number;
    assumptions: {
      fsync_ms: number;
      network_gbit_s: number;
      cores_per_node: number;
      latency_ms: number;
      low_latency_ms: number;
    };
    prediction: Prediction;
    at_g1: Prediction;
    /** The same shape if a node kept every core of its machine busy: the bound the event loop keeps it from. */
    every_core: { groups: number; prediction: Prediction };
    /** The same with clients that accept only low_latency_ms: fewer in flight, smaller batches. */
    low_latency: { groups: number; prediction: Prediction };
  };
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Each group's leader as the node at `endpoint` sees it. */
async function groupLeaders(client: VerdictClient, groups: number): Promise<string[]> {
  const st = await client.status({ callTimeoutMs: 2_000 });
  const out = Array.from({ length: groups }, () => '');
  for (const g of st.groups ?? []) if (g.group < groups) out[g.group] = g.leaderId;
  return out;
}

/** Waits until every group is led by its preferred node, or waitMs; returns the leaders then and whether they were. */
async function waitForSpread(
  cluster: BenchCluster,
  groups: number,
  waitMs: number,
): Promise<{ leaders: string[]; spread: boolean }> {
  const ids = cluster.nodes.map((n) => n.id);
  const client = new VerdictClient({ insecure: true, endpoints: cluster.endpoints, clusterId: cluster.clusterId });
  try {
    const deadline = Date.now() + waitMs;
    let leaders: string[] = [];
    for (;;) {
      leaders = await groupLeaders(client, groups).catch(() => leaders);
      const spread = leaders.length === groups && leaders.every((l, g) => l === preferredLeader(g, ids));
      if (spread || groups === 1 || Date.now() >= deadline) return { leaders, spread: groups > 1 && spread };
      await sleep(250);
    }
  } finally {
    client.close();
  }
}

/**
 * Moves every group's leader to the first node (`verdict leader transfer --group`'s call, forced), until all are there
 * or waitMs; returns the leaders then and whether they all were.
 */
async function gatherLeaders(
  cluster: BenchCluster,
  groups: number,
  waitMs: number,
): Promise<{ leaders: string[]; together: boolean }> {
  const target = cluster.nodes[0];
  const client = new VerdictClient({ insecure: true, endpoints: cluster.endpoints, clusterId: cluster.clusterId });
  const admins = new Map(cluster.nodes.map((n) => [n.id, new RaftNodeClient(n.address)]));
  try {
    const deadline = Date.now() + waitMs;
    let leaders: string[] = [];
    for (;;) {
      leaders = await groupLeaders(client, groups).catch(() => leaders);
      const together = leaders.length === groups && leaders.every((l) => l === target.id);
      if (together || Date.now() >= deadline) return { leaders, together };
      await Promise.all(
        leaders.map(async (l, g) => {
          const admin = admins.get(l);
          if (l === target.id || admin === undefined) return;
          await admin
            .transferLeader({ to: target.id, group: g, timeoutMs: 5_000, force: true }, 10_000)
            .catch(() => {});
        }),
      );
      await sleep(250);
    }
  } finally {
    client.close();
    for (const a of admins.values()) a.close();
  }
}

async function scrapeAll(cluster: BenchCluster): Promise<Map<string, NodeCounts>> {
  const out = new Map<string, NodeCounts>();
  await Promise.all(
    cluster.nodes.map(async (n) => {
      if (n.metricsAddress) out.set(n.id, await scrapeNode(n.metricsAddress));
    }),
  );
  return out;
}

async function measureWindow(
  cluster: BenchCluster,
  dir: string,
  leaders: string[],
  clients: number,
  o: GroupsOptions,
  tag: string,
): Promise<GroupsWindow> {
  const participants = ['p1', 'p2'];
  const led = (id: string): number => leaders.filter((l) => l === id).length;
  const cpu = new CpuWindow(() => [
    ...cluster.nodes.flatMap((n) => childProc(led(n.id) > 0 ? 'leader' : 'follower', n.id, n.child)),
    ...participants.flatMap((p) => childProc('participant', p, cluster.participants.get(p))),
  ]);
  const flushes = flushCounterOrNull(cluster.dir);
  const marks: { counts: Promise<Map<string, NodeCounts>>; flush: FlushReading | null }[] = [];
  const cfg: CommitLoad = {
    mode: 'commit',
    workload: 'memory',
    endpoints: cluster.endpoints,
    participants,
    clients,
    warmupMs: o.warmupMs,
    measureMs: o.measureMs,
    keyPrefix: tag,
    txnTimeoutMs: 30_000,
    parallelCommit: false,
  };
  const r = await runJsonChild<LoadResult>(
    `load ${tag}`,
    'harness/loadgen.ts',
    cfg,
    join(dir, `load-${tag}.log`),
    o.warmupMs + o.measureMs + 90_000,
    {
      onLine: (line, child) => {
        cpu.onLine(line, child);
        if (line === 'window open' || line === 'window closed')
          marks.push({ counts: scrapeAll(cluster), flush: flushes.read?.() ?? null });
      },
    },
  );
  if (marks.length !== 2) throw new Error(`load ${tag} reported ${marks.length} of its two window marks`);
  const [a, b] = await Promise.all(marks.map((m) => m.counts));
  const txns = r.ok;
  const per = (x: number): number => (txns > 0 ? r3(x / txns) : 0);
  const deltas = cluster.nodes.map((n) => ({ id: n.id, d: countsBetween(a.get(n.id)!, b.get(n.id)!) }));
  const sum = (f: (d: NodeCounts) => number): number => deltas.reduce((t, x) => t + f(x.d), 0);
  const fsyncsOf = (d: NodeCounts): number => d.segmentSyncs ?? d.syncedPersists;
  const figures = cpu.figures(txns);
  const byNode = cluster.nodes.map((n) => ({
    node: n.id,
    groups_led: led(n.id),
    cpu_ms_per_txn: figures?.by_process.find((p) => p.label === n.id)?.ms_per_txn ?? 0,
    raft_bytes_per_txn: per(deltas.find((x) => x.id === n.id)!.d.raftBytes),
  }));
  const fa = marks[0].flush;
  const fb = marks[1].flush;
  return {
    clients,
    tps: r.tps,
    p50_us: r.latency.p50_us,
    p99_us: r.latency.p99_us,
    aborted: r.aborted,
    errors: Object.values(r.errors).reduce((t, x) => t + x, 0),
    load_avg: Math.round(loadavg()[0] * 100) / 100,
    cpu: figures,
    by_node: byNode,
    cpu_ms_per_txn_nodes: r3(byNode.reduce((t, x) => t + x.cpu_ms_per_txn, 0)),
    cpu_ms_per_txn_participants: figures?.by_kind.participant ?? 0,
    cpu_ms_per_txn_loadgen: figures?.by_kind.loadgen ?? 0,
    fsyncs_per_txn: per(sum(fsyncsOf)),
    fsyncs_per_txn_per_node: per(sum(fsyncsOf) / cluster.nodes.length),
    group_batches_per_fsync: sum(fsyncsOf) > 0 ? r3(sum((d) => d.syncedPersists) / sum(fsyncsOf)) : 0,
    disk_flushes_per_txn: fa !== null && fb !== null ? per(fb.flushes - fa.flushes) : null,
    disk_us_per_flush: fa !== null && fb !== null ? usPerFlush(fa, fb) : null,
    raft_messages_per_txn: per(sum((d) => d.raftMessages)),
    raft_stream_writes_per_txn: per(sum((d) => d.raftBatches)),
    raft_bytes_per_txn: per(sum((d) => d.raftBytes)),
    participant_messages_per_txn: per(sum((d) => d.participantRequests + d.participantAnswers)),
    participant_grpc_messages_per_txn: per(sum((d) => d.participantRequestMessages + d.participantAnswerMessages)),
  };
}

/** The nodes' CPU and Raft messages over windowMs with no load. */
async function idleWindow(cluster: BenchCluster, windowMs: number): Promise<GroupsPoint['idle']> {
  const cpuOf = (): number =>
    cluster.nodes.reduce((t, n) => {
      const s = n.child?.proc.pid === undefined ? null : cpuMsOf(n.child.proc.pid);
      return t + (s === null ? 0 : s.user + s.sys);
    }, 0);
  const a = await scrapeAll(cluster);
  const cpuA = cpuOf();
  const t0 = performance.now();
  await sleep(windowMs);
  const cpuB = cpuOf();
  const seconds = (performance.now() - t0) / 1000;
  const b = await scrapeAll(cluster);
  const messages = cluster.nodes.reduce((t, n) => t + countsBetween(a.get(n.id)!, b.get(n.id)!).raftMessages, 0);
  const writes = cluster.nodes.reduce((t, n) => t + countsBetween(a.get(n.id)!, b.get(n.id)!).raftBatches, 0);
  return {
    cpu_ms_per_s: r3((cpuB - cpuA) / seconds),
    raft_messages_per_s: r3(messages / seconds),
    raft_stream_writes_per_s: r3(writes / seconds),
    load_avg: Math.round(loadavg()[0] * 100) / 100,
  };
}

async function measurePoint(
  dir: string,
  nodes: number,
  groups: number,
  o: GroupsOptions,
  together = false,
): Promise<GroupsPoint> {
  const tag = `g${nodes}x${groups}${together ? '-together' : ''}`;
  const cluster = await BenchCluster.start(join(dir, tag), nodes, tag, 'warn', {
    groups,
    metrics: true,
    // The load generator is one client: at 1,024 in flight it would pass the per-client bound (clientInFlightMax,
    // 1,000 by default) and measure refusals, not commits.
    config: { spreadLeaders: !together, clientInFlightMax: 2_048 },
  });
  try {
    await cluster.startParticipants(['p1', 'p2']);
    const before = together
      ? await gatherLeaders(cluster, groups, o.spreadWaitMs).then((t) => ({ ...t, spread: false }))
      : { ...(await waitForSpread(cluster, groups, o.spreadWaitMs)), together: false };
    const placed = together
      ? before.together
        ? ` (together on ${cluster.nodes[0].id})`
        : ' (NOT together)'
      : before.spread
        ? ' (spread)'
        : groups > 1
          ? ' (NOT spread)'
          : '';
    o.log(`        ${tag}: leaders ${before.leaders.map((l, g) => `g${g}=${l || '-'}`).join(' ')}${placed}`);
    const idle = await idleWindow(cluster, o.idleMs);
    o.log(
      `        ${tag} idle: nodes ${idle.cpu_ms_per_s} ms CPU/s, ${idle.raft_messages_per_s} Raft messages/s in ${idle.raft_stream_writes_per_s} writes/s (load average ${idle.load_avg})`,
    );
    const windows: GroupsWindow[] = [];
    for (const clients of o.clients) {
      const w = await measureWindow(cluster, cluster.dir, before.leaders, clients, o, `${tag}-c${clients}`);
      windows.push(w);
      o.log(
        `        ${tag} ${clients} clients: ${w.tps} tx/s, p50 ${(w.p50_us / 1000).toFixed(2)} ms; CPU ms/tx nodes ${w.cpu_ms_per_txn_nodes} participants ${w.cpu_ms_per_txn_participants} loadgen ${w.cpu_ms_per_txn_loadgen}; fsyncs/tx ${w.fsyncs_per_txn} (${w.group_batches_per_fsync} group batches each); raft msgs/tx ${w.raft_messages_per_txn} in ${w.raft_stream_writes_per_txn} writes; participant msgs/tx ${w.participant_messages_per_txn} in ${w.participant_grpc_messages_per_txn} gRPC messages${w.errors ? `; ${w.errors} errors` : ''} (load average ${w.load_avg})`,
      );
    }
    const after = await (together ? gatherLeaders(cluster, groups, 0) : waitForSpread(cluster, groups, 0));
    const peak = windows.reduce((best, w) => (w.tps > best.tps ? w : best), windows[0]);
    return {
      nodes,
      groups,
      peak_tps: peak.tps,
      peak_clients: peak.clients,
      p50_us_at_peak: peak.p50_us,
      leaders_before: before.leaders,
      leaders_after: after.leaders,
      idle,
      spread: before.spread,
      ...(together ? { together: before.together } : {}),
      windows,
    };
  } finally {
    await cluster.destroy();
  }
}

export async function measureGroups(dir: string, o: GroupsOptions): Promise<GroupsFigures> {
  const points: GroupsPoint[] = [];
  for (const nodes of o.nodes)
    for (const groups of o.groups) {
      o.log(`        groups: ${nodes} nodes, G = ${groups}, 2 memory participants, clients ${o.clients.join('/')}`);
      points.push(await measurePoint(dir, nodes, groups, o));
    }
  for (const groups of o.together) {
    const nodes = o.nodes[0];
    o.log(`        groups: ${nodes} nodes, G = ${groups}, every leader on one node, clients ${o.clients.join('/')}`);
    points.push(await measurePoint(dir, nodes, groups, o, true));
  }
  const cores = availableParallelism();
  // The disk's own time per flush under the load, the mean over every window that read it; 1 ms when none did.
  const flushUs = points.flatMap((p) => p.windows.map((w) => w.disk_us_per_flush)).filter((x) => x !== null);
  const fsyncMs = flushUs.length > 0 ? flushUs.reduce((a, b) => a + b, 0) / flushUs.length / 1000 : 1;
  const { log: _log, ...settings } = o;
  return {
    settings: { ...settings, cores, participants: 2, commit: 'classic' },
    points,
    fsync_ms: r3(fsyncMs),
    // Fitted by bench/analysis/groups-model.ts (the analyses sit above the scenarios).
    model: null,
  };
}
