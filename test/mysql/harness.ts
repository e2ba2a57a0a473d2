// A real MariaDB for the XA adapter's tests. Unless VERDICT_MYSQL_URL names a
// server to use, startMariaDb() runs its own: mariadb-install-db in a temp
// folder, then `mariadbd` on a free loopback port with its socket in that
// folder, run as the `mysql` user when the tests run as root (mariadbd refuses
// root). stop() shuts it down (SIGTERM, then SIGKILL) and deletes the folder;
// crash() is SIGKILL, and restart() starts it again on the same data and port
// (the "MariaDB itself crashed with a branch prepared" test). Every wait is
// bounded and every failure says what to do.
//
//   VERDICT_MYSQL_URL  mysql://USER:PASSWORD@HOST:PORT/ of a server to use
//                      instead (the user needs CREATE, XA and, on MySQL 8,
//                      XA_RECOVER_ADMIN); tests that crash the server
//                      (private: true) still start their own.
//   VERDICT_MYSQL_BIN  the folder of mariadbd (default /usr/sbin; .ci/run
//                      installs mariadb-server).
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { freePorts } from '../free-ports.ts';

const BIN = process.env.VERDICT_MYSQL_BIN ?? '/usr/sbin';
const INSTALL_DB = '/usr/bin/mariadb-install-db';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const LOG_CHARS_MAX = 20_000;

export interface MariaDbServer {
  /** The URL of database `db` on this server (as root). */
  url(db: string): string;
  external: boolean;
  log(): string;
  /** SIGKILL: a crash of the server (ours only). */
  crash(): Promise<void>;
  /** Starts it again on the same data directory and port, after crash() or stop({ keepData: true }). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartOptions {
  databases?: string[];
  /** Start our own server even when VERDICT_MYSQL_URL is set (needed to crash it). */
  private?: boolean;
  /** Extra mariadbd options, e.g. ['--log-bin', '--sync-binlog=0']. */
  extraArgs?: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function startMariaDb(opts: StartOptions = {}): Promise<MariaDbServer> {
  const databases = opts.databases ?? ['shop', 'ledger'];
  const external = process.env.VERDICT_MYSQL_URL;
  if (external !== undefined && external !== '' && opts.private !== true) {
    const url = (db: string): string => {
      const u = new URL(external);
      u.pathname = `/${db}`;
      return u.toString();
    };
    await createDatabases(url(''), databases);
    const refuse = async (): Promise<void> => {
      throw new Error('cannot crash or restart the server of VERDICT_MYSQL_URL; start a private one');
    };
    return { url, external: true, log: () => '', crash: refuse, restart: refuse, stop: async () => {} };
  }
  return startOwn(databases, opts.extraArgs ?? []);
}

async function startOwn(databases: string[], extraArgs: string[]): Promise<MariaDbServer> {
  const mariadbd = join(BIN, 'mariadbd');
  if (!existsSync(mariadbd) || !existsSync(INSTALL_DB)) {
    throw new Error(
      `MariaDB server binaries (${mariadbd}, ${INSTALL_DB}) not found: install mariadb-server (apt-get install mariadb-server; .ci/run does it), set VERDICT_MYSQL_BIN, or set VERDICT_MYSQL_URL to a server`,
    );
  }
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? mysqlUser() : null;
  const root = await mkdtemp(join(tmpdir(), 'verdict-mariadb-'));
  await chmod(root, 0o755);
  const data = join(root, 'data');
  const runDir = join(root, 'run');
  // Temporary tables in a directory of this server's own: in the shared /tmp,
  // a bootstrap once failed deleting its own #sql-temptable file ("Errcode: 2")
  // while other tests started and cleaned up servers beside it.
  const tmp = join(root, 'tmp');
  const sock = join(runDir, 'mysqld.sock');
  await mkdir(data, { mode: 0o700 });
  await mkdir(runDir, { mode: 0o755 });
  await mkdir(tmp, { mode: 0o700 });
  if (owner !== null) {
    await chown(data, owner.uid, owner.gid);
    await chown(runDir, owner.uid, owner.gid);
    await chown(tmp, owner.uid, owner.gid);
  }
  const [port] = await freePorts(1);
  const userArgs = owner !== null ? ['--user=mysql'] : [];
  // --no-defaults: the machine's /etc/mysql config (its port, socket, datadir) must not leak in.
  await run(
    INSTALL_DB,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--tmpdir=${tmp}`,
      ...userArgs,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ],
    60_000,
  );
  const args = [
    '--no-defaults',
    `--datadir=${data}`,
    `--tmpdir=${tmp}`,
    `--socket=${sock}`,
    `--pid-file=${join(runDir, 'mysqld.pid')}`,
    '--bind-address=127.0.0.1',
    `--port=${port}`,
    '--skip-name-resolve',
    // Durable as production should be: the adapter refuses anything less (see
    // src/participant/resources/mysql/server-check.ts).
    '--innodb-flush-log-at-trx-commit=1',
    // Small and quick on a shared test machine.
    '--innodb-buffer-pool-size=32M',
    '--innodb-log-file-size=16M',
    '--performance-schema=OFF',
    '--max-connections=200',
    ...userArgs,
    ...extraArgs,
  ];
  let child: ChildProcess | null = null;
  let exited = true;
  let output = '';
  const keep = (b: Buffer): void => {
    output = (output + b.toString()).slice(-LOG_CHARS_MAX);
  };
  const exitHook = (): void => {
    if (child !== null && !exited) child.kill('SIGKILL');
  };
  process.on('exit', exitHook);
  const url = (db: string): string => `mysql://root@127.0.0.1:${port}/${db}`;

  const launch = async (): Promise<void> => {
    const c = spawn(mariadbd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    exited = false;
    c.stdout?.on('data', keep);
    c.stderr?.on('data', keep);
    c.on('exit', () => (exited = true));
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (exited) throw new Error(`mariadbd exited during start-up:\n${output}`);
      if (Date.now() > deadline)
        throw new Error(`mariadbd did not accept connections within ${START_TIMEOUT_MS} ms:\n${output}`);
      try {
        const probe = await mysql.createConnection({ uri: url(''), connectTimeout: 1_000 });
        await probe.end();
        return;
      } catch {
        await sleep(100);
      }
    }
  };
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const c = child;
    if (c === null || exited) return;
    c.kill(signal);
    const by = Date.now() + STOP_TIMEOUT_MS;
    while (!exited && Date.now() < by) await sleep(50);
    if (!exited) {
      c.kill('SIGKILL');
      const by2 = Date.now() + 5_000;
      while (!exited && Date.now() < by2) await sleep(50);
    }
  };
  const cleanup = async (): Promise<void> => {
    process.off('exit', exitHook);
    await rm(root, { recursive: true, force: true });
  };
  try {
    await launch();
    await createDatabases(url(''), databases);
  } catch (err) {
    await halt('SIGKILL');
    await cleanup();
    throw err;
  }
  let stopped: Promise<void> | null = null;
  return {
    url,
    external: false,
    log: () => output,
    crash: () => halt('SIGKILL'),
    restart: async () => {
      if (!exited) throw new Error('restart() needs the server down (crash() first)');
      await launch();
    },
    stop: () =>
      (stopped ??= (async () => {
        await halt('SIGTERM');
        await cleanup();
      })()),
  };
}

function mysqlUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'mysql']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'mysql']).toString().trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'the tests run as root but there is no `mysql` user to run MariaDB as (mariadbd refuses root); install mariadb-server, which creates it',
    );
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

async function createDatabases(adminUrl: string, names: string[]): Promise<void> {
  await withConnection(adminUrl, async (c) => {
    for (const name of names) await c.query(`CREATE DATABASE IF NOT EXISTS ${mysql.escapeId(name)}`);
  });
}

/** Runs fn with a fresh connection to url (a session apart from everything the resource holds). */
export async function withConnection<T>(url: string, fn: (c: mysql.Connection) => Promise<T>): Promise<T> {
  const c = await mysql.createConnection({ uri: url, connectTimeout: 5_000 });
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => c.destroy());
  }
}

/** One statement in a fresh session; returns its rows. */
export function mysqlQuery<R = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  return withConnection(url, async (c) => (await c.query(text, values))[0] as R[]);
}

export interface RecoveredXid {
  formatId: number;
  gtrid: string;
  bqual: string;
}

/** XA RECOVER: every prepared branch on the server (it is server-wide), gtrid and bqual as text. */
export async function xaRecover(url: string): Promise<RecoveredXid[]> {
  const rows = await mysqlQuery<{
    formatID: number;
    gtrid_length: number;
    bqual_length: number;
    data: Buffer | string;
  }>(url, 'XA RECOVER');
  return rows.map((r) => {
    const data = Buffer.isBuffer(r.data) ? r.data : Buffer.from(r.data, 'binary');
    return {
      formatId: Number(r.formatID),
      gtrid: data.subarray(0, r.gtrid_length).toString('latin1'),
      bqual: data.subarray(r.gtrid_length, r.gtrid_length + r.bqual_length).toString('latin1'),
    };
  });
}

/**
 * Prepares a branch by hand (as another process, or a crash, would leave it): work inside XA START/END, then XA
 * PREPARE.
 */
export async function xaPrepareByHand(
  url: string,
  xid: { gtrid: string; bqual: string; formatId: number },
  statements: string[],
): Promise<void> {
  await withConnection(url, async (c) => {
    const x = `${mysql.escape(xid.gtrid)},${mysql.escape(xid.bqual)},${xid.formatId}`;
    await c.query(`XA START ${x}`);
    for (const s of statements) await c.query(s);
    await c.query(`XA END ${x}`);
    await c.query(`XA PREPARE ${x}`);
  });
}

/** Rolls back every prepared branch whose gtrid starts with prefix. */
export async function xaRollbackAll(url: string, gtridPrefix = ''): Promise<void> {
  for (const x of await xaRecover(url)) {
    if (x.gtrid.startsWith(gtridPrefix))
      await mysqlQuery(url, `XA ROLLBACK ${mysql.escape(x.gtrid)},${mysql.escape(x.bqual)},${x.formatId}`);
  }
}
