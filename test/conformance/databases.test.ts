// The conformance suite (checks.ts) against the database participants: the
// TypeScript PostgreSQL and MySQL/MariaDB participants and the Python SDK's
// PostgreSQL and TCC-on-PostgreSQL participants, each on a real server (test/pg/harness.ts,
// test/mysql/harness.ts).
import { afterAll } from 'vitest';
import { type MariaDbServer, startMariaDb } from '../mysql/harness.ts';
import { type PgServer, startPostgres } from '../pg/harness.ts';
import { describeTarget } from './suite.ts';
import { mysqlTarget, postgresTarget, pythonTccPostgres } from './targets.ts';

let pgServer: PgServer | null = null;
let mariaDb: MariaDbServer | null = null;
afterAll(async () => {
  await pgServer?.stop();
  await mariaDb?.stop();
});
const postgres = async (): Promise<PgServer> =>
  (pgServer ??= await startPostgres({ databases: ['conformance_ts', 'conformance_py', 'conformance_pytcc'] }));

let pg: PgServer;
describeTarget(
  'TypeScript PostgreSQL',
  () => postgresTarget('ts', pg.url('conformance_ts')),
  async () => void (pg = await postgres()),
);
describeTarget(
  'Python PostgreSQL',
  () => postgresTarget('python', pg.url('conformance_py')),
  async () => void (pg = await postgres()),
);
describeTarget(
  'Python TCC (PostgreSQL)',
  () => pythonTccPostgres(pg.url('conformance_pytcc')),
  async () => void (pg = await postgres()),
);
describeTarget(
  'TypeScript MySQL/MariaDB',
  () => mysqlTarget((mariaDb as MariaDbServer).url('conformance')),
  async () => void (mariaDb ??= await startMariaDb({ databases: ['conformance'] })),
);
