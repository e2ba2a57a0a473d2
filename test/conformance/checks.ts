// The participant conformance suite: every rule of docs/protocol.md that a
// participant must keep, checked from the outside over real gRPC against a
// participant process (a Target), with this process playing the cluster
// (driver.ts). Each check has a name; runConformance() answers one result per
// name, so a participant that breaks a rule fails that rule's check, by name.
//
// To keep the run short, the checks share processes: phases run in order on
// one participant (started once, killed with SIGKILL and restarted twice),
// and a second one under mutual TLS starts at the same time. A check whose
// phase could not run fails with the reason.
import * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../free-ports.ts';
import { FakeCluster, statusName } from './driver.ts';
import type { Target, TargetEnv } from './target.ts';
import {
  CHECKS,
  type CheckResult,
  type Phase,
  type Run,
  Subject,
  ASK_WITHIN_MS,
  eventually,
  expectCode,
  expectStatus,
  expectThat,
  expectVote,
  show,
} from './check-kit.ts';
import { killPhases } from './kill-checks.ts';
import { tlsPhase } from './tls-checks.ts';

export { CHECK_NAMES, CHECKS, type CheckResult, type Phase } from './check-kit.ts';

/** Runs the checks of `phases` (all by default) against `target`; one result per check of those phases. */
export async function runConformance(
  target: Target,
  phases: Phase[] = Object.keys(CHECKS) as Phase[],
): Promise<CheckResult[]> {
  const results = new Map<string, CheckResult>();
  let subject: Subject | null = null;
  const run: Run = async (name, fn) => {
    try {
      await fn();
      results.set(name, { name, ok: true, error: '' });
    } catch (err) {
      const tail = subject?.tail() ?? '';
      results.set(name, { name, ok: false, error: `${(err as Error).message}${tail}` });
    }
  };
  const wanted = (p: Phase): boolean => phases.includes(p);
  const names = (ps: Phase[]): string[] => ps.filter(wanted).flatMap((p) => Object.values(CHECKS[p]));
  const failAll = (ps: Phase[], why: string): void => {
    for (const n of names(ps)) if (!results.has(n)) results.set(n, { name: n, ok: false, error: why });
  };

  const root = mkdtempSync(join(tmpdir(), 'verdict-conformance-'));
  const clusterId = `conf-${randomBytes(3).toString('hex')}`;
  const id = `p-${randomBytes(3).toString('hex')}`;
  const [listen, probe, tlsListen, tlsProbe] = (await freePorts(4)).map((p) => `127.0.0.1:${p}`);
  const plainPhases = (
    ['registration', 'prepare', 'decision', 'status', 'exchange', 'recovery', 'badInput'] as Phase[]
  ).filter(wanted);
  let tlsRun: Promise<void> = Promise.resolve();
  const stops: (() => Promise<void> | void)[] = [];
  try {
    if (wanted('tls'))
      tlsRun = tlsPhase(
        target,
        { root, clusterId, id: `${id}-tls`, listen: tlsListen, probe: tlsProbe },
        run,
        stops,
      ).catch((err: Error) => failAll(['tls'], err.message));
    if (plainPhases.length > 0) {
      const cluster = await FakeCluster.start({ clusterId, nodeIds: ['n1', 'n2'] });
      stops.push(() => cluster.close());
      // Only the follower is configured: the leader is reachable through its redirect alone.
      const env: TargetEnv = {
        clusterId,
        participantId: id,
        nodes: [cluster.nodes[0].address],
        listen,
        dataDir: join(root, 'plain'),
        probe,
      };
      subject = new Subject(target, env, cluster);
      const s = subject;
      stops.push(() => s.stop());
      try {
        await target.setup?.(env);
        cluster.refuseRegistrations = 1;
        await s.start();
      } catch (err) {
        failAll(plainPhases, `the participant did not start and register: ${(err as Error).message}`);
        throw err;
      }
      await plainChecks(s, run, wanted);
    }
    await tlsRun;
  } catch (err) {
    failAll(plainPhases, (err as Error).message);
    await tlsRun;
  } finally {
    for (const stop of stops.reverse()) await stop();
    await target.teardown?.();
    rmSync(root, { recursive: true, force: true });
  }
  failAll(phases, 'not run');
  return names(phases).map((n) => results.get(n) as CheckResult);
}

async function plainChecks(s: Subject, run: Run, wanted: (p: Phase) => boolean): Promise<void> {
  const { leader, cluster, env } = s;
  const C = CHECKS;
  // A transaction left prepared with no DECISION from the start: the participant must ask about it by itself.
  const lonely = s.txn('lonely');
  let lonelyYesAtMs = 0;
  if (wanted('recovery')) {
    const v = await leader.prepare(lonely, s.write(`k-${lonely}`, 'lonely'));
    if (v.body?.vote === 'VOTE_YES') lonelyYesAtMs = Date.now();
  }

  if (wanted('registration')) {
    await run(C.registration.follows, async () => {
      expectThat(cluster.redirected > 0, 'the configured follower was never asked');
      expectThat(cluster.refuseRegistrations === 0, 'the starting node was never asked');
      expectThat(
        cluster.registrationsOf(env.participantId).every((r) => r.node === cluster.leader.id),
        'registered elsewhere than at the leader',
      );
    });
    await run(C.registration.fields, async () => {
      const r = cluster.registrationsOf(env.participantId)[0];
      expectThat(r.cluster_id === env.clusterId, `cluster_id ${r.cluster_id}`);
      expectThat(r.endpoint === env.listen, `endpoint ${r.endpoint}, serving at ${env.listen}`);
      expectThat(r.resource_kind === s.target.kind, `resource_kind "${r.resource_kind}", expected "${s.target.kind}"`);
      for (const m of ['Exchange', 'Status'])
        expectThat(r.serves.includes(m), `serves ${JSON.stringify(r.serves)} lacks ${m}`);
    });
  }

  if (wanted('prepare')) {
    await run(C.prepare.yes, async () => {
      const t = s.txn('yes');
      expectVote(await leader.prepare(t, s.write(`k-${t}`, 'v')), 'VOTE_YES', 'PREPARE');
      expectVote(await leader.prepare(t, s.write(`k-${t}`, 'v')), 'VOTE_YES', 'the repeated PREPARE');
      expectCode(await leader.decide(t, false), grpc.status.OK, 'its ABORT');
    });
    await run(C.prepare.no, async () => {
      const t = s.txn('no');
      expectVote(await leader.prepare(t, s.refuse()), 'VOTE_NO', 'PREPARE of work that cannot be done');
      expectVote(await leader.prepare(t, s.refuse()), 'VOTE_NO', 'the repeated PREPARE');
    });
  }

  if (wanted('decision')) {
    await run(C.decision.commit, async () => {
      const t = s.txn('commit');
      const key = `k-${t}`;
      expectVote(await leader.prepare(t, s.write(key, 'one')), 'VOTE_YES', 'PREPARE');
      expectCode(await leader.decide(t, true), grpc.status.OK, 'COMMIT');
      await s.expectValue(key, 'one', 'after the COMMIT');
      await s.commitOne(key, 'two', 'a later transaction on the same key');
      expectCode(await leader.decide(t, true), grpc.status.OK, 'the duplicate COMMIT');
      await s.expectValue(key, 'two', 'the duplicate COMMIT applied nothing again', 2_000);
    });
    await run(C.decision.abort, async () => {
      const t = s.txn('abort');
      const key = `k-${t}`;
      expectVote(await leader.prepare(t, s.write(key, 'no')), 'VOTE_YES', 'PREPARE');
      expectCode(await leader.decide(t, false), grpc.status.OK, 'ABORT');
      expectCode(await leader.decide(t, false), grpc.status.OK, 'the duplicate ABORT');
      await s.commitOne(key, 'after', 'a transaction on the released key');
      await s.expectValue(key, 'after', 'the aborted write is not there');
    });
    await run(C.decision.abortFirst, async () => {
      const t = s.txn('abort-first');
      expectCode(await leader.decide(t, false), grpc.status.OK, 'ABORT before PREPARE');
      expectVote(await leader.prepare(t, s.write(`k-${t}`, 'v')), 'VOTE_NO', 'the PREPARE after its ABORT');
    });
    await run(C.decision.commitFirst, async () => {
      const t = s.txn('commit-first');
      expectCode(
        await leader.decide(t, true),
        grpc.status.FAILED_PRECONDITION,
        'COMMIT of a transaction never prepared',
      );
    });
    await run(C.decision.final, async () => {
      const c = await s.commitOne(`k-${s.txn('final')}`, 'v', 'a committed transaction');
      expectCode(await leader.decide(c, false), grpc.status.FAILED_PRECONDITION, 'ABORT of a committed transaction');
      const a = s.txn('final-abort');
      expectVote(await leader.prepare(a, s.write(`k-${a}`, 'v')), 'VOTE_YES', 'PREPARE');
      expectCode(await leader.decide(a, false), grpc.status.OK, 'ABORT');
      expectCode(await leader.decide(a, true), grpc.status.FAILED_PRECONDITION, 'COMMIT of an aborted transaction');
    });
    await run(C.decision.reordered, async () => {
      const ts = [s.txn('r'), s.txn('r'), s.txn('r')];
      for (const t of ts) expectVote(await leader.prepare(t, s.write(`k-${t}`, t)), 'VOTE_YES', `PREPARE of ${t}`);
      expectCode(await leader.decide(ts[2], true), grpc.status.OK, 'the last one’s COMMIT first');
      expectCode(await leader.decide(ts[0], false), grpc.status.OK, 'the first one’s ABORT');
      expectCode(await leader.decide(ts[1], true), grpc.status.OK, 'the middle one’s COMMIT last');
      await s.expectValue(`k-${ts[2]}`, ts[2], 'the last one committed');
      await s.expectValue(`k-${ts[1]}`, ts[1], 'the middle one committed');
      await s.expectValue(`k-${ts[0]}`, null, 'the first one aborted');
    });
  }

  if (wanted('status')) {
    await run(C.status.states, async () => {
      const none = s.txn('st-none');
      expectStatus(await leader.status(none), ['TXN_STATUS_REFUSED'], 'Status of a transaction never seen');
      expectVote(await leader.prepare(none, s.write(`k-${none}`, 'v')), 'VOTE_NO', 'a PREPARE after the refusal');
      const p = s.txn('st-prepared');
      expectVote(await leader.prepare(p, s.write(`k-${p}`, 'v')), 'VOTE_YES', 'PREPARE');
      expectStatus(await leader.status(p), ['TXN_STATUS_PREPARED'], 'Status while prepared');
      expectCode(await leader.decide(p, true), grpc.status.OK, 'COMMIT');
      expectStatus(await leader.status(p), ['TXN_STATUS_COMMITTED'], 'Status once committed');
      const a = s.txn('st-aborted');
      expectVote(await leader.prepare(a, s.write(`k-${a}`, 'v')), 'VOTE_YES', 'PREPARE');
      expectCode(await leader.decide(a, false), grpc.status.OK, 'ABORT');
      expectStatus(await leader.status(a), ['TXN_STATUS_ABORTED'], 'Status once aborted');
      const first = s.txn('st-abort-first');
      expectCode(await leader.decide(first, false), grpc.status.OK, 'ABORT before PREPARE');
      expectStatus(
        await leader.status(first),
        ['TXN_STATUS_ABORTED', 'TXN_STATUS_REFUSED'],
        'Status after an ABORT before PREPARE',
      );
      const no = s.txn('st-no');
      expectVote(await leader.prepare(no, s.refuse()), 'VOTE_NO', 'PREPARE of work that cannot be done');
      expectStatus(await leader.status(no), ['TXN_STATUS_REFUSED', 'TXN_STATUS_ABORTED'], 'Status after a NO vote');
    });
  }

  if (wanted('exchange')) {
    await run(C.exchange.batch, async () => {
      const [yes, no, abortFirst, commitFirst] = [s.txn('x-yes'), s.txn('x-no'), s.txn('x-abort'), s.txn('x-commit')];
      const r = await leader.exchange([
        [
          { id: 11, prepare: leader.prepareRequest(yes, s.write(`k-${yes}`, 'x')) },
          { id: 12, prepare: leader.prepareRequest(no, s.refuse()) },
          { id: 13, decision: leader.decideRequest(abortFirst, false) },
          { id: 14, decision: leader.decideRequest(commitFirst, true) },
          {
            id: 15,
            prepare: leader.prepareRequest(s.txn('x-other'), s.write('k', 'v'), { cluster_id: 'another-cluster' }),
          },
          { id: 16 },
        ],
      ]);
      const by = new Map(r.answers.map((a) => [Number(a.id), a]));
      expectThat(r.code === grpc.status.OK, `the stream ended ${statusName(r.code)}: ${r.details}`);
      expectThat(by.size === 6, `answers for ids ${[...by.keys()].join(', ')}, expected 11 to 16`);
      expectThat(by.get(11)?.vote?.vote === 'VOTE_YES', `11: ${JSON.stringify(by.get(11))}`);
      expectThat(by.get(12)?.vote?.vote === 'VOTE_NO', `12: ${JSON.stringify(by.get(12))}`);
      expectThat(
        by.get(13)?.ack !== undefined && by.get(13)?.ack !== null,
        `13 (ABORT before PREPARE): ${JSON.stringify(by.get(13))}`,
      );
      expectThat(
        by.get(14)?.error?.code === grpc.status.FAILED_PRECONDITION,
        `14 (COMMIT never prepared): ${JSON.stringify(by.get(14))}`,
      );
      expectThat(
        by.get(15)?.error?.code === grpc.status.FAILED_PRECONDITION,
        `15 (another cluster): ${JSON.stringify(by.get(15))}`,
      );
      expectThat(
        by.get(16)?.error?.code === grpc.status.INVALID_ARGUMENT,
        `16 (no body): ${JSON.stringify(by.get(16))}`,
      );
      expectCode(
        await leader.decide(yes, false),
        grpc.status.OK,
        'a unary ABORT of the transaction prepared on the stream',
      );
    });
    await run(C.exchange.stream, async () => {
      const [a, b] = [s.txn('xs-a'), s.txn('xs-b')];
      const r = await leader.exchange([
        [{ id: 1, prepare: leader.prepareRequest(a, s.write(`k-${a}`, 'a')) }],
        [
          { id: 2, decision: leader.decideRequest(a, true) },
          { id: 3, prepare: leader.prepareRequest(b, s.write(`k-${b}`, 'b')) },
        ],
        [
          { id: 4, decision: leader.decideRequest(a, true) },
          { id: 5, prepare: leader.prepareRequest(b, s.write(`k-${b}`, 'b')) },
        ],
      ]);
      const by = new Map(r.answers.map((x) => [Number(x.id), x]));
      expectThat(
        r.code === grpc.status.OK,
        `the stream ended ${statusName(r.code)}: ${r.details} after ${r.answers.length} answers`,
      );
      expectThat(
        by.get(1)?.vote?.vote === 'VOTE_YES' &&
          by.get(3)?.vote?.vote === 'VOTE_YES' &&
          by.get(5)?.vote?.vote === 'VOTE_YES',
        `votes: ${JSON.stringify(r.answers)}`,
      );
      expectThat(!!by.get(2)?.ack && !!by.get(4)?.ack, `acks: ${JSON.stringify(r.answers)}`);
      await s.expectValue(`k-${a}`, 'a', 'committed on the stream');
      expectVote(
        await leader.prepare(b, s.write(`k-${b}`, 'b')),
        'VOTE_YES',
        'a unary PREPARE repeating one of the stream',
      );
      expectCode(
        await leader.decide(b, true),
        grpc.status.OK,
        'a unary COMMIT of a transaction prepared on the stream',
      );
      await s.expectValue(`k-${b}`, 'b', 'committed by the unary call');
    });
  }

  if (wanted('badInput')) {
    await run(C.badInput.identity, async () => {
      const t = s.txn('bad-id');
      for (const over of [{ cluster_id: 'another-cluster' }, { participant_id: 'another-participant' }]) {
        const what = JSON.stringify(over);
        expectCode(
          await leader.prepare(t, s.write(`k-${t}`, 'v'), over),
          grpc.status.FAILED_PRECONDITION,
          `PREPARE with ${what}`,
        );
        expectCode(await leader.decide(t, false, over), grpc.status.FAILED_PRECONDITION, `DECISION with ${what}`);
        expectCode(await leader.status(t, over), grpc.status.FAILED_PRECONDITION, `Status with ${what}`);
      }
      expectCode(
        await leader.decide(t, true),
        grpc.status.FAILED_PRECONDITION,
        'a COMMIT of the transaction refused above (nothing was prepared)',
      );
    });
    await run(C.badInput.malformed, async () => {
      for (const bad of ['', 'has space', '-starts-with-dash', 'x'.repeat(129), 'é']) {
        const what = `txn_id ${JSON.stringify(bad.slice(0, 20))}`;
        expectCode(await leader.prepare(bad, s.write('k', 'v')), grpc.status.INVALID_ARGUMENT, `PREPARE with ${what}`);
        expectCode(await leader.decide(bad, false), grpc.status.INVALID_ARGUMENT, `DECISION with ${what}`);
        expectCode(await leader.status(bad), grpc.status.INVALID_ARGUMENT, `Status with ${what}`);
      }
      const t = s.txn('unspecified');
      expectVote(await leader.prepare(t, s.write(`k-${t}`, 'v')), 'VOTE_YES', 'PREPARE');
      expectCode(
        await leader.decide(t, 'DECISION_UNSPECIFIED'),
        grpc.status.INVALID_ARGUMENT,
        'a DECISION with no value',
      );
      expectCode(await leader.decide(t, false), grpc.status.OK, 'its ABORT');
    });
    await run(C.badInput.bytes, async () => {
      for (const method of ['Prepare', 'Decide']) {
        const a = await leader.raw(method, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]));
        expectThat(a.code !== grpc.status.OK, `undecodable ${method}: answered OK`);
      }
      const big = s.txn('big');
      const v = await leader.prepare(big, s.write(`k-${big}`, 'x'.repeat(5 * 1024 * 1024)));
      expectThat(v.code !== grpc.status.OK || v.body?.vote === 'VOTE_NO', `a 5 MiB PREPARE: ${show(v).slice(0, 200)}`);
      const t = s.txn('after-bad');
      expectVote(await leader.prepare(t, s.write(`k-${t}`, 'v')), 'VOTE_YES', 'a PREPARE after the bad ones');
      expectCode(await leader.decide(t, false), grpc.status.OK, 'its ABORT');
    });
  }

  if (wanted('recovery')) {
    await run(C.recovery.asks, async () => {
      expectThat(lonelyYesAtMs > 0, 'the PREPARE left without a DECISION was not voted YES');
      await eventually(
        'a GetOutcome about the transaction with no DECISION, naming the participant',
        ASK_WITHIN_MS,
        async () => cluster.questionsAbout(lonely).some((q) => q.participant_id === env.participantId),
        () => `(questions: ${JSON.stringify(cluster.questionsAbout(lonely))})`,
      );
      cluster.outcomes.set(lonely, 'OUTCOME_COMMITTED');
      await s.expectValue(`k-${lonely}`, 'lonely', 'the cluster’s COMMIT applied');
    });
  }

  if (wanted('recovery') || wanted('status') || wanted('prepare') || wanted('registration'))
    await killPhases(s, run, wanted);
}
