// `npm run bench -- pg-pipeline [--batch N (64)] [--rounds N (20)]`
//
// Whether COMMIT PREPARED pipelined on one connection would pay: PostgreSQL
// refuses COMMIT PREPARED inside a multi-statement query, but the protocol
// lets a client send several Query messages without waiting, each run in its
// own implicit transaction with its own CommandComplete or ErrorResponse and
// ReadyForQuery, so a failure is still seen per transaction. The `pg` driver
// sends one query at a time; this tool drives its connection's protocol
// object directly (for this measurement only, not for production).
//
// Each round prepares `batch` transactions (BEGIN, an INSERT, PREPARE
// TRANSACTION in one query each, on 16 connections), then commits them in
// one of these ways, in turn:
//
//   pool16      16 connections, each COMMIT PREPARED one at a time (the
//               participant's decision pool today)
//   one1        one connection, one at a time
//   pipelined1  one connection, every COMMIT PREPARED sent at once
//   pipelined4  four connections, each pipelining a quarter
//   pipelined16 sixteen connections, each pipelining a sixteenth
//
// CPU is read from /proc/<pid>/schedstat (nanoseconds on the CPU), which
// unlike /proc/<pid>/stat's clock ticks resolves the short bursts of many
// backends.
// and prints per way: commits per second of the commit phase, this
// process's CPU and PostgreSQL's backends' CPU per commit, and one commit in
// each batch made to fail (its gid unknown), which must fail alone.
import { loadavg } from 'node:os';
import pg from 'pg';
import { startPostgres } from '../../test/pg/harness.ts';
import { readFileSync } from 'node:fs';
import { databaseProcs } from '../harness/cpu-sample.ts';
import { intFlag as flag } from '../harness/procs.ts';

const BATCH = flag('batch', 64);
const ROUNDS = flag('rounds', 20);
const WAYS = ['pool16', 'one1', 'pipelined1', 'pipelined4', 'pipelined16'] as const;
type Way = (typeof WAYS)[number];

interface ProtocolConnection {
  query(text: string): void;
  on(event: string, fn: (msg: unknown) => void): void;
  removeAllListeners(event: string): void;
}

/** Time process `pid` spent on a CPU so far, in ms (its threads together); 0 once it is gone. */
function onCpuMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return 0;
  }
}

/**
 * A connection whose replies this tool reads itself: send() pipelines, each answer resolves or rejects its own query.
 */
async function pipelined(url: string): Promise<{ send: (sql: string) => Promise<void>; end: () => Promise<void> }> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {});
  await c.connect();
  const conn = (c as unknown as { connection: ProtocolConnection }).connection;
  for (const ev of ['commandComplete', 'errorMessage', 'readyForQuery', 'notice']) conn.removeAllListeners(ev);
  const waiting: { res: () => void; rej: (e: Error) => void; err: Error | null }[] = [];
  conn.on('errorMessage', (m) => {
    const w = waiting[0];
    if (w) w.err = new Error(String((m as { message?: string }).message));
  });
  conn.on('readyForQuery', () => {
    const w = waiting.shift();
    if (w) w.err === null ? w.res() : w.rej(w.err);
  });
  return {
    send: (sql) =>
      new Promise<void>((res, rej) => {
        waiting.push({ res, rej, err: null });
        conn.query(sql);
      }),
    end: async () => {
      // The Client's own listeners are gone: close the socket.
      (c as unknown as { connection: { end(): void } }).connection.end();
    },
  };
}

async function main(): Promise<void> {
  const server = await startPostgres({ maxPreparedTransactions: 256, databases: ['pipe'] });
  try {
    const url = server.url('pipe');
    const prep = await Promise.all(
      Array.from({ length: 16 }, async () => Object.assign(new pg.Client({ connectionString: url }), {})),
    );
    for (const c of prep) await c.connect();
    await prep[0]?.query('CREATE TABLE IF NOT EXISTS t (id text PRIMARY KEY)');
    const pool = await Promise.all(Array.from({ length: 16 }, async () => new pg.Client({ connectionString: url })));
    for (const c of pool) await c.connect();
    const pipes = await Promise.all(Array.from({ length: 16 }, () => pipelined(url)));
    const totals = new Map<Way, { ms: number; selfCpu: number; dbCpu: number; n: number; failedAlone: number }>();
    let seq = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of WAYS) {
        const gids = Array.from({ length: BATCH }, () => `pipe-${seq++}`);
        await Promise.all(
          prep.map(async (c, i) => {
            for (let k = i; k < gids.length; k += prep.length)
              await c.query(`BEGIN; INSERT INTO t VALUES ('${gids[k]}'); PREPARE TRANSACTION '${gids[k]}'`);
          }),
        );
        // One commit per batch names a gid that is not prepared: it must fail, and only it.
        const sqls = gids.map((g, k) => `COMMIT PREPARED '${k === BATCH >> 1 ? `${g}-missing` : g}'`);
        const db = databaseProcs();
        const db0 = db.map((p) => onCpuMs(p.pid));
        const self0 = onCpuMs(process.pid);
        const t0 = performance.now();
        let results: PromiseSettledResult<unknown>[];
        if (way === 'pool16') {
          results = (
            await Promise.all(
              pool.map(async (c, i) => {
                const out: PromiseSettledResult<unknown>[] = [];
                for (let k = i; k < sqls.length; k += pool.length)
                  out[k] = await c.query(sqls[k] as string).then(
                    (v) => ({ status: 'fulfilled' as const, value: v }),
                    (e: unknown) => ({ status: 'rejected' as const, reason: e }),
                  );
                return out;
              }),
            )
          ).reduce((acc, part) => {
            part.forEach((v, k) => {
              if (v) acc[k] = v;
            });
            return acc;
          }, [] as PromiseSettledResult<unknown>[]);
        } else if (way === 'one1') {
          results = [];
          for (const s of sqls)
            results.push(
              await (pool[0] as pg.Client).query(s).then(
                (v) => ({ status: 'fulfilled' as const, value: v }),
                (e: unknown) => ({ status: 'rejected' as const, reason: e }),
              ),
            );
        } else {
          const n = way === 'pipelined1' ? 1 : way === 'pipelined4' ? 4 : 16;
          results = await Promise.allSettled(
            sqls.map((s, k) => (pipes[k % n] as Awaited<ReturnType<typeof pipelined>>).send(s)),
          );
        }
        const ms = performance.now() - t0;
        const selfMs = onCpuMs(process.pid) - self0;
        const dbCpu = db.reduce((a, p, i) => a + Math.max(0, onCpuMs(p.pid) - (db0[i] ?? 0)), 0);
        const failed = results.map((r, k) => (r.status === 'rejected' ? k : -1)).filter((k) => k >= 0);
        const t = totals.get(way) ?? { ms: 0, selfCpu: 0, dbCpu: 0, n: 0, failedAlone: 0 };
        t.ms += ms;
        t.selfCpu += selfMs;
        t.dbCpu += dbCpu;
        t.n += BATCH;
        if (failed.length === 1 && failed[0] === BATCH >> 1) t.failedAlone += 1;
        totals.set(way, t);
      }
    }
    const left = await prep[0]?.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_prepared_xacts WHERE gid LIKE 'pipe-%'",
    );
    const out: Record<string, unknown> = {
      batch: BATCH,
      rounds: ROUNDS,
      load_average: Math.round(loadavg()[0] * 100) / 100,
      left_prepared: Number(left?.rows[0]?.n) - ROUNDS * WAYS.length,
    };
    for (const [way, t] of totals) {
      const line = {
        commits_s: Math.round((t.n / t.ms) * 1000),
        client_cpu_ms_per_commit: +(t.selfCpu / t.n).toFixed(4),
        db_cpu_ms_per_commit: +(t.dbCpu / t.n).toFixed(4),
        batches_with_the_one_failure_alone: `${t.failedAlone}/${ROUNDS}`,
      };
      out[way] = line;
      process.stderr.write(`${way}: ${JSON.stringify(line)}\n`);
    }
    process.stdout.write(`${JSON.stringify(out)}\n`);
    for (const c of [...prep, ...pool]) await c.end();
    for (const p of pipes) await p.end();
  } finally {
    await server.stop();
  }
}

await main();
