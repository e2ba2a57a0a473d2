// A real PostgreSQL 15 for the adapter's tests. Unless VERDICT_PG_URL names
// a server to use, startPostgres() runs its own: initdb in a temp folder,
// `postgres` on a free loopback port with its socket in that folder, started
// as the `postgres` user when the tests run as root (PostgreSQL refuses to run
// as root). stop() shuts it down fast (SIGINT) and deletes the folder. Every
// wait is bounded and every failure says what to do.
//
//   VERDICT_PG_URL  postgres://USER@HOST:PORT/DB of a server to use instead
//                   (it needs max_prepared_transactions > 0 and the right to
//                   CREATE DATABASE); tests that need a server of their own
//                   (private: true) still start one.
//   VERDICT_PG_BIN  the folder of initdb and postgres (default
//                   /usr/lib/postgresql/15/bin; .ci/run installs postgresql-15).
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const PG_BIN = process.env.VERDICT_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
const LOG_CHARS_MAX = 20_000;

export interface PgServer {
  /** The URL of database `db` on this server. */
  url(db: string): string;
  /** True when the server is VERDICT_PG_URL's, not one of ours. */
  external: boolean;
  /** The server's log so far (ours only), for failure messages. */
  log(): string;
  stop(): Promise<void>;
  /** Ours only: a fast shutdown, `downMs` of nothing, and the same server back on the same port and data. */
  restart?(downMs?: number): Promise<void>;
}

export interface StartOptions {
  /** max_prepared_transactions; null leaves PostgreSQL's default (0: prepared transactions disabled). */
  maxPreparedTransactions?: number | null;
  databases?: string[];
  /** Start our own server even when VERDICT_PG_URL is set. */
  private?: boolean;
  /**
   * More server settings (`name=value`, each passed as -c), e.g. wal_level=logical for the outbox's CDC relay; implies
   * a private server.
   */
  settings?: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function startPostgres(opts: StartOptions = {}): Promise<PgServer> {
  const databases = opts.databases ?? ['shop', 'ledger'];
  const external = process.env.VERDICT_PG_URL;
  if (external !== undefined && external !== '' && opts.private !== true && opts.settings === undefined) {
    const url = (db: string): string => {
      const u = new URL(external);
      u.pathname = `/${db}`;
      return u.toString();
    };
    await createDatabases(external, databases);
    return { url, external: true, log: () => '', stop: async () => {} };
  }
  return startOwn(
    opts.maxPreparedTransactions === undefined ? 64 : opts.maxPreparedTransactions,
    databases,
    opts.settings ?? [],
  );
}

async function startOwn(maxPrepared: number | null, databases: string[], extra: string[]): Promise<PgServer> {
  for (const bin of ['initdb', 'postgres']) {
    if (!existsSync(join(PG_BIN, bin))) {
      throw new Error(
        `PostgreSQL server binary ${join(PG_BIN, bin)} not found: install postgresql-15 (apt-get install postgresql-15; .ci/run does it), set VERDICT_PG_BIN, or set VERDICT_PG_URL to a server`,
      );
    }
  }
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? postgresUser() : null;
  const root = await mkdtemp(join(tmpdir(), 'verdict-pg-'));
  // The postgres user must get through the folder to its data and socket.
  await chmod(root, 0o755);
  const data = join(root, 'data');
  const sock = join(root, 'sock');
  await mkdir(data, { mode: 0o700 });
  await mkdir(sock, { mode: 0o755 });
  if (owner !== null) {
    await chown(data, owner.uid, owner.gid);
    await chown(sock, owner.uid, owner.gid);
  }
  const cmd = (bin: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, bin), ...args]] : [join(PG_BIN, bin), args];
  let child: ChildProcess | null = null;
  let output = '';
  let exitHook: (() => void) | null = null;
  const cleanup = async (): Promise<void> => {
    if (exitHook !== null) process.off('exit', exitHook);
    await rm(root, { recursive: true, force: true });
  };
  try {
    // --no-sync: the cluster is thrown away after the tests; the server itself runs with fsync=on.
    await run(
      ...cmd('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']),
      30_000,
    );
    const port = await freePort();
    const settings = ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=on', '-c', 'max_connections=100'];
    if (maxPrepared !== null) settings.push('-c', `max_prepared_transactions=${maxPrepared}`);
    for (const kv of extra) settings.push('-c', kv);
    const [file, args] = cmd('postgres', ['-D', data, '-p', String(port), '-k', sock, ...settings]);
    const url = (db: string): string => `postgres://postgres@127.0.0.1:${port}/${db}`;
    let exited = false;
    let c!: ChildProcess;
    const launch = async (): Promise<void> => {
      c = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      exited = false;
      const keep = (b: Buffer): void => {
        output = (output + b.toString()).slice(-LOG_CHARS_MAX);
      };
      c.stdout?.on('data', keep);
      c.stderr?.on('data', keep);
      c.on('exit', () => (exited = true));
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        if (exited) throw new Error(`postgres exited during start-up:\n${output}`);
        if (Date.now() > deadline)
          throw new Error(`postgres did not accept connections within ${START_TIMEOUT_MS} ms:\n${output}`);
        const probe = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 1_000 });
        try {
          await probe.connect();
          await probe.end();
          break;
        } catch {
          await probe.end().catch(() => {});
          await sleep(100);
        }
      }
    };
    // A test process that dies without stop() still takes its server down (not on SIGKILL).
    exitHook = (): void => {
      const pid = postmasterPid(data);
      if (pid !== null) {
        try {
          process.kill(pid, 'SIGQUIT');
        } catch {
          // already gone
        }
      }
    };
    process.on('exit', exitHook);
    await launch();
    await createDatabases(url('postgres'), databases);
    let stopped: Promise<void> | null = null;
    const halt = async (): Promise<void> => {
      const pid = postmasterPid(data) ?? c.pid ?? null;
      // SIGINT: fast shutdown (sessions are cut, prepared transactions are kept on disk, which we delete anyway).
      if (pid !== null && !exited) {
        process.kill(pid, 'SIGINT');
        const by = Date.now() + STOP_TIMEOUT_MS;
        while (!exited && Date.now() < by) await sleep(50);
        if (!exited) {
          process.kill(pid, 'SIGQUIT');
          const by2 = Date.now() + 5_000;
          while (!exited && Date.now() < by2) await sleep(50);
        }
        if (!exited) c.kill('SIGKILL');
      }
    };
    const stop = (): Promise<void> =>
      (stopped ??= (async () => {
        await halt();
        await cleanup();
      })());
    const restart = async (downMs = 0): Promise<void> => {
      await halt();
      await sleep(downMs);
      await launch();
    };
    return { url, external: false, log: () => output, stop, restart };
  } catch (err) {
    // Assigned inside launch(), which TypeScript's narrowing does not follow.
    const running = child as ChildProcess | null;
    if (running !== null && running.exitCode === null) {
      const pid = postmasterPid(data);
      if (pid !== null) process.kill(pid, 'SIGQUIT');
      running.kill('SIGKILL');
    }
    await cleanup();
    throw err;
  }
}

function postgresUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'the tests run as root but there is no `postgres` user to run PostgreSQL as (PostgreSQL refuses root); install postgresql-15, which creates it',
    );
  }
}

function postmasterPid(data: string): number | null {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function run(file: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${[file, ...args].join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
      else resolve();
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

async function createDatabases(adminUrl: string, names: string[]): Promise<void> {
  await withClient(adminUrl, async (c) => {
    for (const name of names) {
      const r = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (r.rowCount === 0) await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    }
  });
}

/** Runs fn with a fresh connection to url (a separate session from everything the resource holds). */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** One statement in a fresh session; returns its rows. */
export function sql<R extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  return withClient(url, async (c) => (await c.query<R>(text, values)).rows);
}

/** Every prepared transaction on the server (all databases), or those whose gid starts with prefix. */
export async function preparedXacts(url: string, prefix = ''): Promise<{ gid: string; database: string }[]> {
  return sql<{ gid: string; database: string }>(
    url,
    'SELECT gid, database FROM pg_prepared_xacts WHERE starts_with(gid, $1) ORDER BY gid',
    [prefix],
  );
}

/**
 * Prepares a transaction by hand (as if another process, or a crash, had left it): work, then PREPARE TRANSACTION gid.
 */
export async function prepareByHand(url: string, gid: string, statements: string[]): Promise<void> {
  await withClient(url, async (c) => {
    await c.query('BEGIN');
    for (const s of statements) await c.query(s);
    await c.query(`PREPARE TRANSACTION ${pg.escapeLiteral(gid)}`);
  });
}

/** Rolls back every prepared transaction whose gid starts with prefix, in the databases given. */
export async function rollbackPrepared(server: PgServer, databases: string[], prefix = ''): Promise<void> {
  for (const db of databases) {
    const url = server.url(db);
    for (const p of await preparedXacts(url, prefix)) {
      if (p.database === db) await sql(url, `ROLLBACK PREPARED ${pg.escapeLiteral(p.gid)}`);
    }
  }
}

export async function waitFor(
  what: string,
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** A unique cluster id per test file and run, so files sharing an external server never see each other's gids. */
export function uniqueClusterId(name: string): string {
  return `${name}-${process.pid}-${Date.now().toString(36)}`;
}
