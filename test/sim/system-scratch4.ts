import fc from 'fast-check';
import { SystemWorld } from './system-world.ts';
import { systemScenarioArb, crashPointArb, sysFaultArb } from './system-schedule.ts';
const arb = fc.record({ base: systemScenarioArb, cps: fc.array(crashPointArb, { minLength: 1, maxLength: 3 }), faults: fc.array(sysFaultArb, { maxLength: 14 }), nodes: fc.constantFrom(3, 5) }).map(({ base, cps, faults, nodes }) => ({ ...base, crashPoints: cps, faults, nodes }));
const n = Number(process.argv[2] ?? 1000);
const samples = fc.sample(arb, { seed: Number(process.argv[3] ?? 1), numRuns: n });
let bad = 0;
const t = Date.now();
for (const [i, sc] of samples.entries()) { const r = new SystemWorld(sc).run(); if (r.violations.length) { bad++; if (bad < 4) console.log(i, JSON.stringify(sc).slice(0, 300), '\n  ', r.violations.slice(0, 3).join('\n   ')); } }
console.log(`runs=${n} bad=${bad} ${(Date.now() - t) / 1000}s`);
