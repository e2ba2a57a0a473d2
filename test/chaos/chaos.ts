// A chaos run on real processes: three Verdict nodes whose every directed
// link goes through a fault-injecting proxy (proxy.ts), two participant
// processes (`verdict participant --resource postgres`) on the databases
// `shop` and `ledger` of a real PostgreSQL (test/pg/harness.ts, which honours
// VERDICT_PG_URL), a third (`--resource mysql`) on the database `books` of a
// real MariaDB (test/mysql/harness.ts, VERDICT_MYSQL_URL), concurrent clients (workload.ts), a seeded nemesis
// (nemesis.ts), and at the end a reconciliation of the data against the
// clients' answers and the cluster's decisions (reconcile.ts).
import { join } from 'node:path';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, freePorts, NodeProc, printLogTails, waitFor } from '../process/harness.ts';
import { startPostgres } from '../pg/harness.ts';
import { startMariaDb } from '../mysql/harness.ts';
import { Nemesis, type FaultCounts } from './nemesis.ts';
import { LinkTable } from './proxy.ts';
import { reconcile, type Violation } from './reconcile.ts';
import { createTables, Workload } from './workload.ts';

/**
 * A `verdict participant` child process, with NodeProc's lifecycle (start, SIGKILL, SIGSTOP/SIGCONT, log file,
 * cleanup).
 */
export class ParticipantProc extends NodeProc {
  constructor(
    id: string,
    address: string,
    dataDir: string,
    logFile: string,
    private readonly argv: string[],
  ) {
    super(id, address, '', dataDir, logFile);
  }

  protected override command(): string[] {
    return this.argv;
  }
}

export interface ChaosOptions {
  /** How long the nemesis injects faults (the run takes longer: start-up, healing, settling). */
  durationMs: number;
  seed: number;
  /** Concurrent clients. */
  clients?: number;
  /** The participants' prepare timeout asked at Begin. */
  txnTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface ChaosResult {
  /** `chaos: txns=N committed=C aborted=A unknown=U faults=F (kills=.. stops=.. partitions=..) violations=V` */
  summary: string;
  txns: number;
  committed: number;
  aborted: number;
  unknown: number;
  counts: FaultCounts;
  faults: number;
  violations: Violation[];
  history: string[];
}

const WARMUP_WAIT_MS = 60_000;
const REGISTER_WAIT_MS = 60_000;
/** After healing, a new transaction must commit within this long (AC4, liveness). */
const HEALED_COMMIT_WAIT_MS = 60_000;
const OUTCOMES_WAIT_MS = 60_000;
/**
 * The database adapters resolve an orphaned prepared transaction on a 30 s scan once it is 60 s old: leave room for
 * one.
 */
const PREPARED_WAIT_MS = 100_000;

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const log = o.log ?? ((line: string) => console.log(line));
  const [pgServer, myServer] = await Promise.all([
    startPostgres({ databases: ['shop', 'ledger'] }),
    startMariaDb({ databases: ['books'] }),
  ]);
  const shopUrl = pgServer.url('shop');
  const ledgerUrl = pgServer.url('ledger');
  const booksUrl = myServer.url('books');
  const links = new LinkTable();
  const participants: ParticipantProc[] = [];
  let client: VerdictClient | null = null;
  let workload: Workload | null = null;
  let ok = false;
  try {
    await createTables(shopUrl, ledgerUrl, booksUrl);
    const c = await Cluster.start({ nodes: 3, dialPeer: links.dialPeer });
    await c.waitForLeader();
    const endpoints = c.nodes.map((n) => n.address);
    const ports = await freePorts(3);
    for (const [i, id] of ['shop', 'ledger', 'books'].entries()) {
      const address = `127.0.0.1:${ports[i]}`;
      const dataDir = join(c.dir, `participant-${id}`);
      const resource =
        id === 'books'
          ? ['--resource', 'mysql', '--mysql-url', booksUrl]
          : ['--resource', 'postgres', '--pg-url', pgServer.url(id)];
      const argv = [
        'participant',
        '--id',
        id,
        '--listen',
        address,
        '--data',
        dataDir,
        '--cluster-id',
        c.clusterId,
        '--endpoints',
        endpoints.join(','),
        '--insecure',
        ...resource,
      ];
      const p = new ParticipantProc(id, address, dataDir, join(c.dir, `${id}.log`), argv);
      p.start();
      participants.push(p);
    }
    client = new VerdictClient({ insecure: true, endpoints, callTimeoutMs: 10_000 });
    const cl = client;
    await waitFor('participants shop, ledger and books registered', REGISTER_WAIT_MS, async () => {
      const ids = (await cl.participants()).map((p) => p.participantId);
      return ids.includes('shop') && ids.includes('ledger') && ids.includes('books') ? true : undefined;
    });

    const tag = `x${(o.seed >>> 0).toString(36)}${Date.now().toString(36)}`;
    workload = new Workload({
      client,
      tag,
      clients: o.clients ?? 6,
      seed: o.seed,
      txnTimeoutMs: o.txnTimeoutMs ?? 3_000,
    });
    const wl = workload;
    workload.start();
    await waitFor('a first commit before any fault', WARMUP_WAIT_MS, async () =>
      wl.committedSince(0) > 0 ? true : undefined,
    );

    const nemesis = new Nemesis({
      seed: o.seed,
      cluster: c,
      participants,
      links,
      log: (line) => log(`chaos: ${line}`),
    });
    await nemesis.run(Date.now() + o.durationMs);
    const healedAt = Date.now();
    const violations: Violation[] = [];
    await c.waitForLeader();
    try {
      await waitFor('a commit after healing', HEALED_COMMIT_WAIT_MS, async () =>
        wl.committedSince(healedAt) > 0 ? true : undefined,
      );
    } catch (err) {
      violations.push({ txnId: '-', what: `liveness after healing (AC4): ${(err as Error).message}` });
    }
    await workload.stop();

    const r = await reconcile({
      client,
      txns: workload.txns,
      tag,
      clusterId: c.clusterId,
      shopUrl,
      ledgerUrl,
      booksUrl,
      outcomesWaitMs: OUTCOMES_WAIT_MS,
      preparedWaitMs: PREPARED_WAIT_MS,
    });
    violations.push(...r.violations);
    const txns = workload.txns.filter((t) => t.answer !== 'not-sent');
    const count = (a: string): number => txns.filter((t) => t.answer === a).length;
    const counts = nemesis.counts;
    const res: ChaosResult = {
      summary: `chaos: txns=${txns.length} committed=${count('committed')} aborted=${count('aborted')} unknown=${count('unknown')} faults=${nemesis.total} (kills=${counts.kills} stops=${counts.stops} partitions=${counts.partitions}) violations=${violations.length}`,
      txns: txns.length,
      committed: count('committed'),
      aborted: count('aborted'),
      unknown: count('unknown'),
      counts,
      faults: nemesis.total,
      violations,
      history: nemesis.history,
    };
    const decidedCommits = [...r.outcomes.values()].filter((x) => x === 'COMMITTED').length;
    log(
      `chaos: seed=${o.seed} faultMs=${o.durationMs} beginFailed=${workload.txns.length - txns.length} clusterCommitted=${decidedCommits} forcedAborts=${r.forcedAborts} droppedBytes=${links.droppedBytes()} clusterId=${c.clusterId}`,
    );
    // Why transactions aborted, most common first: a run that aborts nearly everything for one reason deserves a look.
    const reasons = new Map<string, number>();
    for (const t of txns) {
      if (t.answer !== 'aborted' && t.answer !== 'unknown') continue;
      const key = `${t.answer}: ${t.detail
        .replace(new RegExp(tag + '[\\w-]*', 'g'), 'T')
        .replace(/\d+/g, '#')
        .slice(0, 140)}`;
      reasons.set(key, (reasons.get(key) ?? 0) + 1);
    }
    for (const [why, n] of [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 6)) log(`chaos: ${n} × ${why}`);
    for (const v of violations.slice(0, 30)) log(`chaos: VIOLATION ${v.txnId}: ${v.what}`);
    if (violations.length > 30) log(`chaos: ... and ${violations.length - 30} more violations`);
    if (violations.length > 0)
      log(`chaos: replay the fault schedule with VERDICT_CHAOS_SEED=${o.seed} VERDICT_CHAOS_MS=${o.durationMs}`);
    log(res.summary);
    ok = violations.length === 0;
    return res;
  } finally {
    workload?.stop().catch(() => {});
    client?.close();
    if (!ok) printLogTails(participants);
    await Promise.all(participants.map((p) => p.kill('SIGKILL')));
    await links.close();
    await Promise.all([pgServer.stop(), myServer.stop()]);
  }
}
