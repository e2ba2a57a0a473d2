// The MySQL participant's recovery against a real MariaDB and a FAKE cluster
// (GetOutcome answers from a table): a branch prepared by a participant that
// crashed before its vote is adopted from XA RECOVER and resolved with the
// cluster (R4: asked, never decided alone), the stuck-branch alert in logs and
// metrics, and the `verdict participant --resource mysql` process killed with
// SIGKILL after its YES vote, then restarted.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgPayload } from '../../src/participant/postgres.ts';
import { MySqlResource } from '../../src/participant/resources/mysql/resource.ts';
import type { MySqlParticipantOptions } from '../../src/participant/resources/mysql/participant.ts';
import { xidOf, xidScope, xidText } from '../../src/participant/resources/mysql/xid.ts';
import type { ParticipantRuntime } from '../../src/participant/runtime.ts';
import { ParticipantClient, type DecideRequest, type PrepareRequest } from '../../src/transport/participant-rpc.ts';
import { freePorts } from '../free-ports.ts';
import { DEADLINE_MS, Held, ROOT } from '../db-participant-fixture.ts';
import { fakeCluster, type FakeCluster } from '../pg/fake-cluster.ts';
import { waitFor } from '../pg/harness.ts';
import { mysqlQuery, startMariaDb, xaRecover, xaRollbackAll, type MariaDbServer } from './harness.ts';

const CLUSTER = `myrec${process.pid}`;
const SCOPE = xidScope(CLUSTER, 'ledger');
/**
 * A `verdict participant` process starting (or restarting) on a loaded two-core machine: generous, and still a bound.
 */
const PROCESS_WAIT_MS = 90_000;
let server: MariaDbServer;
let url: string;
let cluster: FakeCluster;
const children: ChildProcess[] = [];
const held = new Held<MySqlResource>('verdict-mysql-participant-');
const dataDir = (): Promise<string> => held.dataDir();
const client = (address: string): ParticipantClient => held.client(address);

beforeAll(async () => {
  server = await startMariaDb({ databases: ['ledger'] });
  url = server.url('ledger');
  await mysqlQuery(
    url,
    'CREATE TABLE IF NOT EXISTS entries (id VARCHAR(64) PRIMARY KEY, amount INT NOT NULL) ENGINE=InnoDB',
  );
  cluster = await fakeCluster();
}, 120_000);

afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await held.cleanup();
  cluster.outcomes.clear();
  cluster.questions.length = 0;
});

afterAll(async () => {
  cluster?.close();
  if (server === undefined) return;
  try {
    expect(await ours()).toEqual([]);
  } finally {
    await xaRollbackAll(url, `${CLUSTER}:`);
    await server.stop();
  }
}, 60_000);

function start(
  dir: string,
  over: Partial<MySqlParticipantOptions> = {},
  metricsListen?: string,
): Promise<ParticipantRuntime<MySqlResource>> {
  return held.start({
    clusterId: CLUSTER,
    participantId: 'ledger',
    endpoint: cluster.address,
    dataDir: dir,
    resource: { mysql: { url, concurrency: 4, ...over } },
    metricsListen,
  });
}

const ours = async (): Promise<string[]> =>
  (await xaRecover(url)).filter((x) => x.gtrid.startsWith(`${CLUSTER}:`)).map((x) => `${x.gtrid},${x.bqual}`);
const amount = async (id: string): Promise<number | undefined> =>
  (await mysqlQuery<{ amount: number }>(url, 'SELECT amount FROM entries WHERE id = ?', [id]))[0]?.amount;
const prepareReq = (txnId: string, statements: string[]): PrepareRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'ledger',
  participants: ['shop', 'ledger'],
  payload: pgPayload(statements),
  timeoutMs: 0,
});
const decisionReq = (txnId: string, decision: DecideRequest['decision']): DecideRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'ledger',
  decision,
  reason: '',
});

describe('mysql participant: recovery through the engine (R4)', () => {
  it('a branch XA PREPAREd by a participant that crashed before its vote (nothing in the journal) is adopted from XA RECOVER, asked about, and committed', async () => {
    const bare = await MySqlResource.open({ clusterId: CLUSTER, participantId: 'ledger', url });
    await bare.work('T1', async (c) => void (await c.query("INSERT INTO entries VALUES ('m1', 10)")));
    expect((await bare.prepareAsync('T1', new Uint8Array())).yes).toBe(true);
    await bare.close(); // the crash: the engine never journaled T1, the branch is the server's
    cluster.outcomes.set('T1', 'OUTCOME_COMMITTED');
    const p = await start(await dataDir());
    await waitFor("T1 to be committed from the cluster's answer", () => p.engine.stateOf('T1') === 'COMMITTED');
    expect(await amount('m1')).toBe(10);
    expect(await ours()).toEqual([]);
    expect(cluster.questions[0]).toEqual({ txnId: 'T1', participantId: 'ledger' });
  });

  it('keeps asking while the cluster says IN_PROGRESS: nothing is decided alone; ABORT then rolls the branch back', async () => {
    const dir = await dataDir();
    const p = await start(dir);
    expect(
      (await client(p.address).prepare(prepareReq('T2', ["INSERT INTO entries VALUES ('m2', 2)"]), DEADLINE_MS)).vote,
    ).toBe('VOTE_YES');
    await held.stop(p);
    const again = await start(dir);
    await waitFor('three questions about T2', () => cluster.questions.filter((q) => q.txnId === 'T2').length >= 3);
    expect(again.engine.stateOf('T2')).toBe('prepared');
    expect(await ours()).toEqual([xidText(xidOf(SCOPE, 'T2'))]);
    cluster.outcomes.set('T2', 'OUTCOME_ABORTED');
    await waitFor('T2 to be aborted', () => again.engine.stateOf('T2') === 'ABORTED');
    expect(await amount('m2')).toBeUndefined();
    expect(await ours()).toEqual([]);
  });

  it('counts a branch prepared longer than the threshold as stuck and exports it with its age in the metrics', async () => {
    const [metricsPort] = await freePorts(1);
    const p = await start(await dataDir(), { stuckAfterMs: 200, scanIntervalMs: 100 }, `127.0.0.1:${metricsPort}`);
    expect(
      (await client(p.address).prepare(prepareReq('T3', ["INSERT INTO entries VALUES ('m3', 3)"]), DEADLINE_MS)).vote,
    ).toBe('VOTE_YES');
    const scrape = async (): Promise<Map<string, number>> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return new Map(
        [...text.matchAll(/^(verdict_participant_db_\w+)\{[^}]*\} (\S+)$/gm)].map((m) => [m[1], Number(m[2])]),
      );
    };
    await waitFor(
      'the stuck branch in the metrics',
      async () => (await scrape()).get('verdict_participant_db_stuck_prepared') === 1,
      30_000,
    );
    const m = await scrape();
    expect(m.get('verdict_participant_db_prepared')).toBe(1);
    expect(m.get('verdict_participant_db_oldest_prepared_age_seconds')).toBeGreaterThanOrEqual(0.2);
    expect(p.resource.preparedStats()).toMatchObject({ count: 1, stuck: 1 });
    await client(p.address).decide(decisionReq('T3', 'DECISION_COMMIT'), DEADLINE_MS);
    await waitFor(
      'the metrics to drop the committed branch',
      async () => (await scrape()).get('verdict_participant_db_prepared') === 0,
      30_000,
    );
    expect(await amount('m3')).toBe(3);
  });

  it("leaves another participant's branch and a foreign xid alone", async () => {
    const other = xidOf(xidScope(CLUSTER, 'shop'), 'X1');
    const foreign = { gtrid: `${CLUSTER}:X2`, bqual: 'ledger', formatId: 1 };
    const { xaPrepareByHand } = await import('./harness.ts');
    await xaPrepareByHand(url, other, ["INSERT INTO entries VALUES ('x1', 1)"]);
    await xaPrepareByHand(url, foreign, ["INSERT INTO entries VALUES ('x2', 1)"]);
    cluster.outcomes.set('X1', 'OUTCOME_COMMITTED');
    cluster.outcomes.set('X2', 'OUTCOME_COMMITTED');
    try {
      const p = await start(await dataDir(), { scanIntervalMs: 50, orphanAfterMs: 0, stuckAfterMs: 0 });
      await new Promise((r) => setTimeout(r, 400));
      expect(p.engine.inDoubt()).toEqual([]);
      expect(cluster.questions).toEqual([]);
      expect((await xaRecover(url)).length).toBeGreaterThanOrEqual(2);
    } finally {
      await mysqlQuery(url, `XA ROLLBACK '${other.gtrid}','${other.bqual}',${other.formatId}`);
      await mysqlQuery(url, `XA ROLLBACK '${foreign.gtrid}','ledger',1`);
    }
  });
});

describe('verdict participant --resource mysql (the process)', () => {
  const spawnParticipant = (
    dir: string,
    port: number,
    extra: string[] = [],
  ): { child: ChildProcess; stderr: () => string; exited: Promise<number | null> } => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin', 'verdict.mjs'),
        'participant',
        '--id',
        'ledger',
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
        'mysql',
        '--mysql-url',
        url,
        '--mysql-concurrency',
        '2',
        '--log-level',
        'warn',
        ...extra,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(child);
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    return { child, stderr: () => stderr, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
  };

  it(
    'R4: killed with SIGKILL after voting YES, restarted, it finds the branch, asks the cluster and commits',
    async () => {
      const dir = await dataDir();
      const [port] = await freePorts(1);
      const first = spawnParticipant(dir, port);
      const c = client(`127.0.0.1:${port}`);
      let vote: Awaited<ReturnType<ParticipantClient['prepare']>> | null = null;
      await waitFor(
        `the participant process to answer PREPARE (stderr: ${first.stderr()})`,
        async () => {
          vote = await c
            .prepare(prepareReq('T-kill', ["INSERT INTO entries VALUES ('kill', 7)"]), 1_000)
            .catch(() => null);
          return vote !== null;
        },
        PROCESS_WAIT_MS,
      );
      expect(vote).toMatchObject({ vote: 'VOTE_YES' });
      first.child.kill('SIGKILL');
      await first.exited;
      c.close();
      expect(await ours()).toEqual([xidText(xidOf(SCOPE, 'T-kill'))]);
      cluster.outcomes.set('T-kill', 'OUTCOME_COMMITTED');
      const second = spawnParticipant(dir, port);
      // The row shows as soon as XA COMMIT makes it visible; under load the server may list the branch a moment longer.
      await waitFor(
        `the restarted participant to commit T-kill (stderr: ${second.stderr()})`,
        async () => (await amount('kill')) === 7 && (await ours()).length === 0,
        PROCESS_WAIT_MS,
      );
      expect(await amount('kill')).toBe(7);
      expect(await ours()).toEqual([]);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    },
    3 * PROCESS_WAIT_MS,
  );

  it(
    'refuses to start on a server that would lose a prepared branch, with the setting and the fix, exit 1',
    async () => {
      await mysqlQuery(url, 'SET GLOBAL innodb_flush_log_at_trx_commit = 0');
      try {
        const [port] = await freePorts(1);
        const p = spawnParticipant(await dataDir(), port);
        expect(await p.exited).toBe(1);
        expect(p.stderr()).toMatch(
          /^verdict: FAILED_PRECONDITION: .*innodb_flush_log_at_trx_commit = 0: an acknowledged XA PREPARE may be lost in a crash.*set innodb_flush_log_at_trx_commit = 1\n$/,
        );
      } finally {
        await mysqlQuery(url, 'SET GLOBAL innodb_flush_log_at_trx_commit = 1');
      }
    },
    2 * PROCESS_WAIT_MS,
  );
});
