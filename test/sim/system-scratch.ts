import fc from 'fast-check';
import { SystemWorld } from './system-world.ts';
import { systemScenarioArb } from './system-schedule.ts';
const n = Number(process.argv[2] ?? 100);
const mutant = process.argv[3];
const samples = fc.sample(systemScenarioArb, { seed: Number(process.argv[4] ?? 42), numRuns: n });
const t = Date.now();
let steps = 0, bad = 0, vms = 0, txns = 0, committed = 0;
for (const [i, sc] of samples.entries()) {
  if (mutant) { (sc as any).mutant = mutant; if (mutant === "forget-before-acks" || process.env.TOMB0) (sc as any).tombstonesMax = 0; }
  const r = new SystemWorld(sc).run();
  steps += r.steps; vms += r.virtualMs; txns += r.txns; committed += r.committed;
  if (r.violations.length) { bad++; if (bad <= Number(process.env.SHOW ?? 5)) console.log(i, JSON.stringify({ ...sc, txns: sc.txns.length }).slice(0, 300), '\n  ', r.violations.slice(0, 4).join('\n   ')); }
}
const s = (Date.now() - t) / 1000;
console.log(`runs=${n} bad=${bad} ${s.toFixed(1)}s ${(s * 1000 / n).toFixed(1)} ms/run steps/run=${Math.round(steps / n)} virt/run=${Math.round(vms / n)} txns=${txns} committed=${committed}`);
