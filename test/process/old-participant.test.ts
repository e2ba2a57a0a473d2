// A participant built from the oldest supported protocol (test/process/
// old-participant.ts: Prepare and Decide only, no `serves` at registration,
// UNIMPLEMENTED to Status) on three real node processes with parallel commit
// on (the default), beside a current participant. Its transactions commit
// by classic two-phase commit, the current participant's alone in parallel,
// and a SIGKILLed leader leaves nothing undecided: every transaction ends,
// on the cluster and at every participant (AC4), including those the old
// participant was still preparing when the leader died and then refused —
// the case in which a recovery waiting for its Status answer would wait for
// ever (docs/protocol.md, "Compatibility").
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';
import { startOldParticipant, type OldParticipant } from './old-participant.ts';

useProcessCleanup();

const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

const END_WAIT_MS = 60_000;

describe('a participant built before Status', () => {
  it('AC4: commits beside a current participant and survives a leader kill with every transaction ending', async () => {
    const c = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await c.waitForLeader();
    const addresses = c.nodes.map((n) => n.address);
    const current: Participants = await startParticipants(c, ['shop']);
    stops.push(() => current.stop());
    const old: OldParticipant[] = [];
    for (const id of ['old1', 'old2', 'slow']) {
      const p = await startOldParticipant(c.clusterId, id, addresses);
      stops.push(() => p.stop());
      old.push(p);
    }
    const [old1, old2, slow] = old;
    const client = new VerdictClient({ endpoints: addresses, callTimeoutMs: 30_000, insecure: true });
    stops.push(() => client.close());

    // The registry says what each serves: the old ones nothing, so their transactions never stage.
    const listed = new Map((await client.participants()).map((p) => [p.participantId, p.serves]));
    expect(Object.fromEntries(listed)).toEqual({ shop: ['Exchange', 'Status'], old1: [], old2: [], slow: [] });

    // A list that is not method names is refused at the edge, naming the field.
    await expect(client.registerParticipant('odd', '127.0.0.1:1', {}, 'memory', ['status'])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      reason: expect.stringMatching(/serves: "status" is not a method name/),
    });

    const mixes = [['shop', 'old1'], ['old1', 'old2'], ['shop'], ['shop', 'old1', 'old2']];
    const told = new Map<string, string>();
    let seq = 0;
    const commitOne = async (members: string[]): Promise<void> => {
      const tx = client.transaction({ timeoutMs: 20_000 });
      for (const m of members) tx.enlist(m, { set: { [`k${seq++}`]: 'v' } });
      told.set(tx.txnId, 'pending');
      try {
        told.set(tx.txnId, (await tx.commit()).outcome);
      } catch (err) {
        told.set(tx.txnId, `error: ${(err as Error).message}`);
      }
    };

    // Before any fault: every mix commits.
    for (const m of mixes) await commitOne(m);
    expect([...told.values()]).toEqual(['COMMITTED', 'COMMITTED', 'COMMITTED', 'COMMITTED']);

    // Load that runs through the kill, and three transactions the "slow" old participant is still preparing when the
    // leader dies.
    let loading = true;
    const load = (async () => {
      for (let i = 0; loading; i++) await commitOne(mixes[i % mixes.length]);
    })();
    slow.slowNoMs = 3_000;
    const held = [commitOne(['shop', 'slow']), commitOne(['old1', 'slow']), commitOne(['shop', 'old2', 'slow'])];
    await waitFor('the slow participant holds three PREPAREs', 10_000, async () =>
      slow.prepares.size >= 3 ? true : undefined,
    );
    // Long enough for a STAGING record to be applied, had one been proposed.
    await new Promise((r) => setTimeout(r, 300));
    const { node: leader } = await c.waitForLeader();
    await leader.kill('SIGKILL');
    await c.waitForLeader({ notId: leader.id });
    await Promise.all(held);
    // A few transactions on the new leader, then the load stops.
    const before = [...told.values()].filter((o) => o === 'COMMITTED').length;
    await waitFor('transactions commit on the new leader', END_WAIT_MS, async () =>
      [...told.values()].filter((o) => o === 'COMMITTED').length >= before + 8 ? true : undefined,
    );
    loading = false;
    await load;

    // Every transaction ends on the cluster: COMMITTED or ABORTED, and what a client was told is what the log says.
    const outcomes = new Map<string, string>();
    await waitFor(
      'every transaction decided',
      END_WAIT_MS,
      async () => {
        for (const id of told.keys()) {
          if (outcomes.has(id)) continue;
          const o = (await client.outcome(id)).outcome;
          if (o === 'COMMITTED' || o === 'ABORTED') outcomes.set(id, o);
        }
        return outcomes.size === told.size ? true : undefined;
      },
      () => `undecided: ${[...told.keys()].filter((id) => !outcomes.has(id)).join(' ')}`,
    );
    for (const [id, o] of told) if (o === 'COMMITTED' || o === 'ABORTED') expect(outcomes.get(id), id).toBe(o);
    // The slow participant voted NO to all three: none committed.
    for (const id of [...slow.prepares]) expect(outcomes.get(id), id).toBe('ABORTED');
    // And at every participant: nothing left prepared, and what each did is what the cluster decided.
    const shop = current.runtimes.get('shop');
    await waitFor(
      'no participant in doubt',
      END_WAIT_MS,
      async () =>
        old.every((p) => p.inDoubt().length === 0) && shop?.engine.inDoubt().length === 0 ? true : undefined,
      () =>
        `in doubt: ${old.map((p) => `${p.id} [${p.inDoubt().join(' ')}]`).join(', ')}; shop [${shop?.engine
          .inDoubt()
          .map((d) => d.txnId)
          .join(' ')}]`,
    );
    for (const p of [old1, old2])
      for (const [id, s] of p.state)
        if (s === 'committed') expect(outcomes.get(id), `${p.id} committed ${id}`).toBe('COMMITTED');
    const committed = [...outcomes.values()].filter((o) => o === 'COMMITTED').length;
    console.log(
      `old participants: ${told.size} transactions, ${committed} committed, ${told.size - committed} aborted, every one decided after the leader kill`,
    );
  }, 240_000);
});
