// bench/REPORT.md and its SVG charts, generated from a results file.
//
//   npm run bench -- report [bench/results/latest.json]
//
// bench/main.ts calls writeReport() at the end of every run; running this
// file regenerates the report from any results file without measuring.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { msPerFlush } from '../harness/disk-flushes.ts';
import type { LatencySummary } from '../harness/hist.ts';
import { ROOT } from '../harness/procs.ts';
import { groupsSection } from './groups-section.ts';
import type { Results, Scenario } from './results.ts';
import { lineChart, timelineChart, type Series, type TimelineRow } from './svg.ts';

const BENCH = join(ROOT, 'bench');
const COLORS: Record<number, string> = { 1: '#1f77b4', 3: '#d62728', 5: '#2ca02c' };
const FSYNC_COLOR = '#9467bd';
const GRPC_COLOR = '#8c564b';

const msOf = (us: number | null | undefined): string =>
  us === null || us === undefined ? '–' : (us / 1000).toFixed(2);
const num = (x: number | null | undefined, unit = ''): string => (x === null || x === undefined ? '–' : `${x}${unit}`);

/**
 * A sweep's figure of a key that `ratios` may hold from the paired step (results.ts, targetRatios); older files hold
 * only the sweeps'.
 */
const sweepRatio = (r: Results, key: string): number | null | undefined =>
  r.ratios_sweep === undefined ? r.ratios[key] : r.ratios_sweep[key];

/** A target ratio with where it came from: the paired step's, with the sweep's beside it, or the sweep's alone. */
export function sourcedRatio(r: Results, key: string): string {
  const v = num(r.ratios[key], '×');
  return r.ratio_source?.[key] === 'paired' ? `${v} (paired; the sweep: ${num(sweepRatio(r, key), '×')})` : v;
}

function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]): string => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

function commitSeries(
  r: Results,
  nodes: number,
  participants: number,
  value: (s: Scenario) => number,
  dashed = false,
  suffix = '',
): Series {
  const pts = r.scenarios
    .filter(
      (s) => s.kind === 'commit' && s.resource === 'memory' && s.nodes === nodes && s.participants === participants,
    )
    .map((s) => [s.clients, value(s)] as [number, number]);
  return { name: `${nodes} node${nodes > 1 ? 's' : ''}${suffix}`, color: COLORS[nodes] ?? '#555', dashed, points: pts };
}

function charts(r: Results): Record<string, string> {
  const sizes = r.settings.cluster_sizes;
  const floors = [
    { value: r.floors.fsync_200B.p50_us / 1000, label: 'fsync 200 B p50', color: FSYNC_COLOR },
    { value: r.floors.grpc_unary_rtt.p50_us / 1000, label: 'gRPC unary RTT p50', color: GRPC_COLOR },
  ];
  const latency = lineChart({
    title: 'Commit latency against concurrency (2 memory participants)',
    xLabel: 'concurrent clients',
    yLabel: 'tx.commit() latency, ms (log)',
    xLog: true,
    yLog: true,
    xTicks: r.settings.concurrency,
    series: [
      ...sizes.map((n) => commitSeries(r, n, 2, (s) => s.p50_us / 1000, false, ' p50')),
      ...sizes.map((n) => commitSeries(r, n, 2, (s) => s.p99_us / 1000, true, ' p99')),
    ],
    rules: floors,
  });
  const throughput = lineChart({
    title: 'Commit throughput against concurrency (2 memory participants)',
    xLabel: 'concurrent clients',
    yLabel: 'committed transactions / s',
    xLog: true,
    xTicks: r.settings.concurrency,
    series: sizes.map((n) => commitSeries(r, n, 2, (s) => s.tps)),
  });
  const sweep = r.scenarios.filter((s) => s.kind === 'commit' && s.resource === 'memory' && s.nodes === 3);
  const pSeries: Series[] = r.settings.participant_sweep_clients.flatMap((clients, i) => {
    const pts = (f: (s: Scenario) => number): [number, number][] =>
      sweep.filter((s) => s.clients === clients).map((s) => [s.participants, f(s)] as [number, number]);
    const color = ['#d62728', '#ff7f0e', '#17becf'][i % 3];
    return [
      { name: `${clients} client${clients > 1 ? 's' : ''} p50`, color, points: pts((s) => s.p50_us / 1000) },
      {
        name: `${clients} client${clients > 1 ? 's' : ''} p99`,
        color,
        dashed: true,
        points: pts((s) => s.p99_us / 1000),
      },
    ];
  });
  const participants = lineChart({
    title: 'Commit latency against participants per transaction (3 nodes)',
    xLabel: 'memory participants enlisted (one process each)',
    yLabel: 'tx.commit() latency, ms (log)',
    xLog: true,
    yLog: true,
    series: pSeries.filter((s) => s.points.length > 0),
    rules: floors.slice(0, 1),
  });
  const rows: TimelineRow[] = r.failover.runs.map((run, i) => {
    const t = run.timeline;
    const s = (ms: number | null): number | null => (ms === null ? null : ms / 1000);
    const marks = [
      { at: 0, label: `SIGKILL ${run.killedLeader}`, color: '#000' },
      { at: s(t.marks.participantsResolvedMs), label: 'participants out of doubt', color: '#9467bd' },
      { at: s(t.marks.clusterResolvedMs), label: 'cluster: all in-flight decided', color: '#ff7f0e' },
      { at: s(t.marks.electedMs), label: 'new leader agreed', color: '#d62728' },
      { at: s(t.marks.firstCommitMs), label: 'first commit after kill', color: '#2ca02c' },
    ].filter((m): m is { at: number; label: string; color: string } => m.at !== null);
    return {
      title: `run ${i + 1}: election ${run.electionMs} ms, client gap ${num(run.clientGapMs, ' ms')}, in-doubt window ${num(run.inDoubt.windowMs, ' ms')} (${run.inDoubt.pairs} pairs)`,
      startX: t.startRelMs / 1000,
      bucket: t.bucketMs / 1000,
      bars: [
        { name: 'committed', color: '#2ca02c', values: t.commits },
        { name: 'aborted', color: '#d62728', values: t.aborts },
        { name: 'failed/unknown', color: '#7f7f7f', values: t.failures },
      ],
      markers: marks,
    };
  });
  const failover = timelineChart(
    'Failover: answers per 100 ms around the SIGKILL of the leader (3 nodes, 2 participants, 16 clients)',
    'seconds from the kill',
    rows,
  );
  return {
    'latency-vs-concurrency.svg': latency,
    'throughput.svg': throughput,
    'participants.svg': participants,
    'failover.svg': failover,
  };
}

function floorRow(name: string, s: LatencySummary): (string | number)[] {
  return [name, msOf(s.p50_us), msOf(s.p99_us), msOf(s.p999_us), s.count];
}

/** The PostgreSQL section: the shop/ledger transaction through Verdict beside the same transaction driven directly. */
function pgSection(r: Results): string[] {
  const out: string[] = ['## PostgreSQL: through Verdict and driven directly', ''];
  if (r.pg !== null) return [...out, `Not measured in this run: ${r.pg.skipped}.`, ''];
  out.push(
    'The transaction: an order row inserted in database `shop` (`orders`) and a balance debited in database `ledger` (`accounts`, `CHECK (balance_cents >= 0)`), one PostgreSQL server (`max_prepared_transactions` 128 when it is ours, fsync on); each client debits its own 4 accounts in turn (`bench/harness/pg-workload.ts`).',
    '',
    '- **Direct** (`bench/floors/pg-direct.ts`, the floor): no coordinator; per transaction `BEGIN`, `INSERT`, `PREPARE TRANSACTION` on a shop connection, then `BEGIN`, `UPDATE`, `PREPARE TRANSACTION` on a ledger connection, then both `COMMIT PREPARED` at once; one statement per round trip, N connections per database. Latency is the whole transaction.',
    '- **Through Verdict**: two `verdict participant --resource postgres` processes (shop, ledger; `--pg-concurrency 16`) on the 3-node cluster; N clients each `begin`, enlist both with `{"sql": [...]}` payloads, `commit`. Latency is `tx.commit()` (PREPARE in both databases, the decision through Raft, the answer); begin+commit beside it. COMMIT PREPARED reaches PostgreSQL after the client has its answer.',
    '',
  );
  const rows: (string | number)[][] = [];
  for (const d of [r.floors.pg_direct_1 ?? null, r.floors.pg_direct_16 ?? null]) {
    if (d === null) continue;
    const errs = Object.entries(d.errors)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ');
    rows.push([
      `direct, ${d.connections} connection${d.connections > 1 ? 's' : ''} per database`,
      d.tps,
      msOf(d.p50_us),
      msOf(d.p99_us),
      msOf(d.p999_us),
      msOf(d.max_us),
      '–',
      errs || '0',
    ]);
  }
  for (const s of r.scenarios.filter((x) => x.resource === 'postgres').sort((a, b) => a.clients - b.clients)) {
    const errs = Object.entries(s.errors)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ');
    rows.push([
      `through Verdict, ${s.nodes} nodes, ${s.clients} client${s.clients > 1 ? 's' : ''}`,
      s.tps,
      msOf(s.p50_us),
      msOf(s.p99_us),
      msOf(s.p999_us),
      msOf(s.max_us),
      msOf(s.txn_p50_us),
      [s.aborted ? `${s.aborted} aborted` : '', errs].filter(Boolean).join('; ') || '0',
    ]);
  }
  out.push(
    table(['driver', 'tx/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'begin+commit p50 ms', 'aborts / errors'], rows),
    '',
  );
  const ratio = r.ratios.pg_through_verdict_over_direct;
  out.push(
    `Throughput through Verdict ÷ direct, 16 clients against 16 connections per database (\`ratios.pg_through_verdict_over_direct\`): **${num(ratio, '×')}** (target: at least 0.7×).`,
    '',
  );
  return out;
}

/** Verdict's raw log (3 nodes) beside etcd 3.4 (3 members), both measured in this run. */
export function etcdSection(r: Results): string[] {
  const e = r.anchors?.etcd;
  const out = ['### Anchor: etcd 3.4 on the same machine, in the same run', ''];
  if (e === undefined) return [...out, 'Not measured (a results file from before the anchor).', ''];
  if (e.skipped !== null) return [...out, `Skipped: ${e.skipped}.`, ''];
  out.push(
    `etcd ${e.version}, ${e.members} members on loopback, data on the same disk, fsync as shipped; 100-byte \`KV.Put\`s to the leader over etcd's own gRPC API, the same load generator, warm-up and window as the raw log above.`,
    '',
  );
  out.push(
    table(
      ['', 'Verdict raw log, 3 nodes', 'etcd, 3 members', 'Verdict ÷ etcd'],
      [
        [
          '1 in flight, p50 ms (`raft.seq_p50_us`, `anchors.etcd.seq_p50_us`)',
          msOf(r.raft.seq_p50_us),
          msOf(e.seq_p50_us),
          `${num(sweepRatio(r, 'raft_seq_p50_over_etcd'), '×')} (${r.ratios_sweep === undefined ? '`ratios.raft_seq_p50_over_etcd`' : "`ratios_sweep.raft_seq_p50_over_etcd`; the target key is the paired step's, below"})`,
        ],
        ['1 in flight, p99 ms', msOf(r.raft.seq_p99_us), msOf(e.seq_p99_us), ''],
        [
          '64 in flight, puts/s (`raft.inflight64_tps`, `anchors.etcd.inflight64_tps`)',
          num(r.raft.inflight64_tps),
          num(e.inflight64_tps),
          `${num(r.ratios.raft_inflight64_over_etcd, '×')} (\`ratios.raft_inflight64_over_etcd\`)`,
        ],
        ['64 in flight, p50 ms', msOf(r.raft.inflight64_p50_us), msOf(e.inflight64_p50_us), ''],
      ],
    ),
    '',
  );
  return out;
}

/** The target ratios measured again with every system up and the targets taken in turn (bench/scenarios/paired.ts). */
export function pairedSection(r: Results): string[] {
  const out = ['## Paired: the target ratios with the targets taken in turn', ''];
  const p = r.paired;
  if (p === undefined) return [...out, 'Not measured (a results file from before the paired step).', ''];
  if (p === null) return [...out, 'The step failed in this run; the progress log says why.', ''];
  out.push(
    `The sweeps above measure each scenario once, minutes apart (the etcd anchor half an hour after the raw log), and on this shared machine a p50 moves by half from one minute to the next. Here every system is up at once and one load generator takes them in turn, one operation in flight: a ${num(p.warmup_ms / 1000)} s warm-up each, then ${p.rounds} rounds of one ${num(p.segment_ms / 1000)} s segment per target, the order rotating each round, the systems not being measured paused (SIGSTOP), the first ${p.settle_ms} ms of a segment not counted. Leader changes over the step: ${p.leader_changes.nodes1} (1 node), ${p.leader_changes.nodes3} (3 nodes).`,
    '',
  );
  const range = (xs: readonly (number | null)[], f: (x: number) => string): string => {
    const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
    return v.length > 0 ? `${f(v[0])} – ${f(v[v.length - 1])}` : '-';
  };
  const withFlushes = Object.values(p.targets).some((t) => t.round_flush_us !== undefined);
  out.push(
    table(
      [
        'target',
        'counted',
        'p50 ms',
        'p99 ms',
        "rounds' p50 ms, lowest to highest",
        ...(withFlushes ? ["rounds' ms per disk flush, lowest to highest"] : []),
        'errors',
      ],
      Object.entries(p.targets).map(([label, t]) => [
        label,
        t.count,
        msOf(t.p50_us),
        msOf(t.p99_us),
        range(t.round_p50_us, msOf),
        ...(withFlushes ? [range(t.round_flush_us ?? [], msPerFlush)] : []),
        Object.values(t.errors).reduce((a, b) => a + b, 0),
      ]),
    ),
    '',
  );
  if (withFlushes)
    out.push(
      "A round's ms per disk flush is the mean time of the flushes the data disk completed during that target's segment (`/proc/diskstats`, `paired.targets.*.round_flush_us` in µs); it changes by two on this machine for minutes at a time, and the raw log waits for two flushes per batch where etcd waits for one (docs/benchmarks.md, \"The disk's two speeds\").",
      '',
    );
  else if (p.flushes_skipped) out.push(`No flush times: ${p.flushes_skipped}.`, '');
  const row = (
    what: string,
    target: string,
    x: import('../harness/paired-plan.ts').PairedRatio | null,
    sweepKey: string,
  ): (string | number)[] =>
    x === null
      ? [what, target, '-', '-', '-', num(sweepRatio(r, sweepKey), '×')]
      : [
          what,
          target,
          num(x.pooled, '×'),
          num(x.median_round, '×'),
          `${x.rounds_below_1} of ${x.rounds.length}`,
          num(sweepRatio(r, sweepKey), '×'),
        ];
  if (r.ratio_source !== undefined)
    out.push(
      "The pooled ratios are the target keys (`ratios.*`): both sides of each were measured in the same minutes. The sweeps' figures are kept under `ratios_sweep.*`.",
      '',
    );
  out.push(
    table(
      [
        'ratio (`paired.ratios.*`)',
        'target',
        'pooled p50s',
        'median of rounds',
        'rounds below 1',
        r.ratio_source === undefined ? 'the sweeps (`ratios.*`)' : 'the sweeps (`ratios_sweep.*`)',
      ],
      [
        row(
          '3-node classic ÷ 1-node classic (`latency_p50_3_over_1`)',
          '≤ 1.15',
          p.ratios.latency_p50_3_over_1,
          'latency_p50_3_over_1',
        ),
        row(
          '3-node parallel ÷ 1-node classic (`latency_p50_3_parallel_over_1`)',
          '≤ 1.0',
          p.ratios.latency_p50_3_parallel_over_1,
          'latency_p50_3_parallel_over_1',
        ),
        row(
          'raw log ÷ etcd, 1 in flight (`raft_seq_p50_over_etcd`)',
          '≤ 1.0',
          p.ratios.raft_seq_p50_over_etcd,
          'raft_seq_p50_over_etcd',
        ),
      ],
    ),
    '',
  );
  if (p.etcd_skipped !== null) out.push(`etcd was left out: ${p.etcd_skipped}.`, '');
  return out;
}

export function markdown(r: Results, source: string): string {
  const sc = (id: string): Scenario | undefined => r.scenarios.find((s) => s.id === id);
  const c = (n: number, p: number, k: number): Scenario | undefined => sc(`commit.nodes${n}.memory${p}.c${k}`);
  const f = r.floors;
  const fo = r.failover;
  const out: string[] = [];
  out.push('# Verdict benchmark report', '');
  out.push(
    `Generated by \`bench/report/report.ts\` from \`${source}\` — a **${r.settings.mode}** run started ${r.started_at}, ${r.elapsed_s} s. Regenerate with \`npm run bench -- report\`; measure again with \`npm run bench\` (or \`npm run bench -- --quick\`).`,
    '',
  );
  out.push('## Machine', '');
  out.push(
    table(
      ['', ''],
      [
        ['CPU', `${r.machine.cpu} (${r.machine.cores} cores available)`],
        ['memory', `${r.machine.memoryGiB} GiB`],
        ['OS', r.machine.os],
        ['Node.js', r.machine.node],
        ['disk (data dirs, fsync floor)', r.machine.disk],
        ['Verdict', r.machine.commit],
        ['1-minute load average', `${r.machine.load_avg_start} before the run, ${r.machine.load_avg_end} after it`],
      ],
    ),
    '',
  );
  out.push(
    'Everything runs on this one machine, on loopback: every node, every participant and every load generator is its own process, so on a 2-core machine they compete for the same two cores — the figures are for the whole system on one box, not for one node on a dedicated machine. A load average above zero before the run means other work shared the machine and skewed the figures.',
    '',
  );

  out.push('## Headline', '');
  const h = (label: string, value: string): string => `- ${label}: **${value}**`;
  for (const n of r.settings.cluster_sizes) {
    const x = c(n, 2, 1);
    if (x)
      out.push(
        h(
          `commit latency, ${n} node${n > 1 ? 's' : ''}${n === 1 ? ' (classic 2PC, durable coordinator log)' : ''}, 2 memory participants, 1 client`,
          `p50 ${msOf(x.p50_us)} ms, p99 ${msOf(x.p99_us)} ms, p99.9 ${msOf(x.p999_us)} ms`,
        ),
      );
  }
  out.push(h('3 nodes ÷ 1 node, commit p50 (`ratios.latency_p50_3_over_1`)', sourcedRatio(r, 'latency_p50_3_over_1')));
  out.push(
    h(
      '3 nodes parallel commit ÷ 1 node classic, commit p50 (`ratios.latency_p50_3_parallel_over_1`; PostgreSQL: `pg_latency_p50_3_parallel_over_1`)',
      `${sourcedRatio(r, 'latency_p50_3_parallel_over_1')}; PostgreSQL ${num(r.ratios.pg_latency_p50_3_parallel_over_1, '×')}`,
    ),
  );
  out.push(
    h(
      '16 participants ÷ 1, 3 nodes, commit p50 (`ratios.latency_p50_16p_over_1p`)',
      r.ratios.latency_p50_16p_over_1p === null ? '– (not in a quick run)' : `${r.ratios.latency_p50_16p_over_1p}×`,
    ),
  );
  out.push(
    h(
      'peak throughput, 3 nodes, 2 memory participants (`peak_tps.nodes3_memory2`)',
      num(r.peak_tps.nodes3_memory2, ' tx/s'),
    ),
  );
  out.push(
    h('raw replicated log, 100-byte Put one at a time, p50 (`raft.seq_p50_us`)', `${msOf(r.raft.seq_p50_us)} ms`),
  );
  out.push(h('raw replicated log, 64 Puts in flight (`raft.inflight64_tps`)', num(r.raft.inflight64_tps, ' puts/s')));
  out.push(
    h(
      'raw log ÷ etcd 3.4, sequential p50 (`ratios.raft_seq_p50_over_etcd`, lower is better)',
      sourcedRatio(r, 'raft_seq_p50_over_etcd'),
    ),
  );
  out.push(
    h(
      'raw log ÷ etcd 3.4, 64 in flight throughput (`ratios.raft_inflight64_over_etcd`, higher is better)',
      num(r.ratios.raft_inflight64_over_etcd, '×'),
    ),
  );
  out.push(
    h(
      'failover: participants in doubt after the leader is killed, p99 (`failover.in_doubt_p99_ms`)',
      `${num(fo.in_doubt_p99_ms, ' ms')} (max ${num(fo.in_doubt_max_ms, ' ms')}, ${fo.in_doubt_pairs} transaction-participant pairs over ${fo.runs.length} run${fo.runs.length > 1 ? 's' : ''})`,
    ),
  );
  out.push(
    h(
      'failover: client-visible gap (no successful commit)',
      fo.client_gap_ms_per_run.map((g) => num(g, ' ms')).join(', '),
    ),
  );
  out.push(
    h('decided transactions rolled back (`failover.decided_rolled_back`, must be 0)', String(fo.decided_rolled_back)),
  );
  out.push(
    h(
      'PostgreSQL through Verdict ÷ direct (`ratios.pg_through_verdict_over_direct`)',
      r.ratios.pg_through_verdict_over_direct === null
        ? `– (${r.pg?.skipped ?? 'not measured'})`
        : `${r.ratios.pg_through_verdict_over_direct}×`,
    ),
  );
  const myRatio = r.ratios.mysql_through_verdict_over_direct ?? null;
  out.push(
    h(
      'PostgreSQL + MariaDB (XA) through Verdict ÷ direct, 16 clients (`ratios.mysql_through_verdict_over_direct`)',
      myRatio === null ? `– (${r.mysql?.skipped ?? 'not measured'})` : `${myRatio}×`,
    ),
  );
  out.push('');

  out.push(...boundsSection(r));

  out.push('## Floors (same run)', '');
  out.push(
    table(
      ['floor', 'p50 ms', 'p99 ms', 'p99.9 ms', 'samples'],
      [
        floorRow('append 200 B + fdatasync (`fs.writeSync` + `fs.fdatasyncSync`)', f.fsync_200B),
        ...(f.fsync_200B_x3 != null
          ? [
              [
                `the same in three processes at once, one disk (\`floors.fsync_200B_x3\`: median p50; each ${f.fsync_200B_x3.p50_us_each.map(msOf).join(' / ')} ms; p99 each ${f.fsync_200B_x3.p99_us_each.map(msOf).join(' / ')} ms)`,
                msOf(f.fsync_200B_x3.p50_us),
                '–',
                '–',
                '–',
              ],
            ]
          : []),
        ...(f.flush_pattern != null
          ? [
              floorRow(
                "one transaction's flushes, 1 node classic: the 2 participants' at once, then the node's segment and mark (`floors.flush_pattern.classic1`)",
                f.flush_pattern.classic1,
              ),
              floorRow(
                "the same with 3 nodes: then three nodes' two each at once, until the leader and one follower (`classic3`)",
                f.flush_pattern.classic3,
              ),
              floorRow('3 nodes, parallel commit: all five at once (`parallel3`)', f.flush_pattern.parallel3),
              floorRow(
                "the same with one sync per node (`parallel3_one_sync`: what the mark's own sync costs)",
                f.flush_pattern.parallel3_one_sync,
              ),
              ...(f.flush_pattern.participants1 != null && f.flush_pattern.participants16 != null
                ? [
                    floorRow(
                      "one participant's journal flush, the participant sweep's prepare phase (`participants1`)",
                      f.flush_pattern.participants1,
                    ),
                    floorRow(
                      "sixteen participants' journal flushes at once, until the last (`participants16`)",
                      f.flush_pattern.participants16,
                    ),
                  ]
                : []),
            ]
          : []),
        ...(f.fanout != null
          ? [
              floorRow(
                `the prepare phase with minimal participant processes: PREPARE on a gRPC stream, 200 B journal append + fdatasync, VOTE back; to one (\`floors.fanout.participants1\`; ${f.fanout.participant_cpu_us_per_txn} µs of participant CPU per transaction)`,
                f.fanout.participants1,
              ),
              floorRow(
                `the same to ${f.fanout.n} processes at once, until the last VOTE (\`participantsN\`)`,
                f.fanout.participantsN,
              ),
              floorRow(
                "minimal processes, 1 node classic: PREPARE to two participants, both VOTEs, then the coordinator's segment and mark flushes (`classic1`)",
                f.fanout.classic1,
              ),
              floorRow(
                "the same with 3 nodes: then the leader's flushes beside an append to two follower processes (segment and mark each), until the leader and one follower (`classic3`)",
                f.fanout.classic3,
              ),
              floorRow(
                "3 nodes, parallel commit: the PREPAREs, the appends and the leader's flushes at once (`parallel3`)",
                f.fanout.parallel3,
              ),
              ...(f.fanout.raft3 != null && f.fanout.raft3_one_sync != null
                ? [
                    floorRow(
                      "minimal processes, a raw log write on 3 nodes: the leader's flushes beside the append, until the leader and one follower (`raft3`)",
                      f.fanout.raft3,
                    ),
                    floorRow(
                      'the same with one flush per node, no mark, as etcd syncs (`raft3_one_sync`)',
                      f.fanout.raft3_one_sync,
                    ),
                  ]
                : []),
              ...(f.fanout.raft3_client != null
                ? [
                    floorRow(
                      '`raft3` with the client in a process of its own, timed there (`raft3_client`)',
                      f.fanout.raft3_client,
                    ),
                  ]
                : []),
            ]
          : []),
        floorRow('gRPC unary round trip, 100 B, two processes', f.grpc_unary_rtt),
        floorRow('gRPC bidi stream round trip (ping-pong on one stream)', f.grpc_bidi_rtt),
        floorRow(
          "gRPC client streams round trip (out on one, back on the peer's: Raft's transport)",
          f.grpc_client_streams_rtt,
        ),
        ...(f.mysql_direct_16 != null
          ? [
              floorRow(
                `shop/ledger with the ledger on MariaDB: PREPARE TRANSACTION + XA PREPARE, both committed from one process, 16 connections per database (\`floors.mysql_direct_16\`, ${f.mysql_direct_16.tps} tx/s)`,
                f.mysql_direct_16,
              ),
            ]
          : []),
        ...(f.mysql_minimal_16 != null
          ? [
              floorRow(
                `the same with the ledger on MariaDB through the least possible processes: a PostgreSQL and a MariaDB participant process (one round trip per PREPARE each), a leader that is also the client, two followers (\`floors.mysql_minimal_16\`, ${f.mysql_minimal_16.tps} tx/s)`,
                f.mysql_minimal_16,
              ),
            ]
          : []),
        ...[f.pg_direct_1 ?? null, f.pg_direct_16 ?? null].map((d, i) =>
          d !== null
            ? floorRow(
                `PostgreSQL shop/ledger transaction, PREPARE TRANSACTION + COMMIT PREPARED driven directly, ${d.connections} connection${d.connections > 1 ? 's' : ''} per database (\`floors.pg_direct_${d.connections}\`, ${d.tps} tx/s)`,
                d,
              )
            : [
                `PostgreSQL direct PREPARE TRANSACTION + COMMIT PREPARED (\`floors.pg_direct_${i === 0 ? 1 : 16}\`)`,
                '–',
                '–',
                '–',
                r.pg?.skipped ?? 'not measured',
              ],
        ),
        ...(f.pg_direct_16_marked != null
          ? [
              floorRow(
                `the same at 16 connections with the participant's marker row beside each PREPARE TRANSACTION (\`floors.pg_direct_16_marked\`, ${f.pg_direct_16_marked.tps} tx/s)`,
                f.pg_direct_16_marked,
              ),
            ]
          : []),
        ...(f.pg_minimal_16 != null
          ? [
              floorRow(
                `the same at 16 in flight through the least possible processes: two participant processes (one round trip per PREPARE), a leader that is also the client, two followers, group-committed flushes (\`floors.pg_minimal_16\`, ${f.pg_minimal_16.tps} tx/s)`,
                f.pg_minimal_16,
              ),
            ]
          : []),
        ...(f.pg_direct_16_after != null
          ? [
              floorRow(
                `the direct floor at 16 connections again, after Verdict's PostgreSQL scenarios, on the same server (\`floors.pg_direct_16_after\`, ${f.pg_direct_16_after.tps} tx/s)`,
                f.pg_direct_16_after,
              ),
            ]
          : []),
      ],
    ),
    '',
  );
  out.push('Medians over the floors:', '');
  out.push(
    table(
      ['ratio', 'value'],
      Object.entries(r.floor_ratios).map(([k, v]) => [`\`floor_ratios.${k}\``, num(v, '×')]),
    ),
    '',
  );

  out.push('## Commit latency and throughput against concurrency', '');
  out.push('![commit latency against concurrency](latency-vs-concurrency.svg)', '');
  out.push('![commit throughput against concurrency](throughput.svg)', '');
  const commitRows = (list: Scenario[]): (string | number)[][] =>
    list.map((s) => {
      const errs = Object.entries(s.errors)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ');
      return [
        s.nodes,
        s.participants,
        s.clients,
        s.tps,
        msOf(s.p50_us),
        msOf(s.p99_us),
        msOf(s.p999_us),
        msOf(s.max_us),
        msOf(s.txn_p50_us),
        [s.aborted ? `${s.aborted} aborted` : '', errs].filter(Boolean).join('; ') || '0',
        s.leader_changes,
        num(s.cpu?.ms_per_txn),
      ];
    });
  const head = [
    'nodes',
    'participants',
    'clients',
    'tx/s',
    'p50 ms',
    'p99 ms',
    'p99.9 ms',
    'max ms',
    'begin+commit p50 ms',
    'aborts / errors',
    'leader changes',
    'CPU ms / tx',
  ];
  out.push(
    table(
      head,
      commitRows(
        r.scenarios
          .filter((s) => s.kind === 'commit' && s.resource === 'memory' && s.participants === 2)
          .sort((a, b) => a.nodes - b.nodes || a.clients - b.clients),
      ),
    ),
    '',
  );

  out.push('## Participants per transaction (3 nodes)', '');
  out.push('![commit latency against participants](participants.svg)', '');
  out.push(
    table(
      head,
      commitRows(
        r.scenarios
          .filter(
            (s) =>
              s.kind === 'commit' &&
              s.resource === 'memory' &&
              s.nodes === 3 &&
              r.settings.participant_sweep_clients.includes(s.clients),
          )
          .sort((a, b) => a.clients - b.clients || a.participants - b.participants),
      ),
    ),
    '',
  );

  out.push(...pgSection(r));

  out.push('## Raw replicated log', '');
  out.push(
    'Puts of 100-byte values through the leader (`RaftNode.PutStream`, every Put of one load generator on one stream), each acknowledged once committed (a quorum synced it), one at a time and 64 in flight:',
    '',
  );
  out.push(
    table(
      ['nodes', 'in flight', 'puts/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'errors'],
      r.scenarios
        .filter((s) => s.kind === 'raw')
        .map((s) => [
          s.nodes,
          s.clients,
          s.tps,
          msOf(s.p50_us),
          msOf(s.p99_us),
          msOf(s.p999_us),
          msOf(s.max_us),
          Object.values(s.errors).reduce((a, b) => a + b, 0),
        ]),
    ),
    '',
  );
  out.push(...etcdSection(r));
  out.push(...pairedSection(r));

  out.push('## Failover', '');
  out.push('![failover timeline](failover.svg)', '');
  out.push(`How it is measured: ${fo.method}`, '');
  out.push(
    table(
      [
        'run',
        'killed',
        'aim ms',
        'election ms',
        'in doubt (pairs)',
        'in-doubt p50 / p99 / window ms',
        'cluster view window ms',
        'client gap ms',
        'first commit after kill ms',
        'txns (C / A / unknown / Begin failed)',
        'still in doubt',
        'rolled back',
      ],
      fo.runs.map((x, i) => [
        i + 1,
        x.killedLeader,
        x.aimMs,
        x.electionMs,
        x.inDoubt.pairs,
        `${num(x.inDoubt.p50Ms)} / ${num(x.inDoubt.p99Ms)} / ${num(x.inDoubt.windowMs)}`,
        x.cluster.windowMs === null ? '–' : Math.round(x.cluster.windowMs),
        num(x.clientGapMs),
        num(x.firstCommitAfterKillMs),
        `${x.counts.committed} / ${x.counts.aborted} / ${x.counts.outcomeUnknown} / ${x.counts.beginFailed}`,
        x.inDoubt.stillInDoubt,
        x.decidedRolledBack,
      ]),
    ),
    '',
  );
  out.push(
    'A transaction prepared at a participant when the leader dies is resolved one of two ways: the new leader re-drives a COMMIT that reached the log (DESIGN R5), or, if the decision never reached the log, the participant asks the cluster after `inDoubtAfterMs` (2 s by default) and the leader logs ABORT (presumed abort, R3). The first is bounded by the election; the second by that timer.',
    '',
  );

  out.push('## How it was measured', '');
  out.push(
    [
      `- Clusters of ${r.settings.cluster_sizes.join(', ')} node processes on 127.0.0.1 with the timing of \`cluster/n1.json\` (tick ${r.settings.node_timing.tickMs} ms, election ${r.settings.node_timing.electionTicks} ticks, heartbeat ${r.settings.node_timing.heartbeatTicks} tick), log level warn. Memory participants are \`verdict participant\` processes (journal fsynced before every YES vote and every decision).`,
      `- Load generators (\`bench/harness/loadgen.ts\`) are child processes with N closed-loop clients (sharing one \`VerdictClient\`, as an application would): begin, enlist every participant with ${r.settings.payload}, commit. Warm-up ${r.settings.warmup_ms} ms, then ${r.settings.measure_ms} ms measured (raw log: ${r.settings.raw_measure_ms} ms); only transactions that finish in the window count. Latency is \`tx.commit()\` (PREPARE, votes, the decision through Raft, the answer), recorded in an HDR histogram (hdr-histogram-js, µs, 3 significant digits); throughput is committed transactions per second.`,
      '- Closed-loop clients wait for each answer before the next request, so high-percentile latency is that of a saturated system at that concurrency; there is no coordinated-omission correction.',
      `- Concurrency sweep ${r.settings.concurrency.join(', ')} clients at every cluster size; participants sweep ${r.settings.participant_sweep.join(', ')} at 3 nodes with ${r.settings.participant_sweep_clients.join(' and ')} client(s); raw log at ${r.settings.raw_sizes.join(', ')} node(s); ${r.settings.failover_runs} failover run(s), each on a fresh cluster.`,
      '- The full results, with every HDR histogram, are in `bench/results/latest.json` (older runs are in its git history).',
    ].join('\n'),
    '',
  );
  // Sagas (bench/scenarios/saga.ts), when measured.
  if (r.saga) {
    const g = r.saga;
    out.push(
      '',
      '## Sagas: three steps on three nodes',
      '',
      'Three step services with memory inboxes; each saga logs its start and one entry per step (step k DONE and step k+1 started together). The floor is the same three step calls made directly in sequence; a saga at one client also waits for its 4 replicated writes one after the other, measured on the same cluster as one raw log write at a time.',
      '',
      table(
        ['measure', 'value'],
        [
          ['sagas/s at 16 clients (`saga.tps_3steps_c16`)', String(g.tps_3steps_c16)],
          ['p50 at 1 client (`saga.p50_ms_c1`)', `${g.p50_ms_c1} ms`],
          ['p99 at 1 client', `${g.p99_ms_c1} ms`],
          ['direct calls in sequence, p50', `${g.direct_p50_ms} ms`],
          ['saga over direct, p50 (`ratios.saga_over_direct_p50`)', String(r.ratios.saga_over_direct_p50 ?? '-')],
          [
            'one replicated write, p50 (`saga.write_p50_ms`)',
            g.write_p50_ms === undefined ? '-' : `${g.write_p50_ms} ms`,
          ],
          [
            'floor: direct + 4 writes, p50 (`saga.floor_p50_ms_c1`)',
            g.floor_p50_ms_c1 === undefined ? '-' : `${g.floor_p50_ms_c1} ms`,
          ],
          ['floor over direct (`saga.floor_over_direct_p50`)', String(g.floor_over_direct_p50 ?? '-')],
          [
            'CPU per saga at 16 clients, every process (of it the leader)',
            g.cpu_ms_per_saga_c16 === undefined
              ? '-'
              : `${g.cpu_ms_per_saga_c16} ms (${g.cpu_ms_per_saga_leader_c16} ms)`,
          ],
          [
            'the ceiling that CPU sets (`saga.ceiling_sagas_s`)',
            g.ceiling_sagas_s === undefined ? '-' : `${g.ceiling_sagas_s} sagas/s`,
          ],
        ],
      ),
    );
  }
  // Decision groups (bench/scenarios/groups.ts), when measured.
  if (r.groups) out.push(...groupsSection(r.groups, table));
  // Outbox (bench/scenarios/outbox.ts), when measured.
  if (r.outbox) {
    const o = r.outbox;
    out.push(
      '',
      '## Outbox: relay to NATS JetStream to the inbox',
      '',
      `${o.writers} writers, each transaction one event; latency is from the writer's COMMIT to the consumer's inbox transaction committing the effect. The floors are raw JetStream publishes waiting for the PubAck, ${o.writers} in flight, and the same with a consumer acknowledging each message, in the same run. Events/s is at saturation; the latency at a fixed rate is measured in a run of its own.`,
      '',
      table(
        ['measure', 'polling', 'CDC'],
        [
          ['events/s (`outbox.polling_eps`, `outbox.cdc_eps`)', String(o.polling_eps), String(o.cdc_eps)],
          ['commit → effect p50', `${o.e2e_p50_ms} ms`, `${o.cdc_e2e_p50_ms} ms`],
          ['commit → effect p99 (`outbox.e2e_p99_ms`, polling)', `${o.e2e_p99_ms} ms`, `${o.cdc_e2e_p99_ms} ms`],
          ['broker floor: publish + ack/s, p50', `${o.floor_publish_eps}/s, ${o.floor_publish_p50_ms} ms`, ''],
          ...(o.floor_publish_consume_eps === undefined
            ? []
            : [
                [
                  'broker floor: publish + consume + ack/s (`outbox.floor_publish_consume_eps`)',
                  `${o.floor_publish_consume_eps}/s`,
                  '',
                ],
                [
                  'delivered ÷ that floor (`outbox.polling_over_floor`, `outbox.cdc_over_floor`)',
                  String(o.polling_over_floor),
                  String(o.cdc_over_floor),
                ],
                [
                  "the writers' own commits/s in that run (`outbox.writers_commit_eps`)",
                  String(o.writers_commit_eps),
                  '',
                ],
                [
                  `a backlog of ${o.drain_events} drained, events/s (\`outbox.polling_drain_eps\`, \`outbox.cdc_drain_eps\`)`,
                  String(o.polling_drain_eps),
                  String(o.cdc_drain_eps),
                ],
                [
                  'drained ÷ the publish + consume floor (`outbox.polling_drain_over_floor`, `outbox.cdc_drain_over_floor`)',
                  String(o.polling_drain_over_floor),
                  String(o.cdc_drain_over_floor),
                ],
                [
                  `largest unpublished backlog sampled (writers' bound ${o.backlog_max})`,
                  String(o.polling_backlog_max_seen),
                  String(o.cdc_backlog_max_seen),
                ],
                [
                  `broker floor at ${o.rate_eps} messages/s: publish → consumer, p50 / p99`,
                  `${o.floor_p50_ms_at_rate} / ${o.floor_p99_ms_at_rate} ms`,
                  '',
                ],
                [
                  `PostgreSQL floor at ${o.rate_eps} commits/s: BEGIN, INSERT, COMMIT, p50 / p99`,
                  `${o.pg_commit_p50_ms_at_rate} / ${o.pg_commit_p99_ms_at_rate} ms`,
                  '',
                ],
                [
                  `commit → effect p50 at ${o.rate_eps} events/s`,
                  `${o.polling_p50_ms_at_rate} ms`,
                  `${o.cdc_p50_ms_at_rate} ms`,
                ],
                [
                  `commit → effect p99 at ${o.rate_eps} events/s (\`outbox.polling_p99_ms_at_rate\`, \`outbox.cdc_p99_ms_at_rate\`)`,
                  `${o.polling_p99_ms_at_rate} ms`,
                  `${o.cdc_p99_ms_at_rate} ms`,
                ],
              ]),
        ],
      ),
    );
  }
  return out.join('\n');
}

/**
 * Every target of the performance and parallel-commit work beside what
 * bounds it in the same run: the floors, and the CPU per transaction summed
 * over every process (bench/harness/cpu-sample.ts, results.bounds).
 */
export function boundsSection(r: Results): string[] {
  const b = r.bounds ?? {};
  const e = r.anchors?.etcd;
  const etcdCpu = e && e.skipped === null ? e : null;
  const cores = r.machine.cores;
  const met = (v: number | null | undefined, ok: (x: number) => boolean): string =>
    v === null || v === undefined ? '–' : ok(v) ? 'yes' : 'no';
  const x = (v: number | null | undefined): string => num(v, '×');
  const cpuMs = (v: number | null | undefined): string => num(v, ' ms');
  const rows: (string | number)[][] = [
    [
      '`ratios.latency_p50_3_over_1`',
      sourcedRatio(r, 'latency_p50_3_over_1'),
      '≤ 1.15',
      met(r.ratios.latency_p50_3_over_1, (v) => v <= 1.15),
      `CPU floor ${x(b.latency_p50_3_over_1_cpu_floor)}: at 1 client a 3-node transaction costs ${cpuMs(b.nodes3_memory2_c1_cpu_ms_per_txn)} of CPU (1 node: ${cpuMs(b.nodes1_memory2_c1_cpu_ms_per_txn)}), so one client's transactions follow each other no faster than that ÷ ${cores} cores; the disk and the network alone (two syncs per batch contending with the other nodes', one round trip) would allow ${x(b.latency_p50_3_over_1_disk_network_floor)}; one transaction's flushes on the one disk, the participants' then the nodes', and one round trip, ${x(b.latency_p50_3_over_1_flush_floor)}; the same pattern done by minimal processes over gRPC (the machine floor), ${x(b.latency_p50_3_over_1_fanout_floor)} (${msOf(b.fanout_classic3_us)} ms for 3 nodes against ${msOf(b.fanout_classic1_us)} ms for 1)`,
    ],
    [
      '`peak_tps.nodes3_memory2`',
      num(r.peak_tps.nodes3_memory2, ' tx/s'),
      '≥ 6,000',
      met(r.peak_tps.nodes3_memory2, (v) => v >= 6_000),
      `CPU ceiling ${num(b.nodes3_memory2_cpu_ceiling_tps, ' tx/s')}: no concurrency cost less than ${cpuMs(b.nodes3_memory2_leanest_cpu_ms_per_txn)} of CPU per transaction (${num(b.nodes3_memory2_leanest_clients)} clients); at the peak (${num(b.nodes3_memory2_peak_clients)} clients) ${cpuMs(b.nodes3_memory2_peak_cpu_ms_per_txn)}, the ${cores} cores ${b.nodes3_memory2_peak_busy == null ? '–' : `${Math.round(b.nodes3_memory2_peak_busy * 100)} %`} busy`,
    ],
    [
      '`ratios.raft_seq_p50_over_etcd`',
      sourcedRatio(r, 'raft_seq_p50_over_etcd'),
      '≤ 1.0',
      met(r.ratios.raft_seq_p50_over_etcd, (v) => v <= 1),
      `two syncs per batch (segment, then mark; etcd syncs once): ${msOf(b.raft_seq_two_syncs_us)} ms; without the mark's sync at its contended price the sweep's ratio would be ${x(b.raft_seq_over_etcd_without_mark_sync)} (the mark is what detects a disk that lost synced entries: docs/storage.md); the same write done by minimal processes over gRPC plus the client's round trip (the machine floor) is ${x(b.raft_seq_over_etcd_fanout_floor)} of etcd's p50 (${msOf(b.fanout_raft3_us)} ms), ${x(b.raft_seq_over_etcd_fanout_floor_one_sync)} with one sync per node as etcd does (${msOf(b.fanout_raft3_one_sync_us)} ms)${b.raft_seq_over_etcd_fanout_floor_client != null ? `; with the client in a process of its own, ${x(b.raft_seq_over_etcd_fanout_floor_client)} (${msOf(b.fanout_raft3_client_us)} ms)` : ''}; CPU per Put, 1 in flight: Verdict ${cpuMs(b.raft_seq_cpu_ms_per_put)}, etcd ${cpuMs(etcdCpu?.seq_cpu_ms_per_put)}`,
    ],
    [
      '`ratios.raft_inflight64_over_etcd`',
      x(r.ratios.raft_inflight64_over_etcd),
      '≥ 1.5',
      met(r.ratios.raft_inflight64_over_etcd, (v) => v >= 1.5),
      `CPU per Put, 64 in flight: Verdict ${cpuMs(b.raft_inflight64_cpu_ms_per_put)}, etcd ${cpuMs(etcdCpu?.inflight64_cpu_ms_per_put)}`,
    ],
    [
      '`ratios.pg_through_verdict_over_direct`',
      x(r.ratios.pg_through_verdict_over_direct),
      '≥ 0.6',
      met(r.ratios.pg_through_verdict_over_direct, (v) => v >= 0.6),
      `CPU ceiling through Verdict at 16 clients ${num(b.pg_c16_cpu_ceiling_tps, ' tx/s')} = ${x(b.pg_c16_cpu_ceiling_over_direct)} the direct floor's throughput (${cpuMs(b.pg_c16_cpu_ms_per_txn)} per transaction, of it PostgreSQL's own processes ${cpuMs(b.pg_c16_database_cpu_ms_per_txn)}); the participant's marker row alone, driven directly, leaves ${x(b.pg_direct_marked_over_direct)} of the direct throughput; the same transaction through the least possible processes (two participants, a leader and two followers: the machine floor) reaches ${x(b.pg_minimal_over_direct)} of it, and Verdict ${x(b.pg_through_verdict_over_minimal)} of that floor; the direct floor measured again after Verdict's PostgreSQL scenarios, on the same server, was ${x(b.pg_direct_after_over_before)} of the first, and Verdict ${x(b.pg_through_verdict_over_direct_after)} of it`,
    ],
    [
      '`ratios.mysql_through_verdict_over_direct`',
      x(r.ratios.mysql_through_verdict_over_direct ?? null),
      '≥ 0.6',
      met(r.ratios.mysql_through_verdict_over_direct ?? null, (v) => v >= 0.6),
      `CPU ceiling through Verdict at 16 clients ${num(b.mysql_c16_cpu_ceiling_tps, ' tx/s')} = ${x(b.mysql_c16_cpu_ceiling_over_direct)} the direct floor's throughput (${cpuMs(b.mysql_c16_cpu_ms_per_txn)} per transaction, of it PostgreSQL's and MariaDB's own processes ${cpuMs(b.mysql_c16_database_cpu_ms_per_txn)}); the same transaction through the least possible processes (a PostgreSQL and a MariaDB participant, a leader and two followers: the machine floor) reaches ${x(b.mysql_minimal_over_direct)} of it, and Verdict ${x(b.mysql_through_verdict_over_minimal)} of that floor`,
    ],
    [
      '`failover.in_doubt_p99_ms`',
      num(r.failover.in_doubt_p99_ms, ' ms'),
      '≤ 1,000, 0 rolled back',
      met(r.failover.in_doubt_p99_ms, (v) => v <= 1_000 && r.failover.decided_rolled_back === 0),
      `election after the kill, per run: ${r.failover.election_ms_per_run.map((v) => `${v} ms`).join(', ') || '–'}; rolled back ${r.failover.decided_rolled_back}`,
    ],
    [
      '`ratios.latency_p50_16p_over_1p`',
      x(r.ratios.latency_p50_16p_over_1p),
      '≤ 1.5',
      met(r.ratios.latency_p50_16p_over_1p, (v) => v <= 1.5),
      `CPU floor ${x(b.latency_p50_16p_over_1p_cpu_floor)}: with 16 participants a transaction costs ${cpuMs(b.participants16_c1_cpu_ms_per_txn)} of CPU (participants ${cpuMs(b.participants16_c1_participant_cpu_ms_per_txn)}), with 1 ${cpuMs(b.participants1_c1_cpu_ms_per_txn)}; one client's transactions cannot follow each other faster than that ÷ ${cores} cores; the disk alone would allow ${x(b.latency_p50_16p_over_1p_flush_floor)} (the prepare phase's journal flushes on the one disk: sixteen at once, until the last, ${msOf(b.flush_pattern_participants16_us)} ms, against one, ${msOf(b.flush_pattern_participants1_us)} ms); the machine floor is ${x(b.latency_p50_16p_over_1p_fanout_floor)}: the prepare phase done by sixteen minimal participant processes (one gRPC message in, one fdatasync, one out, ${num(b.fanout_participant_cpu_us_per_txn, ' µs')} of CPU each) takes ${msOf(b.fanout_participants16_us)} ms against ${msOf(b.fanout_participants1_us)} ms for one`,
    ],
    [
      '`ratios.latency_p50_3_parallel_over_1`',
      sourcedRatio(r, 'latency_p50_3_parallel_over_1'),
      '≤ 1.0',
      met(r.ratios.latency_p50_3_parallel_over_1, (v) => v <= 1),
      `CPU floor ${x(b.latency_p50_3_parallel_over_1_cpu_floor)}: at 1 client a 3-node parallel commit costs ${cpuMs(b.nodes3_memory2_c1_parallel_cpu_ms_per_txn)} of CPU (1 node classic: ${cpuMs(b.nodes1_memory2_c1_cpu_ms_per_txn)}), over ${cores} cores; the disk alone would allow ${x(b.latency_p50_3_parallel_over_1_flush_floor)} (one transaction's flushes on the one disk: ${msOf(b.flush_pattern_parallel3_us)} ms for 3 nodes in parallel, two syncs each, beside the participants', against ${msOf(b.flush_pattern_classic1_us)} ms for 1 node classic; ${msOf(b.flush_pattern_parallel3_one_sync_us)} ms with one sync per node); the same patterns done by minimal processes over gRPC (the machine floor), ${x(b.latency_p50_3_parallel_over_1_fanout_floor)} (${msOf(b.fanout_parallel3_us)} ms against ${msOf(b.fanout_classic1_us)} ms)`,
    ],
  ];
  return [
    '## Targets and what bounds them (same run)',
    '',
    `CPU is summed over every process a transaction touches (nodes, participants, the load generator, and for PostgreSQL its server processes), over the measured window (\`bench/harness/cpu-sample.ts\`); a CPU ceiling is ${cores} cores × 1000 ÷ CPU ms per transaction: no run on this machine commits faster with that much CPU per transaction; a CPU floor for one client is that CPU ÷ ${cores} cores over the 1-node (or 1-participant) p50. Both bound what this implementation reaches with the CPU it spends today; the floors of the machine (disk, network) are in the next section. The figures are in \`bounds\` of the results file.${r.ratio_source === undefined ? '' : " The three latency ratios marked paired are the paired step's (below), both sides measured in the same minutes; the bounds are computed from the sweeps."}`,
    '',
    table(['target', 'this run', 'target', 'met', 'what bounds it, measured in this run'], rows),
    '',
  ];
}

/** Writes bench/REPORT.md and the charts; returns the files written. */
export function writeReport(r: Results, source = 'bench/results/latest.json'): string[] {
  const files: string[] = [];
  for (const [name, svg] of Object.entries(charts(r))) {
    writeFileSync(join(BENCH, name), svg);
    files.push(relative(ROOT, join(BENCH, name)));
  }
  writeFileSync(join(BENCH, 'REPORT.md'), markdown(r, source));
  files.push('bench/REPORT.md');
  return files;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2] ?? join(BENCH, 'results', 'latest.json');
  const written = writeReport(JSON.parse(readFileSync(file, 'utf8')) as Results, relative(ROOT, file));
  process.stdout.write(`wrote ${written.join(', ')}\n`);
}
