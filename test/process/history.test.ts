// The transaction history on a real three-node cluster: "yesterday's"
// transaction (every node's history shifted a day back by the test-only
// VERDICT_TEST_HISTORY_SHIFT_MS) is read after every node was killed and
// restarted, through `verdict txn show`, `verdict txn list --since` and the
// console's /api/history, on a follower as on the leader. A transaction
// decided just before the kill, maybe not yet written to the history, is
// rebuilt from the log. Bad flags and bad search parameters are refused
// with the reason.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, runCli, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const DAY_MS = 86_400_000;
const WAIT_MS = 60_000;
const SHIFT_ENV = 'VERDICT_TEST_HISTORY_SHIFT_MS';
const shiftBefore = process.env[SHIFT_ENV];

let c: Cluster;
let parts: Participants;
let client: VerdictClient;

beforeAll(async () => {
  // The node processes inherit it: every time their history records is a day earlier.
  process.env[SHIFT_ENV] = String(-DAY_MS);
  c = await Cluster.start({ nodes: 3, metrics: true });
  await c.waitForLeader({ timeoutMs: 120_000 });
  parts = await startParticipants(c, ['shop', 'ledger']);
  client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
}, 180_000);

afterAll(async () => {
  if (shiftBefore === undefined) delete process.env[SHIFT_ENV];
  else process.env[SHIFT_ENV] = shiftBefore;
  client?.close();
  await parts?.stop();
});

type Rec = {
  txnId: string;
  outcome: string;
  decidedAtMs: number;
  participants: { participantId: string; vote: string; acked: boolean }[];
  forgottenIndex: number;
};

async function historyOf(n: NodeProc, txnId: string): Promise<Rec | undefined> {
  try {
    const page = await n.api().history({ txnId }, 5_000);
    return page.records[0] as Rec | undefined;
  } catch {
    return undefined;
  }
}

async function consoleGet(n: NodeProc, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://${n.metricsAddress}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('transaction history', () => {
  it("reads yesterday's transaction after every node restarted: txn show, txn list --since and the console API, on any node", async () => {
    const tx = await client.begin({ txnId: 'order-4711' });
    tx.enlist('shop', '{"set":{"order-4711":"paid"}}');
    tx.enlist('ledger', '{"set":{"order-4711":"debit"}}');
    expect((await tx.commit()).outcome).toBe('COMMITTED');
    const ab = await client.begin({ txnId: 'order-4712' });
    ab.enlist('shop', '{"set":{"order-4712":"x"}}');
    expect((await client.abort('order-4712', 'customer cancelled')).outcome).toBe('ABORTED');
    // Every node records it, with both ACKs (the Forget), from its own applied log.
    for (const n of c.nodes) {
      await waitFor(`${n.id}'s history of order-4711 with every ACK`, WAIT_MS, async () => {
        const r = await historyOf(n, 'order-4711');
        return r?.forgottenIndex ? r : undefined;
      });
    }
    // Decided just before the kill: its history may not be written yet, and is rebuilt from the log.
    const late = await client.begin({ txnId: 'order-4713' });
    late.enlist('ledger', '{"set":{"order-4713":"y"}}');
    expect((await late.commit()).outcome).toBe('COMMITTED');
    await waitFor('order-4713 decided in the log', WAIT_MS, async () =>
      (await client.outcome('order-4713')).decisionIndex > 0 ? true : undefined,
    );

    for (const n of c.nodes) await n.kill('SIGKILL');
    for (const n of c.nodes) n.start();
    const { node: leader } = await c.waitForLeader({ timeoutMs: 120_000 });
    const follower = c.nodes.find((n) => n !== leader) as NodeProc;

    for (const n of c.nodes) {
      const r = await waitFor(`${n.id}'s history of order-4713 after the restart`, WAIT_MS, () =>
        historyOf(n, 'order-4713'),
      );
      expect(r.outcome).toBe('commit');
      const y = await historyOf(n, 'order-4711');
      expect(y?.outcome).toBe('commit');
      // Yesterday, as the shifted clock wrote it.
      expect(Math.abs(Date.now() - DAY_MS - (y?.decidedAtMs ?? 0))).toBeLessThan(30 * 60_000);
    }

    const ep = ['--endpoints', follower.address];
    const shown = await runCli(['txn', 'show', 'order-4711', '--json', ...ep]);
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    const s = JSON.parse(shown.stdout) as { history: Rec; historyNode: string };
    expect(s.historyNode).toBe(follower.id);
    expect(s.history).toMatchObject({ txnId: 'order-4711', outcome: 'commit' });
    expect(s.history.participants).toEqual([
      expect.objectContaining({ participantId: 'shop', vote: 'yes', acked: true }),
      expect.objectContaining({ participantId: 'ledger', vote: 'yes', acked: true }),
    ]);
    const text = await runCli(['txn', 'show', 'order-4711', ...ep]);
    expect(text.stdout).toMatch(
      new RegExp(
        `history +on node ${follower.id}: COMMITTED at ${new Date(s.history.decidedAtMs).toISOString().slice(0, 10)}`,
      ),
    );

    const listed = await runCli(['txn', 'list', '--since', '36h', '--until', '12h', ...ep]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/order-4711 +COMMITTED/);
    expect(listed.stdout).toMatch(/order-4712 +ABORTED .*customer cancelled/);
    const ledgerOnly = await runCli([
      'txn',
      'list',
      '--since',
      '2d',
      '--participant',
      'ledger',
      '--outcome',
      'committed',
      '--json',
      ...ep,
    ]);
    const ids = (JSON.parse(ledgerOnly.stdout) as { records: Rec[] }).records.map((r) => r.txnId);
    expect(ids).toContain('order-4711');
    expect(ids).toContain('order-4713');
    expect(ids).not.toContain('order-4712');
    const recent = await runCli(['txn', 'list', '--since', '12h', ...ep]);
    expect(recent.stdout).not.toMatch(/order-471/);

    const api = await consoleGet(follower, '/api/history?since=36h&until=12h&outcome=committed');
    expect(api.status).toBe(200);
    expect((api.body.records as Rec[]).map((r) => r.txnId)).toContain('order-4711');
    expect(api.body.nodeId).toBe(follower.id);
    const one = await consoleGet(leader, '/api/history?txn=order-4711');
    expect((one.body.records as Rec[])[0]).toMatchObject({ txnId: 'order-4711', outcome: 'commit' });
  }, 300_000);

  it('refuses bad flags and bad search parameters with the reason', async () => {
    const ep = ['--endpoints', c.nodes.map((n) => n.address).join(',')];
    const cases: [string[], RegExp][] = [
      [['--since', 'yesterday'], /--since "yesterday" is not a time: give a duration ago/],
      [['--since', '1h', '--until', '2h'], /--since .* must be before --until/],
      [['--since', '1h', '--limit', '0'], /--limit "0" must be a whole number from 1 to 1000/],
      [['--since', '1h', '--outcome', 'maybe'], /give committed or aborted/],
      [['--since', '1h', '--in-doubt'], /--in-doubt lists what the leader tracks now/],
      [['--until', '1h'], /a history search needs --since/],
    ];
    for (const [flags, why] of cases) {
      const r = await runCli(['txn', 'list', ...flags, ...ep]);
      expect([r.code, r.stderr]).toEqual([64, expect.stringMatching(why)]);
    }
    const bad = await consoleGet(c.nodes[0] as NodeProc, '/api/history?since=soon');
    expect(bad.status).toBe(400);
    expect(String(bad.body.error)).toMatch(/since "soon" is not a time/);
    const unknown = await consoleGet(c.nodes[0] as NodeProc, '/api/history?sinse=1h');
    expect(unknown.status).toBe(400);
    expect(String(unknown.body.error)).toMatch(/unknown search parameter "sinse"/);
  }, 120_000);
});
