// Heuristic resolution (R4) end to end, against a real PostgreSQL 15 and a
// real one-node Verdict cluster (a node process on loopback): a transaction
// is prepared at a postgres participant by a coordinator that then vanished,
// the cluster is unreachable, and the operator commits the gid by hand with
// `verdict participant resolve` (a real CLI process). When the cluster comes
// up it has never decided the transaction, so it logs ABORT (R3) and records
// the participant's report as HEURMIX, which `verdict txn list --heuristic`
// shows. Also: an ABORT that reaches a postgres participant before PREPARE
// rolls back the open PostgreSQL transaction at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gidOf, gidPrefix } from '../../src/participant/postgres-gid.ts';
import { pgPayload, type PostgresResource } from '../../src/participant/postgres.ts';
import {
  CLI,
  DEADLINE_MS,
  expectHeurmixOnceClusterUp,
  expectResolveRepeatNoopContraryRefused,
  participantOfUnreachableCluster,
  type UnreachableClusterParticipant,
} from '../db-participant-fixture.ts';
import { runCli } from '../process/harness.ts';
import { preparedXacts, rollbackPrepared, sql, startPostgres, waitFor, type PgServer } from './harness.ts';

let server: PgServer;
let shop: string;
let h: UnreachableClusterParticipant<PostgresResource>;

beforeAll(async () => {
  server = await startPostgres();
  shop = server.url('shop');
  await sql(shop, 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount int NOT NULL)');
  h = await participantOfUnreachableCluster('shop', { postgres: { url: shop, concurrency: 4 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (server === undefined) return;
  try {
    expect(await preparedXacts(shop, `verdict:${h?.cluster.clusterId}:`)).toEqual([]);
  } finally {
    await rollbackPrepared(server, ['shop'], `verdict:${h?.cluster.clusterId ?? 'none'}:`);
    await server.stop();
  }
});

const orderAmount = async (id: string): Promise<number | undefined> =>
  (await sql<{ amount: number }>(shop, 'SELECT amount FROM orders WHERE id = $1', [id]))[0]?.amount;

describe('heuristic resolution at a PostgreSQL participant (R4)', () => {
  it('resolve --commit while the cluster is unreachable commits the gid and records who/when/why; the cluster, back, records HEURMIX against its ABORT', async () => {
    const T = 'heur-1';
    const gid = gidOf(gidPrefix(h.cluster.clusterId, 'shop'), T);
    const vote = await h.participant.prepare(
      {
        clusterId: h.cluster.clusterId,
        txnId: T,
        participantId: 'shop',
        participants: ['shop', 'ledger'],
        payload: pgPayload(["INSERT INTO orders VALUES ('h1', 10)"]),
        timeoutMs: 0,
      },
      DEADLINE_MS,
    );
    expect(vote.vote).toBe('VOTE_YES');
    expect((await preparedXacts(shop, gid)).map((x) => x.gid)).toEqual([gid]);

    const args = [
      'participant',
      'resolve',
      T,
      '--reason',
      'cluster down for hours; locks held on orders',
      '--operator',
      'alice@db1',
      '--id',
      'shop',
      '--cluster-id',
      h.cluster.clusterId,
      '--resource',
      'postgres',
      '--pg-url',
      shop,
    ];
    const done = await runCli([...args, '--commit'], CLI);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/COMMIT PREPARED .* done by alice@db1/);
    expect(await orderAmount('h1')).toBe(10);
    expect(await preparedXacts(shop, gid)).toEqual([]);
    const [row] = await sql<{ operator: string; outcome: string; reason: string; reported_at: Date | null }>(
      shop,
      'SELECT * FROM verdict_heuristics WHERE gid = $1',
      [gid],
    );
    expect(row).toMatchObject({
      operator: 'alice@db1',
      outcome: 'committed',
      reason: 'cluster down for hours; locks held on orders',
      reported_at: null,
    });

    // Idempotent: the same act again is a no-op; the contrary one is refused.
    await expectResolveRepeatNoopContraryRefused(args, args);

    // The cluster comes up, records HEURMIX against its ABORT, and the participant ACKs the ABORT.
    await expectHeurmixOnceClusterUp({
      h,
      txnId: T,
      participantId: 'shop',
      gid,
      reported: async () =>
        (
          await sql<{ r: boolean }>(
            shop,
            'SELECT reported_at IS NOT NULL AS r FROM verdict_heuristics WHERE gid = $1',
            [gid],
          )
        )[0]?.r === true,
    });
    expect(await orderAmount('h1')).toBe(10);
  }, 400_000);

  it('an ABORT that arrives before PREPARE rolls back the open PostgreSQL transaction at once, not after the 60 s open timeout', async () => {
    const T = 'heur-open';
    await h.rt.resource.work(T, async (c) => {
      await c.query("INSERT INTO orders VALUES ('o-open', 1)");
    });
    const idleInTxn = async (): Promise<number> =>
      Number(
        (
          await sql<{ n: string }>(
            shop,
            "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'idle in transaction' AND application_name = 'verdict-shop'",
          )
        )[0]?.n,
      );
    expect(await idleInTxn()).toBe(1);
    const ack = await h.participant.decide(
      {
        clusterId: h.cluster.clusterId,
        txnId: T,
        participantId: 'shop',
        decision: 'DECISION_ABORT',
        reason: 'vote no elsewhere',
      },
      DEADLINE_MS,
    );
    expect(ack.txnId).toBe(T);
    await waitFor('the open transaction rolled back', async () => (await idleInTxn()) === 0, 5_000);
    await expect(h.rt.resource.work(T, async () => {})).rejects.toThrow(/has ended here/);
    // The row lock is gone: another transaction can write the same key.
    await sql(shop, "INSERT INTO orders VALUES ('o-open', 2)");
    expect(await orderAmount('o-open')).toBe(2);
  }, 60_000);
});
