// The raw log's benchmark client (bench/harness/raw-put.ts) against three real node
// processes: sent to a follower, it hears the leader's address with its first
// refused Put and sends every later one there, so a leader change during a
// measured step costs the Puts in flight, not every Put after it.
import { afterAll, expect, it } from 'vitest';
import { verdictPut } from '../../bench/harness/raw-put.ts';
import type { PutResponse } from '../../src/transport/proto.ts';
import { Cluster, sleep, useProcessCleanup } from './harness.ts';

useProcessCleanup();

let cluster: Cluster | null = null;
afterAll(async () => await cluster?.destroy());

it('follows the leader named by a follower that refuses a Put', async () => {
  cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
  const { node: leader } = await cluster.waitForLeader();
  const follower = cluster.nodes.find((n) => n.id !== leader.id);
  if (!follower) throw new Error('no follower');
  // An idle cluster writes nothing to its log: every entry after this one is one of this test's.
  const before = (await leader.status()).lastIndex;
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
    const answers: PutResponse[] = [];
    for (let i = 1; i <= 3; i++) answers.push((await raw.put(`raw-follow-${i}`, Buffer.from(`v${i}`))) as PutResponse);
    // The leader answered all three, at the log's next three indexes: the refused Put was not written.
    expect(answers.map((a) => a.leaderId)).toEqual([leader.id, leader.id, leader.id]);
    expect(answers.map((a) => a.index)).toEqual([before + 1, before + 2, before + 3]);
    expect((await leader.status()).appliedIndex).toBeGreaterThanOrEqual(before + 3);
  } finally {
    raw.close();
  }
}, 120_000);
