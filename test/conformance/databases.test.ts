// The conformance suite (checks.ts) against the database participants: the
// TypeScript PostgreSQL and MySQL/MariaDB participants and the Python SDK's
// PostgreSQL participant, each on a real server (test/pg/harness.ts,
// test/mysql/harness.ts).
import { afterAll } from 'vitest';
import { type MariaDbServer, startMariaDb } from '../mysql/harness.ts';
import { type PgServer, startPostgres } from '../pg/harness.ts';
import { describeTarget } from './suite.ts';
import { mysqlTarget, postgresTarget } from './targets.ts';

let pgServer: PgServer | null = null;
let mariaDb: MariaDbServer | null = null;
afterAll(async () => {
  await pgServer?.stop();
  await mariaDb?.stop();
});
const postgres = async (): Promise<PgServer> => (pgServer ??= await startPostgres({ databases: ['conformance_ts', 'conformance_py'] }));

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
  'TypeScript MySQL/MariaDB',
  () => mysqlTarget((mariaDb as MariaDbServer).url('conformance')),
  async () => void (mariaDb ??= await startMariaDb({ databases: ['conformance'] })),
);
