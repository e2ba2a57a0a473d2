// The Go SDK's tests that need a real PostgreSQL 15, built with -tags pgtest
// and given a database of the server started here: the PostgreSQL
// resource's upkeep (sdk/go/participant/postgres/upkeep.go: work begun with
// Work and never prepared rolled back after its timeout and not taken up
// again; markers past their retention deleted, this participant's only; a
// prepared transaction past StuckAfter alerted on; participants starting at
// once on one database), the saga step service's PostgreSQL inbox
// (sdk/go/saga/postgres.go: the inbox rules; an action and its compensation
// arriving together ordered by the step's lock), and the TCC resource's
// reserve TTL for a YES, read from its barrier row (sdk/go/tcc/postgres.go).
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

function goTest(pkg: string, name: string): { status: number | null; output: string } {
  const r = spawnSync(GO, ['test', '-tags', 'pgtest', '-count=1', '-v', '-run', `^${name}$`, pkg], {
    cwd: GO_SDK,
    encoding: 'utf8',
    env: { ...goEnv(), VERDICT_TEST_PG_URL: plaintext(url) },
    timeout: 300_000,
  });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}`.slice(-4_000) };
}

describe('the Go SDK on PostgreSQL (-tags pgtest)', () => {
  for (const [pkg, name] of [
    ['./participant/postgres', 'TestOpenWorkIsRolledBackAfterItsTimeoutAndNotTakenUpAgain'],
    ['./participant/postgres', 'TestUpkeepDeletesOldMarkersAndAlertsOnStuckPreparedTransactions'],
    ['./participant/postgres', 'TestParticipantsStartingTogetherAllCreateTheirTables'],
    ['./saga', 'TestThePgInboxKeepsTheInboxRules'],
    ['./saga', 'TestAnActionAndItsCompensationTogetherAreOrdered'],
    ['./tcc', 'TestReserveTTLIsReadFromTheBarrierRow'],
  ]) {
    it(`${pkg} ${name}`, async () => {
      const r = goTest(pkg, name);
      expect(r.output).toContain(`--- PASS: ${name}`);
      expect(r.status, r.output).toBe(0);
      expect(await preparedXacts(url, 'verdict:upkeep:')).toEqual([]);
    }, 300_000);
  }
});
