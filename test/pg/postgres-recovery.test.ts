// Recovery of the PostgreSQL participant against a real PostgreSQL 15 and a
// FAKE cluster (GetOutcome answers from a table): restarts with prepared
// gids in pg_prepared_xacts (R4: the participant asks, never decides alone),
// the journal and PostgreSQL disagreeing, other participants' and other
// databases' prepared transactions left alone, the stuck-prepared alert, and
// the `verdict participant --resource postgres` process end to end.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gidOf, gidPrefix } from '../../src/participant/postgres-gid.ts';
import { PostgresMonitor, openPostgresParticipant } from '../../src/participant/postgres-recovery.ts';
import { PostgresResource, pgPayload } from '../../src/participant/postgres.ts';
import type { ParticipantRuntime } from '../../src/participant/runtime.ts';
import type { AskOutcome, ClusterOutcome } from '../../src/participant/types.ts';
import { ParticipantClient, type DecideRequest, type PrepareRequest } from '../../src/transport/participant-rpc.ts';
import { DEADLINE_MS, Held, ROOT } from '../db-participant-fixture.ts';
import { fakeCluster, type FakeCluster } from './fake-cluster.ts';
import {
  freePort,
  prepareByHand,
  preparedXacts,
  rollbackPrepared,
  sql,
  startPostgres,
  uniqueClusterId,
  waitFor,
  type PgServer,
} from './harness.ts';
import { MemoryLog } from './log.ts';

const CLUSTER = uniqueClusterId('rec');
const PREFIX = gidPrefix(CLUSTER, 'shop');
let server: PgServer;
let shop: string;
let ledger: string;
let cluster: FakeCluster;
const resources: PostgresResource[] = [];

beforeAll(async () => {
  server = await startPostgres();
  shop = server.url('shop');
  ledger = server.url('ledger');
  await sql(shop, 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount int NOT NULL)');
  await sql(ledger, 'CREATE TABLE IF NOT EXISTS entries (id text PRIMARY KEY, amount int NOT NULL)');
  cluster = await fakeCluster();
});

afterEach(async () => {
  await held.cleanup();
  for (const r of resources.splice(0)) await r.close();
  cluster.outcomes.clear();
  cluster.questions.length = 0;
});

afterAll(async () => {
  cluster?.close();
  if (server === undefined) return;
  try {
    // Nothing this file prepared is left behind, in either database.
    expect(await preparedXacts(shop, `verdict:${CLUSTER}:`)).toEqual([]);
    expect(await preparedXacts(shop, 'rec-foreign-')).toEqual([]);
  } finally {
    await rollbackPrepared(server, ['shop', 'ledger'], `verdict:${CLUSTER}:`);
    await server.stop();
  }
});

const held = new Held<PostgresResource>('verdict-pg-participant-');
const dataDir = (): Promise<string> => held.dataDir();
const client = (address: string): ParticipantClient => held.client(address);
const stop = (r: ParticipantRuntime<PostgresResource>): Promise<void> => held.stop(r);

function start(
  dir: string,
  pgOver: { scanIntervalMs?: number; orphanAfterMs?: number; stuckAfterMs?: number } = {},
): Promise<ParticipantRuntime<PostgresResource>> {
  return held.start({
    clusterId: CLUSTER,
    participantId: 'shop',
    endpoint: cluster.address,
    dataDir: dir,
    resource: { postgres: { url: shop, concurrency: 4, ...pgOver } },
  });
}

async function bareResource(participantId = 'shop', over: { stuckAfterMs?: number } = {}): Promise<PostgresResource> {
  const r = await PostgresResource.open({ clusterId: CLUSTER, participantId, url: shop, ...over });
  resources.push(r);
  return r;
}

const prepareReq = (txnId: string, statements: string[]): PrepareRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'shop',
  participants: ['shop', 'ledger'],
  payload: pgPayload(statements),
  timeoutMs: 0,
});
const decisionReq = (txnId: string, decision: DecideRequest['decision']): DecideRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'shop',
  decision,
  reason: '',
});
const orderAmount = async (id: string): Promise<number | undefined> =>
  (await sql<{ amount: number }>(shop, 'SELECT amount FROM orders WHERE id = $1', [id]))[0]?.amount;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('postgres participant: recovery through the engine (R4)', () => {
  it('after a restart finds its prepared gid in pg_prepared_xacts, asks the cluster with its participant id, and applies COMMIT', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    expect(
      await client(first.address).prepare(prepareReq('T1', ["INSERT INTO orders VALUES ('o1', 10)"]), DEADLINE_MS),
    ).toEqual({ txnId: 'T1', participantId: 'shop', vote: 'VOTE_YES', reason: '', reserveTtlMs: 0 });
    await stop(first);
    // The participant is gone; the prepared transaction is PostgreSQL's, held across the restart.
    expect(await preparedXacts(shop, PREFIX)).toEqual([{ gid: gidOf(PREFIX, 'T1'), database: 'shop' }]);
    expect(await orderAmount('o1')).toBeUndefined();

    cluster.outcomes.set('T1', 'OUTCOME_COMMITTED');
    const second = await start(dir);
    await waitFor("T1 to be committed from the cluster's answer", () => second.engine.stateOf('T1') === 'COMMITTED');
    expect(await orderAmount('o1')).toBe(10);
    expect(await preparedXacts(shop, PREFIX)).toEqual([]);
    expect(cluster.questions[0]).toEqual({ txnId: 'T1', participantId: 'shop' });
  });

  it('keeps asking while the cluster says IN_PROGRESS: nothing is decided alone and the row stays invisible', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    expect(
      (
        await client(first.address).prepare(
          prepareReq('T-wait', ["INSERT INTO orders VALUES ('o-wait', 1)"]),
          DEADLINE_MS,
        )
      ).vote,
    ).toBe('VOTE_YES');
    await stop(first);
    const second = await start(dir);
    await waitFor('three questions', () => cluster.questions.filter((q) => q.txnId === 'T-wait').length >= 3);
    expect(second.engine.stateOf('T-wait')).toBe('prepared');
    expect(await preparedXacts(shop, PREFIX)).toHaveLength(1);
    cluster.outcomes.set('T-wait', 'OUTCOME_ABORTED');
    await waitFor('T-wait to be aborted', () => second.engine.stateOf('T-wait') === 'ABORTED');
    expect(await orderAmount('o-wait')).toBeUndefined();
    expect(await preparedXacts(shop, PREFIX)).toEqual([]);
  });

  it("a gid prepared in PostgreSQL but missing from the journal (crash before the journal's sync) is in doubt too, and ABORT is applied", async () => {
    const r = await bareResource();
    await r.work('T2', async (c) => void (await c.query("INSERT INTO orders VALUES ('o2', 20)")));
    expect((await r.prepareAsync('T2', new Uint8Array())).yes).toBe(true);
    await r.close();
    cluster.outcomes.set('T2', 'OUTCOME_ABORTED');
    const p = await start(await dataDir());
    await waitFor("T2 to be aborted from the cluster's answer", () => p.engine.stateOf('T2') === 'ABORTED');
    expect(await orderAmount('o2')).toBeUndefined();
    expect(await preparedXacts(shop, PREFIX)).toEqual([]);
    expect(cluster.questions.map((q) => q.txnId)).toContain('T2');
  });

  it('a COMMIT applied in PostgreSQL whose record missed the journal is applied again idempotently: the marker answers, no hazard', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    expect(
      (await client(first.address).prepare(prepareReq('T3', ["INSERT INTO orders VALUES ('o3', 30)"]), DEADLINE_MS))
        .vote,
    ).toBe('VOTE_YES');
    await stop(first);
    // As if the participant crashed right after COMMIT PREPARED, before journaling COMMITTED.
    await sql(shop, `COMMIT PREPARED '${gidOf(PREFIX, 'T3')}'`);
    cluster.outcomes.set('T3', 'OUTCOME_COMMITTED');
    const second = await start(dir);
    expect(second.engine.inDoubt().map((t) => t.txnId)).toEqual(['T3']);
    await waitFor('T3 to be committed', () => second.engine.stateOf('T3') === 'COMMITTED');
    expect(second.resource.counts()).toMatchObject({ redeliveriesAcked: 1, hazards: 0 });
    expect(await orderAmount('o3')).toBe(30);
  });

  it('serves Prepare and Decide over gRPC: NO with the SQLSTATE, then COMMIT and a redelivered COMMIT are ACKed', async () => {
    const p = await start(await dataDir());
    const c = client(p.address);
    const no = await c.prepare(
      prepareReq('T4', ["INSERT INTO orders VALUES ('o4', 1)", "INSERT INTO orders VALUES ('o4', 2)"]),
      DEADLINE_MS,
    );
    expect(no.vote).toBe('VOTE_NO');
    expect(no.reason).toMatch(/SQLSTATE 23505: duplicate key value violates unique constraint "orders_pkey"/);
    expect((await c.prepare(prepareReq('T5', ["INSERT INTO orders VALUES ('o5', 5)"]), DEADLINE_MS)).vote).toBe(
      'VOTE_YES',
    );
    expect(await c.decide(decisionReq('T5', 'DECISION_COMMIT'), DEADLINE_MS)).toEqual({
      txnId: 'T5',
      participantId: 'shop',
    });
    expect(await c.decide(decisionReq('T5', 'DECISION_COMMIT'), DEADLINE_MS)).toEqual({
      txnId: 'T5',
      participantId: 'shop',
    });
    expect(await orderAmount('o5')).toBe(5);
  });

  it("leaves other participants' gids, foreign gids and its own prefix in another database alone", async () => {
    const otherGid = gidOf(gidPrefix(CLUSTER, 'shop2'), 'X1');
    // Starts with this participant's prefix but is no gid it would make.
    const lookalikeGid = `${PREFIX}not:ours`;
    const foreignGid = 'rec-foreign-gid';
    const ledgerGid = gidOf(PREFIX, 'X2');
    await prepareByHand(shop, otherGid, ["INSERT INTO orders VALUES ('x1', 1)"]);
    await prepareByHand(shop, lookalikeGid, ["INSERT INTO orders VALUES ('x3', 1)"]);
    await prepareByHand(shop, foreignGid, ["INSERT INTO orders VALUES ('xf', 1)"]);
    await prepareByHand(ledger, ledgerGid, ["INSERT INTO entries VALUES ('x2', 1)"]);
    for (const t of ['X1', 'X2', 'X3']) cluster.outcomes.set(t, 'OUTCOME_COMMITTED');
    try {
      const p = await start(await dataDir(), { scanIntervalMs: 50, orphanAfterMs: 0, stuckAfterMs: 0 });
      await sleep(400);
      expect(p.engine.inDoubt()).toEqual([]);
      expect(cluster.questions).toEqual([]);
      expect(p.resource.preparedStats().count).toBe(0);
      const all = await sql<{ gid: string; database: string }>(
        shop,
        'SELECT gid, database FROM pg_prepared_xacts ORDER BY gid',
      );
      expect(all).toEqual(
        expect.arrayContaining([
          { gid: otherGid, database: 'shop' },
          { gid: lookalikeGid, database: 'shop' },
          { gid: foreignGid, database: 'shop' },
          { gid: ledgerGid, database: 'ledger' },
        ]),
      );
    } finally {
      await sql(shop, `ROLLBACK PREPARED '${otherGid}'`);
      await sql(shop, `ROLLBACK PREPARED '${lookalikeGid}'`);
      await sql(shop, `ROLLBACK PREPARED '${foreignGid}'`);
      await sql(ledger, `ROLLBACK PREPARED '${ledgerGid}'`);
    }
  });
});

describe('postgres participant: the monitor (orphans, stuck alerts, metrics values)', () => {
  const askFrom =
    (answers: Record<string, ClusterOutcome>, asked: string[]): AskOutcome =>
    (txnId, cb) => {
      asked.push(txnId);
      setImmediate(() => cb(null, answers[txnId] ?? 'IN_PROGRESS'));
    };

  it("resolves a prepared gid the engine does not hold (an orphan) with the cluster's answer", async () => {
    const r = await bareResource();
    await r.work('T-orphan', async (c) => void (await c.query("INSERT INTO orders VALUES ('orphan', 7)")));
    await r.prepareAsync('T-orphan', new Uint8Array());
    const asked: string[] = [];
    const monitor = new PostgresMonitor({
      resource: r,
      engine: { stateOf: () => undefined, resolveInDoubt: () => {} },
      askOutcome: askFrom({ 'T-orphan': 'COMMITTED' }, asked),
      log: new MemoryLog(),
      orphanAfterMs: 0,
    });
    const report = await monitor.scan();
    expect(asked).toEqual(['T-orphan']);
    expect(report.orphansResolved).toEqual([{ txnId: 'T-orphan', outcome: 'COMMITTED' }]);
    expect(await orderAmount('orphan')).toBe(7);
    expect(await preparedXacts(shop, PREFIX)).toEqual([]);
  });

  it("fires the stuck-prepared alert with txn id, gid, age and the cluster's answer, and exposes count and oldest age", async () => {
    const r = await bareResource('shop', { stuckAfterMs: 300 });
    await r.work('T-stuck', async (c) => void (await c.query("INSERT INTO orders VALUES ('stuck', 1)")));
    await r.prepareAsync('T-stuck', new Uint8Array());
    await sleep(350);
    await r.work('T-young', async (c) => void (await c.query("INSERT INTO orders VALUES ('young', 1)")));
    await r.prepareAsync('T-young', new Uint8Array());
    const log = new MemoryLog();
    const asked: string[] = [];
    const monitor = new PostgresMonitor({
      resource: r,
      engine: { stateOf: () => 'prepared', resolveInDoubt: () => {} },
      askOutcome: askFrom({}, asked),
      log,
      scanIntervalMs: 50,
    });
    const report = await monitor.scan();
    // Only the old one alerts, and only it is asked about (the young one is the engine's to resolve).
    expect(report.stuck).toEqual([
      { txnId: 'T-stuck', gid: r.gid('T-stuck'), ageMs: expect.any(Number), clusterAnswer: 'IN_PROGRESS' },
    ]);
    expect(asked).toEqual(['T-stuck']);
    const alerts = log.find('warn', /older than the alert threshold/);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]?.obj).toMatchObject({
      txnId: 'T-stuck',
      gid: r.gid('T-stuck'),
      clusterAnswer: 'IN_PROGRESS',
      local: 'prepared',
    });
    expect(alerts[0]?.obj.ageMs).toBeGreaterThanOrEqual(300);
    const stats = r.preparedStats();
    expect(stats).toMatchObject({ count: 2, stuck: 1 });
    expect(stats.oldestAgeMs).toBeGreaterThanOrEqual(300);
    // Running on its own, the monitor scans periodically and alerts again.
    monitor.start();
    try {
      await waitFor(
        'two more alerts from the periodic scan',
        () => log.find('warn', /older than the alert threshold/).length >= 3,
      );
    } finally {
      await monitor.stop();
    }
    await r.abortAsync('T-stuck');
    await r.abortAsync('T-young');
    await r.listPrepared();
    expect(r.preparedStats()).toMatchObject({ count: 0, stuck: 0, oldestAgeMs: 0 });
  });

  it('leaves a hashed gid unknown to the journal alone, and reports it', async () => {
    const longTxnId = `T-${'x'.repeat(240)}`;
    const gid = gidOf(PREFIX, longTxnId);
    expect(gid).toMatch(/#[0-9a-f]{40}$/);
    await prepareByHand(shop, gid, ["INSERT INTO orders VALUES ('hashed', 1)"]);
    const log = new MemoryLog();
    try {
      const setup = await openPostgresParticipant({
        clusterId: CLUSTER,
        participantId: 'shop',
        url: shop,
        dataDir: await dataDir(),
        log,
      });
      try {
        expect(setup.records).toEqual([]);
        expect(log.find('error', /hashed gid the journal does not know/)[0]?.obj).toMatchObject({ gid });
      } finally {
        await setup.close();
        await setup.journal.close();
      }
      expect(await preparedXacts(shop, PREFIX)).toEqual([{ gid, database: 'shop' }]);
    } finally {
      await sql(shop, `ROLLBACK PREPARED '${gid}'`);
    }
  });
});

describe('verdict participant --resource postgres (the process)', () => {
  it('serves PREPARE / DECISION against PostgreSQL and stops cleanly on SIGTERM', async () => {
    const dir = await dataDir();
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin', 'verdict.mjs'),
        'participant',
        '--id',
        'shop',
        '--cluster-id',
        CLUSTER,
        '--listen',
        `127.0.0.1:${port}`,
        '--data',
        dir,
        '--endpoints',
        cluster.address,
        '--insecure',
        '--resource',
        'postgres',
        '--pg-url',
        shop,
        '--pg-concurrency',
        '2',
        '--log-level',
        'warn',
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const c = client(`127.0.0.1:${port}`);
      let vote: Awaited<ReturnType<ParticipantClient['prepare']>> | null = null;
      await waitFor(
        `the participant process to answer PREPARE (stderr: ${stderr})`,
        async () => {
          vote = await c
            .prepare(prepareReq('T-cli', ["INSERT INTO orders VALUES ('cli', 3)"]), 1_000)
            .catch(() => null);
          return vote !== null;
        },
        20_000,
      );
      expect(vote).toMatchObject({ vote: 'VOTE_YES' });
      expect(await c.decide(decisionReq('T-cli', 'DECISION_COMMIT'), DEADLINE_MS)).toEqual({
        txnId: 'T-cli',
        participantId: 'shop',
      });
      expect(await orderAmount('cli')).toBe(3);
      c.close(); // so the gRPC server's graceful shutdown has no session to wait for
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
