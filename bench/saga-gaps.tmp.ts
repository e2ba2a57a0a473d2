import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { VerdictClient } from '../src/client/client.ts';
import { startStepService, type StepService } from '../src/saga/step-service.ts';
import { freePorts } from '../test/free-ports.ts';
import { BenchCluster, stopAll } from './procs.ts';
const dir = mkdtempSync(join(tmpdir(), 'verdict-gaps-'));
const cluster = await BenchCluster.start(join(dir, 'nodes'), 3, 'gaps');
const services: StepService[] = [];
const client = new VerdictClient({ endpoints: cluster.endpoints });
const ports = await freePorts(3);
for (const [i, id] of ['s1', 's2', 's3'].entries())
  services.push(await startStepService({ clusterId: cluster.clusterId, serviceId: id, listen: `127.0.0.1:${ports[i]}`, endpointsOfCluster: cluster.endpoints, dataDir: join(dir, id), logger: pino({ level: 'silent' }),
    handlers: { work: { action: (req) => ({ status: 'done', output: req.key, effect: 'w' }), compensate: () => ({ status: 'done', output: '', effect: '' }) } } }));
await Promise.all(services.map((s) => s.registered));
const steps = ['s1', 's2', 's3'].map((service) => ({ service, name: 'work' }));
let n = 0;
for (const conc of [1, 16]) {
  const gaps: number[][] = [];
  const until = performance.now() + 6_000;
  await Promise.all(Array.from({ length: conc }, async () => {
    while (performance.now() < until) {
      const t0 = Date.now();
      const h = await client.saga({ id: `g-${n++}`, steps });
      const t1 = Date.now();
      const r = await h.result();
      const t2 = Date.now();
      const tl = r.status.timeline.filter((e) => e.what === 'started' || e.what === 'done' || e.what === 'finished');
      const at = tl.map((e) => e.atMs);
      // client start->started proposal, started->done0, done0->done1, done1->done2, done2(last)->client saw end, start call RTT
      gaps.push([at[0] - t0, at[1] - at[0], at[2] - at[1], at[3] - at[2], t2 - at[at.length - 1], t1 - t0, t2 - t0]);
    }
  }));
  const med = (k: number) => { const s = gaps.map((g) => g[k]).sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
  console.log(`c${conc}: n=${gaps.length}`, ['t0->started', 'started->done0', 'done0->done1', 'done1->done2', 'done2->client', 'startRPC', 'total'].map((k, i) => `${k}=${med(i)}`).join(' '));
}
client.close();
for (const s of services) await s.stop();
await cluster.destroy();
await stopAll();
