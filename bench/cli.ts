// The command line of `npm run bench` (bench/run.mjs), documented in
// docs/benchmarks.md:
//
//   npm run bench                      the whole comparison (bench/main.ts): writes
//                                      bench/results/latest.json, bench/REPORT.md and its charts
//   npm run bench -- --quick           the same plan with short windows and fewer points: a smoke
//                                      run that writes the same keys (its figures are not the report's)
//   npm run bench -- --keep            keep the work directory (every process's log) after the run
//   npm run bench -- TOOL [OPTIONS]    one scenario or one analysis alone (TOOLS below)
//   npm run bench -- --help            this list
//
// A tool runs as if started directly (`npx tsx bench/<file> OPTIONS`): its
// own flags, its own output; it writes no results file unless it says so.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface Tool {
  /** The file under bench/ that runs it. */
  file: string;
  /** Its options, as `--help` shows them. */
  usage: string;
  /** What it measures, in one line. */
  about: string;
}

/** `npm run bench -- NAME`: the scenarios that run alone and the analyses. */
export const TOOLS: Record<string, Tool> = {
  failover: {
    file: 'analysis/failover-only.ts',
    usage: '[--runs N (3)] [--quick] [--timeline]',
    about: "the full run's failover scenario alone: leader SIGKILLed under 16 clients; prints each run and the summary",
  },
  paired: {
    file: 'analysis/paired-run.ts',
    usage: '[--warmup-ms MS] [--segment-ms MS] [--settle-ms MS] [--rounds N]',
    about: 'the paired step alone: the three target ratios with the targets taken in turn',
  },
  history: {
    file: 'scenarios/history.ts',
    usage: '[--quick] [--rounds N (3; quick 2)]',
    about:
      'the transaction history on and off in alternating rounds: commit throughput, p50 and bytes per transaction on disk',
  },
  'history-store': {
    file: 'analysis/history-store.ts',
    usage: '[--rate N (1000)] [--seconds N (10)] [--role leader|follower|both]',
    about:
      "the history's own CPU, allocation, writes and bytes per transaction, the node's feed and the store apart, fed as a leader's and a follower's node feeds it, in one process",
  },
  saga: {
    file: 'scenarios/saga.ts',
    usage: '[--quick]',
    about: 'sagas on three nodes, three steps, 1 and 16 clients, beside the direct calls',
  },
  outbox: {
    file: 'scenarios/outbox.ts',
    usage: '[--quick]  (VERDICT_OUTBOX_BENCH_MS sets the window)',
    about: 'outbox polling and CDC relays through NATS JetStream, beside the broker floor',
  },
  'groups-model': {
    file: 'analysis/groups-model-run.ts',
    usage: '[RESULTS_FILE (bench/results/latest.json)] [--write] [--json]',
    about:
      "the capacity model fitted again to a results file's groups points: each point left out in turn, the smallest cluster predicting the larger, error ranges, 9 machines of 16 cores; --write stores it in the file",
  },
  groups: {
    file: 'analysis/groups-run.ts',
    usage: '[--quick] [--nodes 3,5] [--groups 1,2,4] [--clients 16,64]',
    about:
      'decision groups: peak, p50, CPU per transaction by process, fsyncs and messages per transaction at each G, leaders spread; the capacity model fitted to them',
  },
  'cli-status': {
    file: 'analysis/cli-status-run.ts',
    usage: '--endpoints HOST:PORT,... [--runs N (20)] [--bin PATH]',
    about: '`verdict status` from a cold process against a running cluster (cli.status_ms)',
  },
  'raw-vs-etcd': {
    file: 'analysis/raw-vs-etcd.ts',
    usage: '[--warmup-ms MS] [--measure-ms MS]',
    about: "Verdict's raw replicated log beside etcd 3.4 in one run",
  },
  'raw-modes': {
    file: 'analysis/raw-modes.ts',
    usage: '[--seconds N (180)] [--window-ms MS] [--etcd]',
    about: "the raw log's latency over time beside what the disk did",
  },
  'raft-throughput': {
    file: 'analysis/raft-throughput.ts',
    usage: '[--seconds N] [--warmup N] [--inflight 64,1]',
    about: 'replication throughput of a local three-node cluster',
  },
  'store-sync': {
    file: 'analysis/store-sync.ts',
    usage: '[--batches N (400)] [--rounds N (4)]',
    about: 'the syncs of one batch, measured at the store',
  },
  'cpu-per-txn': {
    file: 'analysis/cpu-per-txn.ts',
    usage:
      '[--nodes N] [--participants N] [--clients N] [--measure-ms MS] [--warmup-ms MS] [--pg] [--parallel] [--raw]',
    about: 'CPU per committed transaction, per process',
  },
  'cpuprofile-top': {
    file: 'analysis/cpuprofile-top.ts',
    usage: 'DIR [--top N (15)]',
    about: 'summarises the CPU profiles a run with VERDICT_BENCH_CPU_PROF=DIR wrote',
  },
  'decision-codec': {
    file: 'analysis/decision-codec.ts',
    usage: '',
    about: "CPU per decision of the decision log's two encodings",
  },
  'pg-participant': {
    file: 'analysis/pg-participant.ts',
    usage: '[--clients N (16)] [--measure-ms MS] [--warmup-ms MS] [--control-connections N]',
    about: 'one PostgreSQL participant alone, without a cluster',
  },
  databases: {
    file: 'analysis/databases.ts',
    usage: '[--quick] [--clients N (16)] [--warmup-ms MS] [--measure-ms MS] [--no-mysql] [--minimal] [--no-verdict]',
    about:
      "the full run's PostgreSQL and MariaDB rows alone, each beside its direct floor in the same run, with CPU per transaction by process; --minimal adds the least-process floors",
  },
  'pg-pipeline': {
    file: 'analysis/pg-pipeline.ts',
    usage: '[--batch N (64)] [--rounds N (20)]',
    about:
      'COMMIT PREPARED from a pool of 16 connections, one at a time on one, and pipelined on one and on four: commits/s and CPU per commit, client and PostgreSQL',
  },
  fanout: {
    file: 'analysis/fanout.ts',
    usage: '[--quick] [--participants N (16)] [--warmup-ms MS] [--measure-ms MS]',
    about: "the participant sweep's 1 and N participants at one client, beside the fan-out floor in the same run",
  },
  report: {
    file: 'report/report.ts',
    usage: '[RESULTS_FILE (bench/results/latest.json)]',
    about: 'writes bench/REPORT.md and its charts again from a results file',
  },
  keys: {
    file: 'analysis/result-keys.ts',
    usage: 'BEFORE.json AFTER.json',
    about: 'compares the key sets of two results files (exit 1 when they differ)',
  },
};

/** The options of the whole run (bench/main.ts). */
export const RUN_OPTIONS = ['--quick', '--keep'];

export function usage(): string {
  const width = Math.max(...Object.keys(TOOLS).map((n) => n.length));
  return [
    'usage: npm run bench [-- --quick] [-- --keep]     the whole comparison; writes bench/results/latest.json and bench/REPORT.md',
    '       npm run bench -- TOOL [OPTIONS]           one scenario or analysis alone:',
    ...Object.entries(TOOLS).map(
      ([name, t]) => `${`  ${name.padEnd(width)}  ${t.usage}`.trimEnd()}\n  ${' '.repeat(width)}  ${t.about}`,
    ),
    'See docs/benchmarks.md.',
  ].join('\n');
}

/** What a command line asks for: the whole run, a tool with its arguments, help, or an error. */
export function parseCommand(
  args: string[],
): { run: 'main' } | { run: 'tool'; tool: Tool; args: string[] } | { run: 'help' } | { run: 'error'; message: string } {
  if (args.includes('--help') || args.includes('-h')) return { run: 'help' };
  const [first, ...rest] = args;
  if (first !== undefined && !first.startsWith('-')) {
    const tool = TOOLS[first];
    return tool === undefined
      ? { run: 'error', message: `no bench tool named ${first}` }
      : { run: 'tool', tool, args: rest };
  }
  const unknown = args.filter((a) => !RUN_OPTIONS.includes(a));
  return unknown.length > 0 ? { run: 'error', message: `unknown option ${unknown[0]}` } : { run: 'main' };
}

/** Runs what the command line asks for (bench/run.mjs calls it; importing this file runs nothing). */
export async function start(): Promise<void> {
  const cmd = parseCommand(process.argv.slice(2));
  if (cmd.run === 'help' || cmd.run === 'error') {
    if (cmd.run === 'error') process.stderr.write(`bench: ${cmd.message}\n`);
    (cmd.run === 'help' ? process.stdout : process.stderr).write(`${usage()}\n`);
    process.exitCode = cmd.run === 'help' ? 0 : 64;
    return;
  }
  if (cmd.run === 'main') {
    await import('./main.ts');
    return;
  }
  // The tool reads process.argv as if started directly: argv[1] is its file (the main-module checks compare it), then
  // its own options.
  const file = join(import.meta.dirname, cmd.tool.file);
  process.argv = [process.argv[0]!, file, ...cmd.args];
  await import(pathToFileURL(file).href);
}
