// The simulator runs the products as the node process runs them: every
// node's saga core is the one src/node/products.ts attaches to its node core
// (the node process's composition, src/node/node.ts), on the world's clock
// and generator. The saga extension (test/sim/system-saga.ts) only wires
// step services and reads what it checks; it never builds an orchestrator of
// its own, save the one mutant that must (a start answered without its log
// write), through the composition's engine factory.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { SagaEngine } from '../../src/saga/engine.ts';
import { SagaCore } from '../../src/saga/saga-core.ts';
import { SagaExtension, sagaScenarioArb } from './system-saga.ts';
import { SystemWorld } from './system-world.ts';

const SIM = dirname(fileURLToPath(import.meta.url));

test('every node runs the saga core the node composition attaches, on the world’s clock, and its sagas end', () => {
  let nodesSeen = 0;
  let sagasEnded = 0;
  for (const sc of fc.sample(sagaScenarioArb, { seed: 20261206, numRuns: 20 })) {
    let ext: SagaExtension | null = null;
    const w = new SystemWorld(sc, (world) => {
      ext = new SagaExtension(world, sc);
      return ext;
    });
    const r = w.run();
    expect(r.violations).toEqual([]);
    for (const n of w.nodes) {
      if (!n.up) continue;
      nodesSeen++;
      expect(n.sagas).toBeInstanceOf(SagaCore);
      // The production orchestrator, not a subclass or a stand-in.
      expect(n.sagas?.engine.constructor).toBe(SagaEngine);
    }
    const leader = w.leader();
    expect(leader?.sagas?.isLeader(), 'the leader’s saga core hears the core’s leadership').toBe(true);
    const table = (ext as SagaExtension | null)?.finalTable();
    for (const s of table?.sagas.values() ?? []) {
      // Virtual time starts at 0: an instant from the wall clock would be about 1.8e12.
      expect(s.startedAtMs).toBeLessThanOrEqual(w.q.now);
      for (const e of s.timeline) expect(e.atMs).toBeLessThanOrEqual(w.q.now);
      if (s.endedAtMs !== null) sagasEnded++;
    }
  }
  expect(nodesSeen).toBeGreaterThan(0);
  expect(sagasEnded).toBeGreaterThan(0);
});

test('no simulator file builds a saga core or attaches an extension to a node core itself', () => {
  const offenders: string[] = [];
  for (const f of readdirSync(SIM).filter((x) => x.endsWith('.ts'))) {
    const text = readFileSync(join(SIM, f), 'utf8');
    if (/new SagaCore\(|\.attach\(/.test(text) && !f.endsWith('.test.ts'))
      offenders.push(`${f}: builds a saga core or attaches to a node core`);
    if (/attachProducts\(/.test(text) && f !== 'system-world.ts')
      offenders.push(`${f}: composes products outside the world's one place`);
    // The one orchestrator built in test code is the start-unlogged mutant's, through the composition's factory.
    const engines = text.match(/new SagaEngine\(/g)?.length ?? 0;
    const viaFactory =
      text.match(/newSagaEngine:\s*mutant === 'saga-start-unlogged'\s*\?\s*\([^)]*\)\s*=>\s*new SagaEngine\(/g)
        ?.length ?? 0;
    if (engines > viaFactory) offenders.push(`${f}: builds a SagaEngine outside the mutant's factory`);
  }
  expect(offenders).toEqual([]);
});
