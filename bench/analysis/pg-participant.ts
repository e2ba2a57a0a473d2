// `npm run bench -- pg-participant [--clients N (16)] [--measure-ms MS (8000)] [--warmup-ms MS (3000)]
// [--control-connections N]`
//
// One PostgreSQL participant alone, without a cluster: a PostgreSQL of our
// own (test/pg/harness.ts), the participant runtime with the postgres
// resource (in this process), and a gRPC client sending PREPARE (one INSERT)
// then COMMIT for each transaction, closed loop, first with one client and
// then with --clients. Prints the vote latency (PREPARE → YES) and the whole
// PREPARE + COMMIT per second, with the load average, then one JSON line.
// For comparing changes to the participant's path (its journal, its round
// trips to PostgreSQL) with the cluster's cost out of the picture; the
// machine may be shared, so compare runs made close together.
//
// Per transaction over each measured window it also counts what the
// participant asked of PostgreSQL and of its disk, by wrapping the `pg`
// driver and the file handle in this process (bench instrumentation only):
// queries sent (each one round trip), time spent waiting for a pooled
// connection, journal fdatasyncs, and the CPU the whole process used
// (process.cpuUsage: the participant, the client and the fake cluster
// together; PostgreSQL's backends are other processes).
// --control-connections sets the resource's pool for decisions (its default otherwise).
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { pgPayload } from '../../src/participant/postgres.ts';
import { startParticipant } from '../../src/participant/runtime.ts';
import { ParticipantClient } from '../../src/transport/participant-rpc.ts';
import { fakeCluster } from '../../test/pg/fake-cluster.ts';
import { sql, startPostgres } from '../../test/pg/harness.ts';
import { intFlag as flag } from '../harness/procs.ts';

const CLIENTS = flag('clients', 16);
const MEASURE_MS = flag('measure-ms', 8_000);
const WARMUP_MS = flag('warmup-ms', 3_000);
const CLUSTER = `pgp-${Date.now().toString(36)}`;
const controlAt = process.argv.indexOf('--control-connections');
const CONTROL_CONNECTIONS = controlAt < 0 ? undefined : flag('control-connections', 2);

/** What this process asked of PostgreSQL and of the disk so far. */
const counted = { queries: 0, poolWaits: 0, poolWaitMs: 0, datasyncs: 0 };

/**
 * Counts every query the driver sends and the wait of every pool checkout (pg.Pool.query checks out with a callback).
 */
function countPg(): void {
  const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
    counted.queries += 1;
    return query.apply(this, a);
  } as typeof pg.Client.prototype.query;
  const connect = pg.Pool.prototype.connect as (...a: unknown[]) => unknown;
  pg.Pool.prototype.connect = function (this: pg.Pool, ...a: unknown[]) {
    const t0 = performance.now();
    const note = (): void => {
      const ms = performance.now() - t0;
      // A checkout that found an idle connection resolves within the same turn or the next; longer is a wait.
      if (ms >= 0.5) {
        counted.poolWaits += 1;
        counted.poolWaitMs += ms;
      }
    };
    const cb = a[a.length - 1];
    if (typeof cb === 'function') {
      a[a.length - 1] = (...r: unknown[]) => {
        note();
        return (cb as (...x: unknown[]) => unknown)(...r);
      };
      return connect.apply(this, a);
    }
    const p = connect.apply(this, a) as Promise<unknown>;
    void p.then(note, () => {});
    return p;
  } as typeof pg.Pool.prototype.connect;
}

/** Counts fdatasync on every file handle of this process (the journal's). */
async function countDatasyncs(dir: string): Promise<void> {
  const fh = await open(join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(fh) as { datasync: () => Promise<void> };
  await fh.close();
  const datasync = proto.datasync;
  proto.datasync = function (this: unknown) {
    counted.datasyncs += 1;
    return datasync.call(this);
  };
}

interface Round {
  clients: number;
  txns: number;
  tps: number;
  voteP50Ms: number;
  voteP99Ms: number;
  loadAvg: number;
  /** Per PREPARE + COMMIT, over the measured window. */
  queriesPerTxn: number;
  poolWaitsPerTxn: number;
  poolWaitMsPerTxn: number;
  datasyncsPerTxn: number;
  /** CPU of this whole process (participant, client and fake cluster) per transaction, user + system. */
  cpuMsPerTxn: number;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0) * 100) / 100;
}

async function round(c: ParticipantClient, clients: number, tag: string): Promise<Round> {
  let seq = 0;
  let measuring = false;
  let stop = false;
  const votesMs: number[] = [];
  let done = 0;
  const worker = async (w: number): Promise<void> => {
    while (!stop) {
      const txnId = `${tag}-${w}-${seq++}`;
      const t0 = performance.now();
      const v = await c.prepare(
        {
          clusterId: CLUSTER,
          txnId,
          participantId: 'shop',
          participants: ['shop'],
          payload: pgPayload([`INSERT INTO orders VALUES ('${txnId}', 1)`]),
          timeoutMs: 0,
        },
        30_000,
      );
      const voteMs = performance.now() - t0;
      if (v.vote !== 'VOTE_YES') throw new Error(`${txnId}: NO (${v.reason})`);
      await c.decide(
        { clusterId: CLUSTER, txnId, participantId: 'shop', decision: 'DECISION_COMMIT', reason: '' },
        30_000,
      );
      if (measuring) {
        votesMs.push(voteMs);
        done += 1;
      }
    }
  };
  const workers = Array.from({ length: clients }, (_, w) => worker(w));
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  measuring = true;
  const t0 = performance.now();
  const before = { ...counted };
  const cpu0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, MEASURE_MS));
  measuring = false;
  const cpu = process.cpuUsage(cpu0);
  const after = { ...counted };
  const elapsedMs = performance.now() - t0;
  stop = true;
  await Promise.all(workers);
  const per = (x: number): number => Math.round((x * 1000) / Math.max(1, done)) / 1000;
  return {
    clients,
    txns: done,
    tps: Math.round((done * 10_000) / elapsedMs) / 10,
    voteP50Ms: pct(votesMs, 0.5),
    voteP99Ms: pct(votesMs, 0.99),
    loadAvg: Math.round(loadavg()[0] * 100) / 100,
    queriesPerTxn: per(after.queries - before.queries),
    poolWaitsPerTxn: per(after.poolWaits - before.poolWaits),
    poolWaitMsPerTxn: per(after.poolWaitMs - before.poolWaitMs),
    datasyncsPerTxn: per(after.datasyncs - before.datasyncs),
    cpuMsPerTxn: per((cpu.user + cpu.system) / 1000),
  };
}

const server = await startPostgres({ maxPreparedTransactions: 64, databases: ['shop'] });
const dir = mkdtempSync(join(tmpdir(), 'verdict-pgp-'));
countPg();
await countDatasyncs(dir);
const cluster = await fakeCluster();
try {
  await sql(server.url('shop'), 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount int NOT NULL)');
  const rt = await startParticipant({
    clusterId: CLUSTER,
    participantId: 'shop',
    listen: '127.0.0.1:0',
    endpointsOfCluster: [cluster.address],
    dataDir: dir,
    logger: pino({ level: 'warn' }),
    insecure: true,
    postgres: {
      url: server.url('shop'),
      concurrency: Math.max(4, CLIENTS),
      ...(CONTROL_CONNECTIONS !== undefined ? { controlConnections: CONTROL_CONNECTIONS } : {}),
    },
  });
  const c = new ParticipantClient(rt.address);
  try {
    const rounds: Round[] = [];
    for (const clients of [1, CLIENTS]) {
      const r = await round(c, clients, `c${clients}`);
      rounds.push(r);
      process.stderr.write(
        `${clients} client(s): ${r.tps} PREPARE+COMMIT/s, vote p50 ${r.voteP50Ms} ms, p99 ${r.voteP99Ms} ms (load average ${r.loadAvg}); per txn: ${r.cpuMsPerTxn} ms CPU, ` +
          `${r.queriesPerTxn} queries, ${r.poolWaitsPerTxn} pool waits (${r.poolWaitMsPerTxn} ms), ${r.datasyncsPerTxn} journal fdatasyncs\n`,
      );
    }
    process.stdout.write(`${JSON.stringify({ rounds })}\n`);
  } finally {
    c.close();
    await rt.stop();
  }
} finally {
  cluster.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
