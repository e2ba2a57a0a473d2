// What a new user meets in the first hour, on real processes: `verdict
// status` shows each node's pid and one row per node; an unreachable cluster
// is reported within --timeout-ms naming every endpoint; a typo in a flag is
// refused; `participant remove` is refused while the participant has a
// transaction in doubt and done through the log otherwise; `txn resolve` of
// an id the cluster never saw needs --force-unknown; every command about an
// unknown transaction exits 1; a participant with a wrong --cluster-id stops
// with one line while one that cannot reach the cluster keeps retrying.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { EXIT_REGISTRATION_REFUSED } from '../../src/cli/participant.ts';
import { BIN, Cluster, freePorts, ROOT, runCli, tempDir, useProcessCleanup, waitFor } from './harness.ts';
import { startParticipants, startUnackingParticipant, type Participants } from './ops-helpers.ts';

useProcessCleanup();

const FIRST_LEADER_WAIT_MS = 60_000;
/**
 * A CLI process starts slowly on a loaded machine (tsx compiles at start): generous, and never the thing being
 * measured.
 */
const CLI_WAIT_MS = 60_000;
let c: Cluster;
let parts: Participants;
let stuck: Awaited<ReturnType<typeof startUnackingParticipant>>;
let client: VerdictClient;

beforeAll(async () => {
  c = await Cluster.start({ nodes: 1 });
  await c.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
  parts = await startParticipants(c, ['shop']);
  stuck = await startUnackingParticipant();
  client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
  await client.registerParticipant('stuck', stuck.address);
}, 120_000);

afterAll(async () => {
  client?.close();
  stuck?.stop();
  await parts?.stop();
});

const ep = (): string[] => ['--endpoints', c.nodes[0].address];
const cli = (args: string[]) => runCli(args, { timeoutMs: CLI_WAIT_MS });

describe('the first hour', { timeout: 180_000 }, () => {
  it("status shows each node's pid, and one row per node when an address is given by another name (localhost)", async () => {
    const node = c.nodes[0];
    const port = node.address.slice(node.address.lastIndexOf(':') + 1);
    const r = await cli(['status', '--json', '--endpoints', `localhost:${port}`]);
    expect(r.code, r.stderr).toBe(0);
    const st = JSON.parse(r.stdout) as { nodes: { id: string; pid: number; address: string }[] };
    expect(st.nodes).toHaveLength(1);
    expect(st.nodes[0]).toMatchObject({ id: 'n1', pid: node.child?.pid });
    const table = await cli(['status', ...ep()]);
    expect(table.stdout).toMatch(
      new RegExp(`^n1 +${node.address.replace(/\./g, '\\.')} +${node.child?.pid} +leader`, 'm'),
    );
  });

  it('an unreachable cluster is reported within --timeout-ms, naming every endpoint, by status and by SDK commands alike', async () => {
    const [a, b] = await freePorts(2);
    const dead = `127.0.0.1:${a},127.0.0.1:${b}`;
    const st = await cli(['status', '--endpoints', dead, '--timeout-ms', '2000']);
    expect(st.code).toBe(1);
    expect(st.stderr).toMatch(/^verdict: cannot reach the cluster: tried /);
    for (const port of [a, b]) expect(st.stderr).toContain(`127.0.0.1:${port} (connection refused)`);
    // The SDK alone would retry for its default 10 s: the reachability check answers first, within 2 s.
    const list = await cli(['txn', 'list', '--endpoints', dead]);
    expect(list.code).toBe(1);
    expect(list.stderr).toMatch(/^verdict: cannot reach the cluster: tried /);
    for (const port of [a, b]) expect(list.stderr).toContain(`127.0.0.1:${port} (connection refused)`);
  });

  it('refuses an unknown flag with the valid ones instead of ignoring it (status --jsn)', async () => {
    const r = await cli(['status', '--jsn', ...ep()]);
    expect(r.code).toBe(64);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'verdict: unknown flag "--jsn" for verdict status (did you mean --json?); valid flags: --json, --endpoints, --timeout-ms, --ca, --cert, --key, --insecure, --help\n',
    );
  });

  it('participant remove is refused while the participant has a transaction in doubt (listed), and unregisters an idle one through the log', async () => {
    const t = await (await client.begin({ timeoutMs: 5_000 }))
      .enlist('shop', { set: { a: '1' } })
      .enlist('stuck', {})
      .commit();
    expect(t.outcome).toBe('COMMITTED');
    // The leader's connection, not the last contact alone, says whether a participant is there.
    const listed = await cli(['participants', '--json', ...ep()]);
    const conn = Object.fromEntries(
      (JSON.parse(listed.stdout) as { participantId: string; connection: string }[]).map((p) => [
        p.participantId,
        p.connection,
      ]),
    );
    expect(conn).toEqual({ shop: 'connected', stuck: 'connected' });
    const help = await cli(['participants', '--help']);
    expect(help.stdout).toMatch(/verdict participants \[--json\]/);
    expect(help.stdout).toMatch(/verdict participant remove ID/);
    expect(help.stdout).not.toMatch(/verdict txn commit/);
    const refused = await cli(['participant', 'remove', 'stuck', ...ep()]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(`FAILED_PRECONDITION: participant stuck has 1 transaction\\(s\\) in doubt: ${t.txnId}\\.`),
    );
    expect((await client.participants()).map((p) => p.participantId).sort()).toEqual(['shop', 'stuck']);

    // shop acknowledged its DECISION: nothing holds it.
    await waitFor('shop to acknowledge', 30_000, async () =>
      (await client.transactions({ txnId: t.txnId }))[0]?.participants.find((p) => p.participantId === 'shop')?.acked
        ? true
        : undefined,
    );
    const removed = await cli(['participant', 'remove', 'shop', ...ep()]);
    expect([removed.code, removed.stdout], removed.stderr).toEqual([0, 'removed participant shop\n']);
    expect((await client.participants()).map((p) => p.participantId)).toEqual(['stuck']);
    const again = await cli(['participant', 'remove', 'shop', '--json', ...ep()]);
    expect([again.code, JSON.parse(again.stdout)]).toEqual([0, { participantId: 'shop', removed: false, owed: [] }]);
    // A transaction naming a removed participant is refused, as for any unknown participant.
    const after = await (await client.begin({ timeoutMs: 5_000 }))
      .enlist('shop', { set: { b: '1' } })
      .commit()
      .then(
        () => null,
        (e: unknown) => e as Error,
      );
    expect(after?.message).toMatch(/participant shop is not registered/);
  });

  it('txn resolve refuses an id the cluster never saw unless --force-unknown; txn outcome and txn show of an unknown id both exit 1', async () => {
    const typo = await cli(['txn', 'resolve', 'no-such-txn', '--abort', '--reason', 'typo test', ...ep()]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(
      /FAILED_PRECONDITION: the cluster has no record of transaction no-such-txn .*add --force-unknown/,
    );
    const heuristic = await cli(['txn', 'list', '--heuristic', ...ep()]);
    expect(heuristic.stdout).not.toMatch(/no-such-txn/);

    const outcome = await cli(['txn', 'outcome', 'never-heard-of', ...ep()]);
    expect([outcome.code, outcome.stdout]).toEqual([
      1,
      'UNKNOWN never-heard-of: never heard of, or forgotten after every participant acknowledged it\n',
    ]);
    const show = await cli(['txn', 'show', 'never-heard-of', ...ep()]);
    expect(show.code).toBe(1);

    const forced = await cli([
      'txn',
      'resolve',
      'no-such-txn',
      '--abort',
      '--reason',
      'really meant',
      '--force-unknown',
      ...ep(),
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/^ABORTED no-such-txn/);
    const known = await cli(['txn', 'outcome', 'no-such-txn', ...ep()]);
    expect(known.code).toBe(0);
  });

  it('a participant with a wrong --cluster-id stops with one line and exit 78; one that cannot reach the cluster retries with growing backoff', async () => {
    const [p1, p2, dead] = await freePorts(3);
    const dir = tempDir();
    const wrong = await runCli(
      [
        'participant',
        '--id',
        'lost',
        '--listen',
        `127.0.0.1:${p1}`,
        '--data',
        join(dir, 'lost'),
        '--cluster-id',
        'not-this-one',
        ...ep(),
        '--log-level',
        'silent',
      ],
      {
        timeoutMs: CLI_WAIT_MS,
      },
    );
    expect(wrong.code).toBe(EXIT_REGISTRATION_REFUSED);
    expect(wrong.stderr).toBe(
      `verdict: the cluster refused to register participant lost: FAILED_PRECONDITION: participant belongs to cluster "not-this-one", this is cluster "${c.clusterId}"; give the cluster's id with --cluster-id (the nodes' "clusterId")\n`,
    );

    const child = spawn(
      process.execPath,
      [
        BIN,
        'participant',
        '--id',
        'patient',
        '--listen',
        `127.0.0.1:${p2}`,
        '--data',
        join(dir, 'patient'),
        '--endpoints',
        `127.0.0.1:${dead}`,
        '--insecure',
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, VERDICT_LOG_FORMAT: 'json' },
      },
    );
    let err = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    try {
      const waits = await waitFor(
        'three registration retries with their backoff',
        CLI_WAIT_MS,
        async () => {
          const ws = err
            .split('\n')
            .filter((l) => l.includes('registration with the cluster failed; retrying'))
            .map((l) => JSON.parse(l) as { retryInMs: number; reason: string });
          return ws.length >= 3 ? ws : undefined;
        },
        () => err.slice(-2_000),
      );
      expect(waits.slice(0, 3).map((w) => [w.retryInMs, w.reason])).toEqual([
        [500, 'node-down'],
        [1_000, 'node-down'],
        [2_000, 'node-down'],
      ]);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });
});
