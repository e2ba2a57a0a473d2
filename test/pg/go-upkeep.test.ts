// The Go PostgreSQL resource's upkeep on a real PostgreSQL 15
// (sdk/go/participant/postgres/upkeep.go): its Go tests built with
// -tags pgtest, run against a database of the server started here. Work
// begun with Work and never prepared is rolled back after its timeout and
// not taken up again; markers past their retention are deleted (this
// participant's only); a prepared transaction past StuckAfter is alerted on.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GO, GO_SDK, goEnv, goVendor } from '../process/go-procs.ts';
import { preparedXacts, startPostgres, type PgServer } from './harness.ts';

let server: PgServer | null = null;
let url = '';
beforeAll(async () => {
  goVendor();
  server = await startPostgres({ databases: ['goupkeep'] });
  url = server.url('goupkeep');
}, 300_000);
afterAll(async () => {
  await server?.stop();
});

/** lib/pq's sslmode is "require" unless told: the test server is plaintext on loopback. */
const plaintext = (u: string): string => `${u}${u.includes('?') ? '&' : '?'}sslmode=disable`;

function goTest(name: string): { status: number | null; output: string } {
  const r = spawnSync(GO, ['test', '-tags', 'pgtest', '-count=1', '-v', '-run', `^${name}$`, './participant/postgres'], {
    cwd: GO_SDK,
    encoding: 'utf8',
    env: { ...goEnv(), VERDICT_TEST_PG_URL: plaintext(url) },
    timeout: 300_000,
  });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}`.slice(-4_000) };
}

describe('the Go PostgreSQL resource upkeep', () => {
  for (const name of [
    'TestOpenWorkIsRolledBackAfterItsTimeoutAndNotTakenUpAgain',
    'TestUpkeepDeletesOldMarkersAndAlertsOnStuckPreparedTransactions',
    'TestParticipantsStartingTogetherAllCreateTheirTables',
  ]) {
    it(name, async () => {
      const r = goTest(name);
      expect(r.output).toContain(`--- PASS: ${name}`);
      expect(r.status, r.output).toBe(0);
      expect(await preparedXacts(url, 'verdict:upkeep:')).toEqual([]);
    }, 300_000);
  }
});
