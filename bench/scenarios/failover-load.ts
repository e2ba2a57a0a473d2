// The failover load generator: a child process that runs the steady commit
// load of bench/harness/loadgen.ts (every transaction logged with its times), and
// talks with the orchestrator in lines:
//
//   stdin  arm                              aim the kill
//   stdout fire                             now: half the clients are well into a commit()
//   stdin  kill <wall-clock ms> <leader id> the instant the leader was killed
//
// Aiming matters: the clients tend to move in step (they share the leader's
// batches), so a kill at a random instant often finds every client between
// two transactions and nothing prepared anywhere. Firing once at least half
// the clients have had their commit() outstanding for AIM_FRACTION of the
// recent median commit latency puts the kill where participants are prepared and the
// decision is being made or replicated: the case the in-doubt window exists
// for. (Earlier, PREPARE may not have reached the participants; later, the
// DECISION may already be on its way.)
//
// From then on it watches, through the cluster, every transaction that was
// begun before the kill and had no final answer at that instant: its
// in-doubt time as the cluster sees it ends at the first final outcome, from
// the transaction's own commit() or from polling client.outcome() every
// POLL_MS. After the load it reads the outcome of every transaction again and
// counts answers that changed (COMMITTED then not COMMITTED, ABORTED then
// COMMITTED): decided transactions rolled back, which must be 0. It writes
// every transaction to `txnLog` (JSON lines) for the orchestrator to check
// against the participants' journals, and prints one JSON summary line.
import { writeFileSync } from 'node:fs';
import { VerdictClient } from '../../src/client/client.ts';
import { OutcomeUnknownError } from '../../src/client/errors.ts';
import { newHistogram, percentile, recordMs, summarize, wallMs, type LatencySummary } from '../harness/hist.ts';

export interface FailoverLoad {
  endpoints: string[];
  participants: string[];
  clients: number;
  /** The whole run; the kill comes from the orchestrator somewhere inside it. */
  runMs: number;
  txnTimeoutMs: number;
  tag: string;
  txnLog: string;
}

/** One transaction as the client lived it; times are wall-clock ms. */
export interface TxnEntry {
  id: string;
  /** Begin sent. */
  b: number;
  /** Final answer (or failure) received; 0 while in flight. */
  a: number;
  /** C committed, A aborted, U outcome unknown to the client, E Begin failed (nothing was begun). */
  o: 'C' | 'A' | 'U' | 'E' | '';
  /** The leader that answered Begin. */
  l: string;
  /** The outcome read after the run (settled for U), for the journal check. */
  f?: 'C' | 'A' | 'N';
}

export interface FailoverLoadResult {
  txns: number;
  committed: number;
  aborted: number;
  outcomeUnknown: number;
  beginFailed: number;
  latency: LatencySummary;
  killAtMs: number;
  killedLeader: string;
  /** How long half the clients had been committing when the kill fired. */
  aimMs: number;
  watch: {
    /** Begun before the kill, no final answer at the kill. */
    inFlightAtKill: number;
    /** Of those, Begin failed outright: nothing was begun, nothing to decide. */
    neverBegun: number;
    resolved: number;
    unresolved: number;
    /** Kill → last of them decided, as the cluster answers it. */
    windowMs: number | null;
    p50Ms: number | null;
    p99Ms: number | null;
  };
  rollback: { checked: number; committedThenNot: number; abortedThenCommitted: number; abortedNowUnknown: number };
}

const POLL_MS = 50;
const WATCH_MAX_MS = 30_000;
const CHECK_CONCURRENCY = 32;
/** If the aim never comes true, fire anyway after this long. */
const ARM_MAX_MS = 5_000;
const RECENT_MAX = 64;
/**
 * Fire when half the clients are this far into the recent median commit latency: past PREPARE's first steps, before the
 * DECISION is out.
 */
const AIM_FRACTION = 0.4;

async function pool<T>(items: readonly T[], n: number, f: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await f(items[next++]);
    }),
  );
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.argv[2] ?? '') as FailoverLoad;
  const hardMs = cfg.runMs + WATCH_MAX_MS + 60_000;
  setTimeout(() => {
    process.stderr.write(`failover-load: hard deadline of ${hardMs} ms reached; exiting\n`);
    process.exit(3);
  }, hardMs).unref();

  const entries: TxnEntry[] = [];
  const latency = newHistogram();
  let kill: { atMs: number; leader: string } | null = null;
  let watching: Promise<FailoverLoadResult['watch']> | null = null;
  const watcher = new VerdictClient({
    insecure: true,
    endpoints: cfg.endpoints,
    callTimeoutMs: 2_000,
    attemptTimeoutMs: 1_000,
  });

  /** Clients with a commit() sent and not yet answered → when it was sent (performance.now()). */
  const committing = new Map<number, number>();
  /** The latest commit latencies, ms, for aiming. */
  const recentMs: number[] = [];
  let aimMs = 0;
  const arm = (): void => {
    const since = Date.now();
    const t = setInterval(() => {
      aimMs = recentMs.length ? percentile(recentMs, 50) * AIM_FRACTION : 0;
      const now = performance.now();
      let ready = 0;
      for (const sent of committing.values()) if (now - sent >= aimMs) ready++;
      if (ready * 2 < cfg.clients && Date.now() - since < ARM_MAX_MS) return;
      clearInterval(t);
      process.stdout.write('fire\n');
    }, 1);
  };
  let buf = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const [word, at, leader] = buf.slice(0, i).trim().split(' ');
      buf = buf.slice(i + 1);
      if (word === 'arm') arm();
      if (word === 'kill' && kill === null) {
        kill = { atMs: Number(at), leader: leader ?? '' };
        watching = watch(kill.atMs);
      }
    }
  });
  process.stdin.on('end', () => process.exit(2));

  /** In-doubt as the cluster answers it: kill → first final outcome of each transaction in flight at the kill. */
  const watch = async (k: number): Promise<FailoverLoadResult['watch']> => {
    const inFlight = entries.filter((e) => e.b < k && (e.a === 0 || e.a > k));
    const resolvedAt = new Map<string, number>();
    const deadline = wallMs() + WATCH_MAX_MS;
    for (;;) {
      const open = inFlight.filter((e) => !resolvedAt.has(e.id) && e.o !== 'E');
      for (const e of open) if (e.o === 'C' || e.o === 'A') resolvedAt.set(e.id, e.a);
      const asks = open.filter((e) => !resolvedAt.has(e.id));
      if (asks.length === 0 || wallMs() > deadline) break;
      await pool(asks, CHECK_CONCURRENCY, async (e) => {
        const r = await watcher.outcome(e.id).catch(() => null);
        if (r?.outcome === 'COMMITTED' || r?.outcome === 'ABORTED')
          resolvedAt.set(e.id, Math.min(wallMs(), e.o === 'C' || e.o === 'A' ? e.a : Infinity));
      });
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const neverBegun = inFlight.filter((e) => e.o === 'E').length;
    const times = [...resolvedAt.values()].map((t) => Math.max(0, t - k));
    return {
      inFlightAtKill: inFlight.length,
      neverBegun,
      resolved: resolvedAt.size,
      unresolved: inFlight.length - neverBegun - resolvedAt.size,
      windowMs: times.length ? Math.max(...times) : null,
      p50Ms: times.length ? percentile(times, 50) : null,
      p99Ms: times.length ? percentile(times, 99) : null,
    };
  };

  // The load: closed-loop clients, one transaction at a time each, every one logged.
  const stopAt = wallMs() + cfg.runMs;
  // One client for the process, as an application holds it: every worker's commits share its stream to the leader.
  const client = new VerdictClient({ insecure: true, endpoints: cfg.endpoints });
  process.stdout.write(`started ${Date.now()}\n`);
  await Promise.all(
    Array.from({ length: cfg.clients }, async (_, w) => {
      for (let seq = 0; wallMs() < stopAt; seq++) {
        const e: TxnEntry = { id: `${cfg.tag}-${w}-${seq}`, b: wallMs(), a: 0, o: '', l: '' };
        entries.push(e);
        let t1 = 0;
        try {
          // Classic 2PC, as every failover run before parallel commit became the default measured it.
          const tx = await client.begin({ txnId: e.id, timeoutMs: cfg.txnTimeoutMs, parallelCommit: false });
          e.l = tx.leaderId;
          for (const p of cfg.participants) tx.enlist(p, { set: { [`${cfg.tag}-w${w}`]: e.id } });
          t1 = performance.now();
          committing.set(w, t1);
          const r = await tx.commit().finally(() => committing.delete(w));
          e.o = r.outcome === 'COMMITTED' ? 'C' : 'A';
          if (e.o === 'C') {
            recordMs(latency, performance.now() - t1);
            recentMs.push(performance.now() - t1);
            if (recentMs.length > RECENT_MAX) recentMs.shift();
          }
        } catch (err) {
          e.o = t1 === 0 && !(err instanceof OutcomeUnknownError) ? 'E' : 'U';
          // Begin failing means no leader answers yet; do not spin.
          if (e.o === 'E') await new Promise((r) => setTimeout(r, 20));
        }
        e.a = wallMs();
      }
    }),
  );
  client.close();
  if (watching === null) throw new Error('the orchestrator never announced the kill');
  const watchResult = await watching;

  // Decided transactions rolled back? Read every outcome again, now that the cluster has settled.
  const rollback = { checked: 0, committedThenNot: 0, abortedThenCommitted: 0, abortedNowUnknown: 0 };
  const checker = new VerdictClient({ insecure: true, endpoints: cfg.endpoints, callTimeoutMs: 10_000 });
  await pool(entries, CHECK_CONCURRENCY, async (e) => {
    if (e.o === 'E') return;
    let r = await checker.outcome(e.id);
    // Unknown to the client and undecided in the log: settle it (Abort answers COMMITTED if the log says so).
    if (e.o === 'U' && r.outcome !== 'COMMITTED' && r.outcome !== 'ABORTED')
      r = await checker.abort(e.id, 'settled by the benchmark');
    e.f = r.outcome === 'COMMITTED' ? 'C' : r.outcome === 'ABORTED' ? 'A' : 'N';
    if (e.o === 'U') return;
    rollback.checked++;
    if (e.o === 'C' && e.f !== 'C') rollback.committedThenNot++;
    if (e.o === 'A' && e.f === 'C') rollback.abortedThenCommitted++;
    // Presumed abort: an abort decided in memory (no log write) is forgotten after a while.
    if (e.o === 'A' && e.f === 'N') rollback.abortedNowUnknown++;
  });
  checker.close();
  watcher.close();
  writeFileSync(cfg.txnLog, entries.map((e) => JSON.stringify(e)).join('\n') + '\n');

  const k = kill as { atMs: number; leader: string } | null;
  const count = (o: TxnEntry['o']): number => entries.filter((e) => e.o === o).length;
  const out: FailoverLoadResult = {
    txns: entries.length,
    committed: count('C'),
    aborted: count('A'),
    outcomeUnknown: count('U'),
    beginFailed: count('E'),
    latency: summarize(latency),
    killAtMs: k?.atMs ?? 0,
    killedLeader: k?.leader ?? '',
    aimMs: Math.round(aimMs),
    watch: watchResult,
    rollback,
  };
  process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
}

await main();
