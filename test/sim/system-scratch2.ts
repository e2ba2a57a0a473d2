import fc from 'fast-check';
import { SystemWorld } from './system-world.ts';
import { systemScenarioArb } from './system-schedule.ts';
const i = Number(process.argv[2]);
const sc = fc.sample(systemScenarioArb, { seed: Number(process.env.S ?? 42), numRuns: i + 1 })[i]; if (process.env.M) (sc as any).mutant = process.env.M;
console.log(JSON.stringify(sc));
const w = new SystemWorld(sc);
const r = w.run();
console.log(r.violations);
for (const n of w.nodes) console.log(n.id, n.up, n.driver?.node.raft.role, n.driver?.node.raft.term, 'leaderEngine', n.engine?.isLeader(), n.engine && JSON.stringify(n.engine.list(false, 20)), [...(n.sm?.table.decisions.values() ?? [])].map(d => d.txnId + d.outcome));
for (const c of w.clients) console.log(c.txnId, c.participants, c.began, c.done, w.checker.decisionOf(c.txnId));
for (const p of w.parts) console.log(p.id, p.hint, p.engine?.inDoubt(), p.engine?.counts());
if (process.argv[3]) { const w2 = new SystemWorld(sc); w2.trace = (l) => console.log(l); w2.run(); }
