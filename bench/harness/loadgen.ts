// A load generator: one child process, started by bench/main.ts with one JSON
// argument, that keeps a fixed number of closed-loop clients busy for a
// warm-up and then a measured window, and prints one JSON line with an HDR
// histogram of latency in microseconds and the counts.
//
//   commit  one VerdictClient for the process (as an application holds one),
//           `clients` concurrent workers on it, each in a loop:
//           begin → enlist every participant → commit. With the
//           memory workload the payload sets one of the client's own keys,
//           so clients never conflict on a lock, taken in rotation
//           (KEYS_PER_CLIENT), so a transaction never meets the key of the
//           one just answered: with parallel commit the client hears
//           COMMITTED one Raft round before the participants hear COMMIT
//           and release their locks (docs/protocol.md, "Parallel commit"),
//           and a memory participant votes NO on a locked key. With the pg
//           workload the
//           participants are PostgreSQL's shop and ledger and the payloads are
//           the statements of bench/harness/pg-workload.ts (an order row, a debit).
//           `commit` is the tx.commit() call (PREPARE, votes, the decision
//           through Raft, the answer); `txn` is begin + commit. By default
//           the transaction is begun by its Commit (client.transaction(): one
//           round trip, so `commit` includes beginning it); `beginRoundTrip`
//           uses a separate Begin call first (client.begin()).
//   raw     each of `inflight` workers: one Put of a 100-byte value at a
//           time, acknowledged once committed: on the leader's
//           RaftNode.PutStream (all workers share one stream), or, with
//           system etcd, etcd's KV.Put (the anchor, bench/harness/etcd.ts).
//   paired  one operation in flight, on several targets in turn (raw Puts
//           to Verdict or etcd, memory-workload commits to a cluster,
//           classic or parallel): a warm-up segment on each, then `rounds`
//           rounds of one `segmentMs` segment per target, in an order that
//           rotates from round to round. Before each segment it prints
//           `segment <k> <label>` and waits for `go <k>` on stdin, so the
//           orchestrator (bench/scenarios/paired.ts) can pause the systems not being
//           measured. The first `settleMs` of a segment are not counted.
//
// Only operations that finish inside the measured window count. The clients
// are closed-loop (a new request when the last one is answered), so the
// latency figures are those of a saturated system at that concurrency, not of
// an open-loop arrival rate. The process exits when its stdin closes (the
// orchestrator is gone) and, at the latest, at a hard deadline.
import { VerdictClient } from '../../src/client/client.ts';
import { OutcomeUnknownError, VerdictError } from '../../src/client/errors.ts';
import { createInterface } from 'node:readline';
import { etcdPut, verdictPut } from './raw-put.ts';
import { encode, newHistogram, recordMs, summarize, type Histogram, type LatencySummary } from './hist.ts';
import { accountOf, ledgerStatement, shopStatement } from './pg-workload.ts';
import { drain, DRAIN_MS, windowMarks, type Window } from './window-marks.ts';
import { pairedSpanMs, type PairedLoad, type PairedResult, type PairedTargetResult } from './paired-plan.ts';
import { nextTurn } from '../../src/util/sleep.ts';

export interface CommitLoad {
  mode: 'commit';
  endpoints: string[];
  participants: string[];
  /** memory: every participant gets {"set": {key: seq}}; pg: participants are [shop, ledger] and get SQL. */
  workload: 'memory' | 'pg';
  clients: number;
  warmupMs: number;
  measureMs: number;
  /** Makes keys unique to this run, so a decision still being delivered from the last run cannot hold a lock. */
  keyPrefix: string;
  txnTimeoutMs: number;
  /** A Begin call before Commit (two round trips) instead of beginning with the Commit. */
  beginRoundTrip?: boolean;
  /** Parallel commit per transaction (docs/protocol.md, "Parallel commit"); absent: the cluster's default (classic). */
  parallelCommit?: boolean;
}

export interface RawLoad {
  mode: 'raw';
  /**
   * verdict (default): Puts on the leader's RaftNode.PutStream; etcd: etcd's KV.Put (bench/harness/etcd.ts), the
   * anchor.
   */
  system?: 'verdict' | 'etcd';
  leader: string;
  inflight: number;
  warmupMs: number;
  measureMs: number;
  valueBytes: number;
}

export interface LoadResult {
  mode: 'commit' | 'raw';
  concurrency: number;
  measuredMs: number;
  /** Committed transactions (or acknowledged Puts) finished in the window. */
  ok: number;
  aborted: number;
  /** Failures by code (an OutcomeUnknownError is 'OUTCOME_UNKNOWN'). */
  errors: Record<string, number>;
  tps: number;
  latency: LatencySummary;
  /** Begin + commit, commit mode only. */
  txn: LatencySummary | null;
  histogram: string;
}

/**
 * Keys each client of the memory workload writes in turn: a key comes back
 * after this many of the client's transactions, long after the decision of
 * the one that last wrote it reached the participants.
 */
const KEYS_PER_CLIENT = 64;

function errorCode(err: unknown): string {
  if (err instanceof OutcomeUnknownError) return 'OUTCOME_UNKNOWN';
  if (err instanceof VerdictError) return err.code;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? `grpc-${code}` : 'ERROR';
}

async function commitLoad(cfg: CommitLoad, w: Window): Promise<LoadResult> {
  if (cfg.workload === 'pg' && cfg.participants.length !== 2)
    throw new Error(`the pg workload needs two participants (shop, ledger), not ${cfg.participants.length}`);
  const commitH = newHistogram();
  const txnH = newHistogram();
  const errors: Record<string, number> = {};
  let ok = 0;
  let aborted = 0;
  // One client for the whole process, as an application holds it: every worker's transactions share its
  // CommitStream to the leader, so the commits of one event-loop turn travel in one message (item 1 of issue 14).
  const client = new VerdictClient({ insecure: true, endpoints: cfg.endpoints });
  const worker = async (i: number): Promise<void> => {
    const key = `${cfg.keyPrefix}-w${i}`;
    for (let seq = 0; performance.now() < w.stopAt; seq++) {
      const t0 = performance.now();
      let t1 = t0;
      let outcome: string;
      try {
        const tx =
          cfg.beginRoundTrip === true
            ? await client.begin({ timeoutMs: cfg.txnTimeoutMs, parallelCommit: cfg.parallelCommit })
            : client.transaction({ timeoutMs: cfg.txnTimeoutMs, parallelCommit: cfg.parallelCommit });
        if (cfg.workload === 'pg') {
          const account = accountOf(i, seq);
          tx.enlist(cfg.participants[0], { sql: [shopStatement(`${key}-${seq}`, account)] });
          tx.enlist(cfg.participants[1], { sql: [ledgerStatement(account)] });
        } else {
          for (const p of cfg.participants) tx.enlist(p, { set: { [`${key}-${seq % KEYS_PER_CLIENT}`]: String(seq) } });
        }
        t1 = performance.now();
        outcome = (await tx.commit()).outcome;
      } catch (err) {
        if (performance.now() >= w.measureFrom) errors[errorCode(err)] = (errors[errorCode(err)] ?? 0) + 1;
        // A failure that came without I/O (a closed client, a full stream) must not loop without the event loop getting
        // a turn.
        await nextTurn();
        continue;
      }
      const t2 = performance.now();
      if (t2 < w.measureFrom || t2 > w.stopAt) continue;
      if (outcome !== 'COMMITTED') {
        aborted++;
        continue;
      }
      ok++;
      recordMs(commitH, t2 - t1);
      recordMs(txnH, t2 - t0);
    }
  };
  try {
    await drain(Promise.all(Array.from({ length: cfg.clients }, (_, i) => worker(i))), w);
  } finally {
    client.close();
  }
  return result('commit', cfg.clients, cfg.measureMs, ok, aborted, errors, commitH, txnH);
}

async function rawLoad(cfg: RawLoad, w: Window): Promise<LoadResult> {
  const h = newHistogram();
  const errors: Record<string, number> = {};
  let ok = 0;
  const value = Buffer.alloc(cfg.valueBytes, 0x61);
  const client = cfg.system === 'etcd' ? etcdPut(cfg.leader) : verdictPut(cfg.leader);
  const worker = async (i: number): Promise<void> => {
    for (let seq = 0; performance.now() < w.stopAt; seq++) {
      const t0 = performance.now();
      try {
        // A bounded key space: the state machine holds at most 256 keys per worker.
        await client.put(`raw-${i}-${seq % 256}`, value);
      } catch (err) {
        if (performance.now() >= w.measureFrom) errors[errorCode(err)] = (errors[errorCode(err)] ?? 0) + 1;
        // A failure that came without I/O (a closed client, a full stream) must not loop without the event loop getting
        // a turn.
        await nextTurn();
        continue;
      }
      const t1 = performance.now();
      if (t1 < w.measureFrom || t1 > w.stopAt) continue;
      ok++;
      recordMs(h, t1 - t0);
    }
  };
  try {
    await drain(Promise.all(Array.from({ length: cfg.inflight }, (_, i) => worker(i))), w);
  } finally {
    client.close();
  }
  return result('raw', cfg.inflight, cfg.measureMs, ok, 0, errors, h, null);
}

/**
 * The paired mode (see the top of this file): one operation at a time, the
 * targets in turn, so slow changes in the machine fall on all of them alike.
 */
async function pairedLoad(cfg: PairedLoad): Promise<PairedResult> {
  const clients = new Map<string, VerdictClient>();
  const closers: (() => void)[] = [];
  const value = (bytes: number): Buffer => Buffer.alloc(bytes, 0x61);
  /** One operation of a target; true when it committed (a Put always does). */
  const ops = cfg.targets.map((t): ((seq: number) => Promise<boolean>) => {
    if (t.kind === 'raw') {
      const c = t.system === 'etcd' ? etcdPut(t.leader) : verdictPut(t.leader);
      closers.push(() => c.close());
      const v = value(t.valueBytes);
      return async (seq) => {
        await c.put(`paired-${t.label}-${seq % 256}`, v);
        return true;
      };
    }
    const key = t.endpoints.join(',');
    let client = clients.get(key);
    if (client === undefined) {
      client = new VerdictClient({ insecure: true, endpoints: t.endpoints });
      clients.set(key, client);
      const c = client;
      closers.push(() => c.close());
    }
    const c = client;
    return async (seq) => {
      const tx = c.transaction({ timeoutMs: cfg.txnTimeoutMs, parallelCommit: t.parallelCommit });
      for (const p of t.participants)
        tx.enlist(p, { set: { [`${t.keyPrefix}-${seq % KEYS_PER_CLIENT}`]: String(seq) } });
      return (await tx.commit()).outcome === 'COMMITTED';
    };
  });
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  let k = 0;
  /** Announces segment k and waits for the orchestrator's go. */
  const begin = async (label: string): Promise<void> => {
    process.stdout.write(`segment ${k} ${label}\n`);
    for (;;) {
      const next = await lines.next();
      if (next.done === true) process.exit(2);
      if (next.value.trim() === `go ${k}`) break;
    }
    k++;
  };
  const pooled = cfg.targets.map(() => newHistogram());
  const results: PairedTargetResult[] = cfg.targets.map((t) => ({
    label: t.label,
    ok: 0,
    aborted: 0,
    errors: {},
    latency: summarize(newHistogram()),
    round_p50_us: [],
  }));
  const seqs = cfg.targets.map(() => 0);
  const segment = async (i: number, ms: number, counted: boolean): Promise<void> => {
    await begin(cfg.targets[i].label);
    const r = results[i];
    const h = newHistogram();
    const start = performance.now();
    const from = start + cfg.settleMs;
    const stop = start + ms;
    while (performance.now() < stop) {
      const t0 = performance.now();
      let committed: boolean;
      try {
        committed = await ops[i](seqs[i]++);
      } catch (err) {
        if (counted && t0 >= from) r.errors[errorCode(err)] = (r.errors[errorCode(err)] ?? 0) + 1;
        await nextTurn();
        continue;
      }
      const t1 = performance.now();
      if (!counted || t0 < from || t1 > stop) continue;
      if (!committed) {
        r.aborted++;
        continue;
      }
      r.ok++;
      recordMs(h, t1 - t0);
      recordMs(pooled[i], t1 - t0);
    }
    if (counted) r.round_p50_us.push(summarize(h).p50_us);
  };
  try {
    for (let i = 0; i < cfg.targets.length; i++) await segment(i, cfg.warmupMs, false);
    for (let round = 0; round < cfg.rounds; round++) {
      for (let j = 0; j < cfg.targets.length; j++) await segment((j + round) % cfg.targets.length, cfg.segmentMs, true);
    }
  } finally {
    for (const close of closers) close();
  }
  results.forEach((r, i) => (r.latency = summarize(pooled[i])));
  return { mode: 'paired', rounds: cfg.rounds, segmentMs: cfg.segmentMs, settleMs: cfg.settleMs, targets: results };
}

function result(
  mode: 'commit' | 'raw',
  concurrency: number,
  measuredMs: number,
  ok: number,
  aborted: number,
  errors: Record<string, number>,
  h: Histogram,
  txnH: Histogram | null,
): LoadResult {
  return {
    mode,
    concurrency,
    measuredMs,
    ok,
    aborted,
    errors,
    tps: Math.round((ok / measuredMs) * 1000 * 10) / 10,
    latency: summarize(h),
    txn: txnH ? summarize(txnH) : null,
    histogram: encode(h),
  };
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.argv[2] ?? '') as CommitLoad | RawLoad | PairedLoad;
  // The orchestrator holds our stdin; when it goes away, so do we.
  process.stdin.on('end', () => process.exit(2));
  if (cfg.mode === 'paired') {
    const hardMs = pairedSpanMs(cfg) + DRAIN_MS + 10_000;
    setTimeout(() => {
      process.stderr.write(`loadgen: hard deadline of ${hardMs} ms reached; exiting\n`);
      process.exit(3);
    }, hardMs).unref();
    const r = await pairedLoad(cfg);
    process.stdout.write(JSON.stringify(r) + '\n', () => process.exit(0));
    return;
  }
  process.stdin.resume();
  const hardMs = cfg.warmupMs + cfg.measureMs + DRAIN_MS + 10_000;
  setTimeout(() => {
    process.stderr.write(`loadgen: hard deadline of ${hardMs} ms reached; exiting\n`);
    process.exit(3);
  }, hardMs).unref();
  const start = performance.now();
  const w = { measureFrom: start + cfg.warmupMs, stopAt: start + cfg.warmupMs + cfg.measureMs };
  // Progress lines for an orchestrator that samples something over exactly the measured window
  // (bench/analysis/cpu-per-txn.ts). Each is printed once, from its timer, and at the latest before the result line:
  // the workers may all see the window end and the result be written before the "closed" timer gets its turn, and an
  // orchestrator waiting for the line must never miss it.
  const marks = windowMarks();
  const openTimer = setTimeout(marks.open, cfg.warmupMs);
  const closeTimer = setTimeout(marks.close, cfg.warmupMs + cfg.measureMs);
  const r = cfg.mode === 'commit' ? await commitLoad(cfg, w) : await rawLoad(cfg, w);
  clearTimeout(openTimer);
  clearTimeout(closeTimer);
  marks.close();
  process.stdout.write(JSON.stringify(r) + '\n', () => process.exit(0));
}

await main();
