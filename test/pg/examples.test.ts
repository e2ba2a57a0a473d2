// The examples in examples/ run as their README says, against a real
// three-node cluster and a real PostgreSQL, so they cannot rot: each is one
// command, and each must leave the data all-or-nothing.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, Cluster, freePorts, ROOT, tempDir, useProcessCleanup } from '../process/harness.ts';
import { startNats, type NatsServer } from '../nats-harness.ts';
import { startTogether } from '../start-together.ts';
import { preparedXacts, sql, startPostgres, type PgServer } from './harness.ts';

const RUN_MS = 180_000;
// With parallel commit the client hears COMMITTED before the participants
// apply it: what the decision does in a database becomes true a little
// later, so it is polled for, within this bound, never read once.
const APPLY_WAIT = { timeout: 30_000, interval: 200 };

function runExample(
  cmd: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((res, rej) => {
    // The harness's clusters serve plaintext: VERDICT_INSECURE=true, as examples/cluster-security.mjs reads it.
    const child = spawn(cmd, args, { cwd: ROOT, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`${args.join(' ')} did not finish within ${RUN_MS} ms:\n${out}`));
    }, RUN_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      res({ code, out });
    });
  });
}

describe('examples/shop-ledger on two PostgreSQL databases', () => {
  useProcessCleanup();
  let pgServer: PgServer;
  let cluster: Cluster;
  let env: Record<string, string>;

  beforeAll(async () => {
    pgServer = await startPostgres({ databases: ['shop', 'ledger'] });
    cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await cluster.waitForLeader();
    env = {
      SHOP_URL: pgServer.url('shop'),
      LEDGER_URL: pgServer.url('ledger'),
      VERDICT_ENDPOINTS: cluster.nodes.map((n) => n.address).join(','),
      VERDICT_CLUSTER_ID: cluster.clusterId,
      EXAMPLE_DATA: tempDir('verdict-example-'),
    };
  }, RUN_MS);
  afterAll(async () => {
    await pgServer?.stop();
  });

  it(
    'sdk.mjs: the payable order commits in both databases, the unpayable one in neither',
    async () => {
      const r = await runExample(process.execPath, [join('examples', 'shop-ledger', 'sdk.mjs')], env);
      expect(r.out).toMatch(/^COMMITTED \S+: order \S+ placed, acct-9 (\d+) -> \d+ cents/m);
      expect(r.out).toMatch(/^ABORTED \S+: order \S+ not placed, .*ledger/m);
      expect(r.code, r.out).toBe(0);
      await expect.poll(() => preparedXacts(env.SHOP_URL!), APPLY_WAIT).toEqual([]);
      await expect.poll(() => preparedXacts(env.LEDGER_URL!), APPLY_WAIT).toEqual([]);
    },
    RUN_MS,
  );

  it(
    'cli.sh: the same two orders through the verdict command, exit codes 0 then 2',
    async () => {
      const [shopPort, ledgerPort] = await freePorts(2);
      const ordersBefore = Number((await sql<{ n: string }>(env.SHOP_URL!, 'SELECT count(*) AS n FROM orders'))[0]!.n);
      const balanceBefore = Number(
        (await sql<{ b: string }>(env.LEDGER_URL!, "SELECT balance_cents AS b FROM accounts WHERE id = 'acct-9'"))[0]!
          .b,
      );
      const r = await runExample('bash', [join('examples', 'shop-ledger', 'cli.sh')], {
        ...env,
        SHOP_LISTEN: `127.0.0.1:${shopPort}`,
        LEDGER_LISTEN: `127.0.0.1:${ledgerPort}`,
      });
      expect(r.out).toMatch(/^COMMITTED /m);
      expect(r.out).toMatch(/^ABORTED /m);
      expect(r.code, r.out).toBe(0);
      // Exactly one more order, and exactly one debit of 250 cents (the decision reaches the participants at once;
      // allow the apply a moment).
      const deadline = Date.now() + 30_000;
      for (;;) {
        const orders = Number((await sql<{ n: string }>(env.SHOP_URL!, 'SELECT count(*) AS n FROM orders'))[0]!.n);
        const balance = Number(
          (await sql<{ b: string }>(env.LEDGER_URL!, "SELECT balance_cents AS b FROM accounts WHERE id = 'acct-9'"))[0]!
            .b,
        );
        if ((orders === ordersBefore + 1 && balance === balanceBefore - 250) || Date.now() > deadline) {
          expect({ orders, balance }).toEqual({ orders: ordersBefore + 1, balance: balanceBefore - 250 });
          break;
        }
        await new Promise((res) => setTimeout(res, 200));
      }
    },
    RUN_MS,
  );
});

describe('examples/seat-payment: a TCC seat reservation and a PostgreSQL payment', () => {
  useProcessCleanup();
  let pgServer: PgServer;
  let cluster: Cluster;

  beforeAll(async () => {
    pgServer = await startPostgres({ databases: ['theatre', 'bank'] });
    cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await cluster.waitForLeader();
  }, RUN_MS);
  afterAll(async () => {
    await pgServer?.stop();
  });

  it(
    'sdk.mjs: the payable booking sells the seats and debits the account; the unpayable one and the oversized one change neither',
    async () => {
      const env = {
        SEATS_URL: pgServer.url('theatre'),
        BANK_URL: pgServer.url('bank'),
        VERDICT_ENDPOINTS: cluster.nodes.map((n) => n.address).join(','),
        VERDICT_CLUSTER_ID: cluster.clusterId,
        EXAMPLE_DATA: tempDir('verdict-example-tcc-'),
      };
      const r = await runExample(process.execPath, [join('examples', 'seat-payment', 'sdk.mjs')], env);
      expect(r.out).toMatch(/^COMMITTED \S+: 2 seats, free 100 -> 98, sold 0 -> 2, acct-7 100000 -> 95000 cents/m);
      expect(r.out).toMatch(/^ABORTED \S+: 2 seats, free 98 -> 98, sold 2 -> 2, .*bank-pg/m);
      expect(r.out).toMatch(/^ABORTED \S+: 500 seats, .*not 500 free seats/m);
      expect(r.out).toMatch(/seats-tcc: reserves held 0, tried [12], confirmed 1, /);
      expect(r.code, r.out).toBe(0);
      await expect
        .poll(() => sql(env.SEATS_URL, "SELECT free, held, sold FROM shows WHERE id = 'show-1'"), APPLY_WAIT)
        .toEqual([{ free: 98, held: 0, sold: 2 }]);
      await expect.poll(() => preparedXacts(env.BANK_URL), APPLY_WAIT).toEqual([]);
    },
    RUN_MS,
  );
});

describe('examples/outbox-orders: the outbox, the relay as a process, NATS JetStream and the inbox', () => {
  useProcessCleanup();
  let pgServer: PgServer;
  let nats: NatsServer;
  let cluster: Cluster;

  beforeAll(async () => {
    [pgServer, nats] = await startTogether([
      startPostgres({ databases: ['shop', 'stock'], maxPreparedTransactions: null }),
      startNats(),
    ]);
    cluster = await Cluster.start({ nodes: 3, logLevel: 'warn' });
    await cluster.waitForLeader();
  }, RUN_MS);
  afterAll(async () => {
    await Promise.all([pgServer?.stop(), nats?.stop()]);
  });

  it(
    'run.sh: the 20 committed orders take effect once in stock, the rolled-back one never',
    async () => {
      const env = {
        SHOP_URL: pgServer.url('shop'),
        STOCK_URL: pgServer.url('stock'),
        NATS_URL: nats.url,
        VERDICT_ENDPOINTS: cluster.nodes.map((n) => n.address).join(','),
      };
      const r = await runExample('bash', [join('examples', 'outbox-orders', 'run.sh')], env);
      expect(r.out).toMatch(
        /^orders placed 20 \(\+1 rolled back\); applied 20; stock 1000 -> 980; rolled-back order applied: false$/m,
      );
      expect(r.code, r.out).toBe(0);
      expect(await sql(env.STOCK_URL, "SELECT available FROM stock WHERE sku = 'book'")).toEqual([{ available: 980 }]);
      expect(await sql(env.STOCK_URL, 'SELECT count(*)::int AS n FROM verdict_inbox')).toEqual([{ n: 20 }]);
    },
    RUN_MS,
  );
});
