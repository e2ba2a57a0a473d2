// Parallel commit's recovery on real processes and a real PostgreSQL
// (issue 20, item 3): three node processes, two PostgreSQL participants
// (shop, ledger). Every node is armed with the test fault point
// crash-before-explicit-commit (src/node/fault-point.ts): the leader answers
// its first client COMMITTED by the implicit rule (every YES in, the STAGING
// record committed), proposes nothing more, and SIGKILLs itself. A new leader
// finds the STAGING record without a decision and recovers it by asking the
// participants. Afterwards every transaction is all-or-nothing across the two
// databases and matches the log, what a client heard COMMITTED is committed,
// and nothing is left in pg_prepared_xacts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { FAULT_POINT_ENV } from '../../src/node/fault-point.ts';
import { startParticipant, type ParticipantRuntime } from '../../src/participant/runtime.ts';
import { Cluster, fileTempDir, freePorts, useProcessCleanup, waitFor as waitForValue } from '../process/harness.ts';
import { preparedXacts, sql, startPostgres, type PgServer } from './harness.ts';

useProcessCleanup();

/** Transactions in flight when the leader dies. */
const TXNS = 6;
let server: PgServer;
const participants: Pick<ParticipantRuntime, 'stop' | 'registered'>[] = [];

beforeAll(async () => {
  server = await startPostgres({ databases: ['shop', 'ledger'] });
  await sql(server.url('shop'), 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)');
  await sql(server.url('ledger'), 'CREATE TABLE IF NOT EXISTS debits (id text PRIMARY KEY)');
}, 120_000);

afterAll(async () => {
  for (const p of participants) await p.stop();
  await server?.stop();
});

describe('parallel commit: the leader SIGKILLed between the last YES and the explicit COMMIT', () => {
  it('a new leader recovers the staged transactions; PostgreSQL ends all-or-nothing, COMMITTED answers stand', async () => {
    const c = await Cluster.create({ nodes: 3, logLevel: 'info' });
    // The nodes copy the environment when they start; the participants and restarted nodes never see it.
    process.env[FAULT_POINT_ENV] = 'crash-before-explicit-commit';
    try {
      for (const n of c.nodes) n.start();
    } finally {
      delete process.env[FAULT_POINT_ENV];
    }
    const { node: leader } = await c.waitForLeader();
    const ports = await freePorts(2);
    const dir = fileTempDir('verdict-pc-crash-');
    for (const [i, id] of ['shop', 'ledger'].entries()) {
      participants.push(
        await startParticipant({
          clusterId: c.clusterId,
          participantId: id,
          listen: `127.0.0.1:${ports[i]}`,
          endpointsOfCluster: c.nodes.map((n) => n.address),
          dataDir: join(dir, id),
          logger: pino({ level: 'silent' }),
          insecure: true,
          registerRetryMs: 200,
          engine: { inDoubtAfterMs: 1_000, sweepIntervalMs: 250 },
          postgres: { url: server.url(id), concurrency: 8 },
        }),
      );
    }
    await Promise.all(participants.map((p) => p.registered));
    const client = new VerdictClient({
      insecure: true,
      endpoints: c.nodes.map((n) => n.address),
      callTimeoutMs: 30_000,
    });
    try {
      const heard = new Map<string, string>();
      await Promise.all(
        Array.from({ length: TXNS }, async (_, i) => {
          const tx = client.transaction({ timeoutMs: 20_000, parallelCommit: true });
          tx.enlist('shop', { sql: [`INSERT INTO orders (id) VALUES ('o${i}')`] }).enlist('ledger', {
            sql: [`INSERT INTO debits (id) VALUES ('o${i}')`],
          });
          try {
            heard.set(tx.txnId, (await tx.commit()).outcome);
          } catch (err) {
            heard.set(tx.txnId, `error: ${(err as Error).message}`);
          }
        }),
      );
      // The fault point fired: the leader is gone by SIGKILL, and its log names the transactions it answered COMMITTED
      // without proposing COMMIT.
      await waitForValue('the leader to be SIGKILLed by its fault point', 30_000, async () =>
        leader.lastExit?.signal === 'SIGKILL' ? true : undefined,
      );
      const halted = [
        ...readFileSync(leader.logFile, 'utf8').matchAll(
          /"txnId":"([^"]+)"[^\n]*test fault point: COMMITTED answered/g,
        ),
      ].map((m) => m[1]);
      expect(halted.length).toBeGreaterThan(0);
      for (const id of halted) expect(heard.get(id), `${id} was halted after its implied COMMITTED`).toBe('COMMITTED');
      const { node: next } = await c.waitForLeader({ notId: leader.id });
      // Every transaction decided in the log (recovery of the staged ones included), and nothing prepared left behind.
      const outcomes = new Map<string, string>();
      for (const id of heard.keys()) {
        outcomes.set(
          id,
          await waitForValue(`the outcome of ${id}`, 60_000, async () => {
            const o = (await client.outcome(id).catch(() => null))?.outcome;
            return o === 'COMMITTED' || o === 'ABORTED' ? o : undefined;
          }),
        );
      }
      await waitForValue('no prepared transaction left in PostgreSQL', 60_000, async () =>
        (await preparedXacts(server.url('shop'))).length + (await preparedXacts(server.url('ledger'))).length === 0
          ? true
          : undefined,
      );
      const orders = new Set((await sql<{ id: string }>(server.url('shop'), 'SELECT id FROM orders')).map((r) => r.id));
      const debits = new Set(
        (await sql<{ id: string }>(server.url('ledger'), 'SELECT id FROM debits')).map((r) => r.id),
      );
      expect([...orders].sort()).toEqual([...debits].sort());
      const committed = [...outcomes.values()].filter((o) => o === 'COMMITTED').length;
      expect(orders.size).toBe(committed);
      // Those halted were decided by recovery alone: their stager never proposed COMMIT.
      for (const [id, said] of heard)
        if (said === 'COMMITTED') expect(outcomes.get(id), `${id} was answered COMMITTED`).toBe('COMMITTED');
      console.log(
        `leader ${leader.id} SIGKILLed after ${halted.length} implied COMMITTED without an explicit COMMIT (recovered by ${next.id}, the new leader). Clients heard: ${[...heard.values()].map((h) => h.split(':')[0]).join(', ')}; ` +
          `the log says ${committed} COMMIT, ${TXNS - committed} ABORT; shop has ${orders.size} orders, ledger ${debits.size} debits, nothing prepared left`,
      );
    } finally {
      client.close();
    }
  }, 300_000);
});
