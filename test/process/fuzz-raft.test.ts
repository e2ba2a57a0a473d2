// Hostile node-to-node traffic against three real node processes: the three
// attacks of the report (a non-member's heartbeat with term 2^53-1, a
// MSG_SNAP without a snapshot, a MSG_APP with command tag 127) and seeded
// random, truncated, mistyped and forged Raft batches, written to each
// node's `verdict.raft.Raft` service from a gRPC client of our own. Then:
// every node is alive and kept its term, a transaction commits, every
// earlier outcome reads the same on every node, each refusal was counted in
// verdict_raft_messages_refused_total and logged naming the sender, and a
// restart of every node works (nothing poisonous reached a disk).

import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { coordinatorService, type OutcomeRequest, type TxnOutcome } from '../../src/transport/coordinator-rpc.ts';
import { Cluster, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import { scrape, startParticipants, value, type Participants } from './ops-helpers.ts';
import { fuzzCases, reportedAttacks, sendFrames, type Target } from './raft-fuzz.ts';

useProcessCleanup();

const SEED = 20_261_130;
/** Per node; each case is one short stream. Bounded so the test stays well under a minute of traffic. */
const CASES_PER_NODE = 160;
/** A term this far above where the cluster started means a forged term was adopted. */
const SANE_TERM_MAX = 1_000;
const WAIT_MS = 60_000;

let parts: Participants | null = null;
const clients: grpc.Client[] = [];
afterAll(async () => {
  for (const c of clients) c.close();
  await parts?.stop();
});

function client(address: string): grpc.Client {
  const c = new grpc.Client(address, grpc.credentials.createInsecure());
  clients.push(c);
  return c;
}

/** GetOutcome answered by this node alone, from its own applied state (a follower does not forward it). */
function outcomeAt(c: grpc.Client, txnId: string): Promise<string> {
  const m = coordinatorService.GetOutcome;
  return new Promise((resolve, reject) =>
    c.makeUnaryRequest<OutcomeRequest, TxnOutcome>(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      { txnId, participantId: '' },
      { deadline: Date.now() + 3_000 },
      (err, r) => (err ? reject(err) : resolve(r?.outcome ?? 'none')),
    ),
  );
}

/** Waits until every node answers every transaction's outcome by itself, and returns what each said. */
async function outcomesOnEveryNode(c: Cluster, expected: Map<string, string>): Promise<void> {
  for (const n of c.nodes) {
    const rpc = client(n.address);
    for (const [txnId, want] of expected) {
      const got = await waitFor(`${n.id} to answer the outcome of ${txnId}`, WAIT_MS, () =>
        outcomeAt(rpc, txnId).catch(() => undefined),
      );
      expect(got, `${n.id} on ${txnId}`).toBe(want);
    }
  }
}

async function commitOne(v: VerdictClient, key: string): Promise<{ txnId: string; outcome: string }> {
  const tx = await v.begin({ timeoutMs: 5_000 });
  const r = await tx
    .enlist('shop', { set: { [key]: '1' } })
    .enlist('ledger', { set: { [key]: '1' } })
    .commit();
  return { txnId: r.txnId, outcome: r.outcome };
}

describe('forged and malformed Raft traffic on three node processes', { timeout: 360_000 }, () => {
  it('refuses the reported attacks and seeded random, truncated, mistyped and forged batches; every node lives, agrees, commits and restarts', async () => {
    const c = await Cluster.start({ nodes: 3, metrics: true });
    const { node: leader } = await c.waitForLeader();
    parts = await startParticipants(c, ['shop', 'ledger']);
    const v = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 30_000 });

    // Outcomes given before the attack, each one in the log (an abort by id is logged; a NO vote's
    // presumed abort is not, so only the leader could answer it and it is left out here).
    const told = new Map<string, string>();
    for (let i = 0; i < 3; i++) {
      const r = await commitOne(v, `before-${i}`);
      expect(r.outcome).toBe('COMMITTED');
      told.set(r.txnId, 'OUTCOME_COMMITTED');
    }
    const abortedId = randomUUID();
    expect((await v.abort(abortedId, 'aborted before the attack')).outcome).toBe('ABORTED');
    told.set(abortedId, 'OUTCOME_ABORTED');
    await outcomesOnEveryNode(c, told);
    // No false alarms: an election, a membership of three and four transactions of real traffic refused nothing.
    for (const n of c.nodes) {
      const s = await waitFor(`${n.id}'s metrics`, WAIT_MS, () =>
        scrape(n.metricsAddress as string).catch(() => undefined),
      );
      const refused = s.samples.filter((x) => x.name === 'verdict_raft_messages_refused_total');
      expect(refused.length, `${n.id} exports a refusal count per reason`).toBeGreaterThan(0);
      expect(
        refused.filter((x) => x.value !== 0),
        `${n.id} refused nothing of real traffic`,
      ).toEqual([]);
    }
    const termsBefore = new Map<NodeProc, number>();
    for (const n of c.nodes) termsBefore.set(n, (await n.status()).term);

    // The attacks, at every node: aimed where each would have been taken.
    const codes = new Map<string, number>();
    /**
     * Per node: batches that must have been refused in part or whole (all but a truncated frame that decoded to an
     * empty batch).
     */
    const mustRefuse = new Map<NodeProc, number>();
    for (const n of c.nodes) {
      const st = await n.status();
      const member = c.nodes.find((x) => x.id !== n.id && x.id !== leader.id) ?? c.nodes.find((x) => x.id !== n.id)!;
      const t: Target = {
        clusterId: c.clusterId,
        nodeId: n.id,
        leaderId: leader.id === n.id ? member.id : leader.id,
        memberId: member.id,
        term: st.term,
        lastIndex: st.lastIndex,
      };
      const raft = client(n.address);
      let refusable = 0;
      for (const a of reportedAttacks(t)) {
        refusable++;
        const r = await sendFrames(raft, [a.batch]);
        // A non-member's batch ends the stream with a reason; a member's bad message is dropped and the stream goes on.
        if (a.batch.from === 'intruder') {
          expect(r.code, a.name).toBe(grpc.status.PERMISSION_DENIED);
          expect(r.details).toMatch(/"intruder" is not a member of the current configuration/);
        } else expect(r.code, `${a.name}: ${r.details}`).toBe(grpc.status.OK);
      }
      for (const f of fuzzCases(SEED + Number(n.id.slice(1)), CASES_PER_NODE, t)) {
        const r = await sendFrames(raft, [f.frame]);
        const key = `${f.kind}:${grpc.status[r.code]}`;
        codes.set(key, (codes.get(key) ?? 0) + 1);
        if (!(f.kind === 'truncated' && r.code === grpc.status.OK)) refusable++;
        // Never UNKNOWN or INTERNAL: a refusal always says what was wrong (or the batch was taken apart message by
        // message).
        expect(
          [
            grpc.status.OK,
            grpc.status.INVALID_ARGUMENT,
            grpc.status.FAILED_PRECONDITION,
            grpc.status.PERMISSION_DENIED,
          ],
          `${f.kind} ${f.what}: ${grpc.status[r.code]} ${r.details}`,
        ).toContain(r.code);
      }
      expect(n.running, `${n.id} survived`).toBe(true);
      mustRefuse.set(n, refusable);
    }
    console.log(`fuzz-raft: stream outcomes by kind: ${JSON.stringify(Object.fromEntries([...codes].sort()))}`);

    // Alive, in the same terms (no forged term adopted), and still one cluster.
    for (const n of c.nodes) {
      expect(n.running, `${n.id} is running`).toBe(true);
      const st = await n.status();
      expect(st.term, `${n.id} kept a sane term`).toBeLessThan(SANE_TERM_MAX);
      expect(st.term).toBeGreaterThanOrEqual(termsBefore.get(n) ?? 0);
    }
    await c.waitForLeader({ timeoutMs: WAIT_MS });
    const after = await commitOne(v, 'after-attack');
    expect(after.outcome).toBe('COMMITTED');
    told.set(after.txnId, 'OUTCOME_COMMITTED');
    await outcomesOnEveryNode(c, told);

    // Every node counted and logged what it refused, naming the sender.
    for (const n of c.nodes) {
      const s = (await scrape(n.metricsAddress as string)).samples;
      const refused = (reason: string): number => value(s, 'verdict_raft_messages_refused_total', { reason });
      expect(refused('sender'), `${n.id}: the non-member heartbeat`).toBeGreaterThanOrEqual(1);
      expect(refused('number'), `${n.id}: the term 2^53-1`).toBeGreaterThanOrEqual(1);
      expect(refused('snapshot'), `${n.id}: the snapshot-less MSG_SNAP`).toBeGreaterThanOrEqual(1);
      expect(refused('entry_data'), `${n.id}: the tag-127 entry`).toBeGreaterThanOrEqual(1);
      expect(refused('undecodable'), `${n.id}: random bytes`).toBeGreaterThanOrEqual(1);
      // Every forged, random and mistyped batch was refused somewhere: none reached the core whole.
      const total = s
        .filter((x) => x.name === 'verdict_raft_messages_refused_total')
        .reduce((sum, x) => sum + x.value, 0);
      expect(total, `${n.id}: refusals counted`).toBeGreaterThanOrEqual(mustRefuse.get(n) ?? 0);
      const log = n.logTail(100_000);
      // Logged, but not once per refusal: per sender and reason, and within a bound over all senders.
      const lines = log.split('\n').filter((l) => l.includes('refused Raft input')).length;
      expect(lines, `${n.id}: refusal log lines`).toBeGreaterThan(0);
      expect(lines, `${n.id}: refusal log lines`).toBeLessThan(total);
      console.log(
        `fuzz-raft: ${n.id} counted ${total} refusals (at least ${mustRefuse.get(n)} expected) in ${lines} log lines`,
      );
      expect(log).toMatch(/refused Raft input from \\?"intruder\\?": from: \\?"intruder\\?" is not a member/);
      expect(log).toMatch(/"reason":"entry_data".*unknown command tag 127/);
      expect(log).not.toMatch(/InvariantError|cannot be applied/);
    }

    // A restart of every node: nothing that was refused reached a disk.
    for (const n of c.nodes) await n.kill('SIGKILL');
    for (const n of c.nodes) n.start();
    await c.waitForLeader({ timeoutMs: WAIT_MS });
    for (const n of c.nodes) {
      // A node starting on a loaded machine may answer a little after the others have elected.
      const st = await waitFor(`${n.id} to answer after its restart`, WAIT_MS, () => n.status().catch(() => undefined));
      expect(st.term, `${n.id} restarted with a sane term`).toBeLessThan(SANE_TERM_MAX);
    }
    await outcomesOnEveryNode(c, told);
    const restarted = await waitFor('a commit after the restart', WAIT_MS, () =>
      commitOne(v, 'after-restart').catch(() => undefined),
    );
    expect(restarted.outcome).toBe('COMMITTED');
    for (const n of c.nodes) {
      expect(n.running, `${n.id} is running after the restart`).toBe(true);
      expect(n.logTail(100_000)).not.toMatch(/InvariantError|cannot be applied/);
    }
    v.close();
  });
});
