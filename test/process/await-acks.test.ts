// Read-your-writes on request, on a real three-node cluster: commit()
// resolves once the outcome is decided, before the participants apply it;
// commit({ awaitAcks }) resolves only once every participant acknowledged
// applying the COMMIT, and past its wait throws AcksPendingError naming who
// has not, with the outcome, which stands. The participant `shop` applies a
// COMMIT only when the test opens its gate, so what "before" and "after"
// mean here does not depend on timing; `stuck` never acknowledges.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { AcksPendingError } from '../../src/client/errors.ts';
import { EXIT_ACKS_PENDING } from '../../src/cli/txn.ts';
import { Cluster, runCli, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, startUnackingParticipant, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const WAIT_MS = 30_000;
let c: Cluster;
let parts: Participants;
let stuck: Awaited<ReturnType<typeof startUnackingParticipant>>;
let client: VerdictClient;
/** shop's COMMITs wait here until the test opens the gate. */
let gate: { open: boolean; waiting: (() => void)[] } = { open: true, waiting: [] };

beforeAll(async () => {
  c = await Cluster.start({ nodes: 3 });
  await c.waitForLeader({ timeoutMs: 120_000 });
  parts = await startParticipants(c, ['shop']);
  const shop = parts.runtimes.get('shop');
  if (shop === undefined) throw new Error('no shop');
  const commit = shop.resource.commit.bind(shop.resource);
  shop.resource.commit = (txnId, cb) => {
    const apply = (): void => commit(txnId, cb);
    if (gate.open) apply();
    else gate.waiting.push(apply);
  };
  stuck = await startUnackingParticipant();
  client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: WAIT_MS });
  await client.registerParticipant('stuck', stuck.address);
}, 180_000);

afterAll(async () => {
  client?.close();
  stuck?.stop();
  await parts?.stop();
});

const shopHas = (key: string): string | undefined => parts.runtimes.get('shop')?.resource.get(key);
const closeGate = (): void => {
  gate = { open: false, waiting: [] };
};
const openGate = (): void => {
  const g = gate;
  g.open = true;
  for (const apply of g.waiting.splice(0)) apply();
};

describe('commit and acknowledgements', { timeout: 120_000 }, () => {
  it('without awaitAcks, COMMITTED comes before shop applies it; the write shows up later', async () => {
    closeGate();
    const tx = await client.begin();
    tx.enlist('shop', { set: { a: '1' } });
    expect((await tx.commit()).outcome).toBe('COMMITTED');
    // shop cannot have applied it: its COMMIT is held at the gate.
    expect(shopHas('a')).toBeUndefined();
    openGate();
    await waitFor('shop to apply the COMMIT', WAIT_MS, async () => shopHas('a') === '1' || undefined);
  });

  it('with awaitAcks, commit resolves only after shop applied it, and the write is there when it does', async () => {
    closeGate();
    const tx = await client.begin();
    tx.enlist('shop', { set: { b: '2' } });
    let settled = false;
    const done = tx.commit({ awaitAcks: true }).finally(() => {
      settled = true;
    });
    await waitFor('shop to receive the COMMIT', WAIT_MS, async () => gate.waiting.length > 0 || undefined);
    // Held at the gate: no acknowledgement can have come, so commit cannot have resolved.
    expect(settled).toBe(false);
    openGate();
    expect((await done).outcome).toBe('COMMITTED');
    expect(shopHas('b')).toBe('2');
  });

  it('past its wait, AcksPendingError names the participant that has not acknowledged, with the outcome, which stands', async () => {
    const tx = await client.begin();
    tx.enlist('shop', { set: { c: '3' } }).enlist('stuck');
    const err = await tx.commit({ awaitAcks: { timeoutMs: 1_500 } }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AcksPendingError);
    const pending = err as AcksPendingError;
    expect(pending.pending).toEqual(['stuck']);
    expect(pending.result).toMatchObject({ txnId: tx.txnId, outcome: 'COMMITTED' });
    expect(pending.message).toMatch(
      /is COMMITTED, but after 1500 ms participant stuck had not acknowledged applying it/,
    );
    expect((await client.outcome(tx.txnId)).outcome).toBe('COMMITTED');
  });

  it('an ABORTED outcome resolves at once: there is nothing to apply', async () => {
    const tx = await client.begin();
    tx.enlist('shop', { fail: 'out of stock' }).enlist('stuck');
    expect((await tx.commit({ awaitAcks: { timeoutMs: 60_000 } })).outcome).toBe('ABORTED');
  });

  it('verdict txn commit --await-acks-ms: COMMITTED once applied (exit 0), exit 4 naming who has not', async () => {
    const ep = ['--endpoints', c.nodes.map((n) => n.address).join(',')];
    const ok = await runCli(
      ['txn', 'commit', '--participant', 'shop={"set":{"d":"4"}}', '--await-acks-ms', '20000', ...ep],
      { timeoutMs: 60_000 },
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^COMMITTED /);
    expect(shopHas('d')).toBe('4');
    const late = await runCli(
      [
        'txn',
        'commit',
        '--participant',
        'shop={"set":{"e":"5"}}',
        '--participant',
        'stuck',
        '--await-acks-ms',
        '1000',
        '--json',
        ...ep,
      ],
      { timeoutMs: 60_000 },
    );
    expect(late.code, late.stderr).toBe(EXIT_ACKS_PENDING);
    expect(JSON.parse(late.stdout)).toMatchObject({ outcome: 'COMMITTED', acksPending: ['stuck'] });
  });
});
