// The MySQL/MariaDB XA resource against a real MariaDB (test/mysql/harness.ts):
// the unit of work inside XA START/END, XA PREPARE from the work's session and
// the decision from another, idempotent and hazardous redeliveries through the
// marker row, NO votes with the server's own error, the start-up refusals, and
// a crash of MariaDB itself with a branch prepared.
import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgPayload, HeuristicHazardError } from '../../src/participant/postgres.ts';
import { MySqlResource, type MySqlResourceOptions } from '../../src/participant/resources/mysql/resource.ts';
import { xidOf, xidScope, xidText } from '../../src/participant/resources/mysql/xid.ts';
import { MemoryLog } from '../pg/log.ts';
import { mysqlQuery, startMariaDb, xaRecover, xaRollbackAll, type MariaDbServer } from './harness.ts';

const CLUSTER = `myres${process.pid}`;
const SCOPE = xidScope(CLUSTER, 'ledger');
let server: MariaDbServer;
let url: string;
const resources: MySqlResource[] = [];

beforeAll(async () => {
  server = await startMariaDb({ private: true, databases: ['ledger'] });
  url = server.url('ledger');
  await mysqlQuery(
    url,
    'CREATE TABLE entries (id VARCHAR(64) PRIMARY KEY, amount INT NOT NULL CHECK (amount > 0)) ENGINE=InnoDB',
  );
}, 120_000);

afterEach(async () => {
  for (const r of resources.splice(0)) await r.close();
});

afterAll(async () => {
  if (server === undefined) return;
  try {
    await xaRollbackAll(url, `${CLUSTER}:`);
  } finally {
    await server.stop();
  }
}, 60_000);

async function open(over: Partial<MySqlResourceOptions> = {}): Promise<MySqlResource> {
  const r = await MySqlResource.open({ clusterId: CLUSTER, participantId: 'ledger', url, ...over });
  resources.push(r);
  return r;
}

const ours = async (): Promise<string[]> =>
  (await xaRecover(url)).filter((x) => x.gtrid.startsWith(`${CLUSTER}:`)).map((x) => `${x.gtrid},${x.bqual}`);
const amount = async (id: string): Promise<number | undefined> =>
  (await mysqlQuery<{ amount: number }>(url, 'SELECT amount FROM entries WHERE id = ?', [id]))[0]?.amount;

describe('mysql resource: the unit of work under XA', () => {
  it('runs work inside the XA branch, prepares it (listed by XA RECOVER, invisible to others), and commits it', async () => {
    const r = await open();
    await r.work('T1', async (c) => void (await c.query("INSERT INTO entries VALUES ('e1', 10)")));
    expect(await amount('e1')).toBeUndefined(); // not committed: another session does not see it
    expect(await r.prepareAsync('T1', new Uint8Array())).toEqual({ yes: true, reason: '' });
    expect(await ours()).toEqual([xidText(xidOf(SCOPE, 'T1'))]);
    expect(await amount('e1')).toBeUndefined();
    await r.commitAsync('T1');
    expect(await amount('e1')).toBe(10);
    expect(await ours()).toEqual([]);
    expect(await r.hasMarker(r.gid('T1'))).toBe(true);
    expect(r.counts()).toMatchObject({ votesYes: 1, committed: 1, open: 0, preparedHere: 0 });
  });

  it('R7: a redelivered COMMIT is ACKed (the marker says it committed); an ABORT after it is a HEURCOM hazard, never ACKed', async () => {
    const r = await open();
    expect((await r.prepareAsync('T2', pgPayload(["INSERT INTO entries VALUES ('e2', 2)"]))).yes).toBe(true);
    await r.commitAsync('T2');
    await r.commitAsync('T2');
    expect(r.counts().redeliveriesAcked).toBe(1);
    const err = await r.abortAsync('T2').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HeuristicHazardError);
    expect(err).toMatchObject({
      kind: 'HEURCOM',
      message: expect.stringMatching(/ABORT refused: it is not prepared in MySQL and its commit marker is there/),
    });
    expect(await amount('e2')).toBe(2);
  });

  it('ABORT rolls the prepared branch back; a redelivered ABORT is ACKed; a COMMIT after it is a HEURRB hazard', async () => {
    const r = await open();
    expect((await r.prepareAsync('T3', pgPayload(["INSERT INTO entries VALUES ('e3', 3)"]))).yes).toBe(true);
    await r.abortAsync('T3');
    await r.abortAsync('T3');
    expect(await amount('e3')).toBeUndefined();
    expect(await r.hasMarker(r.gid('T3'))).toBe(false);
    await expect(r.commitAsync('T3')).rejects.toMatchObject({ kind: 'HEURRB' });
    expect(await ours()).toEqual([]);
  });

  it('ABORT before PREPARE rolls the open branch back and refuses a later PREPARE with the reason', async () => {
    const r = await open();
    await r.work('T4', async (c) => void (await c.query("INSERT INTO entries VALUES ('e4', 4)")));
    await new Promise<void>((resolve, reject) =>
      r.abortUnprepared('T4', (err) => (err === null ? resolve() : reject(err))),
    );
    expect(await r.prepareAsync('T4', new Uint8Array())).toEqual({
      yes: false,
      reason: 'aborted by the decision before PREPARE',
    });
    expect(await amount('e4')).toBeUndefined();
    expect(r.counts().open).toBe(0);
  });

  it("votes NO with the server's own error number and message (a CHECK constraint), holding nothing afterwards", async () => {
    const r = await open();
    const vote = await r.prepareAsync('T5', pgPayload(["INSERT INTO entries VALUES ('e5', -1)"]));
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(
      /^MySQL error 4025 \(SQLSTATE 23000\): CONSTRAINT `entries.amount` failed for `ledger`.`entries`$/,
    );
    expect(await ours()).toEqual([]);
    expect(r.counts()).toMatchObject({ open: 0, votesNo: 1 });
  });

  it('votes NO when the connection is lost between XA END and XA PREPARE, and the server has rolled the branch back', async () => {
    const r = await open({
      afterXaEnd: async (txnId, connectionId) => {
        if (txnId === 'T6') await mysqlQuery(url, `KILL CONNECTION ${connectionId}`);
      },
    });
    await r.work('T6', async (c) => void (await c.query("INSERT INTO entries VALUES ('e6', 6)")));
    const vote = await r.prepareAsync('T6', new Uint8Array());
    expect(vote.yes).toBe(false);
    // The kill reaches the client as the socket closing (or a write to a closed socket): either way a lost connection.
    expect(vote.reason).toMatch(/^lost connection to MySQL: (PROTOCOL_CONNECTION_LOST|EPIPE|ECONNRESET): /);
    expect(await ours()).toEqual([]);
    expect(await amount('e6')).toBeUndefined();
  });

  it('votes NO without work or SQL for the transaction (preparing an empty branch would commit T without its work)', async () => {
    const r = await open();
    expect((await r.prepareAsync('T7', new Uint8Array())).reason).toMatch(
      /no work for transaction T7 here: no open XA branch/,
    );
    expect((await r.prepareAsync('T7b', new TextEncoder().encode('{"sql": 3}'))).reason).toMatch(
      /payload "sql" must be an array/,
    );
  });

  it('decides on the session that prepared the branch, then reuses that session for the next branch', async () => {
    const r = await open();
    const connectionId = async (txnId: string): Promise<number> =>
      r.work(
        txnId,
        async (c) => ((await c.query('SELECT CONNECTION_ID() AS id')) as unknown as [{ id: number }[]])[0][0].id,
      );
    const first = await connectionId('T11');
    expect((await r.prepareAsync('T11', pgPayload(["INSERT INTO entries VALUES ('e11', 11)"]))).yes).toBe(true);
    await r.commitAsync('T11');
    expect(await connectionId('T12')).toBe(first);
    await r.rollback('T12');
    expect(await amount('e11')).toBe(11);
  });

  it('R4: a branch whose decision is late is detached from its session after holdPreparedMs, so any connection can decide it', async () => {
    const r = await open({ holdPreparedMs: 200 });
    expect((await r.prepareAsync('T13', pgPayload(["INSERT INTO entries VALUES ('e13', 13)"]))).yes).toBe(true);
    const x = xidOf(SCOPE, 'T13');
    // While the preparing session holds it, the server refuses it to every other session (the XA trap).
    await expect(mysqlQuery(url, `XA COMMIT '${x.gtrid}','${x.bqual}',${x.formatId}`)).rejects.toMatchObject({
      errno: 1397,
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Detached: another session (an operator, a restarted participant) commits it.
    await mysqlQuery(url, `XA COMMIT '${x.gtrid}','${x.bqual}',${x.formatId}`);
    expect(await amount('e13')).toBe(13);
    // The decision arriving afterwards is a redelivery: the marker says it committed.
    await r.commitAsync('T13');
    expect(r.counts()).toMatchObject({ redeliveriesAcked: 1, hazards: 0 });
  });

  it('refuses more open branches than its concurrency, at once (back-pressure)', async () => {
    const r = await open({ concurrency: 1 });
    await r.work('T8', async (c) => void (await c.query("INSERT INTO entries VALUES ('e8', 8)")));
    await expect(r.work('T9', async () => {})).rejects.toThrow(/too many open XA branches \(1, --mysql-concurrency\)/);
    await r.rollback('T8');
  });
});

describe('mysql resource: round trips on the hot path', () => {
  /** Every query sent on a branch session opened while fn runs (one round trip each). */
  async function branchQueriesDuring(fn: () => Promise<void>): Promise<string[]> {
    const sent: string[] = [];
    const create = mysql.createConnection;
    mysql.createConnection = (async (...a: Parameters<typeof create>) => {
      const c = await create(...a);
      const query = c.query.bind(c) as (...q: unknown[]) => unknown;
      c.query = ((...q: unknown[]) => {
        sent.push(String(q[0]));
        return query(...q);
      }) as typeof c.query;
      return c;
    }) as typeof create;
    try {
      await fn();
    } finally {
      mysql.createConnection = create;
    }
    return sent;
  }

  it('a PREPARE takes one round trip (XA START, the payload, the marker, XA END, XA PREPARE) and XA COMMIT one', async () => {
    const r = await open();
    // A statement's own semicolon, and a -- comment on its last line, do not break the statements after it.
    const payload = pgPayload([
      "INSERT INTO entries VALUES ('rt1', 1);",
      "UPDATE entries SET amount = amount + 1 WHERE id = 'rt1' -- the debit",
    ]);
    const sent = await branchQueriesDuring(async () => {
      expect(await r.prepareAsync('T-rt', payload)).toEqual({ yes: true, reason: '' });
      await r.commitAsync('T-rt');
    });
    expect(sent.map((q) => q.split(/\s/).slice(0, 2).join(' '))).toEqual(['XA START', 'XA COMMIT']);
    expect(sent[0]).toMatch(
      /^XA START [^;]+;\nINSERT INTO entries .*\n;\nUPDATE entries .* -- the debit\n;\nINSERT INTO verdict_xa_markers .*;\nXA END [^;]+;\nXA PREPARE /s,
    );
    expect(await amount('rt1')).toBe(2);
  });

  it('a branch prepared while the previous ones await their decisions keeps its session, and the sessions are reused: no new session once warm', async () => {
    const r = await open({ concurrency: 2 });
    let opened = 0;
    const create = mysql.createConnection;
    mysql.createConnection = (async (...a: Parameters<typeof create>) => {
      opened += 1;
      return create(...a);
    }) as typeof create;
    try {
      // A client's next branch is prepared before its last is decided: 2 × concurrency prepared at once.
      const round = async (k: number): Promise<void> => {
        const ids = [0, 1, 2, 3].map((i) => `T-warm-${k}-${i}`);
        for (const id of ids)
          expect((await r.prepareAsync(id, pgPayload([`INSERT INTO entries VALUES ('${id}', 1)`]))).yes).toBe(true);
        for (const id of ids) await r.commitAsync(id);
      };
      await round(1);
      const warm = opened;
      await round(2);
      await round(3);
      expect(opened).toBe(warm);
      expect(r.counts()).toMatchObject({ redeliveriesAcked: 0, hazards: 0 });
    } finally {
      mysql.createConnection = create;
    }
  });

  it('R4: a readable xid is durable at XA PREPARE (the vote does not wait for the journal); a hashed one is not', async () => {
    const r = await open();
    expect(r.durableAtPrepare('T-readable')).toBe(true);
    expect(r.durableAtPrepare('order/17 ü')).toBe(true);
    // Too long for a readable gtrid: recovery can match it only through the journal.
    const long = `T-${'x'.repeat(80)}`;
    expect(xidOf(SCOPE, long).gtrid).toMatch(/#[0-9a-f]{32}$/);
    expect(r.durableAtPrepare(long)).toBe(false);
  });

  it('R4: a PREPARE whose XA START finds the branch prepared already votes NO and leaves that prepared branch alone', async () => {
    // A branch prepared by a process that stopped before it could answer: the server holds it, this process does not
    // know it.
    const before = await open();
    expect((await before.prepareAsync('T-dup', pgPayload(["INSERT INTO entries VALUES ('dup', 1)"]))).yes).toBe(true);
    await before.close();
    const x = xidText(xidOf(SCOPE, 'T-dup'));
    expect(await ours()).toContain(x);
    const r = await open();
    const vote = await r.prepareAsync('T-dup', pgPayload(["INSERT INTO entries VALUES ('dup2', 1)"]));
    expect(vote.yes).toBe(false);
    expect(vote.reason).toMatch(/XAER_DUPID|1440/);
    // Still prepared: closing the failed session rolled back only what it began.
    expect(await ours()).toContain(x);
    await r.commitAsync('T-dup');
    expect(await amount('dup')).toBe(1);
    expect(await amount('dup2')).toBeUndefined();
    expect(await ours()).not.toContain(x);
  });
});

describe('mysql resource: the server check at start (bad input)', () => {
  it('refuses a server without XA for the tables it would write (default_storage_engine = MyISAM), naming the fix', async () => {
    await mysqlQuery(url, "SET GLOBAL default_storage_engine = 'MyISAM'");
    try {
      await expect(open()).rejects.toThrow(
        /^FAILED_PRECONDITION: 10\.11\.\S+ at mysql:\/\/root@127\.0\.0\.1:\d+\/ledger cannot hold prepared XA branches safely: default_storage_engine = MyISAM, which has no XA support/,
      );
    } finally {
      await mysqlQuery(url, "SET GLOBAL default_storage_engine = 'InnoDB'");
    }
  });

  it('refuses innodb_flush_log_at_trx_commit = 2 (a prepared branch could be lost in a crash)', async () => {
    await mysqlQuery(url, 'SET GLOBAL innodb_flush_log_at_trx_commit = 2');
    try {
      await expect(open()).rejects.toThrow(
        /innodb_flush_log_at_trx_commit = 2: an acknowledged XA PREPARE may be lost in a crash/,
      );
    } finally {
      await mysqlQuery(url, 'SET GLOBAL innodb_flush_log_at_trx_commit = 1');
    }
  });

  it("refuses a server it cannot reach or log in to, with the server's error", async () => {
    const wrong = url.replace('root@', 'nobody:wrong@');
    await expect(open({ url: wrong })).rejects.toThrow(
      /cannot check the MySQL server at mysql:\/\/nobody:\*\*\*@.*MySQL error 1045 \(ER_ACCESS_DENIED_ERROR, SQLSTATE 28000\)/,
    );
  });
});

describe('mysql resource: a crash of MariaDB itself', () => {
  it('R4: a branch prepared before the server is SIGKILLed comes back prepared, and the decision then commits it', async () => {
    const r = await open();
    await r.work('T10', async (c) => void (await c.query("INSERT INTO entries VALUES ('e10', 10)")));
    expect((await r.prepareAsync('T10', new Uint8Array())).yes).toBe(true);
    await r.close();
    resources.splice(resources.indexOf(r), 1);
    await server.crash();
    await server.restart();
    expect(await ours()).toEqual([xidText(xidOf(SCOPE, 'T10'))]);
    expect(await amount('e10')).toBeUndefined();
    const after = await open();
    const [p] = await after.listPrepared();
    expect(p).toMatchObject({ gid: xidText(xidOf(SCOPE, 'T10')), parsed: { kind: 'readable', txnId: 'T10' } });
    // The marker's prepare time survives with the branch: the age is measured from it, not from the restart.
    expect(p.ageMs).toBeGreaterThan(0);
    await after.commitAsync('T10');
    expect(await amount('e10')).toBe(10);
    expect(await ours()).toEqual([]);
  }, 120_000);
});

describe('mysql resource: logs', () => {
  it('logs the server version it checked', async () => {
    const log = new MemoryLog();
    await open({ log });
    expect(log.find('info', /MySQL server checked/)[0]?.obj).toMatchObject({
      version: expect.stringMatching(/MariaDB/),
      flushLogAtTrxCommit: '1',
    });
  });
});
