// Protocol errors that speak (issue 41, item 6): a participant written from
// the protos by hand that says at registration it serves Status but lacks it
// (gRPC answers UNIMPLEMENTED). Its transaction commits in parallel; every
// node is armed with the fault point crash-before-explicit-commit, so the
// leader answers COMMITTED, proposes nothing more and SIGKILLs itself. The
// new leader recovers the staged transaction by asking Status, and the
// participant answers UNIMPLEMENTED: the new leader logs a warn line naming
// the participant and the method, counts it in
// verdict_participant_unimplemented_total{participant,method}, and
// `verdict txn show` names the method on the participant's row.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { FAULT_POINT_ENV } from '../../src/node/fault-point.ts';
import { Cluster, runCli, useProcessCleanup, waitFor } from './harness.ts';
import { startOldParticipant } from './old-participant.ts';
import { scrape, value } from './ops-helpers.ts';

useProcessCleanup();

const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

describe('a participant that answers UNIMPLEMENTED to Status', () => {
  it('is named on the new leader: a warn line with participant and method, verdict_participant_unimplemented_total{method="Status"}, and the PROBLEM column of txn show', async () => {
    const c = await Cluster.create({ nodes: 3, logLevel: 'warn', metrics: true });
    // The nodes copy the environment when they start.
    process.env[FAULT_POINT_ENV] = 'crash-before-explicit-commit';
    try {
      for (const n of c.nodes) n.start();
    } finally {
      delete process.env[FAULT_POINT_ENV];
    }
    const { node: leader } = await c.waitForLeader();
    const addresses = c.nodes.map((n) => n.address);
    // It asks about a prepared transaction only after an hour: until then only Status could tell recovery it is
    // prepared.
    const p = await startOldParticipant(c.clusterId, 'handmade', addresses, {
      serves: ['Status'],
      askAfterMs: 3_600_000,
    });
    stops.push(() => p.stop());
    const client = new VerdictClient({ insecure: true, endpoints: addresses, callTimeoutMs: 30_000 });
    stops.push(() => client.close());

    const r = await client.transaction({ timeoutMs: 20_000, parallelCommit: true }).enlist('handmade').commit();
    expect(r.outcome).toBe('COMMITTED');
    await waitFor('the leader to be SIGKILLed by its fault point', 30_000, async () =>
      leader.lastExit?.signal === 'SIGKILL' ? true : undefined,
    );
    const { node: next } = await c.waitForLeader({ notId: leader.id });

    const line = await waitFor('the warn line naming participant and method', 60_000, async () =>
      readFileSync(next.logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes('answered UNIMPLEMENTED to Status')),
    );
    const logged = JSON.parse(line) as { level: number; participantId: string; method: string; txnId: string };
    expect(logged).toMatchObject({ level: 40, participantId: 'handmade', method: 'Status', txnId: r.txnId });
    const counted = await waitFor('the counter', 30_000, async () => {
      const n = value(
        (await scrape(next.metricsAddress as string)).samples,
        'verdict_participant_unimplemented_total',
        { participant: 'handmade', method: 'Status' },
      );
      return n >= 1 ? n : undefined;
    });
    // Recovery asks again with backoff; the log says so at most once a minute per participant and method.
    const lines = readFileSync(next.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('answered UNIMPLEMENTED to Status')).length;
    expect(lines).toBe(1);

    const show = await runCli(['txn', 'show', r.txnId, '--endpoints', addresses.join(',')]);
    expect(show.stdout).toMatch(/PROBLEM/);
    expect(show.stdout).toMatch(/handmade\s+-\s+no\s+\d+\s+does not implement Status \(answers UNIMPLEMENTED\)/);
    const json = JSON.parse(
      (await runCli(['txn', 'show', r.txnId, '--json', '--endpoints', addresses.join(',')])).stdout,
    ) as { participants: { participantId: string; unimplemented: string }[] };
    expect(json.participants).toEqual([
      expect.objectContaining({ participantId: 'handmade', unimplemented: 'Status' }),
    ]);
    expect(p.inDoubt()).toEqual([r.txnId]);
    console.log(
      `staged ${r.txnId} under recovery on ${next.id}: ${counted} Status call(s) answered UNIMPLEMENTED, one warn line; txn show:\n${show.stdout}`,
    );
  }, 300_000);
});
