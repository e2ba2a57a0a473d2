// Start-up checks of the PostgreSQL participant against a real PostgreSQL 15
// started WITHOUT max_prepared_transactions (PostgreSQL's default, 0): the
// adapter refuses to start with the reason and the fix, through the API, the
// runtime and the `verdict participant` command.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresConfigError, PostgresResource } from '../../src/participant/postgres.ts';
import { ParticipantStartupError, startParticipant } from '../../src/participant/runtime.ts';
import { preparedXacts, startPostgres, withClient, type PgServer } from './harness.ts';

const ROOT = join(import.meta.dirname, '..', '..');
let server: PgServer;
let url: string;
const dirs: string[] = [];

beforeAll(async () => {
  // Always a server of our own: its configuration is the point of this file.
  server = await startPostgres({ private: true, maxPreparedTransactions: null, databases: ['shop'] });
  url = server.url('shop');
});

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  if (server === undefined) return;
  try {
    expect(await preparedXacts(url)).toEqual([]);
  } finally {
    await server.stop();
  }
});

const refusal = (concurrency: number): string =>
  `FAILED_PRECONDITION: PostgreSQL at ${url} has max_prepared_transactions = 0, so every PREPARE TRANSACTION fails with "prepared transactions are disabled" (SQLSTATE 55000); ` +
  `set max_prepared_transactions to at least ${concurrency} (the adapter's concurrency, --pg-concurrency) in postgresql.conf or with ALTER SYSTEM, and restart PostgreSQL`;

describe('postgres participant: refuses max_prepared_transactions = 0', () => {
  it('PostgreSQL itself answers PREPARE TRANSACTION with SQLSTATE 55000 "prepared transactions are disabled" (the text the refusal quotes)', async () => {
    const err = await withClient(url, async (c) => {
      await c.query('BEGIN');
      return c.query("PREPARE TRANSACTION 'probe'").then(
        () => null,
        (e: unknown) => e,
      );
    });
    expect(err).toMatchObject({ code: '55000', message: 'prepared transactions are disabled' });
  });

  it('PostgresResource.open refuses with the reason and the fix', async () => {
    const err = await PostgresResource.open({ clusterId: 'c', participantId: 'shop', url, concurrency: 12 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PostgresConfigError);
    expect((err as Error).message).toBe(refusal(12));
  });

  it('the participant runtime refuses to start, before writing a journal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'verdict-pg-refused-'));
    dirs.push(dir);
    const start = startParticipant({
      clusterId: 'c',
      participantId: 'shop',
      listen: '127.0.0.1:0',
      endpointsOfCluster: ['127.0.0.1:1'],
      dataDir: dir,
      logger: pino({ level: 'silent' }),
      insecure: true,
      postgres: { url },
    });
    await expect(start).rejects.toThrow(ParticipantStartupError);
    await expect(start).rejects.toThrow(refusal(8));
    expect((await readdir(dir)).filter((f) => f.startsWith('journal'))).toEqual([]);
  });

  it('`verdict participant --resource postgres` prints the refusal as one line and exits 1', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'verdict-pg-refused-'));
    dirs.push(dir);
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin', 'verdict.mjs'),
        'participant',
        '--id',
        'shop',
        '--cluster-id',
        'c',
        '--listen',
        '127.0.0.1:0',
        '--data',
        dir,
        '--endpoints',
        '127.0.0.1:1',
        '--insecure',
        '--resource',
        'postgres',
        '--pg-url',
        url,
        '--pg-concurrency',
        '3',
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr).toBe(`verdict: ${refusal(3)}\n`);
  });

  it('refuses a PostgreSQL it cannot reach, saying where it tried', async () => {
    const err = await PostgresResource.open({
      clusterId: 'c',
      participantId: 'shop',
      url: 'postgres://verdict:secret@127.0.0.1:1/shop',
      acquireTimeoutMs: 2_000,
    }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PostgresConfigError);
    expect((err as Error).message).toMatch(
      /^FAILED_PRECONDITION: cannot use PostgreSQL at postgres:\/\/verdict:\*\*\*@127\.0\.0\.1:1\/shop: lost connection to PostgreSQL: connect ECONNREFUSED/,
    );
  });
});
