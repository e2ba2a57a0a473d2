// The PostgreSQL participant process SIGKILLed in the middle of the
// protocol, against a real PostgreSQL 15 and a FAKE cluster (GetOutcome
// answers from a table), then restarted on the same data directory. Since
// the participant votes YES on PostgreSQL's own durable PREPARE TRANSACTION
// (readable gids: no journal sync before the vote), these show that recovery
// is all-or-nothing without the journal:
//
//   - killed while PREPAREs are between PREPARE TRANSACTION and the vote:
//     every transaction ends as the cluster decides (a YES voted is
//     committed; one that never voted is aborted, as the cluster presumes),
//     nothing stays prepared but hashed gids that never voted (left for an
//     operator, as documented);
//   - killed while COMMITs are being applied (COMMIT PREPARED done, ACK not
//     sent, records maybe not on disk): the redelivered COMMIT is ACKed for
//     every one, never refused, and every row is there once.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gidOf, gidPrefix, parseGid } from '../../src/participant/postgres-gid.ts';
import { pgPayload } from '../../src/participant/postgres.ts';
import { ParticipantClient, type DecideRequest, type PrepareRequest } from '../../src/transport/participant-rpc.ts';
import { DEADLINE_MS, Held, ROOT } from '../db-participant-fixture.ts';
import { fakeCluster, type FakeCluster } from './fake-cluster.ts';
import {
  freePort,
  preparedXacts,
  rollbackPrepared,
  sql,
  startPostgres,
  uniqueClusterId,
  waitFor,
  type PgServer,
} from './harness.ts';

const CLUSTER = uniqueClusterId('crash');
const PREFIX = gidPrefix(CLUSTER, 'shop');
/** Transactions per round: more than the participant's PostgreSQL connections, so some wait while others prepare. */
const TXNS = 24;
let server: PgServer;
let shop: string;
let cluster: FakeCluster;
const held = new Held<never>('verdict-pg-crash-');

beforeAll(async () => {
  server = await startPostgres();
  shop = server.url('shop');
  await sql(shop, 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount int NOT NULL)');
  cluster = await fakeCluster();
});

afterAll(async () => {
  cluster?.close();
  await held.cleanup();
  if (server === undefined) return;
  await rollbackPrepared(server, ['shop'], PREFIX);
  await server.stop();
});

interface Proc {
  child: ChildProcess;
  address: string;
  exited: Promise<unknown>;
  stderr: () => string;
}

async function startParticipant(dir: string, port: number): Promise<Proc> {
  const args = [
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
  ];
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin', 'verdict.mjs'),
      ...args,
      '--resource',
      'postgres',
      '--pg-url',
      shop,
      '--pg-concurrency',
      '4',
      '--log-level',
      'warn',
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const address = `127.0.0.1:${port}`;
  const probe = new ParticipantClient(address);
  try {
    // An ABORT for an id never used answers once the engine serves (presumed abort: nothing to do).
    await waitFor(
      `the participant process to serve (stderr: ${stderr})`,
      async () =>
        (await probe.decide(decisionReq(`probe-${Date.now()}`, 'DECISION_ABORT'), 1_000).catch(() => null)) !== null,
      60_000,
    );
  } finally {
    probe.close();
  }
  return { child, address, exited, stderr: () => stderr };
}

async function kill(p: Proc): Promise<void> {
  p.child.kill('SIGKILL');
  await p.exited;
}

const prepareReq = (txnId: string, row: string): PrepareRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'shop',
  participants: ['shop', 'ledger'],
  payload: pgPayload([`INSERT INTO orders VALUES ('${row}', 1)`]),
  timeoutMs: 0,
});
const decisionReq = (txnId: string, decision: DecideRequest['decision']): DecideRequest => ({
  clusterId: CLUSTER,
  txnId,
  participantId: 'shop',
  decision,
  reason: '',
});
const rows = async (like: string): Promise<Set<string>> =>
  new Set((await sql<{ id: string }>(shop, 'SELECT id FROM orders WHERE id LIKE $1', [like])).map((r) => r.id));
/**
 * Every fourth id is too long for a readable gid once percent-encoded (':' takes 3 bytes): hashed, its prepared record
 * is synced before the vote.
 */
const txnIdOf = (round: string, i: number): string =>
  i % 4 === 3 ? `${round}-${i}${':'.repeat(100)}` : `${round}-${i}`;
const isHashed = (txnId: string): boolean => parseGid(PREFIX, gidOf(PREFIX, txnId)).kind === 'hashed';

describe('postgres participant process: SIGKILL and restart, no journal sync before the vote (readable gids)', () => {
  it('the test ids include hashed gids', () => {
    expect([0, 1, 2, 3].map((i) => isHashed(txnIdOf('A', i)))).toEqual([false, false, false, true]);
  });

  it('killed between PREPARE TRANSACTION and the vote: each transaction ends as the cluster decides, all or nothing', async () => {
    const dir = await held.dataDir();
    const port = await freePort();
    const first = await startParticipant(dir, port);
    const c = new ParticipantClient(first.address);
    const voted = new Set<string>();
    const ids = Array.from({ length: TXNS }, (_, i) => txnIdOf('A', i));
    // All PREPAREs at once; the kill comes with the first YES, while the rest are in PostgreSQL or waiting for a
    // connection.
    const firstYes = new Promise<void>((resolve) => {
      for (const [i, txnId] of ids.entries()) {
        c.prepare(prepareReq(txnId, `A-${i}`), DEADLINE_MS).then(
          (v) => {
            if (v.vote !== 'VOTE_YES') return;
            voted.add(txnId);
            resolve();
          },
          () => {},
        );
      }
    });
    await firstYes;
    await kill(first);
    c.close();
    const votedAtKill = new Set(voted);
    const preparedAtKill = (await preparedXacts(shop, PREFIX)).length;
    // The cluster: a YES voted is committed (its record may never have reached the journal's disk); no YES, aborted
    // (R3).
    const commit = new Set(ids.filter((t) => votedAtKill.has(t)));
    for (const t of ids) cluster.outcomes.set(t, commit.has(t) ? 'OUTCOME_COMMITTED' : 'OUTCOME_ABORTED');

    const second = await startParticipant(dir, port);
    try {
      // In doubt after the restart: the participant asks and applies; only hashed gids that never voted stay (unknown
      // to the journal).
      const leftover = async (): Promise<string[]> => (await preparedXacts(shop, PREFIX)).map((x) => x.gid);
      await waitFor(
        'every prepared gid but unvoted hashed ones to be resolved',
        async () => (await leftover()).every((g) => parseGid(PREFIX, g).kind === 'hashed'),
        60_000,
      );
      for (const g of await leftover()) {
        const owner = ids.find((t) => gidOf(PREFIX, t) === g);
        expect(owner !== undefined && isHashed(owner) && !votedAtKill.has(owner), `gid ${g} left prepared`).toBe(true);
      }
      const present = await rows('A-%');
      for (const [i, t] of ids.entries())
        expect(present.has(`A-${i}`), `${t}: row present iff the cluster committed it`).toBe(commit.has(t));
      console.log(
        `crash between PREPARE and vote: ${votedAtKill.size} YES before the kill, ${preparedAtKill} prepared in PostgreSQL at the kill, ${commit.size} committed, ${(await leftover()).length} unvoted hashed left`,
      );
    } finally {
      await kill(second);
      await rollbackPrepared(server, ['shop'], PREFIX);
    }
  }, 180_000);

  it('killed while COMMITs are applied (ACKs not all sent): every redelivered COMMIT is ACKed and every row is there', async () => {
    const dir = await held.dataDir();
    const port = await freePort();
    const first = await startParticipant(dir, port);
    const ids = Array.from({ length: TXNS }, (_, i) => txnIdOf('B', i));
    const c = new ParticipantClient(first.address);
    const votes = await Promise.all(ids.map((t, i) => c.prepare(prepareReq(t, `B-${i}`), DEADLINE_MS * 6)));
    expect(votes.map((v) => v.vote)).toEqual(ids.map(() => 'VOTE_YES'));
    for (const t of ids) cluster.outcomes.set(t, 'OUTCOME_COMMITTED');
    let acked = 0;
    const firstAck = new Promise<void>((resolve) => {
      for (const t of ids)
        c.decide(decisionReq(t, 'DECISION_COMMIT'), DEADLINE_MS).then(
          () => {
            acked += 1;
            resolve();
          },
          () => {},
        );
    });
    await firstAck;
    await kill(first);
    c.close();
    const ackedAtKill = acked;
    const committedAtKill = (await rows('B-%')).size;

    const second = await startParticipant(dir, port);
    const c2 = new ParticipantClient(second.address);
    try {
      // The leader redelivers COMMIT until ACKed (R5); every one must be ACKed, none refused.
      const answers = await Promise.all(
        ids.map((t) =>
          c2.decide(decisionReq(t, 'DECISION_COMMIT'), DEADLINE_MS * 6).then(
            () => 'ack',
            (err: Error) => err.message,
          ),
        ),
      );
      expect(answers).toEqual(ids.map(() => 'ack'));
      await waitFor(
        'nothing of this round left prepared',
        async () => (await preparedXacts(shop, PREFIX)).length === 0,
        60_000,
      );
      expect((await rows('B-%')).size).toBe(TXNS);
      console.log(
        `crash while committing: ${ackedAtKill} ACKed before the kill, ${committedAtKill} committed in PostgreSQL at the kill; after the restart ${TXNS} ACKed, ${TXNS} rows`,
      );
    } finally {
      c2.close();
      await kill(second);
    }
  }, 180_000);
});
