// docs/postgres.md followed in order on real processes: its SQL (role,
// databases, example tables) on a real PostgreSQL 15, a one-node cluster,
// the two PostgreSQL participants of step 5 (their own ids, ports and data
// folders) started with `verdict participant --resource postgres`, and the
// page's two transactions: the first COMMITTED (order 42 written, the
// balance debited), the second ABORTED by the CHECK constraint with its
// SQLSTATE (order 43 absent), no prepared transaction left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, runCli, tempDir, useProcessCleanup, waitFor, BIN, ROOT, freePorts } from '../process/harness.ts';
import { docBlock, psql } from './doc-sql.ts';
import { preparedXacts, sql, startPostgres, type PgServer } from './harness.ts';

useProcessCleanup();

const WAIT_MS = 60_000;
let server: PgServer;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Our own server: the page creates a role and databases of fixed names.
  server = await startPostgres({ private: true, databases: [] });
  await psql(server, docBlock('CREATE ROLE verdict'));
  await psql(server, docBlock('CREATE TABLE orders'));
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await server?.stop();
});

const asVerdict = (db: string): string => {
  const u = new URL(server.url(db));
  u.username = 'verdict';
  u.password = 'change-me';
  return u.toString();
};

describe('docs/postgres.md, in order', () => {
  it("two PostgreSQL participants of their own commit the page's first transaction and abort its second on the CHECK constraint", async () => {
    const c = await Cluster.start({ nodes: 1 });
    const { node } = await c.waitForLeader({ timeoutMs: WAIT_MS });
    const data = tempDir('verdict-pg-docs-');
    const [shopPort, ledgerPort] = await freePorts(2);
    for (const [id, db, port] of [
      ['shop-pg', 'shop', shopPort],
      ['ledger-pg', 'ledger', ledgerPort],
    ] as const) {
      children.push(
        spawn(
          process.execPath,
          [
            BIN,
            'participant',
            '--id',
            id,
            '--listen',
            `127.0.0.1:${port}`,
            '--data',
            join(data, id),
            '--cluster-id',
            c.clusterId,
            '--endpoints',
            node.address,
            '--insecure',
            '--resource',
            'postgres',
            '--pg-url',
            asVerdict(db),
          ],
          { cwd: ROOT, stdio: 'ignore' },
        ),
      );
    }
    const client = new VerdictClient({ insecure: true, endpoints: [node.address] });
    try {
      await waitFor('shop-pg and ledger-pg to register', WAIT_MS, async () =>
        (await client.participants())
          .map((p) => p.participantId)
          .sort()
          .join(',') === 'ledger-pg,shop-pg'
          ? true
          : undefined,
      );
    } finally {
      client.close();
    }
    const ep = ['--endpoints', node.address];
    // The page's payloads, as its shell quoting delivers them.
    const debit = (cents: number): string =>
      `ledger-pg={"sql":["UPDATE accounts SET balance_cents = balance_cents - ${cents} WHERE id = 'acct-9'"]}`;
    const ok = await runCli(
      [
        'txn',
        'commit',
        '--participant',
        'shop-pg={"sql":["INSERT INTO orders(id) VALUES (42)"]}',
        '--participant',
        debit(2000),
        ...ep,
      ],
      { timeoutMs: WAIT_MS },
    );
    expect([ok.code, ok.stderr]).toEqual([0, '']);
    expect(ok.stdout).toMatch(/^COMMITTED /);
    const no = await runCli(
      [
        'txn',
        'commit',
        '--participant',
        'shop-pg={"sql":["INSERT INTO orders(id) VALUES (43)"]}',
        '--participant',
        debit(99_999_999),
        ...ep,
      ],
      { timeoutMs: WAIT_MS },
    );
    expect(no.code).toBe(2);
    expect(no.stdout).toMatch(/^ABORTED .*participant ledger-pg voted NO: SQLSTATE 23514/);

    await waitFor('the COMMIT to reach PostgreSQL', WAIT_MS, async () =>
      (await sql(server.url('shop'), 'SELECT id FROM orders')).length === 1 ? true : undefined,
    );
    expect(await sql(server.url('shop'), 'SELECT id FROM orders ORDER BY id')).toEqual([{ id: '42' }]);
    await waitFor('the debit to reach PostgreSQL', WAIT_MS, async () => {
      const rows = await sql<{ balance_cents: string }>(
        server.url('ledger'),
        "SELECT balance_cents FROM accounts WHERE id = 'acct-9'",
      );
      return rows[0]?.balance_cents === '8000' ? true : undefined;
    });
    for (const db of ['shop', 'ledger'])
      await waitFor(`no prepared transaction left in ${db}`, WAIT_MS, async () =>
        (await preparedXacts(server.url(db))).length === 0 ? true : undefined,
      );
  }, 300_000);
});
