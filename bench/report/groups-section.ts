// REPORT.md's section on decision groups (bench/scenarios/groups.ts): the
// measured points, the capacity model's parameters, its prediction beside
// each point, and its prediction for 9 machines of 16 cores.
import type { GroupsFigures } from '../scenarios/groups.ts';

type Table = (head: string[], rows: (string | number)[][]) => string;

const ms = (us: number): string => `${(us / 1000).toFixed(2)} ms`;
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${Math.round(x * 100)}%`;
const n2 = (x: number): string => (Number.isFinite(x) ? String(Math.round(x * 100) / 100) : '∞');
const int = (x: number): string => (Number.isFinite(x) ? String(Math.round(x)) : '∞');

export function groupsSection(g: GroupsFigures, table: Table): string[] {
  const out = [
    '',
    '## Decision groups: how capacity scales',
    '',
    `One cluster founded with G decision groups, leaders spread (\`spreadLeaders\`), ${g.settings.participants} memory participants, classic two-phase commit, the load generator at ${g.settings.clients.join(', ')} clients; the peak is the best of them. CPU, fsyncs and messages are per committed transaction over the peak's measured window (${g.settings.measureMs} ms after ${g.settings.warmupMs} ms of warm-up), every process on this machine's ${g.settings.cores} cores. Leaders: each group's leader before the first window (group 0 first).`,
    '',
    table(
      [
        'nodes',
        'G',
        'leaders',
        'peak tx/s (clients)',
        'p50',
        'CPU ms/tx: nodes',
        'participants',
        'load generator',
        'fsyncs/tx (per node)',
        'group batches/fsync',
        'Raft msgs/tx (writes)',
        'participant msgs/tx (gRPC msgs)',
        'load avg',
      ],
      g.points.map((p) => {
        const w = p.windows.find((x) => x.clients === p.peak_clients) ?? p.windows[0];
        return [
          p.nodes,
          p.groups,
          `${p.leaders_before.join(' ')}${p.groups > 1 && !p.spread ? ' (not spread)' : ''}`,
          `${p.peak_tps} (${p.peak_clients})`,
          ms(p.p50_us_at_peak),
          String(w.cpu_ms_per_txn_nodes),
          String(w.cpu_ms_per_txn_participants),
          String(w.cpu_ms_per_txn_loadgen),
          `${w.fsyncs_per_txn} (${w.fsyncs_per_txn_per_node})`,
          String(w.group_batches_per_fsync),
          `${w.raft_messages_per_txn} (${w.raft_stream_writes_per_txn})`,
          `${w.participant_messages_per_txn} (${w.participant_grpc_messages_per_txn})`,
          String(w.load_avg),
        ];
      }),
    ),
  ];
  const m = g.model;
  if (m === null) return out;
  const p = m.params;
  out.push(
    '',
    `The capacity model (bench/analysis/scale-model.ts), fitted on ${p.fittedOn.join(', ')} (nodes × G): per transaction, the leader's CPU is ${n2(p.leaderBaseMs)} ms of its own plus ${n2(p.perFollowerMs)} ms per follower, each follower's ${n2(p.perFollowerMs)} ms, participants and clients ${n2(p.clientMs)} ms; ${n2(p.syncsPerTxnPerNode)} fsyncs per node at the measured load; the leader sends each follower ${int(p.leaderBytesPerFollower)} bytes and a follower sends back ${int(p.followerBytes)}; ${n2(p.raftMessagesPerTxn)} Raft messages and ${n2(p.participantMessagesPerTxn)} participant requests and answers.`,
    '',
    "On this machine every process shares the cores, so the model's throughput is its CPU ceiling, nearly the same at every G (less each group's idle work); the measured peak falls short of it by the share of the cores other work took (busy: the fraction of all cores the window's processes used). The CPU per transaction, predicted at the measured throughput, is the figure to compare: the model fits per-transaction costs at G = 1, so where a group's batches shrink at G > 1 it predicts too little.",
    '',
    table(
      [
        'nodes',
        'G',
        'measured tx/s',
        'predicted tx/s',
        'error',
        'CPU ms/tx measured',
        'predicted',
        'error',
        'busy',
        'load avg',
      ],
      m.validation.map((v) => [
        v.nodes,
        v.groups,
        v.measured_tps,
        v.predicted_tps,
        pct(v.error),
        v.measured_cpu_ms_per_txn,
        v.predicted_cpu_ms_per_txn,
        pct(v.cpu_error),
        v.busy,
        v.load_avg,
      ]),
    ),
  );
  if (m.validation_from_smallest.length > 0)
    out.push(
      '',
      `Fitted on the smallest cluster alone, predicting the larger: CPU per transaction ${m.validation_from_smallest.map((v) => `${v.nodes} nodes G = ${v.groups}: ${v.measured_cpu_ms_per_txn} measured, ${v.predicted_cpu_ms_per_txn} predicted (${pct(v.cpu_error)})`).join('; ')}.`,
    );
  const x = m.nine_by_16;
  out.push(
    '',
    `Prediction for 9 machines of 16 cores, one node each, participants and clients elsewhere, fsync ${x.assumptions.fsync_ms} ms (this disk's, under the load), ${x.assumptions.network_gbit_s} Gbit/s links: G = ${x.groups} (the model's choice: the fewest groups that reach its best throughput, at most one per machine) gives ${int(x.prediction.tps)} tx/s, bound by ${x.prediction.bound} (CPU ${int(x.prediction.cpuTps)}, disk ${int(x.prediction.diskTps)}, network ${int(x.prediction.networkTps)}); at G = 1, ${int(x.at_g1.tps)} tx/s, bound by ${x.at_g1.bound}. Where the model stops holding: docs/benchmarks.md.`,
  );
  return out;
}
