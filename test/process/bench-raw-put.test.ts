// The raw log's benchmark client (bench/harness/raw-put.ts) against three real node
// processes: sent to a follower, it hears the leader's address with its first
// refused Put and sends every later one there, so a leader change during a
// measured step costs the Puts in flight, not every Put after it.
import { afterAll, expect, it } from 'vitest';
import { verdictPut } from '../../bench/harness/raw-put.ts';
import { Cluster, sleep, useProcessCleanup } from './harness.ts';

useProcessCleanup();

let cluster: Cluster | null = null;
afterAll(async () => await cluster?.destroy());

it('follows the leader named by a follower that refuses a Put', async () => {
  cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
  const { node: leader } = await cluster.waitForLeader();
  const follower = cluster.nodes.find((n) => n.id !== leader.id);
  if (!follower) throw new Error('no follower');
  const raw = verdictPut(follower.address);
  try {
    let first: { code?: number; details?: string } | null = null;
    for (let attempt = 1; attempt <= 10; attempt++) {
      first = await raw.put('raw-follow-0', Buffer.from('v0')).then(
        () => null,
        (err: { code?: number; details?: string }) => err,
      );
      // Under a full test run grpc-js may fail the first connection attempt itself; only the node's refusal names a
      // leader.
      if (first === null || !/No connection established/.test(first.details ?? '')) break;
      await sleep(200);
    }
    expect(first?.code).toBe(14);
    expect(first?.details).toMatch(/not the leader|NOT_LEADER|leader is/i);
    for (let i = 1; i <= 3; i++) await raw.put(`raw-follow-${i}`, Buffer.from(`v${i}`));
    const got = await leader.api().get({ key: 'raw-follow-3', linearizable: true }, 5_000);
    expect(got.found && Buffer.from(got.value).toString()).toBe('v3');
    // The refused Put was not written.
    expect((await leader.api().get({ key: 'raw-follow-0', linearizable: true }, 5_000)).found).toBe(false);
  } finally {
    raw.close();
  }
}, 120_000);
