// The node core (src/node/core.ts): the composition the node process and the
// simulator share. One node on the simulated clock and disk: its leadership
// reaches the engines, a proposal is answered with its applied result, a
// proposal the log cannot take in time times out (an engine's, or an entry
// or a read from the node's API: one timeout for all), stop() lets pending
// callers hear it and crash() lets nobody hear anything.
import { describe, expect, it } from 'vitest';
import type { ApplyResult } from '../../src/commit/state.ts';
import { NodeCore, type CoreExtension } from '../../src/node/core.ts';
import { encodeProbe, NodeStateMachine } from '../../src/node/machine.ts';
import { RawNode } from '../../src/raft/raw-node.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { LogStore } from '../../src/storage/types.ts';
import { EventQueue } from '../sim/event-queue.ts';
import { queueCore } from './core-fixture.ts';
import { SimDisk } from '../sim/sim-disk.ts';

interface Setup {
  q: EventQueue;
  core: NodeCore;
  applied: string[];
}

function oneNode(store?: (disk: SimDisk) => LogStore): Setup {
  const q = new EventQueue();
  const rng = new Rng(7);
  const disk = new SimDisk(q, new Rng(rng.u32()));
  disk.found();
  const node = RawNode.restart(
    { id: 'n1', random: new Rng(rng.u32()).asRandom(), electionTicks: 10, heartbeatTicks: 1 },
    disk.recover(),
    { voters: ['n1'], learners: [], votersOutgoing: [] },
  );
  const applied: string[] = [];
  const core = queueCore({
    id: 'n1',
    ids: ['n1'],
    node,
    machine: new NodeStateMachine(),
    disk,
    q,
    transport: { send: () => {} },
    ...(store ? { store: store(disk) } : {}),
    onResult: (r) => applied.push(r.t),
  });
  const tick = (): void => {
    core.tick();
    q.after(100, tick);
  };
  q.after(100, tick);
  return { q, core, applied };
}

function leads(s: Setup): void {
  s.q.runUntil(5_000, () => s.core.engine.isLeader());
  expect(s.core.engine.isLeader(), 'one node leads within 5 s of virtual time').toBe(true);
}

const register = { t: 'register', id: 'p1', endpoint: 'p1:1', kind: 'memory', atMs: 0 } as const;

describe('the node core', () => {
  it('hands leadership and ticks to the commit engine and an attached extension, and saga results to the extension only', () => {
    const s = oneNode();
    const seen: string[] = [];
    const ext: CoreExtension = {
      setLeadership: (term) => seen.push(`lead ${term > 0}`),
      onApplied: (r) => seen.push(`applied ${r.product}`),
      tick: () => seen.push('tick'),
    };
    s.core.attach(ext);
    leads(s);
    expect(seen).toContain('lead true');
    expect(seen).toContain('tick');
    let result: ApplyResult | undefined;
    s.core.propose(register, (err, r) => {
      expect(err).toBeNull();
      result = r;
    });
    s.q.runUntil(s.q.now + 1_000, () => result !== undefined);
    expect(result?.t).toBe('register');
    expect(s.core.machine.table.participants.get('p1')?.endpoint).toBe('p1:1');
    expect(seen.filter((x) => x.startsWith('applied'))).toEqual([]);
    expect(s.applied).toContain('register');
  });

  it('answers a proposal the log does not take within the timeout with an error', () => {
    // Once the node leads, its disk never syncs again: the proposal can never apply.
    let hang = false;
    const s = oneNode((disk) => ({ persist: (b, cb) => (hang ? undefined : disk.persist(b, cb)) }));
    leads(s);
    hang = true;
    const heard: string[] = [];
    s.core.propose(register, (err, r) => heard.push(err?.message ?? `applied ${r?.t}`));
    s.q.runUntil(s.q.now + 5_000, () => heard.length > 0);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toMatch(/proposal register did not complete within 3000 ms/);
  });

  it('bounds an entry proposed outside the engines and a linearizable read by the same timeout', () => {
    let hang = false;
    const s = oneNode((disk) => ({ persist: (b, cb) => (hang ? undefined : disk.persist(b, cb)) }));
    leads(s);
    // While the disk syncs, a log probe applies (and changes no table) and a read is answered.
    const heard: string[] = [];
    const state = Buffer.from(s.core.machine.snapshot()).toString();
    s.core.proposeEntry('put k', encodeProbe('k', new Uint8Array([1])), (err, index) =>
      heard.push(err?.message ?? `put at ${index}`),
    );
    s.q.runUntil(s.q.now + 1_000, () => heard.length > 0);
    s.core.read('read k', (err) => heard.push(err?.message ?? 'read'));
    s.q.runUntil(s.q.now + 1_000, () => heard.length > 1);
    expect(heard).toEqual([`put at ${s.core.driver.applied}`, 'read']);
    expect(Buffer.from(s.core.machine.snapshot()).toString()).toBe(state);
    // Once the disk never syncs again, the put can never apply: it times out.
    hang = true;
    heard.length = 0;
    s.core.proposeEntry('put k2', encodeProbe('k2', new Uint8Array([2])), (err, index) =>
      heard.push(err?.message ?? `put at ${index}`),
    );
    s.q.runUntil(s.q.now + 5_000, () => heard.length > 0);
    expect(heard).toEqual(['put k2 did not complete within 3000 ms (no quorum?); retry']);
  });

  it('an entry proposed outside the engines hears "node is stopping" from a stopped node at once', () => {
    const s = oneNode();
    leads(s);
    s.core.stop();
    const heard: string[] = [];
    s.core.proposeEntry('put k', encodeProbe('k', new Uint8Array([1])), (err) => heard.push(err?.message ?? 'ok'));
    s.core.read('read k', (err) => heard.push(err?.message ?? 'ok'));
    expect(heard).toEqual(['node is stopping', 'node is stopping']);
  });

  it('stop(): a proposal still pending hears "node stopped"; crash(): it hears nothing', () => {
    for (const how of ['stop', 'crash'] as const) {
      const s = oneNode();
      leads(s);
      const heard: string[] = [];
      s.core.propose(register, (err) => heard.push(err?.message ?? 'ok'));
      // The batcher hands the proposal to the driver at the end of this turn; the disk has not synced it yet.
      s.q.runUntil(s.q.now);
      if (how === 'stop') s.core.stop();
      else s.core.crash();
      s.q.runUntil(s.q.now + 5_000);
      expect(heard, how).toEqual(how === 'stop' ? ['node stopped'] : []);
      expect(s.core.isStopped).toBe(true);
    }
  });
});
