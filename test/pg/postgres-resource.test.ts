// The postgres resource against a real PostgreSQL 15 (started by the
// harness): PREPARE TRANSACTION / COMMIT PREPARED / ROLLBACK PREPARED, NO
// votes carrying PostgreSQL's SQLSTATE, connections released at PREPARE,
// idempotent decisions through the commit marker and the heuristic hazards
// it exposes (R4, R7). Every row is checked from another session.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  HeuristicHazardError,
  PostgresResource,
  pgPayload,
  type PostgresResourceOptions,
  type PgTxnClient,
} from '../../src/participant/postgres.ts';
import { preparedXacts, rollbackPrepared, sql, startPostgres, uniqueClusterId, type PgServer } from './harness.ts';
import { MemoryLog } from './log.ts';

const CLUSTER = uniqueClusterId('res');
const NONE = new Uint8Array();
let server: PgServer;
let url: string;
const resources: PostgresResource[] = [];

beforeAll(async () => {
  server = await startPostgres();
  url = server.url('shop');
  await sql(
    url,
    'CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance int NOT NULL CHECK (balance >= 0))',
  );
  await sql(url, 'CREATE TABLE IF NOT EXISTS doctors (name text PRIMARY KEY, on_call boolean NOT NULL)');
});

afterEach(async () => {
  for (const r of resources.splice(0)) await r.close();
});

afterAll(async () => {
  if (server === undefined) return;
  try {
    // Nothing this file prepared is left behind.
    expect(await preparedXacts(url, `verdict:${CLUSTER}:`)).toEqual([]);
  } finally {
    await rollbackPrepared(server, ['shop', 'ledger'], `verdict:${CLUSTER}:`);
    await server.stop();
  }
});

async function open(over: Partial<PostgresResourceOptions> = {}): Promise<PostgresResource> {
  const r = await PostgresResource.open({ clusterId: CLUSTER, participantId: 'shop', url, ...over });
  resources.push(r);
  return r;
}

const balanceOf = async (id: string): Promise<number | undefined> =>
  (await sql<{ balance: number }>(url, 'SELECT balance FROM accounts WHERE id = $1', [id]))[0]?.balance;
const insert = (id: string, balance: number) => async (c: PgTxnClient) => {
  await c.query('INSERT INTO accounts (id, balance) VALUES ($1, $2)', [id, balance]);
};
const markerOf = async (gid: string): Promise<string[]> =>
  (await sql<{ txn_id: string }>(url, 'SELECT txn_id FROM verdict_markers WHERE gid = $1', [gid])).map((r) => r.txn_id);

describe('postgres resource: PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED', () => {
  it('commits: the work is invisible while open and while prepared, visible to another session after COMMIT PREPARED', async () => {
    const r = await open();
    await r.work('T-commit', insert('alice', 100));
    expect(await balanceOf('alice')).toBeUndefined();
    expect(await r.prepareAsync('T-commit', NONE)).toEqual({ yes: true, reason: '' });
    // R4: the prepared state is PostgreSQL's own, durable record.
    expect(await preparedXacts(url, r.prefix)).toEqual([{ gid: r.gid('T-commit'), database: 'shop' }]);
    expect(await balanceOf('alice')).toBeUndefined();
    await r.commitAsync('T-commit');
    expect(await balanceOf('alice')).toBe(100);
    expect(await preparedXacts(url, r.prefix)).toEqual([]);
    expect(await markerOf(r.gid('T-commit'))).toEqual(['T-commit']);
  });

  it('aborts a prepared transaction with ROLLBACK PREPARED: the row never appears and no marker is left', async () => {
    const r = await open();
    await r.work('T-abort', insert('bob', 50));
    expect((await r.prepareAsync('T-abort', NONE)).yes).toBe(true);
    await r.abortAsync('T-abort');
    expect(await balanceOf('bob')).toBeUndefined();
    expect(await preparedXacts(url, r.prefix)).toEqual([]);
    expect(await markerOf(r.gid('T-abort'))).toEqual([]);
  });

  it('aborts a transaction that never prepared with a plain ROLLBACK and returns its connection', async () => {
    const r = await open({ concurrency: 1, acquireTimeoutMs: 1_000 });
    await r.work('T-open', insert('carol', 10));
    expect(r.counts().open).toBe(1);
    await r.abortAsync('T-open');
    expect(r.counts().open).toBe(0);
    expect(await balanceOf('carol')).toBeUndefined();
    // The single connection is free again, and T-open is over for good.
    await r.work('T-after', async (c) => void (await c.query('SELECT 1')));
    await r.rollback('T-after');
    await expect(r.work('T-open', insert('carol', 10))).rejects.toThrow(/T-open has ended here: aborted/);
  });

  it('runs a {"sql": [...]} payload inside T at PREPARE time, with or without work() before it', async () => {
    const r = await open();
    expect(
      await r.prepareAsync(
        'T-payload',
        pgPayload([
          "INSERT INTO accounts VALUES ('dave', 5)",
          "UPDATE accounts SET balance = balance + 1 WHERE id = 'dave'",
        ]),
      ),
    ).toEqual({ yes: true, reason: '' });
    await r.commitAsync('T-payload');
    expect(await balanceOf('dave')).toBe(6);
    await r.work('T-both', insert('erin', 1));
    expect((await r.prepareAsync('T-both', pgPayload(["UPDATE accounts SET balance = 2 WHERE id = 'erin'"]))).yes).toBe(
      true,
    );
    await r.commitAsync('T-both');
    expect(await balanceOf('erin')).toBe(2);
  });

  it('votes NO on a malformed payload, and on an empty payload with no work bound to T (never prepares an empty transaction by accident)', async () => {
    const r = await open();
    const bad = await r.prepareAsync('T-bad', new TextEncoder().encode('{"sql": "INSERT"}'));
    expect(bad).toEqual({ yes: false, reason: 'payload "sql" must be an array of non-empty SQL strings' });
    const empty = await r.prepareAsync('T-nowork', NONE);
    expect(empty.yes).toBe(false);
    expect(empty.reason).toMatch(/no work for transaction T-nowork here/);
    expect((await r.prepareAsync('T-empty', pgPayload([]))).yes).toBe(true);
    await r.abortAsync('T-empty');
    expect(await preparedXacts(url, r.prefix)).toEqual([]);
  });
});

describe('postgres resource: NO votes carry the PostgreSQL error', () => {
  it('votes NO with SQLSTATE 23505 when the work hits a unique constraint, and rolls T back', async () => {
    const r = await open();
    await r.work('T-seed', insert('frank', 1));
    await r.prepareAsync('T-seed', NONE);
    await r.commitAsync('T-seed');
    await expect(r.work('T-dup', insert('frank', 2))).rejects.toMatchObject({ code: '23505' });
    const vote = await r.prepareAsync('T-dup', NONE);
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(
      /^work failed: SQLSTATE 23505: duplicate key value violates unique constraint "accounts_pkey"/,
    );
    expect(r.counts().open).toBe(0);
    await expect(r.work('T-dup', insert('frank', 3))).rejects.toThrow(/has ended here: work failed: SQLSTATE 23505/);
  });

  it('votes NO with SQLSTATE 23514 when the payload breaks a check constraint at PREPARE time; nothing stays prepared', async () => {
    const r = await open();
    await r.work('T-check', insert('grace', 10));
    const vote = await r.prepareAsync(
      'T-check',
      pgPayload(["UPDATE accounts SET balance = balance - 1000 WHERE id = 'grace'"]),
    );
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(
      /^SQLSTATE 23514: new row for relation "accounts" violates check constraint "accounts_balance_check"/,
    );
    expect(await preparedXacts(url, r.prefix)).toEqual([]);
    expect(await balanceOf('grace')).toBeUndefined();
  });

  it('votes NO with SQLSTATE 40001 when SERIALIZABLE finds write skew at PREPARE TRANSACTION', async () => {
    await sql(
      url,
      "INSERT INTO doctors VALUES ('ann', true), ('ben', true) ON CONFLICT (name) DO UPDATE SET on_call = true",
    );
    const r = await open({ isolation: 'serializable' });
    const goOffCall = (name: string) => async (c: PgTxnClient) => {
      const n = await c.query<{ n: string }>('SELECT count(*) AS n FROM doctors WHERE on_call');
      if (Number(n.rows[0]?.n) >= 2) await c.query('UPDATE doctors SET on_call = false WHERE name = $1', [name]);
    };
    await r.work('T-ann', goOffCall('ann'));
    await r.work('T-ben', goOffCall('ben'));
    expect((await r.prepareAsync('T-ann', NONE)).yes).toBe(true);
    const vote = await r.prepareAsync('T-ben', NONE);
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(/^SQLSTATE 40001: could not serialize access/);
    await r.commitAsync('T-ann');
    expect(await sql(url, 'SELECT name FROM doctors WHERE on_call ORDER BY name')).toEqual([{ name: 'ben' }]);
  });

  it("votes NO when T's connection is lost during the work (the backend is terminated), and the pool recovers", async () => {
    const r = await open({ concurrency: 1 });
    let pid = 0;
    await r.work('T-lost', async (c) => {
      await c.query("INSERT INTO accounts VALUES ('heidi', 1)");
      pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
    });
    expect(await sql<{ ok: boolean }>(url, 'SELECT pg_terminate_backend($1) AS ok', [pid])).toEqual([{ ok: true }]);
    const vote = await r.prepareAsync('T-lost', NONE);
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(/SQLSTATE 57P01|lost connection to PostgreSQL/);
    expect(await balanceOf('heidi')).toBeUndefined();
    await r.work('T-next', insert('heidi', 2));
    expect((await r.prepareAsync('T-next', NONE)).yes).toBe(true);
    await r.commitAsync('T-next');
    expect(await balanceOf('heidi')).toBe(2);
  });

  it('rolls back a transaction left open past openTxnTimeoutMs; its PREPARE then votes NO', async () => {
    const r = await open({ openTxnTimeoutMs: 150 });
    await r.work('T-slow', insert('ivan', 1));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(r.counts().open).toBe(0);
    const vote = await r.prepareAsync('T-slow', NONE);
    expect(vote).toEqual({
      yes: false,
      reason: 'transaction was open for more than 150 ms without PREPARE and was rolled back',
    });
  });

  it('votes NO when the work committed and began another transaction (COMMIT AND CHAIN, COMMIT; BEGIN), in work() or in the payload', async () => {
    const r = await open();
    await r.work('T-chain', async (c) => {
      await c.query("INSERT INTO accounts (id, balance) VALUES ('chain-work', 1)");
      await c.query('COMMIT AND CHAIN');
    });
    const chained = await r.prepareAsync('T-chain', NONE);
    expect(chained.yes).toBe(false);
    expect(chained.reason).toMatch(/ended by its own work/);
    const payload = await r.prepareAsync(
      'T-chain-payload',
      pgPayload(["INSERT INTO accounts (id, balance) VALUES ('chain-payload', 1)", 'COMMIT', 'BEGIN']),
    );
    expect(payload.yes).toBe(false);
    expect(payload.reason).toMatch(/ended by its own work/);
    // The work committed itself and cannot be undone here; what the vote keeps is that nothing is prepared for it.
    expect(await preparedXacts(url, r.prefix)).toEqual([]);
    expect(await markerOf(r.gid('T-chain'))).toEqual([]);
    expect(await markerOf(r.gid('T-chain-payload'))).toEqual([]);
    // The connections are fine for the next transaction.
    await r.work('T-after-chain', insert('chain-next', 3));
    expect((await r.prepareAsync('T-after-chain', NONE)).yes).toBe(true);
    await r.commitAsync('T-after-chain');
    expect(await balanceOf('chain-next')).toBe(3);
  });

  it('votes NO when the work ended the transaction itself, and refuses a client used after work() returned', async () => {
    const r = await open();
    await r.work('T-selfcommit', async (c) => void (await c.query('COMMIT')));
    const vote = await r.prepareAsync('T-selfcommit', NONE);
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(/was ended by its own work/);
    let kept: PgTxnClient | null = null;
    await r.work('T-kept', async (c) => void (kept = c));
    expect(() => (kept as unknown as PgTxnClient).query('SELECT 1')).toThrow(/used after work\(\) returned/);
    await r.rollback('T-kept');
  });
});

describe('postgres resource: round trips and connections on the hot path', () => {
  /** Every query the driver sends while fn runs (one round trip each), with the backend that ran it. */
  async function queriesDuring(fn: () => Promise<void>): Promise<{ text: string; pid: number }[]> {
    const sent: { text: string; pid: number }[] = [];
    const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
    pg.Client.prototype.query = function (this: pg.Client & { processID: number }, ...a: unknown[]) {
      sent.push({
        text: typeof a[0] === 'string' ? a[0] : String((a[0] as { text?: string }).text),
        pid: this.processID,
      });
      return query.apply(this, a);
    } as typeof pg.Client.prototype.query;
    try {
      await fn();
    } finally {
      pg.Client.prototype.query = query as typeof pg.Client.prototype.query;
    }
    return sent;
  }

  it('a PREPARE takes one round trip (BEGIN, its SQL, the marker and PREPARE TRANSACTION), after work() too, and COMMIT PREPARED one', async () => {
    const r = await open();
    // A statement ending in a -- comment still ends where the next begins.
    const payload = pgPayload([
      "INSERT INTO accounts VALUES ('rt-1', 5) -- the order",
      "UPDATE accounts SET balance = balance + 1 WHERE id = 'rt-1'",
    ]);
    const sent = await queriesDuring(async () => {
      expect(await r.prepareAsync('T-rt', payload)).toEqual({ yes: true, reason: '' });
      await r.commitAsync('T-rt');
    });
    expect(sent.map((q) => q.text.split(/\s/)[0])).toEqual(['BEGIN;', 'COMMIT']);
    expect(sent[0].text).toMatch(
      /^BEGIN;\nSET LOCAL verdict\.gid = 'verdict:[^']+';\nINSERT INTO accounts .* -- the order\n;\nUPDATE accounts .*\n;\nSET LOCAL lock_timeout = \d+;\nINSERT INTO verdict_markers .*current_setting\('verdict\.gid', true\).*;\nPREPARE TRANSACTION 'verdict:/s,
    );
    // The work's BEGIN is a round trip of its own; PREPARE is then one more.
    const viaWork = await queriesDuring(async () => {
      await r.work('T-rt-work', insert('rt-work', 2));
      expect(await r.prepareAsync('T-rt-work', NONE)).toEqual({ yes: true, reason: '' });
    });
    expect(viaWork.map((q) => q.text.split(/\s/)[0])).toEqual(['BEGIN;', 'INSERT', 'SET']);
    await r.commitAsync('T-rt-work');
    expect(await balanceOf('rt-work')).toBe(2);
    expect(await balanceOf('rt-1')).toBe(6);
    // An intentionally empty transaction: BEGIN goes with the marker and PREPARE TRANSACTION, one round trip.
    const empty = await queriesDuring(async () => {
      expect((await r.prepareAsync('T-rt-empty', pgPayload([]))).yes).toBe(true);
    });
    expect(empty.map((q) => q.text.split(/\s/)[0])).toEqual(['BEGIN;']);
    expect(await preparedXacts(url, r.prefix)).toEqual([{ gid: r.gid('T-rt-empty'), database: 'shop' }]);
    await r.commitAsync('T-rt-empty');
  });

  it('a payload whose second statement fails votes NO with the error, and nothing of T stays (the first statement is rolled back)', async () => {
    const r = await open();
    const vote = await r.prepareAsync(
      'T-rt-no',
      pgPayload(["INSERT INTO accounts VALUES ('rt-2', 5)", "UPDATE accounts SET balance = -1 WHERE id = 'rt-2'"]),
    );
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(/SQLSTATE 23514/);
    expect(await balanceOf('rt-2')).toBeUndefined();
    expect(await preparedXacts(url, r.prefix)).toEqual([]);
    // The connection went back in a usable state: the next transaction on it commits.
    expect((await r.prepareAsync('T-rt-next', pgPayload(["INSERT INTO accounts VALUES ('rt-3', 1)"]))).yes).toBe(true);
    await r.commitAsync('T-rt-next');
    expect(await balanceOf('rt-3')).toBe(1);
  });

  it('decisions arriving together run on connections of their own, not queued behind the two control connections', async () => {
    const r = await open({ concurrency: 8 });
    const ids = Array.from({ length: 8 }, (_, i) => `T-par-${i}`);
    for (const id of ids)
      expect((await r.prepareAsync(id, pgPayload([`INSERT INTO accounts VALUES ('${id}', 1)`]))).yes).toBe(true);
    const sent = await queriesDuring(async () => {
      await Promise.all(ids.map((id) => r.commitAsync(id)));
    });
    const backends = new Set(sent.filter((q) => q.text.startsWith('COMMIT PREPARED')).map((q) => q.pid));
    expect(sent.filter((q) => q.text.startsWith('COMMIT PREPARED'))).toHaveLength(8);
    expect(backends.size).toBeGreaterThan(2);
    for (const id of ids) expect(await balanceOf(id)).toBe(1);
  });
});

describe('postgres resource: connections are not held across the prepared state', () => {
  it('with a pool of one connection, the next transaction runs while one is prepared (and cannot while one is open)', async () => {
    const r = await open({ concurrency: 1, acquireTimeoutMs: 300 });
    await r.work('P1', insert('judy', 1));
    // While P1 is open it holds the only connection: another transaction waits, then fails.
    await expect(r.work('P0', insert('judy0', 1))).rejects.toThrow(/no PostgreSQL connection for transaction P0/);
    expect((await r.prepareAsync('P1', NONE)).yes).toBe(true);
    // P1 is prepared and its connection is back in the pool.
    await r.work('P2', insert('kim', 2));
    expect((await r.prepareAsync('P2', NONE)).yes).toBe(true);
    expect((await preparedXacts(url, r.prefix)).map((p) => p.gid)).toEqual([r.gid('P1'), r.gid('P2')].sort());
    await r.commitAsync('P1');
    await r.commitAsync('P2');
    expect([await balanceOf('judy'), await balanceOf('kim')]).toEqual([1, 2]);
  });
});

describe('postgres resource: redelivered decisions and heuristic hazards (R7, R4)', () => {
  it('ACKs a redelivered COMMIT after the gid is gone because the marker says it committed', async () => {
    const r = await open();
    await r.work('R-commit', insert('leo', 1));
    await r.prepareAsync('R-commit', NONE);
    await r.commitAsync('R-commit');
    // Another process (a restart) with no memory of R-commit gets the same COMMIT again.
    const again = await open();
    await again.commitAsync('R-commit');
    expect(again.counts().redeliveriesAcked).toBe(1);
    expect(await balanceOf('leo')).toBe(1);
  });

  it('ACKs a redelivered ABORT after the gid is gone because there is no marker', async () => {
    const r = await open();
    await r.work('R-abort', insert('mia', 1));
    await r.prepareAsync('R-abort', NONE);
    await r.abortAsync('R-abort');
    const again = await open();
    await again.abortAsync('R-abort');
    expect(again.counts().redeliveriesAcked).toBe(1);
    expect(await balanceOf('mia')).toBeUndefined();
  });

  it('refuses a COMMIT for a gid that was rolled back (HEURRB) instead of ACKing it', async () => {
    const r = await open();
    await r.work('H-rb', insert('ned', 1));
    await r.prepareAsync('H-rb', NONE);
    // An operator's heuristic ROLLBACK PREPARED by hand.
    await sql(url, `ROLLBACK PREPARED '${r.gid('H-rb')}'`);
    const err = await r.commitAsync('H-rb').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HeuristicHazardError);
    expect((err as HeuristicHazardError).kind).toBe('HEURRB');
    expect((err as Error).message).toBe(
      `HEURRB hazard for transaction H-rb (gid ${r.gid('H-rb')}): COMMIT refused: it is not prepared in PostgreSQL and has no commit marker, so it was rolled back here (or never prepared)`,
    );
    expect(r.counts().hazards).toBe(1);
  });

  it('refuses an ABORT for a gid that committed (HEURCOM) instead of ACKing it', async () => {
    const r = await open();
    await r.work('H-com', insert('olga', 1));
    await r.prepareAsync('H-com', NONE);
    await sql(url, `COMMIT PREPARED '${r.gid('H-com')}'`);
    const err = await r.abortAsync('H-com').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HeuristicHazardError);
    expect((err as HeuristicHazardError).kind).toBe('HEURCOM');
    expect((err as Error).message).toMatch(
      /ABORT refused: it is not prepared in PostgreSQL and its commit marker is there, so it committed here/,
    );
    expect(await balanceOf('olga')).toBe(1);
  });

  it('cleans up markers older than the retention, and only its own', async () => {
    const r = await open({ markerRetentionMs: 60_000 });
    const other = await open({ participantId: 'shop2', markerRetentionMs: 60_000 });
    for (const [res, txnId, id] of [
      [r, 'M-old', 'pat'],
      [r, 'M-new', 'quinn'],
      [other, 'M-other', 'rita'],
    ] as const) {
      await res.work(txnId, insert(id, 1));
      await res.prepareAsync(txnId, NONE);
      await res.commitAsync(txnId);
    }
    await sql(url, "UPDATE verdict_markers SET prepared_at = now() - interval '2 minutes' WHERE gid = ANY($1)", [
      [r.gid('M-old'), other.gid('M-other')],
    ]);
    expect(await r.cleanupMarkers()).toBe(1);
    expect(await markerOf(r.gid('M-old'))).toEqual([]);
    expect(await markerOf(r.gid('M-new'))).toEqual(['M-new']);
    expect(await markerOf(other.gid('M-other'))).toEqual(['M-other']);
  });
});

describe('postgres resource: start-up checks', () => {
  // Our own server runs with max_prepared_transactions = 64; an external one may not.
  it.skipIf(process.env.VERDICT_PG_URL !== undefined && process.env.VERDICT_PG_URL !== '')(
    'warns when max_prepared_transactions is below the configured concurrency',
    async () => {
      const log = new MemoryLog();
      await open({ concurrency: 100, log });
      const w = log.find('warn', /max_prepared_transactions \(64\) is below the adapter's concurrency \(100\)/);
      expect(w).toHaveLength(1);
      expect(w[0]?.obj).toMatchObject({ maxPreparedTransactions: 64, concurrency: 100 });
    },
  );
});
