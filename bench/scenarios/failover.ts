// Failover under load: a fresh three-node cluster with two memory
// participants, 16 clients committing steadily, and the leader killed with
// SIGKILL in the middle. Measured:
//
// - the in-doubt window at the participants: for every transaction begun on
//   the killed leader, each participant journals "prepared" before it votes
//   YES and the decision when it learns it, each with a wall-clock time
//   (atMs). After the run the participants are stopped cleanly and their
//   journals read back: a participant whose decision for such a transaction
//   is journaled after the kill (and whose prepare, where still in the
//   journal, is before it) was in doubt from the kill until that time. The
//   window is the longest of these; the p99 is over (transaction,
//   participant) pairs;
// - the same seen through the cluster (failover-load.ts): from the kill
//   until every transaction in flight at the kill has a final outcome from
//   client.outcome() or its own commit();
// - the client-visible gap: the longest time with no successful commit that
//   ends after the kill; the first commit of a transaction begun after it;
//   and the election time (kill → a new leader, in a later term, that all
//   live nodes agree on);
// - decided transactions rolled back: an answer that changed on re-reading
//   (failover-load.ts), plus any participant whose journaled decision
//   contradicts the answer the client got. Must be 0.
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { VerdictClient } from '../../src/client/client.ts';
import { FileJournal } from '../../src/participant/journal.ts';
import { isJournalRecord, type JournalRecord } from '../../src/participant/types.ts';
import type { FailoverLoad, FailoverLoadResult, TxnEntry } from './failover-load.ts';
import { percentile } from '../harness/hist.ts';
import { failoverTimeline, type TimelineEvent } from './failover-timeline.ts';
import { BenchCluster, runJsonChild, sleep, waitFor, type Child } from '../harness/procs.ts';

export interface FailoverOptions {
  clients: number;
  participants: number;
  warmupMs: number;
  beforeKillMs: number;
  afterKillMs: number;
  /** 'info' for a timeline of the run from the nodes' and participants' logs (FailoverRun.events); default 'warn'. */
  logLevel?: string;
}

/**
 * The failover run of the benchmark (the full run and bench/analysis/failover-only.ts alike): 3 nodes, 2 memory
 * participants, 16 clients.
 */
export function failoverPlan(quick: boolean): FailoverOptions {
  return {
    clients: 16,
    participants: 2,
    warmupMs: quick ? 1_000 : 2_000,
    beforeKillMs: quick ? 1_500 : 3_000,
    afterKillMs: quick ? 5_000 : 8_000,
  };
}

export interface Timeline {
  bucketMs: number;
  /** Start of the first bucket, relative to the kill. */
  startRelMs: number;
  commits: number[];
  aborts: number[];
  failures: number[];
  /** Relative to the kill. */
  marks: {
    electedMs: number;
    firstCommitMs: number | null;
    clusterResolvedMs: number | null;
    participantsResolvedMs: number | null;
  };
}

export interface FailoverRun {
  killedLeader: string;
  /** The kill fired once half the clients had been in commit() this long. */
  aimMs: number;
  killedAt: string;
  electionMs: number;
  /** The longest time between two successful commits, among the gaps that end after the kill. */
  clientGapMs: number | null;
  /** The first commit of a transaction begun after the kill (necessarily on a new leader). */
  firstCommitAfterKillMs: number | null;
  longestGapMs: number;
  inDoubt: {
    /** (transaction, participant) pairs prepared at the kill and decided after it. */
    pairs: number;
    txns: number;
    p50Ms: number | null;
    p99Ms: number | null;
    windowMs: number | null;
    /** Prepared and never decided by the end of the run (must be 0). */
    stillInDoubt: number;
    delaysMs: number[];
  };
  cluster: FailoverLoadResult['watch'];
  counts: { txns: number; committed: number; aborted: number; outcomeUnknown: number; beginFailed: number };
  latency: FailoverLoadResult['latency'];
  rollback: FailoverLoadResult['rollback'] & { participantMismatches: number };
  decidedRolledBack: number;
  timeline: Timeline;
  /** With logLevel 'info': where the in-doubt window went (bench/scenarios/failover-timeline.ts). */
  events?: TimelineEvent[];
}

const BUCKET_MS = 100;
const LEADER_POLL_MS = 20;

export async function runFailover(dir: string, tag: string, o: FailoverOptions): Promise<FailoverRun> {
  const cluster = await BenchCluster.start(dir, 3, tag, o.logLevel);
  try {
    const ids = Array.from({ length: o.participants }, (_, i) => `p${i + 1}`);
    await cluster.startParticipants(ids);
    const txnLog = join(dir, 'txns.jsonl');
    const cfg: FailoverLoad = {
      endpoints: cluster.endpoints,
      participants: ids,
      clients: o.clients,
      runMs: o.warmupMs + o.beforeKillMs + o.afterKillMs,
      txnTimeoutMs: 10_000,
      tag: `fo${tag}`,
      txnLog,
    };
    let killed: Promise<{ atMs: number; leader: string; electionMs: number }> | null = null;
    let fire: (() => void) | null = null;
    const killLeader = async (load: Child): Promise<{ atMs: number; leader: string; electionMs: number }> => {
      await sleep(o.warmupMs + o.beforeKillMs);
      // While armed, keep the leader fresh (a loaded machine may change it), so the kill follows 'fire' at once.
      let current = await cluster.waitForLeader({ timeoutMs: 10_000, pollMs: 10 });
      let armed = true;
      const tracking = (async () => {
        while (armed) {
          current = await cluster.waitForLeader({ timeoutMs: 10_000, pollMs: 10 }).catch(() => current);
          await sleep(LEADER_POLL_MS);
        }
      })();
      await new Promise<void>((r) => {
        fire = r;
        load.proc.stdin?.write('arm\n');
      });
      armed = false;
      const leader = current;
      const atMs = Date.now();
      await cluster.killNode(leader.id);
      load.proc.stdin?.write(`kill ${atMs} ${leader.id}\n`);
      await tracking;
      await cluster.waitForLeader({ notId: leader.id, minTerm: leader.term + 1, timeoutMs: 30_000, pollMs: 20 });
      return { atMs, leader: leader.id, electionMs: Date.now() - atMs };
    };
    const load = await runJsonChild<FailoverLoadResult>(
      'failover load',
      'scenarios/failover-load.ts',
      cfg,
      join(dir, 'failover-load.log'),
      cfg.runMs + 120_000,
      {
        onLine: (line, child) => {
          if (line.startsWith('started') && killed === null) killed = killLeader(child);
          if (line === 'fire') (fire as (() => void) | null)?.();
        },
      },
    );
    if (killed === null) throw new Error('the failover load never started');
    const kill = await (killed as Promise<{ atMs: number; leader: string; electionMs: number }>);
    await settled(cluster);
    await cluster.stopParticipants();
    const entries = readFileSync(txnLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as TxnEntry);
    const journals = new Map<string, JournalRecord[]>();
    for (const id of ids) journals.set(id, await readJournal(join(cluster.participantDir(id), 'journal.log')));
    const byParticipant = new Map<string, number[]>();
    const run = analyse(load, kill, entries, journals, byParticipant);
    if (o.logLevel !== 'info') return run;
    const nodeLogs = new Map(cluster.nodes.map((n) => [n.id, join(dir, `${n.id}.log`)]));
    const participantLogs = new Map(ids.map((id) => [id, join(dir, `participant-${id}.log`)]));
    return {
      ...run,
      events: failoverTimeline({
        killAtMs: kill.atMs,
        killed: kill.leader,
        nodeLogs,
        participantLogs,
        decidedRelMs: byParticipant,
      }),
    };
  } finally {
    await cluster.destroy();
  }
}

/** Waits (bounded) until the leader has delivered every decision, so the journals are complete when read. */
async function settled(cluster: BenchCluster): Promise<void> {
  const client = new VerdictClient({ insecure: true, endpoints: cluster.endpoints, callTimeoutMs: 2_000 });
  try {
    await waitFor(
      'every decision delivered to the participants',
      20_000,
      async () => {
        const open = await client.transactions({ inFlight: true, limit: 1_000 });
        return open.every((t) => t.phase === 'aborted') ? true : undefined;
      },
      100,
    );
  } finally {
    client.close();
  }
}

async function readJournal(path: string): Promise<JournalRecord[]> {
  const records: JournalRecord[] = [];
  const j = await FileJournal.open<JournalRecord>({
    path,
    fold: { add: (r) => records.push(r), snapshot: () => records },
    isRecord: isJournalRecord,
  });
  await j.close();
  return records;
}

/** `byParticipant` receives each participant's in-doubt delays (for the timeline). */
function analyse(
  load: FailoverLoadResult,
  kill: { atMs: number; leader: string; electionMs: number },
  entries: TxnEntry[],
  journals: Map<string, JournalRecord[]>,
  byParticipant: Map<string, number[]>,
): FailoverRun {
  const k = kill.atMs;
  const byId = new Map(entries.map((e) => [e.id, e]));

  // In doubt at the participants, from their journals.
  const delays: number[] = [];
  const inDoubtTxns = new Set<string>();
  let stillInDoubt = 0;
  let participantMismatches = 0;
  for (const [pid, records] of journals) {
    const mine: number[] = [];
    byParticipant.set(pid, mine);
    const preparedAt = new Map<string, number>();
    const decided = new Map<string, { kind: 'committed' | 'aborted'; atMs: number }>();
    for (const r of records) {
      if (r.kind === 'prepared') preparedAt.set(r.txnId, r.atMs);
      else if (r.kind === 'committed' || r.kind === 'aborted') decided.set(r.txnId, { kind: r.kind, atMs: r.atMs });
    }
    for (const id of preparedAt.keys()) if (!decided.has(id)) stillInDoubt++;
    for (const [id, d] of decided) {
      const e = byId.get(id);
      if (e === undefined) continue;
      const prep = preparedAt.get(id);
      if (e.l === kill.leader && d.atMs > k && (prep === undefined || prep <= k)) {
        delays.push(d.atMs - k);
        mine.push(d.atMs - k);
        inDoubtTxns.add(id);
      }
    }
    // AC1/AC2 against what the client was told (or, for an unknown answer, what the cluster says now).
    for (const e of entries) {
      const told = e.o === 'C' || e.o === 'A' ? e.o : e.f === 'C' || e.f === 'A' ? e.f : null;
      if (told === null) continue;
      const d = decided.get(e.id);
      if (told === 'C' && d?.kind !== 'committed') participantMismatches++;
      if (told === 'A' && d?.kind === 'committed') participantMismatches++;
    }
  }

  // The client's view: commits over time, and the gap around the kill.
  // Answers the old leader sent just before dying may arrive just after the kill, so the gap is
  // the longest one ending after the kill, not simply the one straddling it.
  const commits = entries
    .filter((e) => e.o === 'C')
    .map((e) => e.a)
    .sort((a, b) => a - b);
  let clientGapMs: number | null = null;
  let longestGapMs = 0;
  for (let i = 1; i < commits.length; i++) {
    const gap = commits[i] - commits[i - 1];
    longestGapMs = Math.max(longestGapMs, gap);
    if (commits[i] > k) clientGapMs = Math.max(clientGapMs ?? 0, gap);
  }
  const firstNew = entries
    .filter((e) => e.o === 'C' && e.b > k)
    .map((e) => e.a)
    .sort((a, b) => a - b)[0];

  const first = Math.min(...entries.map((e) => e.b));
  const last = Math.max(...entries.map((e) => e.a));
  const startRelMs = Math.floor((first - k) / BUCKET_MS) * BUCKET_MS;
  const n = Math.max(1, Math.ceil((last - k - startRelMs) / BUCKET_MS));
  const bucket = (t: number): number => Math.min(n - 1, Math.max(0, Math.floor((t - k - startRelMs) / BUCKET_MS)));
  const tl: Timeline = {
    bucketMs: BUCKET_MS,
    startRelMs,
    commits: new Array<number>(n).fill(0),
    aborts: new Array<number>(n).fill(0),
    failures: new Array<number>(n).fill(0),
    marks: {
      electedMs: kill.electionMs,
      firstCommitMs: firstNew === undefined ? null : Math.round(firstNew - k),
      clusterResolvedMs: load.watch.windowMs === null ? null : Math.round(load.watch.windowMs),
      participantsResolvedMs: delays.length ? Math.max(...delays) : null,
    },
  };
  for (const e of entries) {
    if (e.a === 0) continue;
    const series = e.o === 'C' ? tl.commits : e.o === 'A' ? tl.aborts : tl.failures;
    series[bucket(e.a)]++;
  }

  const rollback = { ...load.rollback, participantMismatches };
  return {
    killedLeader: kill.leader,
    aimMs: load.aimMs,
    killedAt: new Date(k).toISOString(),
    electionMs: kill.electionMs,
    clientGapMs: clientGapMs === null ? null : Math.round(clientGapMs),
    firstCommitAfterKillMs: tl.marks.firstCommitMs,
    longestGapMs: Math.round(longestGapMs),
    inDoubt: {
      pairs: delays.length,
      txns: inDoubtTxns.size,
      p50Ms: delays.length ? percentile(delays, 50) : null,
      p99Ms: delays.length ? percentile(delays, 99) : null,
      windowMs: delays.length ? Math.max(...delays) : null,
      stillInDoubt,
      delaysMs: delays.sort((a, b) => a - b),
    },
    cluster: load.watch,
    counts: {
      txns: load.txns,
      committed: load.committed,
      aborted: load.aborted,
      outcomeUnknown: load.outcomeUnknown,
      beginFailed: load.beginFailed,
    },
    latency: load.latency,
    rollback,
    decidedRolledBack: rollback.committedThenNot + rollback.abortedThenCommitted + participantMismatches,
    timeline: tl,
  };
}
