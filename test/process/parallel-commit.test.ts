// Parallel commit on real processes (issue 20): three node processes, two
// journaled memory participants over gRPC, a client that asks for parallel
// commit per transaction. The client hears COMMITTED once every YES is in
// and the STAGING record is committed; the participants hear COMMIT after
// the explicit COMMIT entry, one Raft round later. So a transaction that
// writes the keys of the transaction just answered may find them still
// locked: the memory participant then waits for the holder's decision (its
// lock wait, 1 s by default) instead of voting NO, as a database waits on a
// row lock, and the client that writes one key over and over commits every
// time. With the wait off, such a transaction votes NO on the lock.
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, useProcessCleanup } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const TXNS = 20;
const started: Participants[] = [];
afterAll(async () => {
  for (const p of started) await p.stop();
});

describe('parallel commit on real processes', () => {
  it('commits one after another on fresh keys and on the key just written (the participants wait for the lock); without the wait a NO is only ever a lock still held', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    started.push(await startParticipants(c, ['shop', 'ledger']));
    started.push(await startParticipants(c, ['shop0', 'ledger0'], { lockWaitMs: 0 }));
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 30_000,
    });
    const run = async (
      parallelCommit: boolean,
      keyOf: (seq: number) => string,
      pair = ['shop', 'ledger'],
    ): Promise<{ committed: string[]; aborts: string[] }> => {
      const committed: string[] = [];
      const aborts: string[] = [];
      for (let seq = 0; seq < TXNS; seq++) {
        const key = keyOf(seq);
        const r = await client
          .transaction({ timeoutMs: 20_000, parallelCommit })
          .enlist(pair[0], { set: { [key]: String(seq) } })
          .enlist(pair[1], { set: { [key]: String(seq) } })
          .commit();
        if (r.outcome === 'COMMITTED') committed.push(r.txnId);
        else aborts.push(r.reason);
      }
      return { committed, aborts };
    };
    try {
      // Fresh keys, as the benchmark's clients now take them (bench/harness/loadgen.ts, KEYS_PER_CLIENT).
      const fresh = await run(true, (seq) => `fresh-${seq}`);
      // One key for every transaction, as the benchmark's clients took it.
      const reused = await run(true, () => 'same');
      const classic = await run(false, () => 'classic-same');
      // The same on participants whose lock wait is off.
      const noWait = await run(true, () => 'same', ['shop0', 'ledger0']);
      console.log(
        `parallel commit, ${TXNS} transactions one after another: fresh keys ${fresh.committed.length} committed; ` +
          `one key ${reused.committed.length} committed, ${reused.aborts.length} aborted; classic on one key ${classic.committed.length} committed, ${classic.aborts.length} aborted; ` +
          `one key without the lock wait ${noWait.committed.length} committed, ${noWait.aborts.length} aborted`,
      );
      for (const r of [fresh, reused, classic]) {
        expect(r.aborts).toEqual([]);
        expect(r.committed).toHaveLength(TXNS);
      }
      for (const why of noWait.aborts) expect(why).toMatch(/voted NO: key \S+ is locked by prepared transaction /);
      // Whatever the client heard COMMITTED is COMMIT in the log, and every participant ends up with it (nothing left
      // in doubt).
      for (const id of [...fresh.committed, ...reused.committed, ...noWait.committed])
        expect((await client.outcome(id)).outcome).toBe('COMMITTED');
    } finally {
      client.close();
    }
  }, 300_000);
});
