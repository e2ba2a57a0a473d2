// The Go SDK's heuristic tools on a real PostgreSQL 15
// (sdk/go/participant/postgres/heuristic.go, docs/go.md): a Go PostgreSQL
// participant process votes YES and stays prepared (its cluster, the
// conformance suite's fake one, has no decision); an operator commits it by
// hand with `verdict-pg-resolve` (sdk/go/cmd), which records the act before
// COMMIT PREPARED, answers a repeat with the first record and refuses to
// reverse it; the participant reports the act to the cluster (R4), and the
// cluster's later contrary decision is acknowledged.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FakeCluster, Leader } from '../conformance/driver.ts';
import { killTargets, TargetProcess } from '../conformance/target.ts';
import { goPostgres } from '../conformance/targets.ts';
import { freePorts } from '../free-ports.ts';
import { buildGoDrivers } from '../process/go-procs.ts';
import { waitFor } from '../process/harness.ts';
import { preparedXacts, sql, startPostgres, type PgServer } from './harness.ts';

const WAIT_MS = 30_000;
let server: PgServer | null = null;
let cluster: FakeCluster | null = null;
let leader: Leader | null = null;
const dataDir = mkdtempSync(join(tmpdir(), 'verdict-go-heuristic-'));
const bin = mkdtempSync(join(tmpdir(), 'verdict-go-heuristic-bin-'));
afterAll(async () => {
  leader?.close();
  await killTargets();
  cluster?.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(bin, { recursive: true, force: true });
});

/** lib/pq's sslmode is "require" unless told: the test server is plaintext on loopback. */
const plaintext = (url: string): string => `${url}${url.includes('?') ? '&' : '?'}sslmode=disable`;

const resolve = (url: string, args: string[]) =>
  spawnSync(
    join(bin, 'verdict-pg-resolve'),
    ['--url', plaintext(url), '--cluster-id', 'heur', '--id', 'shop', ...args],
    { encoding: 'utf8', timeout: 60_000 },
  );

describe('Go heuristic resolution on PostgreSQL', () => {
  it('R4: an act by hand is recorded before it is done, never reversed, reported to the cluster, and the later decision is acknowledged', async () => {
    buildGoDrivers(bin, ['conformance', 'cmd/verdict-pg-resolve']);
    server = await startPostgres({ databases: ['heur'] });
    const url = server.url('heur');
    await sql(url, 'CREATE TABLE conformance_kv (k text PRIMARY KEY, v text NOT NULL)');
    cluster = await FakeCluster.start({ clusterId: 'heur', nodeIds: ['n1'] });
    const [port, probe] = await freePorts(2);
    const env = {
      clusterId: 'heur',
      participantId: 'shop',
      nodes: [cluster.leader.address],
      listen: `127.0.0.1:${port}`,
      dataDir,
      probe: `127.0.0.1:${probe}`,
    };
    const target = goPostgres(join(bin, 'conformance'), url);
    const proc = new TargetProcess(target, env);
    await waitFor(
      'the participant registers',
      WAIT_MS,
      async () => (cluster?.registrationsOf('shop').length ? true : undefined),
      () => proc.output,
    );
    leader = new Leader(env.listen, 'heur', 'shop');

    const vote = await leader.prepare('t-stuck', target.write('k1', 'by-hand'));
    expect(vote.body?.vote).toBe('VOTE_YES');
    expect((await preparedXacts(url, 'verdict:heur:shop:')).map((p) => p.gid)).toEqual(['verdict:heur:shop:t-stuck']);

    // Nothing to do without an operator and a reason, and for a transaction not prepared.
    expect(resolve(url, ['--txn', 't-stuck', '--commit', '--operator', ' ', '--reason', 'x']).stderr).toMatch(
      /the operator must be/,
    );
    expect(resolve(url, ['--txn', 't-other', '--commit', '--operator', 'alice', '--reason', 'locks']).stderr).toMatch(
      /is not prepared in this database/,
    );
    expect(
      resolve(url, ['--txn', 't-stuck', '--commit', '--rollback', '--operator', 'alice', '--reason', 'locks']).status,
    ).toBe(2);

    const first = resolve(url, [
      '--txn',
      't-stuck',
      '--commit',
      '--operator',
      'alice',
      '--reason',
      'cluster unreachable, locks held',
    ]);
    expect(first.status, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      txn_id: 't-stuck',
      gid: 'verdict:heur:shop:t-stuck',
      outcome: 'committed',
      operator: 'alice',
      performed: true,
    });
    expect(await preparedXacts(url, 'verdict:heur:shop:')).toEqual([]);
    expect(await sql(url, 'SELECT v FROM conformance_kv WHERE k = $1', ['k1'])).toEqual([{ v: 'by-hand' }]);
    // Repeated: the first record, nothing done again. Reversed: refused.
    const again = resolve(url, [
      '--txn',
      'verdict:heur:shop:t-stuck',
      '--commit',
      '--operator',
      'bob',
      '--reason',
      'again',
    ]);
    expect(JSON.parse(again.stdout)).toMatchObject({ operator: 'alice', performed: false });
    const reverse = resolve(url, ['--txn', 't-stuck', '--rollback', '--operator', 'bob', '--reason', 'undo']);
    expect(reverse.status).toBe(1);
    expect(reverse.stderr).toMatch(/already resolved by hand as committed by alice; an act is not reversed/);

    // The participant reports it (once), and marks it reported.
    await waitFor(
      'the act reported to the cluster',
      WAIT_MS,
      async () => (cluster?.heuristicReports.length ? true : undefined),
      () => proc.output,
    );
    expect(cluster.heuristicReports[0]).toMatchObject({
      cluster_id: 'heur',
      participant_id: 'shop',
      txn_id: 't-stuck',
      outcome: 'OUTCOME_COMMITTED',
      gid: 'verdict:heur:shop:t-stuck',
      operator: 'alice',
    });
    await waitFor('the act marked reported', WAIT_MS, async () =>
      (await sql(url, 'SELECT 1 FROM verdict_heuristics WHERE reported_at IS NOT NULL')).length === 1
        ? true
        : undefined,
    );
    expect(cluster.heuristicReports.length).toBe(1);

    // The cluster's decision, here the contrary one, is acknowledged: the conflict is the cluster's to record from the
    // report.
    expect((await leader.decide('t-stuck', false)).code).toBe(0);
    expect(await sql(url, 'SELECT v FROM conformance_kv WHERE k = $1', ['k1'])).toEqual([{ v: 'by-hand' }]);
    await proc.kill();
  }, 400_000);
});
