// The console's peer health (src/console/peer-health.ts) against real gRPC
// servers answering RaftNode.Status: it asks nothing until someone looks,
// a first look waits for fresh rows, it keeps asking while someone looks,
// it stops once nobody has for idleAfterMs, and a peer that does not answer
// is shown down with the reason.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerHealth } from '../../src/console/peer-health.ts';
import type { NodeStatus } from '../../src/transport/proto.ts';
import { freePorts } from '../free-ports.ts';
import { statusServer } from './fixtures/status-server.ts';

// The deadline is generous: a first call dials the peer, and CI runs many test files at once.
const TIMING = { everyMs: 100, callTimeoutMs: 2_000, idleAfterMs: 400 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A peer answering Status, counting the calls; its commit index is 10 + the calls so far, so each answer is told apart.
 */
async function peer(nodeId: string): Promise<{ address: string; calls: () => number }> {
  let calls = 0;
  const status = (): NodeStatus => ({
    clusterId: 'c',
    nodeId,
    address: '',
    role: 'follower',
    term: 3,
    leaderId: 'n1',
    commitIndex: 10 + calls,
    appliedIndex: 10,
    lastIndex: 12,
    firstIndex: 1,
    peers: [],
    pid: 1,
    version: '',
    consoleUrl: '',
  });
  const s = await statusServer((_call, cb: grpc.sendUnaryData<NodeStatus>) => {
    calls++;
    cb(null, status());
  });
  cleanups.push(s.stop);
  return { address: s.address, calls: () => calls };
}

function health(peers: Record<string, string>): PeerHealth {
  const h = new PeerHealth(
    'n1',
    () => new Map([['n1', '127.0.0.1:1'], ...Object.entries(peers)]),
    () => undefined,
    TIMING,
  );
  cleanups.push(() => h.close());
  return h;
}

describe('peer health probes only while someone looks', () => {
  it('asks nothing before the first look; the first look waits for fresh rows', async () => {
    const n2 = await peer('n2');
    const h = health({ n2: n2.address });
    await sleep(5 * TIMING.everyMs);
    expect(n2.calls()).toBe(0);
    expect(h.active).toBe(false);
    const rows = await h.list();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: 'n2', up: true, role: 'follower', term: 3, error: '' });
    expect(n2.calls()).toBe(1);
    expect(h.active).toBe(true);
  });

  it('keeps asking while looked at, stops after idleAfterMs without a look, and starts again on the next', async () => {
    const n2 = await peer('n2');
    const h = health({ n2: n2.address });
    await h.list();
    const lookingUntil = Date.now() + 6 * TIMING.everyMs;
    while (Date.now() < lookingUntil) {
      await h.list();
      await sleep(TIMING.everyMs / 2);
    }
    const whileLooking = n2.calls();
    expect(whileLooking).toBeGreaterThanOrEqual(4);
    await sleep(TIMING.idleAfterMs + 5 * TIMING.everyMs);
    expect(h.active).toBe(false);
    const stopped = n2.calls();
    await sleep(6 * TIMING.everyMs);
    expect(n2.calls()).toBe(stopped);
    const rounds = h.rounds;
    const rows = await h.list();
    expect(h.rounds).toBe(rounds + 1);
    expect(n2.calls()).toBe(stopped + 1);
    // The row is the fresh answer, not the one from before the pause.
    expect(rows[0]!.commitIndex).toBe(10 + n2.calls());
    expect(h.active).toBe(true);
  });

  it('asks nothing after close(), and list() then gives the last rows', async () => {
    const n2 = await peer('n2');
    const h = health({ n2: n2.address });
    await h.list();
    h.close();
    const calls = n2.calls();
    const rows = await h.list();
    expect(rows[0]).toMatchObject({ id: 'n2', up: true });
    await sleep(4 * TIMING.everyMs);
    expect(n2.calls()).toBe(calls);
    expect(h.active).toBe(false);
  });

  it('shows a peer that does not answer as down, with the reason, beside one that does', async () => {
    const n2 = await peer('n2');
    const [deadPort] = await freePorts(1);
    const h = health({ n2: n2.address, n3: `127.0.0.1:${deadPort}` });
    const rows = await h.list();
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get('n2')).toMatchObject({ up: true });
    expect(byId.get('n3')).toMatchObject({ up: false, lastUpAtMs: 0 });
    expect(byId.get('n3')!.error).not.toBe('');
  });
});
