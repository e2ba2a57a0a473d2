// What the database participants' tests (test/pg, test/mysql) share: the
// runtimes, gRPC clients and data directories a file starts and must clean
// up, and the heuristic scenario's two halves (a participant whose cluster is
// unreachable; the cluster coming up and recording HEURMIX).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { expect } from 'vitest';
import { startParticipant, type ParticipantOptions, type ParticipantRuntime } from '../src/participant/runtime.ts';
import { ParticipantClient } from '../src/transport/participant-rpc.ts';
import { waitFor } from './pg/harness.ts';
import { Cluster, runCli } from './process/harness.ts';

export const DEADLINE_MS = 5_000;
/**
 * A CLI process's bound: starting one takes seconds on a loaded two-core machine, so the bound is generous (and still a
 * bound).
 */
export const CLI = { timeoutMs: 90_000 };
export const ROOT = join(import.meta.dirname, '..');

/** Everything a test file starts, stopped and deleted by cleanup() (call it in afterEach). */
export class Held<R> {
  readonly runtimes: ParticipantRuntime<R>[] = [];
  private readonly clients: ParticipantClient[] = [];
  private readonly dirs: string[] = [];

  constructor(private readonly dirPrefix: string) {}

  async dataDir(): Promise<string> {
    const d = await mkdtemp(join(tmpdir(), this.dirPrefix));
    this.dirs.push(d);
    return d;
  }

  client(address: string): ParticipantClient {
    const c = new ParticipantClient(address);
    this.clients.push(c);
    return c;
  }

  /**
   * A participant runtime with the database resource given, against a (fake) cluster at endpoint, with quick retries.
   */
  async start(o: {
    clusterId: string;
    participantId: string;
    endpoint: string;
    dataDir: string;
    resource: Pick<ParticipantOptions, 'postgres' | 'mysql'>;
    metricsListen?: string;
  }): Promise<ParticipantRuntime<R>> {
    const r = (await startParticipant({
      clusterId: o.clusterId,
      participantId: o.participantId,
      listen: '127.0.0.1:0',
      endpointsOfCluster: [o.endpoint],
      dataDir: o.dataDir,
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 50,
      metricsListen: o.metricsListen,
      engine: { askBackoffMinMs: 20, askBackoffMaxMs: 100 },
      ...o.resource,
    })) as unknown as ParticipantRuntime<R>;
    this.runtimes.push(r);
    return r;
  }

  async stop(r: ParticipantRuntime<R>): Promise<void> {
    this.runtimes.splice(this.runtimes.indexOf(r), 1);
    await r.stop();
  }

  async cleanup(): Promise<void> {
    for (const c of this.clients.splice(0)) c.close();
    await Promise.all(this.runtimes.splice(0).map((r) => r.stop()));
    for (const d of this.dirs.splice(0)) await rm(d, { recursive: true, force: true });
  }
}

export interface UnreachableClusterParticipant<R> {
  cluster: Cluster;
  rt: ParticipantRuntime<R>;
  participant: ParticipantClient;
  close(): Promise<void>;
}

/**
 * A database participant of a one-node cluster whose node is configured but not running: the cluster is unreachable.
 */
export async function participantOfUnreachableCluster<R>(
  participantId: string,
  resource: Pick<ParticipantOptions, 'postgres' | 'mysql'>,
): Promise<UnreachableClusterParticipant<R>> {
  const cluster = await Cluster.create({ nodes: 1 });
  const dir = await mkdtemp(join(tmpdir(), `verdict-heuristic-${participantId}-`));
  const rt = (await startParticipant({
    clusterId: cluster.clusterId,
    participantId,
    listen: '127.0.0.1:0',
    endpointsOfCluster: [cluster.nodes[0].address],
    dataDir: dir,
    logger: pino({ level: 'silent' }),
    insecure: true,
    registerRetryMs: 100,
    heuristicReportIntervalMs: 200,
    engine: { inDoubtAfterMs: 200, sweepIntervalMs: 100, askBackoffMinMs: 50, askBackoffMaxMs: 300 },
    ...resource,
  })) as unknown as ParticipantRuntime<R>;
  const participant = new ParticipantClient(rt.address);
  return {
    cluster,
    rt,
    participant,
    async close() {
      participant.close();
      await rt.stop();
      await cluster.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `verdict participant resolve` is idempotent: the same act again (args + --commit) is a no-op; the contrary one
 * (--abort) is refused.
 */
export async function expectResolveRepeatNoopContraryRefused(
  repeatArgs: string[],
  contraryArgs: string[],
): Promise<void> {
  const again = await runCli([...repeatArgs, '--commit'], CLI);
  expect([again.code, again.stdout]).toEqual([
    0,
    expect.stringMatching(/already resolved by hand \(COMMITTED\) by alice@db1/),
  ]);
  const contrary = await runCli([...contraryArgs, '--abort'], CLI);
  expect(contrary.code).toBe(1);
  expect(contrary.stderr).toMatch(/already resolved by hand as COMMITTED/);
}

/**
 * After a heuristic COMMIT by hand of T while the cluster was down: the
 * cluster comes up, never having decided T, so the report (or the
 * participant's own question) makes it log ABORT first (R3); the act is then
 * HEURMIX, listed by `verdict txn list --heuristic` and `txn show`; the
 * participant learns ABORT and acknowledges it (the act is on record).
 */
export async function expectHeurmixOnceClusterUp<R>(o: {
  h: UnreachableClusterParticipant<R>;
  txnId: string;
  participantId: string;
  gid: string;
  reported: () => Promise<boolean>;
}): Promise<void> {
  const { cluster, rt } = o.h;
  cluster.nodes[0].start();
  await cluster.waitForLeader();
  await waitFor('the heuristic act reported and acknowledged', o.reported, 60_000);
  const listed = await runCli(['txn', 'list', '--heuristic', '--json', '--endpoints', cluster.nodes[0].address], CLI);
  expect(listed.code).toBe(0);
  const txns = JSON.parse(listed.stdout) as {
    txnId: string;
    outcome: string;
    heuristics: {
      participantId: string;
      kind: string;
      outcome: string;
      decision: string;
      operator: string;
      gid: string;
    }[];
  }[];
  const t = txns.find((x) => x.txnId === o.txnId);
  expect(t?.outcome).toBe('ABORTED');
  expect(t?.heuristics).toEqual([
    expect.objectContaining({
      participantId: o.participantId,
      kind: 'HEURMIX',
      outcome: 'COMMITTED',
      decision: 'ABORTED',
      operator: 'alice@db1',
      gid: o.gid,
    }),
  ]);
  const shown = await runCli(['txn', 'show', o.txnId, '--endpoints', cluster.nodes[0].address], CLI);
  expect(shown.stdout).toMatch(/HEURMIX/);
  await waitFor('the participant to settle T', () => rt.engine.stateOf(o.txnId) === 'ABORTED', 60_000);
}
