// REPORT.md's section on decision groups (bench/scenarios/groups.ts): the
// measured points, the capacity model's parameters, its prediction beside
// each point, and its prediction for 9 machines of 16 cores.
import type { ErrorRange, GroupsFigures, GroupsModel, ValidationRow } from '../scenarios/groups.ts';

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
          `${p.leaders_before.join(' ')}${p.together === true ? ' (on one node)' : p.groups > 1 && !p.spread ? ' (not spread)' : ''}`,
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
  const equal = equalInFlightRows(g);
  if (equal.length > 0)
    out.push(
      '',
      "At equal transactions in flight per group: each window of G > 1 beside the same cluster's G = 1 window whose clients are its clients ÷ G, so each group's leader has as many transactions to batch as the one leader had. Each group batches alone (an append round, its persist, a participant batch): with the same clients in all, a group's batches at G > 1 are 1/G as big as at G = 1. Here that difference is taken out, and the ratio is what more groups cost at the same batch size (idle work, the groups' batches taking turns on the same cores).",
      '',
      table(
        [
          'nodes',
          'G',
          'clients (per group)',
          'tx/s',
          'G = 1 tx/s',
          'CPU ms/tx: nodes',
          'G = 1',
          'G ÷ G = 1',
          'all processes',
          'G = 1',
          'G ÷ G = 1',
        ],
        equal.map((r) => [
          r.nodes,
          r.groups,
          `${r.clients} (${r.clients_per_group})`,
          r.tps,
          r.tps_g1,
          r.cpu_nodes,
          r.cpu_nodes_g1,
          n2(r.cpu_nodes / r.cpu_nodes_g1),
          r.cpu_all,
          r.cpu_all_g1,
          n2(r.cpu_all / r.cpu_all_g1),
        ]),
      ),
    );
  const together = togetherRows(g);
  if (together.length > 0)
    out.push(
      '',
      "Every leader on one node: the same cluster founded with G groups, `spreadLeaders` off and every group's leader moved to the first node, beside G = 1 and beside G groups spread, at the same clients. All transactions then pass through one node's batches, as at G = 1, so the ratio to G = 1 is what the groups themselves cost; the spread windows add what spreading the leaders costs on one machine (each node's batches carry its share of the transactions only).",
      '',
      table(
        [
          'nodes',
          'G',
          'clients',
          'tx/s: one node',
          'G = 1',
          'spread',
          'CPU ms/tx nodes: one node',
          'G = 1',
          'one node ÷ G = 1',
          'spread',
          'spread ÷ G = 1',
          'all processes: one node ÷ G = 1',
        ],
        together.map((r) => [
          r.nodes,
          r.groups,
          r.clients,
          r.tps,
          r.tps_g1,
          r.tps_spread ?? '',
          r.cpu_nodes,
          r.cpu_nodes_g1,
          n2(r.cpu_nodes / r.cpu_nodes_g1),
          r.cpu_nodes_spread ?? '',
          r.cpu_nodes_spread === null ? '' : n2(r.cpu_nodes_spread / r.cpu_nodes_g1),
          n2(r.cpu_all / r.cpu_all_g1),
        ]),
      ),
    );
  const m = g.model;
  if (m === null) return out;
  // A results file written before the batching term has the older model; `npm run bench -- groups-model FILE --write`
  // fits it again.
  if (m.leave_one_out === undefined)
    return [
      ...out,
      '',
      'The capacity model stored with these points predates its per-batch term: `npm run bench -- groups-model FILE --write` fits it again.',
    ];
  return [...out, ...modelLines(m, table)];
}

const range = (r: ErrorRange): string =>
  `${pct(r.min)} to ${pct(r.max)} (mean |error| ${Math.round(r.mean_abs * 100)}%)`;

function validationTable(rows: ValidationRow[], table: Table): string {
  return table(
    [
      'nodes',
      'G',
      'clients',
      'tx/s measured',
      'predicted',
      'error',
      'all cores',
      'CPU ms/tx measured',
      'predicted',
      'error',
      'at measured batches',
      'tx/batch measured',
      'predicted',
      'busy',
      'load avg',
    ],
    rows.map((v) => [
      v.nodes,
      v.groups,
      `${v.clients}${v.peak ? ' (peak)' : ''}`,
      v.measured_tps,
      v.predicted_tps,
      pct(v.error),
      v.ceiling_tps,
      v.measured_cpu_ms_per_txn,
      v.predicted_cpu_ms_per_txn,
      pct(v.cpu_error),
      `${v.cpu_ms_per_txn_at_measured_batches} (${pct(v.cpu_error_at_measured_batches)})`,
      v.measured_txns_per_batch,
      v.predicted_txns_per_batch,
      v.busy,
      v.load_avg,
    ]),
  );
}

/** The model's part of the section: its parameters, its predictions beside the windows, and 9 × 16. */
export function modelLines(m: GroupsModel, table: Table): string[] {
  const p = m.params;
  const out = [
    '',
    `The capacity model (bench/analysis/scale-model.ts), fitted on every loaded window of ${p.fittedOn.join(', ')} (nodes × G). Per transaction, the leader's CPU is ${n2(p.leaderBaseMs)} ms of its own plus ${n2(p.perFollowerMs)} ms per follower, a follower's ${n2(p.perFollowerMs)} ms; per group batch (an append round, its persist, a participant batch), the leader's ${n2(p.leaderBatchMs)} ms plus ${n2(p.perFollowerBatchMs)} ms per follower, a follower's ${n2(p.perFollowerBatchMs)} ms (the node figures differ from the fit by ${pct(p.nodeResidual).slice(1)} root mean square); participants and clients ${n2(p.clientMs)} ms per transaction and ${n2(p.clientBatchMs)} ms per batch. A transaction waits through ${n2(p.phasesOneGroup)} of its group's batches at G = 1 and ${n2(p.phases)} at G > 1, so a batch carries (transactions in flight / G) / phases. Idle, a node spends ${n2(p.idleMsPerSecBase)} + ${n2(p.idleMsPerSecPerGroup)} × G ms of CPU a second. The leader sends each follower ${int(p.leaderBytesPerFollower)} bytes a transaction and a follower sends back ${int(p.followerBytes)}.`,
    '',
    "Each nodes × G point left out in turn, fitted on the others, predicting its windows: CPU per transaction of every process (idle work included) at the measured throughput, with the batch size the model expects there and, apart, with the measured one (the costs without the batch-size model); throughput for the CPU the window's processes got (busy × cores: other work on the machine took the rest) and for every core of this machine. Errors are (measured − predicted) / predicted.",
    '',
    validationTable(m.leave_one_out, table),
    '',
    `Left out in turn: CPU per transaction ${range(m.errors.leave_one_out.cpu)}, throughput ${range(m.errors.leave_one_out.tps)}.`,
  ];
  if (m.errors.from_smallest !== null)
    out.push(
      '',
      `Fitted on the smallest cluster alone, predicting the larger: CPU per transaction ${range(m.errors.from_smallest.cpu)}, throughput ${range(m.errors.from_smallest.tps)}.`,
      '',
      validationTable(m.validation_from_smallest, table),
    );
  const x = m.nine_by_16;
  const a = x.assumptions;
  const ceilings = (y: typeof x.prediction): string =>
    `CPU ${int(y.cpuTps)}, disk ${int(y.diskTps)}, network ${int(y.networkTps)}; ${n2(y.txnsPerBatch)} transactions a batch, ${int(y.inFlight)} in flight`;
  out.push(
    '',
    `Prediction for 9 machines of 16 cores, one node each, participants and clients elsewhere, fsync ${a.fsync_ms} ms (this disk's, under the load), ${a.network_gbit_s} Gbit/s links, a node keeping ${a.cores_per_node} core busy (one event loop), clients keeping enough in flight for a latency of ${a.latency_ms} ms (Little's law): G = ${x.groups} (the model's best, at most one group per machine) gives ${int(x.prediction.tps)} tx/s, bound by ${x.prediction.bound} (${ceilings(x.prediction)}); at G = 1, ${int(x.at_g1.tps)} tx/s, bound by ${x.at_g1.bound}. With clients that accept only ${a.low_latency_ms} ms (fewer in flight, smaller batches), G = ${x.low_latency.groups} gives ${int(x.low_latency.prediction.tps)} tx/s (${x.low_latency.prediction.bound}). If a node could keep all 16 cores busy, G = ${x.every_core.groups} would give ${int(x.every_core.prediction.tps)} tx/s (${x.every_core.prediction.bound}). Where the model stops holding: docs/operations.md, "The capacity model".`,
  );
  return out;
}

/** One window of G > 1 beside the G = 1 window of the same cluster with as many transactions in flight per group. */
export interface EqualInFlightRow {
  nodes: number;
  groups: number;
  clients: number;
  clients_per_group: number;
  tps: number;
  tps_g1: number;
  /** CPU ms per committed transaction, the node processes and every process (nodes, participants, load generator). */
  cpu_nodes: number;
  cpu_nodes_g1: number;
  cpu_all: number;
  cpu_all_g1: number;
}

const cpuAll = (w: GroupsFigures['points'][number]['windows'][number]): number =>
  Math.round((w.cpu_ms_per_txn_nodes + w.cpu_ms_per_txn_participants + w.cpu_ms_per_txn_loadgen) * 1000) / 1000;

/** The windows of G > 1 that have a G = 1 window (same nodes) with clients ÷ G clients; nodes, G, clients order. */
export function equalInFlightRows(g: GroupsFigures): EqualInFlightRow[] {
  const rows: EqualInFlightRow[] = [];
  for (const p of g.points) {
    if (p.groups <= 1 || p.together === true) continue;
    const one = g.points.find((q) => q.nodes === p.nodes && q.groups === 1);
    if (one === undefined) continue;
    for (const w of p.windows) {
      if (w.clients % p.groups !== 0 || w.tps <= 0) continue;
      const w1 = one.windows.find((x) => x.clients === w.clients / p.groups);
      if (w1 === undefined || w1.tps <= 0) continue;
      rows.push({
        nodes: p.nodes,
        groups: p.groups,
        clients: w.clients,
        clients_per_group: w1.clients,
        tps: w.tps,
        tps_g1: w1.tps,
        cpu_nodes: w.cpu_ms_per_txn_nodes,
        cpu_nodes_g1: w1.cpu_ms_per_txn_nodes,
        cpu_all: cpuAll(w),
        cpu_all_g1: cpuAll(w1),
      });
    }
  }
  return rows.sort((a, b) => a.nodes - b.nodes || a.groups - b.groups || a.clients - b.clients);
}

/** A window with every leader on one node beside G = 1 and G spread, same nodes and clients. */
export interface TogetherRow {
  nodes: number;
  groups: number;
  clients: number;
  tps: number;
  tps_g1: number;
  tps_spread: number | null;
  cpu_nodes: number;
  cpu_nodes_g1: number;
  cpu_nodes_spread: number | null;
  cpu_all: number;
  cpu_all_g1: number;
}

/** The windows of the points with every leader on one node that have a G = 1 window at the same clients. */
export function togetherRows(g: GroupsFigures): TogetherRow[] {
  const rows: TogetherRow[] = [];
  for (const p of g.points) {
    if (p.together !== true) continue;
    const one = g.points.find((q) => q.nodes === p.nodes && q.groups === 1 && q.together !== true);
    const spread = g.points.find((q) => q.nodes === p.nodes && q.groups === p.groups && q.together !== true);
    for (const w of p.windows) {
      const w1 = one?.windows.find((x) => x.clients === w.clients);
      if (w1 === undefined || w1.tps <= 0 || w.tps <= 0) continue;
      const ws = spread?.windows.find((x) => x.clients === w.clients && x.tps > 0);
      rows.push({
        nodes: p.nodes,
        groups: p.groups,
        clients: w.clients,
        tps: w.tps,
        tps_g1: w1.tps,
        tps_spread: ws?.tps ?? null,
        cpu_nodes: w.cpu_ms_per_txn_nodes,
        cpu_nodes_g1: w1.cpu_ms_per_txn_nodes,
        cpu_nodes_spread: ws?.cpu_ms_per_txn_nodes ?? null,
        cpu_all: cpuAll(w),
        cpu_all_g1: cpuAll(w1),
      });
    }
  }
  return rows.sort((a, b) => a.nodes - b.nodes || a.groups - b.groups || a.clients - b.clients);
}
