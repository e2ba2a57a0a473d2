// The Python SDK's tests that need a real PostgreSQL (sdk/python/tests_pg:
// the saga step service's PostgreSQL inbox, TCC on PostgreSQL with its
// TTL), each one vitest test (test/process/pytest-kit.ts), against a
// PostgreSQL 15 started here (test/pg/harness.ts).
import { afterAll } from 'vitest';
import { describePytest } from '../process/pytest-kit.ts';
import { type PgServer, startPostgres } from './harness.ts';

let server: PgServer | null = null;
afterAll(async () => {
  await server?.stop();
});

describePytest('sdk/python pytest on PostgreSQL', 'tests_pg', {
  setUp: async () => {
    server = await startPostgres({ databases: ['pytest'] });
    return { VERDICT_TEST_PG_URL: server.url('pytest') };
  },
});
