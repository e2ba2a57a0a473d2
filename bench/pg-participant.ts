// `npx tsx bench/pg-participant.ts [--clients N (16)] [--measure-ms MS (8000)] [--warmup-ms MS (3000)]`
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
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { pgPayload } from '../src/participant/postgres.ts';
import { startParticipant } from '../src/participant/runtime.ts';
import { ParticipantClient } from '../src/transport/participant-rpc.ts';
import { fakeCluster } from '../test/pg/fake-cluster.ts';
import { sql, startPostgres } from '../test/pg/harness.ts';
import { intFlag as flag } from './procs.ts';

const CLIENTS = flag('clients', 16);
const MEASURE_MS = flag('measure-ms', 8_000);
const WARMUP_MS = flag('warmup-ms', 3_000);
const CLUSTER = `pgp-${Date.now().toString(36)}`;

interface Round {
  clients: number;
  txns: number;
  tps: number;
  voteP50Ms: number;
  voteP99Ms: number;
  loadAvg: number;
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
      const v = await c.prepare({ clusterId: CLUSTER, txnId, participantId: 'shop', participants: ['shop'], payload: pgPayload([`INSERT INTO orders VALUES ('${txnId}', 1)`]), timeoutMs: 0 }, 30_000);
      const voteMs = performance.now() - t0;
      if (v.vote !== 'VOTE_YES') throw new Error(`${txnId}: NO (${v.reason})`);
      await c.decide({ clusterId: CLUSTER, txnId, participantId: 'shop', decision: 'DECISION_COMMIT', reason: '' }, 30_000);
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
  await new Promise((r) => setTimeout(r, MEASURE_MS));
  measuring = false;
  const elapsedMs = performance.now() - t0;
  stop = true;
  await Promise.all(workers);
  return { clients, txns: done, tps: Math.round((done * 10_000) / elapsedMs) / 10, voteP50Ms: pct(votesMs, 0.5), voteP99Ms: pct(votesMs, 0.99), loadAvg: Math.round(loadavg()[0] * 100) / 100 };
}

const server = await startPostgres({ maxPreparedTransactions: 64, databases: ['shop'] });
const dir = mkdtempSync(join(tmpdir(), 'verdict-pgp-'));
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
    postgres: { url: server.url('shop'), concurrency: Math.max(4, CLIENTS) },
  });
  const c = new ParticipantClient(rt.address);
  try {
    const rounds: Round[] = [];
    for (const clients of [1, CLIENTS]) {
      const r = await round(c, clients, `c${clients}`);
      rounds.push(r);
      process.stderr.write(`${clients} client(s): ${r.tps} PREPARE+COMMIT/s, vote p50 ${r.voteP50Ms} ms, p99 ${r.voteP99Ms} ms (load average ${r.loadAvg})\n`);
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
