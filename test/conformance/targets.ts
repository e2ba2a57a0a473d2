// The participants of this repository, as conformance targets (target.ts).
// Adding one is adding an entry: a command line that runs the participant
// serving at env.listen and registering with env.nodes, a payload that
// writes a key, and a way to read a key back (see docs/protocol.md,
// "Checking a participant in any language").
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../process/harness.ts';
import { mysqlQuery } from '../mysql/harness.ts';
import { readProbe, type Target, type TargetEnv } from './target.ts';

const PYTHON = '/usr/bin/python3';
const PY_PROC = join(ROOT, 'sdk', 'python', 'tests', 'proc', 'conformance_participant.py');
const TS_PROC = join(ROOT, 'test', 'conformance', 'ts-participant.ts');

const kvPayload = (key: string, value: string): Uint8Array => Buffer.from(JSON.stringify({ set: { [key]: value } }));
const sqlText = (s: string): string => `'${s.replaceAll("'", "''")}'`;

/** The arguments every participant process of this repository takes, in its own spelling. */
function common(env: TargetEnv): string[] {
  return [
    '--id',
    env.participantId,
    '--cluster-id',
    env.clusterId,
    '--nodes',
    env.nodes.join(','),
    '--listen',
    env.listen,
    '--data',
    env.dataDir,
    ...(env.tls ? ['--tls', `${env.tls.ca},${env.tls.cert},${env.tls.key}`] : []),
  ];
}

function tsTarget(name: string, resource: 'memory' | 'tcc', kind: string): Target {
  return {
    name,
    kind,
    command: (env) => ({
      argv: [
        process.execPath,
        '--import',
        'tsx',
        TS_PROC,
        '--resource',
        resource,
        ...common(env),
        '--probe',
        env.probe,
      ],
    }),
    write: kvPayload,
    read: (env, key) => readProbe(env.probe, key),
  };
}

export const tsMemory = tsTarget('TypeScript memory', 'memory', 'memory');
export const tsTcc = tsTarget('TypeScript TCC (memory)', 'tcc', 'tcc-memory');

/** The Python SDK's TCC participant (sdk/python/verdict/tcc.py) with its example key/value handlers. */
export const pythonTcc: Target = {
  name: 'Python TCC (memory)',
  kind: 'tcc-memory',
  command: (env) => ({ argv: [PYTHON, PY_PROC, '--resource', 'tcc', ...common(env), '--probe', env.probe] }),
  write: kvPayload,
  read: (env, key) => readProbe(env.probe, key),
};

/**
 * A Python participant process (sdk/python), memory resource; `broken` makes it one of the deliberately broken ones.
 */
export function pythonMemory(broken?: 'no-status' | 'yes-before-write'): Target {
  return {
    name: broken === undefined ? 'Python memory' : `Python memory, broken: ${broken}`,
    kind: 'memory',
    command: (env) => ({
      argv: [
        PYTHON,
        PY_PROC,
        '--resource',
        'memory',
        ...common(env),
        '--probe',
        env.probe,
        ...(broken ? ['--broken', broken] : []),
      ],
    }),
    write: kvPayload,
    read: (env, key) => readProbe(env.probe, key),
  };
}

/**
 * The Go SDK's participant (sdk/go/participant) with its memory resource:
 * `binary` is sdk/go/internal/testproc/conformance, built by
 * buildGoDrivers(dir, ['conformance']) (test/process/go-procs.ts).
 */
export function goMemory(binary: string): Target {
  return {
    name: 'Go memory',
    kind: 'memory',
    command: (env) => ({ argv: [binary, ...common(env), '--probe', env.probe] }),
    write: kvPayload,
    read: (env, key) => readProbe(env.probe, key),
  };
}

const KV_TABLE = 'conformance_kv';
const LOG_TABLE = 'conformance_log';

/** The PostgreSQL participants' payload: one upsert into the suite's table. */
const pgWrite = (k: string, v: string): Uint8Array =>
  Buffer.from(
    JSON.stringify({
      sql: [
        `INSERT INTO ${KV_TABLE} (k, v) VALUES (${sqlText(k)}, ${sqlText(v)}) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`,
      ],
    }),
  );

/** The suite's table in database `url`: created before the first start, read out of band. */
function kvDatabase(url: string): Pick<Target, 'read' | 'setup' | 'teardown'> {
  let pool: pg.Pool | null = null;
  const db = (): pg.Pool => (pool ??= new pg.Pool({ connectionString: url, max: 2 }));
  return {
    read: async (_env, key) =>
      (await db().query<{ v: string }>(`SELECT v FROM ${KV_TABLE} WHERE k = $1`, [key])).rows[0]?.v ?? null,
    setup: once(
      async () =>
        void (await db().query(`CREATE TABLE IF NOT EXISTS ${KV_TABLE} (k text PRIMARY KEY, v text NOT NULL)`)),
    ),
    teardown: async () => {
      await pool?.end();
      pool = null;
    },
  };
}

/** A PostgreSQL participant over database `url`: TypeScript (`ts`) or Python. */
export function postgresTarget(lang: 'ts' | 'python', url: string): Target {
  return {
    name: lang === 'ts' ? 'TypeScript PostgreSQL' : 'Python PostgreSQL',
    kind: 'postgres',
    command: (env) => ({
      argv:
        lang === 'ts'
          ? [process.execPath, '--import', 'tsx', TS_PROC, '--resource', 'postgres', ...common(env), '--url', url]
          : [PYTHON, PY_PROC, '--resource', 'postgres', ...common(env), '--url', url],
    }),
    write: pgWrite,
    refuse: () => Buffer.from(JSON.stringify({ sql: ['SELECT 1/0'] })),
    ...kvDatabase(url),
  };
}

/** lib/pq's sslmode is "require" unless told (it has no "prefer"): the test server is plaintext on loopback. */
const libpqPlaintext = (url: string): string => `${url}${url.includes('?') ? '&' : '?'}sslmode=disable`;

/**
 * The Go SDK's PostgreSQL participant (sdk/go/participant/postgres) over
 * database `url`, run by the driver `binary` (sdk/go/internal/testproc/conformance).
 */
export function goPostgres(binary: string, url: string): Target {
  return {
    name: 'Go PostgreSQL',
    kind: 'postgres',
    command: (env) => ({ argv: [binary, '--resource', 'postgres', ...common(env), '--url', libpqPlaintext(url)] }),
    write: pgWrite,
    refuse: () => Buffer.from(JSON.stringify({ sql: ['SELECT 1/0'] })),
    ...kvDatabase(url),
  };
}

/**
 * The Go SDK's TCC participant (sdk/go/tcc, on PostgreSQL) over database
 * `url`: the driver's handlers take the memory payload and Confirm writes
 * it into the suite's table; a payload that is not JSON is a Try's refusal.
 */
export function goTcc(binary: string, url: string): Target {
  return {
    name: 'Go TCC (PostgreSQL)',
    kind: 'tcc',
    command: (env) => ({ argv: [binary, '--resource', 'tcc', ...common(env), '--url', libpqPlaintext(url)] }),
    write: kvPayload,
    ...kvDatabase(url),
  };
}

const TCC_KV_TABLE = 'conformance_tcc_kv';
const TCC_HELD_TABLE = 'conformance_tcc_held';

/**
 * The Python SDK's TCC participant on PostgreSQL (sdk/python/verdict/tcc_postgres.py)
 * over database `url`, with the key/value handlers of its conformance process:
 * Try holds the keys in conformance_tcc_held, Confirm writes them to
 * conformance_tcc_kv, each with its barrier row in one local transaction.
 */
export function pythonTccPostgres(url: string): Target {
  let pool: pg.Pool | null = null;
  const db = (): pg.Pool => (pool ??= new pg.Pool({ connectionString: url, max: 2 }));
  return {
    name: 'Python TCC (PostgreSQL)',
    kind: 'tcc-postgres',
    command: (env) => ({ argv: [PYTHON, PY_PROC, '--resource', 'tcc-postgres', ...common(env), '--url', url] }),
    write: kvPayload,
    read: async (_env, key) =>
      (await db().query<{ v: string }>(`SELECT v FROM ${TCC_KV_TABLE} WHERE k = $1`, [key])).rows[0]?.v ?? null,
    setup: once(async () => {
      await db().query(`CREATE TABLE IF NOT EXISTS ${TCC_KV_TABLE} (k text PRIMARY KEY, v text NOT NULL)`);
      await db().query(
        `CREATE TABLE IF NOT EXISTS ${TCC_HELD_TABLE} (txn_id text NOT NULL, k text NOT NULL, v text NOT NULL, PRIMARY KEY (txn_id, k))`,
      );
    }),
    teardown: async () => {
      await pool?.end();
      pool = null;
    },
  };
}

/**
 * The TypeScript MySQL/MariaDB participant over database `url`. Its writes
 * are rows appended to a log, the last one for a key being its value: an
 * upsert on a unique key would take InnoDB's next-key locks, which a
 * prepared XA branch keeps, and the suite's many prepared transactions
 * would then wait on each other's gaps.
 */
export function mysqlTarget(url: string): Target {
  return {
    name: 'TypeScript MySQL/MariaDB',
    kind: 'mysql',
    command: (env) => ({
      argv: [process.execPath, '--import', 'tsx', TS_PROC, '--resource', 'mysql', ...common(env), '--url', url],
    }),
    write: (key, value) =>
      Buffer.from(
        JSON.stringify({ sql: [`INSERT INTO ${LOG_TABLE} (k, v) VALUES (${sqlText(key)}, ${sqlText(value)})`] }),
      ),
    refuse: () => Buffer.from(JSON.stringify({ sql: ['SELECT * FROM no_such_table_here'] })),
    read: async (_env, key) =>
      (
        await mysqlQuery<{ v: string }>(url, `SELECT v FROM ${LOG_TABLE} WHERE k = ? ORDER BY id DESC LIMIT 1`, [key])
      )[0]?.v ?? null,
    setup: once(
      async () =>
        void (await mysqlQuery(
          url,
          `CREATE TABLE IF NOT EXISTS ${LOG_TABLE} (id BIGINT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(255) NOT NULL, v LONGTEXT NOT NULL, KEY (k)) ENGINE=InnoDB`,
        )),
    ),
  };
}

/** `fn` run once, however many times (and however concurrently) it is called. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
}
