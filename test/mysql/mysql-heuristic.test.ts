// Heuristic resolution (R4) at a MySQL/MariaDB participant, end to end: a
// branch is prepared by a coordinator that then vanished, the cluster (a real
// one-node Verdict process) is unreachable, and the operator commits the
// branch with `verdict participant resolve --resource mysql` (a real CLI
// process). When the cluster comes up it has never decided the transaction,
// so it logs ABORT (R3) and records the participant's report as HEURMIX. The
// rules are the PostgreSQL path's (resolveByHand), so this file checks the
// MySQL side of them: the act recorded before XA COMMIT, idempotence, no
// reversal, refusals with the reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgPayload } from '../../src/participant/postgres.ts';
import type { MySqlResource } from '../../src/participant/resources/mysql/resource.ts';
import { xidOf, xidScope, xidText } from '../../src/participant/resources/mysql/xid.ts';
import {
  CLI,
  DEADLINE_MS,
  expectHeurmixOnceClusterUp,
  expectResolveRepeatNoopContraryRefused,
  participantOfUnreachableCluster,
  type UnreachableClusterParticipant,
} from '../db-participant-fixture.ts';
import { runCli } from '../process/harness.ts';
import { mysqlQuery, startMariaDb, xaRecover, xaRollbackAll, type MariaDbServer } from './harness.ts';

let server: MariaDbServer;
let url: string;
let h: UnreachableClusterParticipant<MySqlResource>;

beforeAll(async () => {
  server = await startMariaDb({ databases: ['ledger'] });
  url = server.url('ledger');
  await mysqlQuery(
    url,
    'CREATE TABLE IF NOT EXISTS entries (id VARCHAR(64) PRIMARY KEY, amount INT NOT NULL) ENGINE=InnoDB',
  );
  h = await participantOfUnreachableCluster('ledger', { mysql: { url, concurrency: 4 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (server === undefined) return;
  try {
    expect((await xaRecover(url)).filter((x) => x.gtrid.startsWith(`${h?.cluster.clusterId}:`))).toEqual([]);
  } finally {
    await xaRollbackAll(url, `${h?.cluster.clusterId ?? 'none'}:`);
    await server.stop();
  }
}, 60_000);

const amount = async (id: string): Promise<number | undefined> =>
  (await mysqlQuery<{ amount: number }>(url, 'SELECT amount FROM entries WHERE id = ?', [id]))[0]?.amount;

describe('heuristic resolution at a MySQL participant (R4)', () => {
  it('refuses an xid too long for XA, an xid of another participant, and a transaction not prepared here, with the reason (exit 1)', async () => {
    const base = [
      'participant',
      'resolve',
      '--commit',
      '--reason',
      'r',
      '--id',
      'ledger',
      '--cluster-id',
      h.cluster.clusterId,
      '--resource',
      'mysql',
      '--mysql-url',
      url,
    ];
    const long = await runCli([...base, `${h.cluster.clusterId}:${'x'.repeat(80)},ledger`], CLI);
    expect([long.code, long.stderr]).toEqual([
      1,
      expect.stringMatching(/too long: XA allows 64 bytes each for gtrid and bqual/),
    ]);
    const other = await runCli([...base, `${h.cluster.clusterId}:T1,shop`], CLI);
    expect([other.code, other.stderr]).toEqual([1, expect.stringMatching(/not one of this participant's/)]);
    const none = await runCli([...base, 'never-prepared'], CLI);
    expect([none.code, none.stderr]).toEqual([
      1,
      expect.stringMatching(/is not prepared in this database \(no .* in XA RECOVER\)/),
    ]);
    const noUrl = await runCli(
      ['participant', 'resolve', 'T', '--commit', '--reason', 'r', '--id', 'ledger', '--resource', 'mysql'],
      CLI,
    );
    expect([noUrl.code, noUrl.stderr]).toEqual([
      64,
      expect.stringMatching(/--mysql-url mysql:\/\/USER:PASSWORD@HOST:PORT\/DATABASE is required/),
    ]);
  }, 400_000);

  it('resolve --commit while the cluster is unreachable: recorded, then XA COMMIT; the cluster, back, records HEURMIX against its ABORT, and the participant ACKs', async () => {
    const T = 'heur-1';
    const gid = xidText(xidOf(xidScope(h.cluster.clusterId, 'ledger'), T));
    const vote = await h.participant.prepare(
      {
        clusterId: h.cluster.clusterId,
        txnId: T,
        participantId: 'ledger',
        participants: ['shop', 'ledger'],
        payload: pgPayload(["INSERT INTO entries VALUES ('h1', 10)"]),
        timeoutMs: 0,
      },
      DEADLINE_MS,
    );
    expect(vote.vote).toBe('VOTE_YES');

    const args = [
      'participant',
      'resolve',
      T,
      '--reason',
      'cluster down for hours; locks held on entries',
      '--operator',
      'alice@db1',
      '--id',
      'ledger',
      '--cluster-id',
      h.cluster.clusterId,
      '--resource',
      'mysql',
      '--mysql-url',
      url,
    ];
    const done = await runCli([...args, '--commit'], CLI);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/XA COMMIT .* done by alice@db1/);
    expect(await amount('h1')).toBe(10);
    const [row] = await mysqlQuery<{
      operator: string;
      outcome: string;
      reason: string;
      reported_at_ms: number | null;
    }>(url, 'SELECT * FROM verdict_heuristics WHERE gid = ?', [gid]);
    expect(row).toMatchObject({
      operator: 'alice@db1',
      outcome: 'committed',
      reason: 'cluster down for hours; locks held on entries',
      reported_at_ms: null,
    });

    // Idempotent: the same act again (by txn id or by xid) is a no-op; the contrary one is refused.
    await expectResolveRepeatNoopContraryRefused([...args.slice(0, 2), gid, ...args.slice(3)], args);

    await expectHeurmixOnceClusterUp({
      h,
      txnId: T,
      participantId: 'ledger',
      gid,
      reported: async () =>
        (
          await mysqlQuery<{ r: number | null }>(
            url,
            'SELECT reported_at_ms AS r FROM verdict_heuristics WHERE gid = ?',
            [gid],
          )
        )[0]?.r != null,
    });
    expect(await amount('h1')).toBe(10);
  }, 400_000);
});
