// Answers that never change and refusals a client can act on, on real
// processes (docs/protocol-outcomes.md): a follower's refusal names the
// leader in metadata, and an ABORT answered after a participant's timeout is
// in the log, so a new leader answers it the same and refuses the id.

import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { VerdictError } from '../../src/client/errors.ts';
import {
  coordinatorService,
  LEADER_ADDRESS_KEY,
  LEADER_ID_KEY,
  STATUS_REASON_KEY,
} from '../../src/transport/coordinator-rpc.ts';
import { unaryCall } from '../../src/transport/unary.ts';
import { Cluster, ELECTION_WAIT_MS, freePorts, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

/** Generous: the machine is shared with other test runs. */
const CALL_MS = 20_000;

describe('outcomes and status reasons on real processes', () => {
  it("a follower's refusal is UNAVAILABLE with verdict-reason NOT_LEADER and the leader's id and address", async () => {
    const c = await Cluster.start({ nodes: 3 });
    const { node: leader } = await c.waitForLeader();
    const follower = c.nodes.find((n) => n !== leader);
    if (follower === undefined) throw new Error('a three-node cluster has followers');
    const rpc = new grpc.Client(follower.address, grpc.credentials.createInsecure());
    try {
      // The leader may have been elected before this follower was up (under load): wait until it serves and knows the
      // leader.
      await waitFor(`${follower.id} to know the leader ${leader.id}`, ELECTION_WAIT_MS, async () => {
        const s = await unaryCall(rpc, coordinatorService.ClusterStatus, {}, 2_000).catch(() => undefined);
        return s?.leaderId === leader.id ? s : undefined;
      });
      // An election under load may intervene: NO_LEADER is a right answer then, and the question is asked again.
      const err = await waitFor('a refusal that names the leader', ELECTION_WAIT_MS, async () => {
        const e = (await unaryCall(rpc, coordinatorService.Begin, { txnId: 'refused-1', timeoutMs: 0 }, CALL_MS).catch(
          (x: unknown) => x,
        )) as grpc.ServiceError;
        return e.metadata?.get(STATUS_REASON_KEY)[0] === 'NO_LEADER' ? undefined : e;
      });
      const context = `${err.code} ${err.details}`;
      expect(err.code, context).toBe(grpc.status.UNAVAILABLE);
      expect(err.metadata.get(STATUS_REASON_KEY), context).toEqual(['NOT_LEADER']);
      expect(err.metadata.get(LEADER_ID_KEY)).toEqual([leader.id]);
      expect(err.metadata.get(LEADER_ADDRESS_KEY)).toEqual([leader.address]);
    } finally {
      rpc.close();
    }
  });

  it('an ABORT answered after a participant timed out is logged: after kill -9 of the leader the new one answers ABORTED and refuses to begin the id again', async () => {
    const c = await Cluster.start({ nodes: 3 });
    await c.waitForLeader();
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: CALL_MS,
    });
    try {
      // A registered participant nobody listens for: PREPARE goes unanswered until the transaction's timeout.
      const [deadPort] = await freePorts(1);
      await client.registerParticipant('gone', `127.0.0.1:${deadPort}`);
      const tx = client.transaction({ timeoutMs: 1_000 });
      const r = await tx.enlist('gone', 'x').commit();
      expect(r.outcome).toBe('ABORTED');
      expect(r.decisionIndex).toBeGreaterThan(0);

      const { node: old, status } = await c.waitForLeader();
      await old.kill('SIGKILL');
      await c.waitForLeader({ notId: old.id, minTerm: status.term + 1 });
      expect(await client.outcome(tx.txnId)).toMatchObject({ outcome: 'ABORTED', decisionIndex: r.decisionIndex });
      const again = await client.begin({ txnId: tx.txnId }).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(VerdictError);
      expect(again).toMatchObject({
        code: 'ALREADY_EXISTS',
        details: { statusReason: 'ALREADY_DECIDED', recordedOutcome: 'ABORTED' },
      });
    } finally {
      client.close();
    }
  });
});
