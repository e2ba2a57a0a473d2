import fc from 'fast-check';
import { SystemWorld } from './system-world.ts';
import { systemScenarioArb, crashPointArb } from './system-schedule.ts';
const arb = systemScenarioArb.chain((sc) => fc.record({ cp: fc.record({ point: fc.constantFrom('commit-proposed', 'commit-applied'), target: fc.constant('leader'), downMs: fc.integer({ min: 10, max: 3000 }) }), more: fc.array(crashPointArb, { maxLength: 2 }) }).map(({ cp, more }) => ({ ...sc, crashPoints: [cp as any, ...more], faults: [...sc.faults, ...[0,1,2,3,4].map((k) => ({ kind: 'slow-disk' as const, at: 0, target: k, extraMs: 300, durMs: 4000 }))], mutant: 'presume-abort-unlogged' as const })));
const n = Number(process.argv[2] ?? 1000);
const samples = fc.sample(arb, { seed: Number(process.argv[3] ?? 1), numRuns: n });
let bad = 0; const firsts: number[] = [];
const t = Date.now();
for (const [i, sc] of samples.entries()) { const r = new SystemWorld(sc).run(); if (r.violations.some((v) => v.includes('AC1'))) { bad++; if (firsts.length < 10) firsts.push(i); } }
console.log(`runs=${n} caught=${bad} first=${firsts} ${(Date.now() - t) / 1000}s`);
