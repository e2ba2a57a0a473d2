// The conformance suite must fail a participant that breaks the protocol,
// naming the rule it broke. Two deliberately broken participants (the Python
// SDK's, each with one rule broken: sdk/python/tests/proc/
// conformance_participant.py --broken) run the phases that concern them;
// exactly the checks of the broken rule fail, and every other one passes.
import { afterAll, describe, expect, it } from 'vitest';
import { CHECKS, runConformance } from './checks.ts';
import { killTargets } from './target.ts';
import { pythonMemory } from './targets.ts';

afterAll(killTargets);

describe('conformance: deliberately broken participants fail by name', () => {
  it('one that lists Status at registration and does not serve it fails the Status checks, and only those', async () => {
    const results = await runConformance(pythonMemory('no-status'), ['prepare', 'decision', 'status']);
    const failed = results.filter((r) => !r.ok);
    expect(failed.map((r) => r.name).sort()).toEqual([CHECKS.status.states, CHECKS.status.restart].sort());
    expect(failed.every((r) => /UNIMPLEMENTED/.test(r.error))).toBe(true);
    expect(results.filter((r) => r.ok).length).toBe(results.length - 2);
  });

  it('one that votes YES before its prepared state is durable fails "a YES survives kill -9", and only that', async () => {
    const results = await runConformance(pythonMemory('yes-before-write'), ['prepare']);
    const failed = results.filter((r) => !r.ok);
    expect(failed.map((r) => r.name)).toEqual([CHECKS.prepare.durable]);
    expect(failed[0].error).toMatch(/asks the cluster about .* voted YES just before kill -9/);
    expect(results.map((r) => r.name)).toEqual(Object.values(CHECKS.prepare));
  });
});
