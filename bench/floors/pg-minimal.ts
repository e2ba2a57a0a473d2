// The PostgreSQL path done by the least possible processes: a floor for
// `ratios.pg_through_verdict_over_direct` that counts what any replicated
// coordinator on this machine must add to the direct floor, and nothing of
// Verdict's code. One child process per role, started by bench/floors/pg.ts
// (measurePgMinimal) with one JSON argument:
//
//   participant  a gRPC server (raw bytes, one bidi stream) in front of one
//                database: a PREPARE runs BEGIN, the payload's statement,
//                the marker row and PREPARE TRANSACTION in one round trip on
//                a connection of its own (N of them), and answers the vote;
//                a COMMIT runs COMMIT PREPARED on a second pool of N and
//                answers. No journal: as Verdict's PostgreSQL participant,
//                the prepared transaction and its marker are the durable
//                state. Prints "listening <port>", runs until stdin closes.
//                With db 'mysql' (the MariaDB floor, bench/floors/mysql.ts)
//                it stands in front of MariaDB as Verdict's MySQL
//                participant does: XA START, the statement, the marker, XA
//                END and XA PREPARE in one multi-statement query on a
//                session of the branch's own (N of them), and XA COMMIT on
//                that same session.
//   follower     a gRPC server that appends every message that arrived in
//                one turn of its event loop to a segment file, fdatasyncs
//                it, then writes and fdatasyncs a mark (two flushes, as
//                src/storage/store.ts does), and answers each message.
//   coordinator  the client and the leader in one process: N closed-loop
//                workers, each running the shop/ledger transaction of
//                bench/harness/pg-workload.ts: PREPARE to both participants at once,
//                both votes, then the decision appended to the leader's own
//                segment and mark (group-committed: the decisions of one
//                turn share the flushes) beside one message with them to
//                each follower, done when the leader and one follower are
//                (a quorum of three); then COMMIT to both participants,
//                after the transaction counts as done (Verdict answers its
//                client before COMMIT PREPARED too); with ledgerDb 'mysql'
//                the ledger participant is the MariaDB one. Prints one JSON line
//                (PgDirectResult), so the figure sits beside the direct one.
//
// Fewer messages than Verdict sends (no ACKs to the cluster, no Forget, no
// separate client process, JSON instead of protobuf), so a floor. The
// participant's one round trip per PREPARE is fewer than Verdict's two.
import * as grpc from '@grpc/grpc-js';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { closedLoop, directChildMain, directResult, type PgDirectResult } from './direct-child.ts';
import { fdatasyncAsync, ident, method, serveUntilStdinEnds } from './floor-grpc.ts';
import {
  accountOf,
  DIRECT_MARKER_SCHEMA,
  DIRECT_MARKER_SCHEMA_MYSQL,
  DIRECT_MARKER_TABLE,
  ledgerStatement,
  shopStatement,
} from '../harness/pg-workload.ts';

export type PgMinimalConfig =
  | { role: 'participant'; url: string; connections: number; db?: 'postgres' | 'mysql' }
  | { role: 'follower'; dir: string; name: string; bytes: number }
  | {
      role: 'coordinator';
      shop: string;
      ledger: string;
      followers: string[];
      /** For the leftover check at the end: the databases behind the participants. */
      shopUrl: string;
      ledgerUrl: string;
      /** The ledger participant's database: PostgreSQL (default) or MariaDB. */
      ledgerDb?: 'postgres' | 'mysql';
      dir: string;
      connections: number;
      warmupMs: number;
      measureMs: number;
      tag: string;
      bytes: number;
    };

const STREAM = { Stream: method('MinimalStream', true, true) };

/** A message to a participant, and its answer; `n` pairs them (answers come in the order PostgreSQL finishes). */
interface Request {
  n: number;
  /** p: PREPARE (statement, marker, PREPARE TRANSACTION), c: COMMIT PREPARED, r: ROLLBACK PREPARED. */
  k: 'p' | 'c' | 'r';
  gid: string;
  txnId?: string;
  sql?: string;
}

interface Answer {
  n: number;
  ok: boolean;
  error?: string;
}

/** gids, ids and the workload's statements are built from [A-Za-z0-9_.:-] here, so they go into SQL as they are. */
function safe(v: string): string {
  if (!/^[A-Za-z0-9_.:-]+$/.test(v)) throw new Error(`"${v}" has characters the floor does not put in SQL`);
  return v;
}

/** A participant's database work: PREPARE (statement, marker, prepare) and the decision, each one round trip. */
type Run = (m: Request) => Promise<void>;

async function participant(cfg: Extract<PgMinimalConfig, { role: 'participant' }>): Promise<void> {
  const { run, end } = cfg.db === 'mysql' ? await mysqlRun(cfg) : await postgresRun(cfg);
  const server = new grpc.Server();
  server.addService(STREAM, {
    Stream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (d: Buffer) => {
        const m = JSON.parse(d.toString()) as Request;
        const answer = (a: Answer): void => void call.write(Buffer.from(JSON.stringify(a)));
        run(m).then(
          () => answer({ n: m.n, ok: true }),
          (err: unknown) => answer({ n: m.n, ok: false, error: (err as { code?: string }).code ?? String(err) }),
        );
      });
      call.on('end', () => call.end());
    },
  });
  await serveUntilStdinEnds(server);
  await end();
}

/**
 * MariaDB as Verdict's MySQL participant drives it: a session per branch, one query to prepare, the decision on the
 * same session.
 */
async function mysqlRun(
  cfg: Extract<PgMinimalConfig, { role: 'participant' }>,
): Promise<{ run: Run; end: () => Promise<void> }> {
  const connect = async (): Promise<mysql.Connection> => {
    const c = await mysql.createConnection({ uri: cfg.url, multipleStatements: true });
    c.on('error', () => {});
    return c;
  };
  const idle = await Promise.all(Array.from({ length: cfg.connections }, connect));
  for (const stmt of DIRECT_MARKER_SCHEMA_MYSQL) await idle[0]?.query(stmt);
  const held = new Map<string, mysql.Connection>();
  const run: Run = async (m) => {
    const xid = `'${safe(m.gid)}'`;
    const own = held.get(m.gid);
    if (m.k !== 'p') {
      held.delete(m.gid);
      // The coordinator decides only branches that voted YES, which this process holds; any other is decided on a
      // session of its own.
      const c = own ?? (await connect());
      try {
        await c.query(`XA ${m.k === 'c' ? 'COMMIT' : 'ROLLBACK'} ${xid}`);
      } finally {
        if (own !== undefined) idle.push(own);
        else await c.end().catch(() => c.destroy());
      }
      return;
    }
    const c = idle.pop() ?? (await connect());
    try {
      await c.query(
        `XA START ${xid};\n${m.sql}\n;\nINSERT INTO ${DIRECT_MARKER_TABLE} (gid, txn_id, prepared_at) VALUES (${xid}, '${safe(m.txnId ?? '')}', UTC_TIMESTAMP(3));\nXA END ${xid};\nXA PREPARE ${xid}`,
      );
      held.set(m.gid, c);
    } catch (err) {
      // Closing the session rolls back whatever it began (as the participant does after a failed combined query).
      c.destroy();
      throw err;
    }
  };
  return {
    run,
    end: async () => void (await Promise.all([...idle, ...held.values()].map((c) => c.end().catch(() => c.destroy())))),
  };
}

async function postgresRun(
  cfg: Extract<PgMinimalConfig, { role: 'participant' }>,
): Promise<{ run: Run; end: () => Promise<void> }> {
  const opts = { connectionString: cfg.url, max: cfg.connections, application_name: 'verdict-bench-minimal' };
  const work = new pg.Pool(opts);
  const decide = new pg.Pool(opts);
  for (const p of [work, decide]) p.on('error', () => {});
  for (const stmt of DIRECT_MARKER_SCHEMA) await work.query(stmt);
  const run: Run = async (m) => {
    const gid = safe(m.gid);
    if (m.k !== 'p') {
      await decide.query(`${m.k === 'c' ? 'COMMIT' : 'ROLLBACK'} PREPARED '${gid}'`);
      return;
    }
    const c = await work.connect();
    try {
      const r = (await c.query(
        `BEGIN; ${m.sql}; INSERT INTO ${DIRECT_MARKER_TABLE} (gid, txn_id, prepared_at) VALUES ('${gid}', '${safe(m.txnId ?? '')}', statement_timestamp()); PREPARE TRANSACTION '${gid}'`,
      )) as unknown as pg.QueryResult[];
      // PREPARE TRANSACTION of a failed transaction answers ROLLBACK, not an error.
      if (r[r.length - 1]?.command !== 'PREPARE')
        throw new Error(`PREPARE TRANSACTION answered ${r[r.length - 1]?.command}`);
      c.release();
    } catch (err) {
      // A connection that cannot even roll back is not given back to the pool.
      const broken = await c.query('ROLLBACK').then(
        () => undefined,
        (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
      );
      c.release(broken);
      throw err;
    }
  };
  return { run, end: async () => void (await Promise.all([work.end(), decide.end()])) };
}

/**
 * A node's log as Verdict's store writes it, group-committed: what is added
 * while a flush runs goes into the next. flush() writes the batch to the
 * segment and fdatasyncs it, then the mark, off the event loop.
 */
class GroupLog {
  private readonly fds: number[];
  private next: { bytes: Buffer[]; done: (() => void)[] } = { bytes: [], done: [] };
  private flushing = false;
  private readonly mark: Buffer;

  constructor(
    private readonly files: string[],
    markBytes: number,
  ) {
    this.fds = files.map((f) => openSync(f, 'a'));
    this.mark = Buffer.alloc(markBytes, 0x6d);
  }

  append(bytes: Buffer): Promise<void> {
    return new Promise((res) => {
      this.next.bytes.push(bytes);
      this.next.done.push(res);
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.next;
    this.next = { bytes: [], done: [] };
    writeSync(this.fds[0], Buffer.concat(batch.bytes));
    await fdatasyncAsync(this.fds[0]);
    writeSync(this.fds[1], this.mark);
    await fdatasyncAsync(this.fds[1]);
    for (const d of batch.done) d();
    if (this.next.bytes.length > 0) setImmediate(() => void this.flush());
    else this.flushing = false;
  }

  close(): void {
    for (const fd of this.fds) closeSync(fd);
    for (const f of this.files) rmSync(f, { force: true });
  }
}

async function follower(cfg: Extract<PgMinimalConfig, { role: 'follower' }>): Promise<void> {
  const log = new GroupLog([join(cfg.dir, `${cfg.name}.segment`), join(cfg.dir, `${cfg.name}.mark`)], cfg.bytes);
  const server = new grpc.Server();
  server.addService(STREAM, {
    Stream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (d: Buffer) => void log.append(d).then(() => call.write(d.subarray(0, 8))));
      call.on('end', () => call.end());
    },
  });
  await serveUntilStdinEnds(server);
  log.close();
}

/**
 * One long-lived bidi stream; send() resolves with the answer paired by `n`, or with the next answer when there is no
 * `n` (followers answer in order).
 */
function connection(address: string): { send: (m: Buffer, n?: number) => Promise<Buffer>; close: () => void } {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<Buffer, Buffer>(STREAM.Stream.path, ident, ident);
  const byN = new Map<number, (d: Buffer) => void>();
  const inOrder: ((d: Buffer) => void)[] = [];
  call.on('data', (d: Buffer) => {
    if (d[0] === 0x7b) {
      const n = (JSON.parse(d.toString()) as Answer).n;
      byN.get(n)?.(d);
      byN.delete(n);
    } else inOrder.shift()?.(d);
  });
  call.on('error', () => {});
  return {
    send: (m, n) =>
      new Promise((res) => {
        if (n === undefined) inOrder.push(res);
        else byN.set(n, res);
        call.write(m);
      }),
    close: () => {
      call.end();
      client.close();
    },
  };
}

async function coordinator(cfg: Extract<PgMinimalConfig, { role: 'coordinator' }>): Promise<PgDirectResult> {
  const shop = connection(cfg.shop);
  const ledger = connection(cfg.ledger);
  const followers = cfg.followers.map(connection);
  if (followers.length !== 2) throw new Error('the coordinator of the minimal floor needs two followers');
  const own = new GroupLog([join(cfg.dir, 'minimal-leader.segment'), join(cfg.dir, 'minimal-leader.mark')], cfg.bytes);
  // The decisions of one turn: one message to each follower beside the leader's own flush.
  let turn: { records: Buffer[]; done: Promise<void> } | null = null;
  const replicate = (record: Buffer): Promise<void> => {
    if (turn === null) {
      const t: { records: Buffer[]; done: Promise<void> } = { records: [record], done: Promise.resolve() };
      t.done = new Promise<void>((res) => setImmediate(res)).then(async () => {
        turn = null;
        const batch = Buffer.concat(t.records);
        // Done when the leader and one follower are: a quorum of three.
        await Promise.all([own.append(batch), Promise.race(followers.map((f) => f.send(batch)))]);
      });
      turn = t;
      return t.done;
    }
    turn.records.push(record);
    return turn.done;
  };
  let n = 0;
  const ask = (c: ReturnType<typeof connection>, m: Omit<Request, 'n'>): Promise<Answer> => {
    const req: Request = { ...m, n: n++ };
    return c.send(Buffer.from(JSON.stringify(req)), req.n).then((d) => JSON.parse(d.toString()) as Answer);
  };
  const commits = new Set<Promise<unknown>>();
  const gidPrefix = `bench-minimal-${cfg.tag}-`;
  const record = Buffer.alloc(cfg.bytes, 0x64);
  const { ok, errors, h } = await closedLoop(
    cfg,
    async (i, seq) => {
      const id = `${cfg.tag}-m${i}-${seq}`;
      const account = accountOf(i, seq);
      const gids = { shop: `${gidPrefix}${i}-${seq}-shop`, ledger: `${gidPrefix}${i}-${seq}-ledger` };
      const votes = await Promise.all([
        ask(shop, { k: 'p', gid: gids.shop, txnId: id, sql: shopStatement(id, account) }),
        ask(ledger, { k: 'p', gid: gids.ledger, txnId: id, sql: ledgerStatement(account) }),
      ]);
      if (!votes.every((v) => v.ok)) {
        if (votes[0].ok) await ask(shop, { k: 'r', gid: gids.shop });
        if (votes[1].ok) await ask(ledger, { k: 'r', gid: gids.ledger });
        throw new Error(votes.find((v) => !v.ok)?.error ?? 'NO');
      }
      await replicate(record);
      // The transaction is decided and answered; COMMIT PREPARED follows.
      for (const [c, gid] of [
        [shop, gids.shop],
        [ledger, gids.ledger],
      ] as const) {
        const p = ask(c, { k: 'c', gid });
        commits.add(p);
        void p.then(() => commits.delete(p));
      }
    },
    (err) => (err instanceof Error ? err.message.slice(0, 40) : 'ERROR'),
  );
  await Promise.all(commits);
  let leftover = 0;
  if (cfg.ledgerDb === 'mysql') leftover += await rollbackLeftoverBranches(cfg.ledgerUrl, gidPrefix);
  for (const url of cfg.ledgerDb === 'mysql' ? [cfg.shopUrl] : [cfg.shopUrl, cfg.ledgerUrl]) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const r = await c.query<{ gid: string }>(
      'SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)',
      [gidPrefix],
    );
    for (const row of r.rows) {
      await c.query(`ROLLBACK PREPARED '${safe(row.gid)}'`).catch(() => {});
      leftover++;
    }
    await c.end();
  }
  for (const c of [shop, ledger, ...followers]) c.close();
  own.close();
  return directResult(cfg, ok, errors, h, leftover);
}

/** The branches of this run still prepared in MariaDB (gtrid starting with prefix), rolled back and counted. */
async function rollbackLeftoverBranches(url: string, prefix: string): Promise<number> {
  const c = await mysql.createConnection({ uri: url });
  try {
    const [rows] = (await c.query('XA RECOVER')) as unknown as [{ gtrid_length: number; data: Buffer | string }[]];
    let n = 0;
    for (const r of rows) {
      const gtrid = (Buffer.isBuffer(r.data) ? r.data : Buffer.from(String(r.data), 'latin1'))
        .subarray(0, Number(r.gtrid_length))
        .toString('latin1');
      if (!gtrid.startsWith(prefix)) continue;
      await c.query(`XA ROLLBACK '${safe(gtrid)}'`).catch(() => {});
      n++;
    }
    return n;
  } finally {
    await c.end().catch(() => c.destroy());
  }
}

const cfg = JSON.parse(process.argv[2] ?? '') as PgMinimalConfig;
if (cfg.role === 'coordinator') await directChildMain('pg-minimal coordinator', () => coordinator(cfg));
else await (cfg.role === 'participant' ? participant(cfg) : follower(cfg));
