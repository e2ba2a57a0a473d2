// A participant that is gone (issue 42, item 2), on real node processes.
//
// - A participant closed cleanly by its process (close(): SIGTERM in the
//   participant runtime) says so on the leader's Exchange stream, and the
//   leader lists it as closed rather than disconnected.
// - An application whose in-process participant has stopped: a transaction
//   that enlists it aborts, and since the PREPARE never reached it (no
//   connection) no ABORT is owed to it (presumed abort, R3):
//   verdict_decisions_unacked returns to 0 and a plain `participant remove`
//   succeeds at once.
// - A participant gone for good with a COMMIT it never acknowledged:
//   `participant remove` is refused; `participant remove --force --reason`
//   removes it, records who and why in the log, stops the deliveries
//   (verdict_decisions_unacked back to 0) and keeps the decision in the
//   table (verdict_decisions_unforgotten stays 1, the outcome still answers
//   COMMITTED); `txn show` and the console's transaction page name the
//   removal, who, when and why, in that participant's row. When it returns under the same id, holding the transaction
//   prepared, the decision is delivered, acknowledged and forgotten.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, runCli, useProcessCleanup, waitFor } from './harness.ts';
import { startOldParticipant } from './old-participant.ts';
import { scrape, startParticipants, value } from './ops-helpers.ts';

useProcessCleanup();

const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

const gauge = async (address: string, name: string): Promise<number> => value((await scrape(address)).samples, name);

describe('a participant that is gone', () => {
  it('a participant closed cleanly is shown closed; R3: a transaction enlisting it then aborts and owes it no ABORT: nothing unacknowledged, and participant remove succeeds without --force', async () => {
    const c = await Cluster.start({ nodes: 1, metrics: true });
    const { node } = await c.waitForLeader();
    const parts = await startParticipants(c, ['shop', 'app']);
    stops.push(() => parts.stop());
    const client = new VerdictClient({ insecure: true, endpoints: [node.address], callTimeoutMs: 30_000 });
    stops.push(() => client.close());
    // Applied by both before the application exits (awaitAcks): that COMMIT is owed to nobody any more.
    expect(
      (
        await client
          .transaction()
          .enlist('shop', { set: { k: '1' } })
          .enlist('app', { set: { k: '1' } })
          .commit({ awaitAcks: { timeoutMs: 20_000 } })
      ).outcome,
    ).toBe('COMMITTED');

    // The application exits: its participant stops with it, cleanly (close()), and says so on the leader's Exchange
    // stream.
    await parts.runtimes.get('app')?.stop();
    const shown = await waitFor('the leader to show app closed', 10_000, async () => {
      const ps = JSON.parse((await runCli(['participants', '--json', '--endpoints', node.address])).stdout) as {
        participantId: string;
        connection: string;
      }[];
      const conn = Object.fromEntries(ps.map((p) => [p.participantId, p.connection]));
      return conn.app === 'closed' ? conn : undefined;
    });
    expect(shown).toEqual({ shop: 'connected', app: 'closed' });
    const r = await client
      .transaction({ timeoutMs: 10_000 })
      .enlist('shop', { set: { k: '2' } })
      .enlist('app', { set: { k: '2' } })
      .commit();
    expect(r.outcome).toBe('ABORTED');
    const unacked = await waitFor('verdict_decisions_unacked back to 0', 30_000, async () =>
      (await gauge(node.metricsAddress as string, 'verdict_decisions_unacked')) === 0 ? 0 : undefined,
    );
    expect(unacked).toBe(0);
    const list = await runCli(['txn', 'list', '--unacked', '--json', '--endpoints', node.address]);
    expect(JSON.parse(list.stdout)).toEqual([]);
    const removed = await runCli(['participant', 'remove', 'app', '--endpoints', node.address]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/removed participant app/);
  }, 120_000);

  it('remove --force: a participant gone for good stops pinning its COMMIT, recorded with who and why; the decision stays owed and is delivered when it returns', async () => {
    const c = await Cluster.start({ nodes: 1, metrics: true });
    const { node } = await c.waitForLeader();
    const ep = ['--endpoints', node.address];
    const metrics = node.metricsAddress as string;
    const gone = await startOldParticipant(c.clusterId, 'gone', [node.address], {
      acksDecisions: false,
      askAfterMs: 3_600_000,
    });
    stops.push(() => gone.stop());
    const client = new VerdictClient({ insecure: true, endpoints: [node.address], callTimeoutMs: 30_000 });
    stops.push(() => client.close());
    const r = await client.transaction({ parallelCommit: false }).enlist('gone').commit();
    expect(r.outcome).toBe('COMMITTED');
    gone.stop();
    await waitFor('the COMMIT to wait for its ACK', 30_000, async () =>
      (await gauge(metrics, 'verdict_decisions_unacked')) === 1 ? true : undefined,
    );

    const plain = await runCli(['participant', 'remove', 'gone', ...ep]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/1 transaction\(s\) in doubt/);
    const noReason = await runCli(['participant', 'remove', 'gone', '--force', ...ep]);
    expect(noReason.code).toBe(64);
    expect(noReason.stderr).toMatch(/--force needs --reason/);

    const forced = await runCli([
      'participant',
      'remove',
      'gone',
      '--force',
      '--reason',
      'host decommissioned',
      '--operator',
      'alice@ops',
      '--json',
      ...ep,
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toEqual({ participantId: 'gone', removed: true, owed: [r.txnId] });
    // Deliveries stop: nothing unacknowledged is left on the leader, and the decision stays in the table for it.
    await waitFor('verdict_decisions_unacked back to 0', 30_000, async () =>
      (await gauge(metrics, 'verdict_decisions_unacked')) === 0 ? true : undefined,
    );
    expect(await gauge(metrics, 'verdict_decisions_unforgotten')).toBe(1);
    expect((await client.outcome(r.txnId)).outcome).toBe('COMMITTED');
    const participants = JSON.parse((await runCli(['participants', '--json', ...ep])).stdout) as {
      participantId: string;
    }[];
    expect(participants.map((p) => p.participantId)).not.toContain('gone');
    // The operator's act is in the log: every node that applies it logs who and why.
    const line = readFileSync(node.logFile, 'utf8')
      .split('\n')
      .find((l) => l.includes('participant removed with --force'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      participantId: 'gone',
      operator: 'alice@ops',
      reason: 'host decommissioned',
      owed: 1,
    });
    // txn show names the removal (who, when, why) in the participant's row; the console's transaction page has it too.
    const shown = await waitFor('txn show naming the removal', 30_000, async () => {
      const s = await runCli(['txn', 'show', r.txnId, ...ep]);
      return /removed with --force/.test(s.stdout) ? s : undefined;
    });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      /^gone +yes +no +- +removed with --force by alice@ops at 20\d\d-\S+Z: host decommissioned; no longer delivered$/m,
    );
    const page = (await (await fetch(`http://${metrics}/api/transactions/${r.txnId}`)).json()) as {
      removed: unknown[];
      history: { acts: unknown[] };
    };
    expect(page.removed).toEqual([
      {
        participantId: 'gone',
        operator: 'alice@ops',
        reason: 'host decommissioned',
        atMs: expect.any(Number),
        index: expect.any(Number),
      },
    ]);
    expect(page.history.acts).toEqual([
      expect.objectContaining({
        kind: 'removed',
        participantId: 'gone',
        operator: 'alice@ops',
        reason: 'host decommissioned',
      }),
    ]);

    // It returns under the same id, still holding the transaction prepared: the decision owed to it is delivered.
    const back = await startOldParticipant(c.clusterId, 'gone', [node.address], {
      prepared: [r.txnId],
      askAfterMs: 3_600_000,
    });
    stops.push(() => back.stop());
    await waitFor('the COMMIT delivered to the returned participant', 30_000, async () =>
      back.state.get(r.txnId) === 'committed' ? true : undefined,
    );
    await waitFor('the decision forgotten once acknowledged', 30_000, async () =>
      (await gauge(metrics, 'verdict_decisions_unforgotten')) === 0 ? true : undefined,
    );
    expect((await client.outcome(r.txnId)).outcome).toBe('COMMITTED');
  }, 120_000);

  it('with "history": false, txn show still names a forced removal (who, when, why) from the leader\'s table, and --json carries it', async () => {
    const c = await Cluster.start({ nodes: 1, metrics: true, configExtra: () => ({ history: false }) });
    const { node } = await c.waitForLeader();
    const ep = ['--endpoints', node.address];
    const gone = await startOldParticipant(c.clusterId, 'gone', [node.address], {
      acksDecisions: false,
      askAfterMs: 3_600_000,
    });
    stops.push(() => gone.stop());
    const client = new VerdictClient({ insecure: true, endpoints: [node.address], callTimeoutMs: 30_000 });
    stops.push(() => client.close());
    const r = await client.transaction({ parallelCommit: false }).enlist('gone').commit();
    expect(r.outcome).toBe('COMMITTED');
    gone.stop();
    await waitFor('the COMMIT to wait for its ACK', 30_000, async () =>
      (await gauge(node.metricsAddress as string, 'verdict_decisions_unacked')) === 1 ? true : undefined,
    );
    const forced = await runCli([
      'participant',
      'remove',
      'gone',
      '--force',
      '--reason',
      'rack 4 retired',
      '--operator',
      'bob@ops',
      ...ep,
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    const shown = await waitFor('txn show naming the removal', 30_000, async () => {
      const s = await runCli(['txn', 'show', r.txnId, ...ep]);
      return /removed with --force/.test(s.stdout) ? s : undefined;
    });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/keeps no transaction history/);
    expect(shown.stdout).toMatch(
      /^gone +removed with --force by bob@ops at 20\d\d-\S+Z: rack 4 retired; no longer delivered$/m,
    );
    expect(shown.stdout).not.toMatch(/not tracked any more/);
    const json = JSON.parse((await runCli(['txn', 'show', r.txnId, '--json', ...ep])).stdout) as {
      removals: unknown[];
      history: unknown;
    };
    expect(json.history).toBeNull();
    expect(json.removals).toEqual([
      {
        participantId: 'gone',
        operator: 'bob@ops',
        reason: 'rack 4 retired',
        atMs: expect.any(Number),
        index: expect.any(Number),
      },
    ]);
  }, 120_000);
});
