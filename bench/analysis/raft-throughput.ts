// Replication throughput of a local three-node cluster of real processes:
// Puts of 100-byte values through the leader on one RaftNode.PutStream (so the
// log is measured, not the cost of a unary gRPC call per Put), each
// acknowledged only once committed (a quorum synced it). One line per
// concurrency level.
//
//   npm run bench -- raft-throughput [--seconds 10] [--warmup 20] [--inflight 64,1]
//
// A measurement, not a test: nothing here passes or fails.

import { availableParallelism, cpus } from 'node:os';
import { Cluster, type NodeProc } from '../../test/process/harness.ts';

const VALUE_BYTES = 100;

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : def;
}

const measureSeconds = Number(arg('--seconds', '10'));
// JIT warm-up: figures after 2 s of load are those of partly cold code.
const warmupSeconds = Number(arg('--warmup', '20'));
const inFlightLevels = arg('--inflight', '64,1').split(',').map(Number);

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * Keeps `inFlight` Puts outstanding against the leader for warm-up + measure
 * seconds; only Puts that start and finish inside the measured window count.
 */
async function run(leader: NodeProc, inFlight: number, level: number): Promise<void> {
  const value = Buffer.alloc(VALUE_BYTES, 0x61);
  const client = leader.api();
  const start = performance.now();
  const measureFrom = start + warmupSeconds * 1000;
  const stopAt = measureFrom + measureSeconds * 1000;
  const latenciesMs: number[] = [];
  let errors = 0;
  let seq = 0;
  const worker = async (w: number): Promise<void> => {
    while (performance.now() < stopAt) {
      const t0 = performance.now();
      try {
        await client.putStreamed({ key: `b${level}-${w}-${seq++}`, value }, 5_000);
      } catch {
        errors++;
        continue;
      }
      const t1 = performance.now();
      if (t0 >= measureFrom && t1 <= stopAt) latenciesMs.push(t1 - t0);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, (_, w) => worker(w)));
  latenciesMs.sort((a, b) => a - b);
  const rate = latenciesMs.length / measureSeconds;
  const st = await leader.status();
  console.log(
    `3 nodes, ${inFlight} in flight, ${VALUE_BYTES}-byte puts: ${rate.toFixed(0)} entries/s, p50 ${percentile(latenciesMs, 50).toFixed(2)} ms, p99 ${percentile(latenciesMs, 99).toFixed(2)} ms, ${latenciesMs.length} entries in ${measureSeconds} s` +
      ` (after ${warmupSeconds} s warm-up; ${errors} errors; leader ${leader.id} term ${st.term} commit ${st.commitIndex})`,
  );
}

async function main(): Promise<void> {
  const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
  const stop = (): void => {
    void c.destroy().finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    console.log(
      `verdict raft-throughput: ${cpus()[0]?.model ?? 'cpu'} x${availableParallelism()}, node ${process.version}, data in ${c.dir}`,
    );
    for (const [i, inFlight] of inFlightLevels.entries()) {
      // A leader change between levels is possible; measure against whoever leads now.
      const { node: leader } = await c.waitForLeader();
      await run(leader, inFlight, i);
    }
  } catch (err) {
    c.printLogTails();
    throw err;
  } finally {
    await c.destroy();
  }
}

await main();
