// The paired step of `npm run bench` (and `npm run bench -- paired`):
// the latency ratios the targets name, measured with every system up at
// once and one load generator taking them in turn (bench/harness/paired-plan.ts says
// why). Started here, on the same disk as the sweeps:
//
//   classic1   a 1-node cluster and two memory participants: classic 2PC
//   classic3   a 3-node cluster and two memory participants: classic 2PC
//   parallel3  the same cluster, parallel commit
//   raw3       the same cluster's raw log (100-byte Puts on the PutStream)
//   etcd3      etcd 3.4, three members (left out when etcd is missing)
//
// one operation in flight each. Before each segment the processes of every
// other system get SIGSTOP and the target's get SIGCONT, and the segment
// begins once /proc shows every one of the others stopped, so a segment has
// the cores as a sweep's scenario has them; everything is continued again
// before it is stopped.
import { join } from 'node:path';
import { flushCounterOrNull, roundFlushes, type FlushReading } from '../harness/disk-flushes.ts';
import { EtcdCluster, ensureEtcd } from '../harness/etcd.ts';
import {
  pairedRatio,
  pairedSpanMs,
  type PairedLoad,
  type PairedRatio,
  type PairedResult,
  type PairedTarget,
} from '../harness/paired-plan.ts';
import { procState } from '../harness/cpu-sample.ts';
import { BenchCluster, runJsonChild, sleep, type Child } from '../harness/procs.ts';
import { DRAIN_MS } from '../harness/window-marks.ts';

export interface PairedOptions {
  warmupMs: number;
  segmentMs: number;
  settleMs: number;
  rounds: number;
  log: (line: string) => void;
}

export interface PairedFigures {
  method: string;
  rounds: number;
  segment_ms: number;
  settle_ms: number;
  warmup_ms: number;
  /**
   * Per target: counted operations, p50/p99 over every round, each round's
   * p50, failures, and each round's mean µs per flush on the data disk
   * (null for a round with none; absent when the disk has no counters, and in
   * older files).
   */
  targets: Record<
    string,
    {
      count: number;
      aborted: number;
      errors: Record<string, number>;
      p50_us: number;
      p99_us: number;
      round_p50_us: number[];
      round_flush_us?: (number | null)[];
    }
  >;
  /** Why the rounds carry no flush times, when they do not. */
  flushes_skipped?: string | null;
  ratios: {
    latency_p50_3_over_1: PairedRatio;
    latency_p50_3_parallel_over_1: PairedRatio;
    raft_seq_p50_over_etcd: PairedRatio | null;
  };
  /** Term changes of each Verdict cluster over the step (a pause must not cost a leader). */
  leader_changes: { nodes1: number; nodes3: number };
  /** Why etcd3 is missing, when it is. */
  etcd_skipped: string | null;
}

/**
 * How long the paused systems may take to show as stopped before a segment begins (pairedSpanMs allows a second per
 * segment).
 */
const PAUSE_WAIT_MS = 1_000;

/** The processes of one system, paused together while another is measured. */
interface Group {
  name: string;
  children: () => Child[];
}

export async function measurePaired(dir: string, o: PairedOptions): Promise<PairedFigures> {
  const one = await BenchCluster.start(join(dir, 'nodes1'), 1, 'pair1');
  let three: BenchCluster | null = null;
  let etcd: EtcdCluster | null = null;
  const groups: Group[] = [];
  const signal = (g: Group, sig: 'SIGSTOP' | 'SIGCONT'): void => {
    for (const c of g.children()) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill(sig);
  };
  try {
    await one.startParticipants(['p1', 'p2']);
    three = await BenchCluster.start(join(dir, 'nodes3'), 3, 'pair3');
    await three.startParticipants(['p1', 'p2']);
    const bin = ensureEtcd(o.log);
    let etcdSkipped: string | null = null;
    if ('skipped' in bin) etcdSkipped = bin.skipped;
    else etcd = await EtcdCluster.start(bin, join(dir, 'etcd'));
    const c3 = three;
    const e = etcd;
    const ofCluster = (c: BenchCluster) => (): Child[] => [
      ...c.nodes.flatMap((n) => (n.child ? [n.child] : [])),
      ...c.participants.values(),
    ];
    groups.push({ name: 'nodes1', children: ofCluster(one) }, { name: 'nodes3', children: ofCluster(c3) });
    if (e !== null) groups.push({ name: 'etcd', children: () => e.members.map((m) => m.child) });

    const lead1 = await one.waitForLeader();
    const lead3 = await c3.waitForLeader();
    const memory = (
      c: BenchCluster,
      parallelCommit: boolean,
      keyPrefix: string,
    ): { kind: 'commit'; endpoints: string[]; participants: string[]; parallelCommit: boolean; keyPrefix: string } => ({
      kind: 'commit',
      endpoints: c.endpoints,
      participants: ['p1', 'p2'],
      parallelCommit,
      keyPrefix,
    });
    const targets: PairedTarget[] = [
      { label: 'classic1', ...memory(one, false, 'c1') },
      { label: 'classic3', ...memory(c3, false, 'c3') },
      { label: 'parallel3', ...memory(c3, true, 'p3') },
      { label: 'raw3', kind: 'raw', system: 'verdict', leader: lead3.address, valueBytes: 100 },
    ];
    if (e !== null)
      targets.push({ label: 'etcd3', kind: 'raw', system: 'etcd', leader: await e.leader(), valueBytes: 100 });
    const groupOf = (label: string): string =>
      label === 'classic1' ? 'nodes1' : label === 'etcd3' ? 'etcd' : 'nodes3';

    const cfg: PairedLoad = {
      mode: 'paired',
      targets,
      warmupMs: o.warmupMs,
      segmentMs: o.segmentMs,
      settleMs: o.settleMs,
      rounds: o.rounds,
      txnTimeoutMs: 30_000,
    };
    o.log(
      `        paired: ${targets.map((t) => t.label).join(', ')}; ${o.rounds} rounds of ${o.segmentMs} ms each after a ${o.warmupMs} ms warm-up each, the others paused`,
    );
    let failure: Error | null = null;
    // The disk's flush counters as each segment is announced (before the
    // handover), so a segment's flush time includes its handover and settle.
    const disk = flushCounterOrNull(dir);
    const starts: { label: string; at: FlushReading }[] = [];
    /** Pauses every system but the target's, waits until they show as stopped, then lets the load generator go. */
    const handover = async (k: string, label: string, child: Child): Promise<void> => {
      const active = groupOf(label);
      const paused = groups.filter((g) => g.name !== active);
      for (const g of paused) signal(g, 'SIGSTOP');
      for (const g of groups) if (g.name === active) signal(g, 'SIGCONT');
      const pids = paused.flatMap((g) => g.children().flatMap((c) => (c.proc.pid === undefined ? [] : [c.proc.pid])));
      // A process that is gone counts as stopped: it takes no core either.
      const t0 = performance.now();
      while (!pids.every((pid) => (procState(pid) ?? 'T') === 'T')) {
        if (performance.now() - t0 > PAUSE_WAIT_MS)
          throw new Error(
            `segment ${k} (${label}): the other systems' processes were not all stopped ${PAUSE_WAIT_MS} ms after SIGSTOP`,
          );
        await sleep(1);
      }
      child.proc.stdin?.write(`go ${k}\n`);
    };
    const r = await runJsonChild<PairedResult>(
      'paired load',
      'harness/loadgen.ts',
      cfg,
      join(dir, 'load-paired.log'),
      pairedSpanMs(cfg) + DRAIN_MS + 60_000,
      {
        onLine: (line, child) => {
          const m = /^segment (\d+) (\S+)$/.exec(line);
          if (m === null) return;
          if (disk.read !== null) starts.push({ label: m[2], at: disk.read() });
          handover(m[1], m[2], child).catch((err: Error) => {
            failure = err;
            child.proc.kill('SIGKILL');
          });
        },
      },
    ).catch((err: unknown) => {
      throw failure ?? err;
    });
    const flushes = disk.read === null ? { skipped: disk.why } : { rounds: roundFlushes(starts, disk.read()) };
    for (const g of groups) signal(g, 'SIGCONT');
    const after1 = await one.waitForLeader();
    const after3 = await c3.waitForLeader();
    return pairedFigures(
      r,
      o,
      { nodes1: after1.term - lead1.term, nodes3: after3.term - lead3.term },
      etcdSkipped,
      flushes,
    );
  } finally {
    // A stopped process acts on SIGTERM only once continued.
    for (const g of groups) signal(g, 'SIGCONT');
    await Promise.all([one.destroy(), three?.destroy(), etcd?.destroy()]);
  }
}

/**
 * `flushes`: each target's rounds' µs per flush (bench/harness/disk-flushes.ts, roundFlushes), or why there are none.
 */
export function pairedFigures(
  r: PairedResult,
  o: Pick<PairedOptions, 'warmupMs'>,
  leaderChanges: PairedFigures['leader_changes'],
  etcdSkipped: string | null,
  flushes: { rounds: Record<string, (number | null)[]> } | { skipped: string } = { skipped: 'not measured' },
): PairedFigures {
  const targets: PairedFigures['targets'] = {};
  const perRound = 'rounds' in flushes ? flushes.rounds : null;
  for (const t of r.targets) {
    targets[t.label] = {
      count: t.ok,
      aborted: t.aborted,
      errors: t.errors,
      p50_us: t.latency.p50_us,
      p99_us: t.latency.p99_us,
      round_p50_us: t.round_p50_us,
    };
    if (perRound !== null) targets[t.label].round_flush_us = perRound[t.label] ?? [];
  }
  return {
    method:
      'every system up at once, one operation in flight, one load generator taking the targets in turn: a warm-up segment each, then rounds of one segment per target in an order rotating by one each round; the systems not being measured are paused with SIGSTOP; the first settle_ms of a segment are not counted. Ratios: pooled = p50 over every counted operation of each target; median_round = median over rounds of the per-round p50 ratio.',
    rounds: r.rounds,
    segment_ms: r.segmentMs,
    settle_ms: r.settleMs,
    warmup_ms: o.warmupMs,
    targets,
    ratios: {
      latency_p50_3_over_1: pairedRatio(r, 'classic3', 'classic1'),
      latency_p50_3_parallel_over_1: pairedRatio(r, 'parallel3', 'classic1'),
      raft_seq_p50_over_etcd: targets.etcd3 === undefined ? null : pairedRatio(r, 'raw3', 'etcd3'),
    },
    leader_changes: leaderChanges,
    etcd_skipped: etcdSkipped,
    flushes_skipped: 'rounds' in flushes ? null : flushes.skipped,
  };
}
