// Sagas per second on three nodes: three steps at three step services (memory
// inboxes in synced journals, in this process), at 1 and 16 clients, and the
// same three step calls made directly in sequence as the floor, in the same
// run. What the orchestrator adds per saga: the start and one replicated write
// per step (the entry of step k's DONE also starts step k+1; batched across
// sagas by the node's group commit), and the client's wait for the end.
//
// The floor of a saga at one client is the direct calls plus four replicated
// writes one after the other (its start and one per step: each must be
// applied before the call it leads to goes out). One replicated write is
// measured on the same cluster in the same run (a raw log Put at a time,
// bench/harness/raw-put.ts), so floor_p50_ms_c1 = direct_p50_ms + 4 ×
// write_p50_ms says how far ratios.saga_over_direct_p50 can come down.
//
//   npm run bench -- saga [--quick] prints the figures as JSON
// bench/main.ts runs measureSagas() in the full run: keys saga.tps_3steps_c16,
// saga.p50_ms_c1, saga.floor_p50_ms_c1, saga.floor_over_direct_p50 and
// ratios.saga_over_direct_p50 in bench/results/latest.json. What bounds the
// sagas a second at 16 clients on a machine with few cores is CPU: the
// scenario reports the CPU of every process per saga (cpu_ms_per_saga_c16)
// and the ceiling it sets (ceiling_sagas_s).

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { VerdictClient } from '../../src/client/client.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { stepKey } from '../../src/saga/state.ts';
import { SagaStepClient } from '../../src/transport/saga-rpc.ts';
import { freePorts } from '../../test/free-ports.ts';
import { cpuMsOf } from '../harness/cpu-sample.ts';
import { BenchCluster, stopAll } from '../harness/procs.ts';
import { verdictPut } from '../harness/raw-put.ts';

export interface SagaFigures {
  tps_3steps_c16: number;
  p50_ms_c1: number;
  p99_ms_c1: number;
  direct_p50_ms: number;
  /** One replicated write at a time on the same cluster (a raw log Put), p50. */
  write_p50_ms: number;
  /** What a 3-step saga cannot go below at one client: the direct calls and its 4 writes one after the other. */
  floor_p50_ms_c1: number;
  /** floor_p50_ms_c1 over direct_p50_ms: how low ratios.saga_over_direct_p50 could go. */
  floor_over_direct_p50: number;
  /**
   * CPU per saga at 16 clients, every process together (the three nodes, and
   * this process: the client and the three step services), in ms; and the
   * ceiling it sets: cores × 1000 / cpu_ms_per_saga_c16 sagas a second,
   * however the work is scheduled (every process shares the same cores).
   */
  cpu_ms_per_saga_c16: number;
  cpu_ms_per_saga_leader_c16: number;
  ceiling_sagas_s: number;
  /**
   * End traffic per saga at 16 clients, as the step services counted it: End or EndSagas calls they took, and the
   * status calls they made to the cluster to confirm them (each of both a call the leader serves or makes).
   */
  end_calls_per_saga_c16: number;
  sagas_c1: number;
  sagas_c16: number;
  window_ms: number;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r2 = (x: number): number => Math.round(x * 100) / 100;

export async function measureSagas(dir: string, windowMs: number): Promise<SagaFigures> {
  mkdirSync(dir, { recursive: true });
  const cluster = await BenchCluster.start(join(dir, 'nodes'), 3, 'saga');
  const services: StepService[] = [];
  const client = new VerdictClient({ insecure: true, endpoints: cluster.endpoints });
  const direct = new Map<string, SagaStepClient>();
  try {
    const ports = await freePorts(3);
    for (const [i, id] of ['s1', 's2', 's3'].entries()) {
      services.push(
        await startStepService({
          clusterId: cluster.clusterId,
          serviceId: id,
          listen: `127.0.0.1:${ports[i]}`,
          endpointsOfCluster: cluster.endpoints,
          dataDir: join(dir, id),
          logger: pino({ level: 'silent' }),
          insecure: true,
          handlers: {
            work: {
              action: (req) => ({ status: 'done', output: req.key, effect: 'w' }),
              compensate: () => ({ status: 'done', output: '', effect: '' }),
            },
          },
        }),
      );
    }
    await Promise.all(services.map((s) => s.registered));
    const steps = ['s1', 's2', 's3'].map((service) => ({ service, name: 'work' }));
    let n = 0;
    const one = async (): Promise<number> => {
      const t0 = performance.now();
      const h = await client.saga({ id: `b-${process.pid}-${n++}`, steps });
      await h.result();
      return performance.now() - t0;
    };
    const loop = async (until: number, lat: number[]): Promise<void> => {
      while (performance.now() < until) lat.push(await one());
    };
    // Warm-up: channels, leader discovery, JIT.
    await loop(performance.now() + Math.min(3_000, windowMs / 4), []);
    const c1: number[] = [];
    await loop(performance.now() + windowMs, c1);
    const c16: number[] = [];
    const leader = await cluster.waitForLeader();
    const ends0 = endCalls(services);
    const cpu0 = cpuNow(cluster);
    const t16 = performance.now();
    await Promise.all(Array.from({ length: 16 }, () => loop(t16 + windowMs, c16)));
    const elapsed16 = performance.now() - t16;
    const cpu16 = cpuSince(cpu0, cpuNow(cluster), leader.id);
    const ends16 = endCalls(services) - ends0;
    // The floor: the same three calls, made directly in sequence, each with a new key.
    const directLat: number[] = [];
    const until = performance.now() + windowMs;
    let k = 0;
    for (const [i, s] of services.entries()) direct.set(`s${i + 1}`, new SagaStepClient(s.address));
    while (performance.now() < until) {
      const t0 = performance.now();
      const id = `d-${process.pid}-${k++}`;
      for (const [step, svc] of ['s1', 's2', 's3'].entries())
        await direct.get(svc)?.call(
          'action',
          {
            clusterId: cluster.clusterId,
            sagaId: id,
            step,
            key: stepKey(id, step, 'action'),
            name: 'work',
            input: '',
            outputs: [],
            attempt: 1,
          },
          10_000,
        );
      directLat.push(performance.now() - t0);
    }
    const writeLat = await replicatedWrites(cluster, Math.min(windowMs, 3_000));
    const writeP50 = pct(writeLat, 50);
    return {
      tps_3steps_c16: Math.round(c16.length / (elapsed16 / 1000)),
      p50_ms_c1: r2(pct(c1, 50)),
      p99_ms_c1: r2(pct(c1, 99)),
      direct_p50_ms: r2(pct(directLat, 50)),
      write_p50_ms: r2(writeP50),
      floor_p50_ms_c1: r2(pct(directLat, 50) + 4 * writeP50),
      floor_over_direct_p50: r2((pct(directLat, 50) + 4 * writeP50) / pct(directLat, 50)),
      cpu_ms_per_saga_c16: r2(cpu16.totalMs / c16.length),
      cpu_ms_per_saga_leader_c16: r2(cpu16.leaderMs / c16.length),
      ceiling_sagas_s: Math.round((availableParallelism() * 1000) / (cpu16.totalMs / c16.length)),
      end_calls_per_saga_c16: r2(ends16 / c16.length),
      sagas_c1: c1.length,
      sagas_c16: c16.length,
      window_ms: windowMs,
    };
  } finally {
    client.close();
    for (const d of direct.values()) d.close();
    for (const s of services) await s.stop();
    await cluster.destroy();
  }
}

/** End notices (End and EndSagas calls) and their confirmations (status calls) the step services counted so far. */
function endCalls(services: StepService[]): number {
  let n = 0;
  for (const s of services) {
    const c = s.endCounts();
    n += c.endCalls + c.endSagasCalls + c.confirmCalls;
  }
  return n;
}

/** CPU used so far (user + system, ms) by each node process and by this process (the client and the step services). */
function cpuNow(cluster: BenchCluster): { nodes: Map<string, number>; selfMs: number } {
  const nodes = new Map<string, number>();
  for (const n of cluster.nodes) {
    const pid = n.child?.proc.pid;
    const c = pid === undefined ? null : cpuMsOf(pid);
    if (c !== null) nodes.set(n.id, c.user + c.sys);
  }
  const self = process.cpuUsage();
  return { nodes, selfMs: (self.user + self.system) / 1000 };
}

function cpuSince(
  a: ReturnType<typeof cpuNow>,
  b: ReturnType<typeof cpuNow>,
  leaderId: string,
): { totalMs: number; leaderMs: number } {
  let totalMs = b.selfMs - a.selfMs;
  let leaderMs = 0;
  for (const [id, ms] of b.nodes) {
    const used = ms - (a.nodes.get(id) ?? ms);
    totalMs += used;
    if (id === leaderId) leaderMs = used;
  }
  return { totalMs, leaderMs };
}

/**
 * Latencies of replicated writes made one at a time to the leader for windowMs (each a raw log Put: one entry, applied
 * on the leader).
 */
async function replicatedWrites(cluster: BenchCluster, windowMs: number): Promise<number[]> {
  const leader = await cluster.waitForLeader();
  const put = verdictPut(leader.address);
  const lat: number[] = [];
  try {
    const value = new Uint8Array(200);
    const until = performance.now() + windowMs;
    for (let i = 0; performance.now() < until; i++) {
      const t0 = performance.now();
      await put.put(`saga-floor-${i}`, value);
      lat.push(performance.now() - t0);
    }
  } finally {
    put.close();
  }
  return lat;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-bench-saga-'));
  try {
    const f = await measureSagas(dir, process.argv.includes('--quick') ? 3_000 : 20_000);
    process.stdout.write(
      `${JSON.stringify({ saga: f, ratios: { saga_over_direct_p50: r2(f.p50_ms_c1 / f.direct_p50_ms) } }, null, 2)}\n`,
    );
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
