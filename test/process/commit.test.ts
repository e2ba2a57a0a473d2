// The product end to end: three node processes on loopback, two participants
// with journaled memory resources registering over gRPC, and clients
// committing transactions across them — including while the leader is
// killed with SIGKILL. Afterwards every transaction is all-or-nothing at the
// participants, matches the cluster's decision, and nothing is left in doubt.

import { afterAll, describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/client/errors.ts';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, sleep, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const TXN_TIMEOUT_MS = 3_000;
let parts: Participants | null = null;
afterAll(async () => await parts?.stop());

describe('commit coordinator on real processes', () => {
  it('commits and aborts across two participants, atomically, through kill -9 of the leader', async () => {
    const c = await Cluster.start({ nodes: 3 });
    await c.waitForLeader();
    parts = await startParticipants(c, ['shop', 'ledger']);
    const runtimes = parts.runtimes;
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 20_000,
    });
    try {
      expect((await client.participants()).map((p) => p.participantId).sort()).toEqual(['ledger', 'shop']);

      // 1. Plain commit and a NO vote.
      const ok = await (await client.begin({ timeoutMs: TXN_TIMEOUT_MS }))
        .enlist('shop', { set: { a: '1' } })
        .enlist('ledger', { set: { a: '1' } })
        .commit();
      expect(ok.outcome).toBe('COMMITTED');
      const no = await (await client.begin({ timeoutMs: TXN_TIMEOUT_MS }))
        .enlist('shop', { set: { b: '1' } })
        .enlist('ledger', { fail: 'insufficient funds' })
        .commit();
      expect(no.outcome).toBe('ABORTED');
      expect(no.reason).toContain('insufficient funds');
      expect((await client.outcome(ok.txnId)).outcome).toBe('COMMITTED');

      // 2. Load, with the leader killed in the middle.
      const results = new Map<string, string>();
      let next = 0;
      const total = 200;
      const worker = async (): Promise<void> => {
        while (next < total) {
          const i = next++;
          const key = `k${i}`;
          let txnId = '';
          try {
            const tx = await client.begin({ timeoutMs: TXN_TIMEOUT_MS });
            txnId = tx.txnId;
            const r = await tx
              .enlist('shop', { set: { [key]: txnId } })
              .enlist('ledger', { set: { [key]: txnId } })
              .commit();
            results.set(key, r.outcome === 'COMMITTED' ? txnId : `aborted:${txnId}`);
          } catch (err) {
            // Begin failed (no leader for a moment): nothing was prepared.
            if (!(err instanceof OutcomeUnknownError)) {
              if (txnId === '') continue;
            }
            results.set(key, `unknown:${txnId}`);
          }
        }
      };
      const load = Promise.all(Array.from({ length: 8 }, worker));
      await sleep(300);
      const leader = (await c.waitForLeader()).node;
      await leader.kill('SIGKILL');
      await load;

      // 3. Settle: every outcome final, every participant out of doubt.
      const outcomes = new Map<string, string>();
      for (const [key, v] of results) {
        const txnId = v.replace(/^(aborted|unknown):/, '');
        const o = await waitFor(`a final outcome for ${txnId}`, 20_000, async () => {
          const r = await client.outcome(txnId).catch(() => null);
          // A client's query does not force a decision; Abort does, and answers
          // what the log holds (COMMITTED if the decision was COMMIT after all).
          if (r?.outcome === 'UNKNOWN')
            return (await client.abort(txnId, 'settling after the test').catch(() => null))?.outcome;
          return r && (r.outcome === 'COMMITTED' || r.outcome === 'ABORTED') ? r.outcome : undefined;
        });
        outcomes.set(key, o);
        if (!v.startsWith('unknown:'))
          expect(o, `the answer given to the client for ${key} stands`).toBe(
            v.startsWith('aborted:') ? 'ABORTED' : 'COMMITTED',
          );
      }
      await waitFor('no participant in doubt', 20_000, async () =>
        [...runtimes.values()].every((p) => p.engine.inDoubt().length === 0) ? true : undefined,
      );

      // 4. AC1/AC2 at the participants: all-or-nothing, and as decided.
      let committed = 0;
      await waitFor('every decision delivered', 20_000, async () => {
        for (const [key, o] of outcomes) {
          const txnId = (results.get(key) as string).replace(/^(aborted|unknown):/, '');
          const want = o === 'COMMITTED' ? txnId : undefined;
          for (const p of runtimes.values()) if (p.resource.get(key) !== want) return undefined;
        }
        return true;
      });
      for (const o of outcomes.values()) if (o === 'COMMITTED') committed++;
      expect(committed).toBeGreaterThan(total / 2);
      console.log(
        `commit e2e: ${total} transactions, ${committed} committed, ${total - committed} aborted, leader ${leader.id} killed`,
      );
    } finally {
      client.close();
    }
  }, 180_000);
});
