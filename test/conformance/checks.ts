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
import { TestCa } from '../tls-certs.ts';
import { type Answer, FakeCluster, Leader, type StatusValue, statusName } from './driver.ts';
import { type Target, type TargetEnv, TargetProcess } from './target.ts';

/** Every check, by phase; the names are what a failing run reports. */
export const CHECKS = {
  registration: {
    follows: 'registration: retries a starting node and follows a follower to the leader',
    fields: 'registration: names its cluster, id, endpoint, resource kind and the optional methods it serves',
    again: 'registration: registers again after a restart, at the same endpoint',
  },
  prepare: {
    yes: 'prepare: votes YES, and YES again to a repeated PREPARE',
    no: 'prepare: votes NO with a reason to work it cannot do, and NO again',
    durable: 'prepare: a YES survives kill -9 (the prepared state is durable before the vote)',
  },
  decision: {
    commit: 'decision: COMMIT is applied and ACKed; a duplicate is ACKed and not applied again',
    abort: 'decision: ABORT releases the work and is ACKed; a duplicate is ACKed',
    abortFirst: 'decision: an ABORT before its PREPARE is ACKed, and the PREPARE then gets NO',
    commitFirst: 'decision: a COMMIT of a transaction never prepared here is refused FAILED_PRECONDITION',
    final: 'decision: a decided outcome never changes (the other one is refused FAILED_PRECONDITION)',
    reordered: 'decision: decisions of several transactions in another order than their PREPAREs',
  },
  status: {
    states: 'status: answers PREPARED, COMMITTED, ABORTED and a durable REFUSED',
    restart: 'status: every answer survives kill -9, and a refusal keeps refusing PREPARE',
  },
  exchange: {
    batch: 'exchange: one batch of PREPAREs and DECISIONs answered by id, refusals as ExchangeError',
    stream: 'exchange: many batches on one stream, the same state as the unary calls, ended by the leader',
  },
  recovery: {
    asks: 'recovery: a YES with no DECISION is asked about (with the participant id) and the answer applied',
    restart: 'recovery: after kill -9 a prepared transaction is asked about and COMMIT applied',
    presumedAbort: 'recovery: presumed abort: the cluster’s ABORT for a prepared transaction releases it',
    redelivered: 'recovery: a COMMIT redelivered after kill -9 is ACKed and applied once',
    whileAsking: 'recovery: kill -9 while asking the cluster; it asks again after the restart',
    midPrepare: 'recovery: kill -9 during a PREPARE never leaves the transaction committed',
  },
  badInput: {
    identity: 'bad input: another cluster or participant id is refused FAILED_PRECONDITION',
    malformed: 'bad input: a malformed transaction id or decision value is refused INVALID_ARGUMENT',
    bytes: 'bad input: undecodable and oversized requests are refused, and the participant still serves',
  },
  tls: {
    served: 'tls: serves a certificate naming the participant, and registers over TLS',
    node: 'tls: takes PREPARE and DECISION from a node of its cluster',
    noCert: 'tls: refuses a caller without a certificate',
    notNode: 'tls: refuses a certificate of the cluster CA without the node mark',
    otherCluster: 'tls: refuses a node certificate of another cluster',
  },
} as const;

export type Phase = keyof typeof CHECKS;
export const CHECK_NAMES: string[] = Object.values(CHECKS).flatMap((p) => Object.values(p));

export interface CheckResult {
  name: string;
  ok: boolean;
  error: string;
}

const START_MS = 90_000;
const SETTLE_MS = 20_000;
/** How long a prepared participant may take to ask the cluster: its in-doubt wait (about 2 s) and a backoff step. */
const ASK_WITHIN_MS = 15_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

class CheckFailure extends Error {}

function expectThat(ok: boolean, what: string): void {
  if (!ok) throw new CheckFailure(what);
}

const show = (a: Answer<unknown>): string => (a.code === grpc.status.OK ? `OK ${JSON.stringify(a.body)}` : `${statusName(a.code)}: ${a.details}`);

function expectCode(a: Answer<unknown>, code: grpc.status, what: string): void {
  expectThat(a.code === code, `${what}: expected ${statusName(code)}, got ${show(a)}`);
}

function expectVote(a: Answer<{ vote: string; reason: string }>, vote: 'VOTE_YES' | 'VOTE_NO', what: string): void {
  expectThat(a.code === grpc.status.OK && a.body?.vote === vote, `${what}: expected ${vote}, got ${show(a)}`);
  if (vote === 'VOTE_NO') expectThat((a.body?.reason ?? '') !== '', `${what}: a NO vote carries its reason`);
}

function expectStatus(a: Answer<{ status: StatusValue }>, allowed: StatusValue[], what: string): void {
  expectThat(a.code === grpc.status.OK && allowed.includes(a.body?.status as StatusValue), `${what}: expected ${allowed.join(' or ')}, got ${show(a)}`);
}

/** Polls `probe` until it is true; fails with `what` and the last note at the bound. */
async function eventually(what: string, ms: number, probe: () => Promise<boolean>, note: () => string | Promise<string> = () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    let ok = false;
    try {
      ok = await probe();
    } catch (err) {
      // A CheckFailure from the probe is final (the process exited, say); anything else is tried again.
      if (err instanceof CheckFailure) throw err;
      ok = false;
    }
    if (ok) return;
    if (Date.now() >= deadline) throw new CheckFailure(`${what} (waited ${ms} ms) ${await note()}`);
    await sleep(100);
  }
}

/** One participant under test: its env, the process, a fake cluster and a leader. */
class Subject {
  proc: TargetProcess | null = null;
  readonly leader: Leader;
  private seq = 0;

  constructor(
    readonly target: Target,
    readonly env: TargetEnv,
    readonly cluster: FakeCluster,
    leaderIdentity?: { ca: string; cert: string; key: string },
  ) {
    this.leader = new Leader(env.listen, env.clusterId, env.participantId, leaderIdentity);
  }

  txn(tag: string): string {
    return `cf-${tag}-${++this.seq}-${randomBytes(3).toString('hex')}`;
  }

  write(key: string, value: string): Uint8Array {
    return this.target.write(key, value);
  }

  refuse(): Uint8Array {
    return this.target.refuse?.() ?? Buffer.from('this is not JSON');
  }

  read(key: string): Promise<string | null> {
    return this.target.read(this.env, key);
  }

  tail(): string {
    return `\n--- ${this.target.name} output ---\n${this.proc?.output.slice(-(process.env.VERDICT_CONFORMANCE_LOG_LEVEL ? 50_000 : 3_000)) ?? '(never started)'}`;
  }

  /** Starts the process and waits for a new registration. */
  async start(): Promise<void> {
    const before = this.cluster.registrationsOf(this.env.participantId).length;
    this.proc = new TargetProcess(this.target, this.env);
    const proc = this.proc;
    await eventually(
      `${this.target.name} to register`,
      START_MS,
      async () => {
        if (!proc.alive) throw new CheckFailure(`${this.target.name} exited before it registered${this.tail()}`);
        return this.cluster.registrationsOf(this.env.participantId).length > before;
      },
      () => this.tail(),
    );
    if (!proc.alive) throw new CheckFailure(`${this.target.name} exited after registering${this.tail()}`);
  }

  async kill(): Promise<void> {
    await this.proc?.kill();
  }

  async stop(): Promise<void> {
    this.leader.close();
    await this.kill();
  }

  /** PREPARE → YES, then the decision, each expected to succeed. */
  async commitOne(key: string, value: string, what: string): Promise<string> {
    const t = this.txn('w');
    expectVote(await this.leader.prepare(t, this.write(key, value)), 'VOTE_YES', `${what}: PREPARE of ${t}`);
    expectCode(await this.leader.decide(t, true), grpc.status.OK, `${what}: COMMIT of ${t}`);
    return t;
  }

  async expectValue(key: string, value: string | null, what: string, ms = SETTLE_MS): Promise<void> {
    let last: string | null | undefined;
    await eventually(
      `${what}: ${key} = ${JSON.stringify(value)}`,
      ms,
      async () => (last = await this.read(key)) === value,
      () => `(read ${JSON.stringify(last)})`,
    );
  }
}

type Run = (name: string, fn: () => Promise<void>) => Promise<void>;

/** Runs the checks of `phases` (all by default) against `target`; one result per check of those phases. */
export async function runConformance(target: Target, phases: Phase[] = Object.keys(CHECKS) as Phase[]): Promise<CheckResult[]> {
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
  const plainPhases = (['registration', 'prepare', 'decision', 'status', 'exchange', 'recovery', 'badInput'] as Phase[]).filter(wanted);
  let tlsRun: Promise<void> = Promise.resolve();
  const stops: (() => Promise<void> | void)[] = [];
  try {
    if (wanted('tls')) tlsRun = tlsPhase(target, { root, clusterId, id: `${id}-tls`, listen: tlsListen, probe: tlsProbe }, run, stops).catch((err: Error) => failAll(['tls'], err.message));
    if (plainPhases.length > 0) {
      const cluster = await FakeCluster.start({ clusterId, nodeIds: ['n1', 'n2'] });
      stops.push(() => cluster.close());
      // Only the follower is configured: the leader is reachable through its redirect alone.
      const env: TargetEnv = { clusterId, participantId: id, nodes: [cluster.nodes[0].address], listen, dataDir: join(root, 'plain'), probe };
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
      for (const m of ['Exchange', 'Status']) expectThat(r.serves.includes(m), `serves ${JSON.stringify(r.serves)} lacks ${m}`);
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
      expectCode(await leader.decide(t, true), grpc.status.FAILED_PRECONDITION, 'COMMIT of a transaction never prepared');
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
      expectStatus(await leader.status(first), ['TXN_STATUS_ABORTED', 'TXN_STATUS_REFUSED'], 'Status after an ABORT before PREPARE');
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
          { id: 15, prepare: leader.prepareRequest(s.txn('x-other'), s.write('k', 'v'), { cluster_id: 'another-cluster' }) },
          { id: 16 },
        ],
      ]);
      const by = new Map(r.answers.map((a) => [Number(a.id), a]));
      expectThat(r.code === grpc.status.OK, `the stream ended ${statusName(r.code)}: ${r.details}`);
      expectThat(by.size === 6, `answers for ids ${[...by.keys()].join(', ')}, expected 11 to 16`);
      expectThat(by.get(11)?.vote?.vote === 'VOTE_YES', `11: ${JSON.stringify(by.get(11))}`);
      expectThat(by.get(12)?.vote?.vote === 'VOTE_NO', `12: ${JSON.stringify(by.get(12))}`);
      expectThat(by.get(13)?.ack !== undefined && by.get(13)?.ack !== null, `13 (ABORT before PREPARE): ${JSON.stringify(by.get(13))}`);
      expectThat(by.get(14)?.error?.code === grpc.status.FAILED_PRECONDITION, `14 (COMMIT never prepared): ${JSON.stringify(by.get(14))}`);
      expectThat(by.get(15)?.error?.code === grpc.status.FAILED_PRECONDITION, `15 (another cluster): ${JSON.stringify(by.get(15))}`);
      expectThat(by.get(16)?.error?.code === grpc.status.INVALID_ARGUMENT, `16 (no body): ${JSON.stringify(by.get(16))}`);
      expectCode(await leader.decide(yes, false), grpc.status.OK, 'a unary ABORT of the transaction prepared on the stream');
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
      expectThat(r.code === grpc.status.OK, `the stream ended ${statusName(r.code)}: ${r.details} after ${r.answers.length} answers`);
      expectThat(by.get(1)?.vote?.vote === 'VOTE_YES' && by.get(3)?.vote?.vote === 'VOTE_YES' && by.get(5)?.vote?.vote === 'VOTE_YES', `votes: ${JSON.stringify(r.answers)}`);
      expectThat(!!by.get(2)?.ack && !!by.get(4)?.ack, `acks: ${JSON.stringify(r.answers)}`);
      await s.expectValue(`k-${a}`, 'a', 'committed on the stream');
      expectVote(await leader.prepare(b, s.write(`k-${b}`, 'b')), 'VOTE_YES', 'a unary PREPARE repeating one of the stream');
      expectCode(await leader.decide(b, true), grpc.status.OK, 'a unary COMMIT of a transaction prepared on the stream');
      await s.expectValue(`k-${b}`, 'b', 'committed by the unary call');
    });
  }

  if (wanted('badInput')) {
    await run(C.badInput.identity, async () => {
      const t = s.txn('bad-id');
      for (const over of [{ cluster_id: 'another-cluster' }, { participant_id: 'another-participant' }]) {
        const what = JSON.stringify(over);
        expectCode(await leader.prepare(t, s.write(`k-${t}`, 'v'), over), grpc.status.FAILED_PRECONDITION, `PREPARE with ${what}`);
        expectCode(await leader.decide(t, false, over), grpc.status.FAILED_PRECONDITION, `DECISION with ${what}`);
        expectCode(await leader.status(t, over), grpc.status.FAILED_PRECONDITION, `Status with ${what}`);
      }
      expectCode(await leader.decide(t, true), grpc.status.FAILED_PRECONDITION, 'a COMMIT of the transaction refused above (nothing was prepared)');
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
      expectCode(await leader.decide(t, 'DECISION_UNSPECIFIED'), grpc.status.INVALID_ARGUMENT, 'a DECISION with no value');
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

  if (wanted('recovery') || wanted('status') || wanted('prepare') || wanted('registration')) await killPhases(s, run, wanted);
}

/** kill -9 after YES votes, after decisions, while asking the cluster and during a PREPARE; two restarts. */
async function killPhases(s: Subject, run: Run, wanted: (p: Phase) => boolean): Promise<void> {
  const { leader, cluster, env } = s;
  const C = CHECKS;
  const key = (t: string): string => `k-${t}`;
  // Before the first kill: transactions in every state.
  const toCommit = s.txn('kc'); // prepared; the cluster will say COMMITTED
  const toAbort = s.txn('ka'); // prepared; the cluster will say ABORTED (presumed abort)
  const committed = s.txn('kd'); // committed, then overwritten by a later transaction
  const aborted = s.txn('kab'); // prepared, then aborted
  const voteNo = s.txn('kno'); // voted NO, then asked Status (a durable refusal)
  const refused = s.txn('kref'); // asked Status before any PREPARE
  const held = s.txn('kh'); // prepared last: killed right after its YES, undecided through two restarts
  const setup: [string, Answer<unknown>, boolean][] = [];
  const ok = (what: string, a: Answer<unknown>, good: boolean): void => void setup.push([what, a, good]);
  for (const t of [toCommit, toAbort, committed, aborted]) {
    const v = await leader.prepare(t, s.write(key(t), t));
    ok(`PREPARE ${t}`, v, v.body?.vote === 'VOTE_YES');
  }
  ok('COMMIT', await leader.decide(committed, true), true);
  const later = s.txn('kd2');
  const lv = await leader.prepare(later, s.write(key(committed), 'overwritten'));
  ok('PREPARE of the overwrite', lv, lv.body?.vote === 'VOTE_YES');
  ok('COMMIT of the overwrite', await leader.decide(later, true), true);
  ok('ABORT', await leader.decide(aborted, false), true);
  const nv = await leader.prepare(voteNo, s.refuse());
  ok('PREPARE (NO)', nv, nv.body?.vote === 'VOTE_NO');
  const statusServed = (await leader.status(voteNo)).code === grpc.status.OK;
  if (statusServed) await leader.status(refused);
  const hv = await leader.prepare(held, s.write(key(held), held));
  const heldYes = hv.body?.vote === 'VOTE_YES';
  await s.kill();
  const setupProblem = setup.find(([, a, good]) => a.code !== grpc.status.OK || !good);
  const setupFailed = setupProblem ? `setting up the states before kill -9 failed: ${setupProblem[0]}: ${show(setupProblem[1])}` : null;
  cluster.outcomes.set(toCommit, 'OUTCOME_COMMITTED');
  cluster.outcomes.set(toAbort, 'OUTCOME_ABORTED');
  const restartedAtMs = Date.now();
  await s.start();

  if (wanted('registration')) {
    await run(C.registration.again, async () => {
      const rs = cluster.registrationsOf(env.participantId);
      expectThat(rs.length >= 2, `${rs.length} registration(s)`);
      expectThat(rs[rs.length - 1].endpoint === env.listen, `registered ${rs[rs.length - 1].endpoint}`);
    });
  }
  const askedSinceRestart = (t: string): boolean => cluster.questionsAbout(t).some((q) => q.atMs >= restartedAtMs && q.participant_id === env.participantId);
  if (wanted('prepare')) {
    await run(C.prepare.durable, async () => {
      expectThat(heldYes, `the PREPARE before the kill: ${show(hv)}`);
      await eventually(`the restarted participant asks the cluster about ${held}, voted YES just before kill -9`, ASK_WITHIN_MS, async () => askedSinceRestart(held));
    });
  }
  if (wanted('recovery')) {
    await run(C.recovery.restart, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      await eventually(`a question about ${toCommit} after the restart`, ASK_WITHIN_MS, async () => askedSinceRestart(toCommit));
      await s.expectValue(key(toCommit), toCommit, 'the COMMIT the cluster answered applied');
      expectCode(await leader.decide(toCommit, true), grpc.status.OK, 'its COMMIT delivered after the recovery');
    });
    await run(C.recovery.presumedAbort, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      await eventually(`a question about ${toAbort} after the restart`, ASK_WITHIN_MS, async () => askedSinceRestart(toAbort));
      // Released: a transaction writing the same key prepares and commits (a held lock would make it wait, then vote NO).
      let last = '';
      await eventually(
        'the key of the aborted transaction is free again',
        SETTLE_MS,
        async () => {
          const t = s.txn('after-abort');
          const v = await leader.prepare(t, s.write(key(toAbort), 'free'), { timeout_ms: 2_000 });
          last = show(v);
          if (v.body?.vote !== 'VOTE_YES') return false;
          return (await leader.decide(t, true)).code === grpc.status.OK;
        },
        () => `(last PREPARE: ${last})`,
      );
      await s.expectValue(key(toAbort), 'free', 'the aborted write never applied');
      expectCode(await leader.decide(toAbort, false), grpc.status.OK, 'its ABORT delivered after the recovery');
    });
    await run(C.recovery.redelivered, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      expectCode(await leader.decide(committed, true), grpc.status.OK, 'the redelivered COMMIT');
      await s.expectValue(key(committed), 'overwritten', 'the redelivered COMMIT applied nothing again', 3_000);
    });
  }
  if (wanted('status')) {
    await run(C.status.restart, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      expectStatus(await leader.status(committed), ['TXN_STATUS_COMMITTED'], 'a committed transaction');
      expectStatus(await leader.status(aborted), ['TXN_STATUS_ABORTED'], 'an aborted transaction');
      expectCode(await leader.decide(aborted, true), grpc.status.FAILED_PRECONDITION, 'a COMMIT of the aborted transaction');
      expectStatus(await leader.status(held), ['TXN_STATUS_PREPARED'], 'a prepared transaction');
      for (const t of [voteNo, refused]) {
        expectStatus(await leader.status(t), ['TXN_STATUS_REFUSED', 'TXN_STATUS_ABORTED'], `a refused transaction (${t})`);
        expectVote(await leader.prepare(t, s.write(key(t), 'v')), 'VOTE_NO', `a PREPARE of the refused ${t}`);
      }
    });
  }
  if (!wanted('recovery')) return;

  // The second kill: while the participant asks about `held` (the cluster keeps answering IN_PROGRESS), and during a PREPARE.
  const midPrepare = s.txn('kmid');
  await eventually('questions about the held transaction', ASK_WITHIN_MS, async () => askedSinceRestart(held)).catch(() => {});
  const inFlight = leader.prepare(midPrepare, s.write(key(midPrepare), midPrepare), {}, 3_000);
  await sleep(5);
  await s.kill();
  await inFlight;
  cluster.outcomes.set(held, 'OUTCOME_COMMITTED');
  cluster.outcomes.set(midPrepare, 'OUTCOME_ABORTED');
  const secondRestartAtMs = Date.now();
  await s.start();
  await run(C.recovery.whileAsking, async () => {
    expectThat(heldYes, `the PREPARE before the first kill: ${show(hv)}`);
    await eventually(`a question about ${held} after the second restart`, ASK_WITHIN_MS, async () => cluster.questionsAbout(held).some((q) => q.atMs >= secondRestartAtMs));
    await s.expectValue(key(held), held, 'the COMMIT the cluster answered applied');
    expectCode(await leader.decide(held, true), grpc.status.OK, 'its COMMIT delivered after the recovery');
  });
  await run(C.recovery.midPrepare, async () => {
    // Prepared or not when it died: either way the cluster's ABORT (or the participant's own refusal) ends it, and nothing is applied.
    await eventually('the transaction killed mid-PREPARE ends aborted', SETTLE_MS, async () => {
      const t = s.txn('after-mid');
      const v = await leader.prepare(t, s.write(key(midPrepare), 'free'), { timeout_ms: 2_000 });
      if (v.body?.vote !== 'VOTE_YES') return false;
      return (await leader.decide(t, true)).code === grpc.status.OK;
    });
    await s.expectValue(key(midPrepare), 'free', 'the write of the killed PREPARE never applied');
    const d = await leader.decide(midPrepare, true);
    expectThat(d.code !== grpc.status.OK, 'a COMMIT of the transaction killed mid-PREPARE (aborted by the cluster) was ACKed');
  });
}

async function tlsPhase(target: Target, o: { root: string; clusterId: string; id: string; listen: string; probe: string }, run: Run, stops: (() => Promise<void> | void)[]): Promise<void> {
  const dir = join(o.root, 'certs');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  const ca = TestCa.create(dir, 'conformance-ca');
  const nodes = { n1: ca.node('n1', o.clusterId) };
  const mine = ca.issue(o.id, { ou: o.clusterId });
  const notNode = ca.issue('n1', { ou: o.clusterId, file: 'not-a-node' });
  const otherCluster = ca.node('n1', 'another-cluster', 'other-cluster-node');
  const cluster = await FakeCluster.start({ clusterId: o.clusterId, nodeIds: ['n1'], tls: { ca: ca.cert, nodes } });
  stops.push(() => cluster.close());
  const env: TargetEnv = {
    clusterId: o.clusterId,
    participantId: o.id,
    nodes: [cluster.nodes[0].address],
    listen: o.listen,
    dataDir: join(o.root, 'tls'),
    probe: o.probe,
    tls: { ca: ca.cert, ...mine },
  };
  const s = new Subject(target, env, cluster, { ca: ca.cert, ...nodes.n1 });
  stops.push(() => s.stop());
  await target.setup?.(env);
  await s.start();
  const as = (identity: { ca: string; cert?: string; key?: string }): Leader => {
    const l = new Leader(o.listen, o.clusterId, o.id, identity);
    stops.push(() => l.close());
    return l;
  };
  const C = CHECKS.tls;
  await run(C.node, async () => {
    const t = s.txn('tls');
    // A node may be refused until the participant has learned the cluster's members: bounded.
    await eventually('a YES to a node of the cluster', SETTLE_MS, async () => (await s.leader.prepare(t, s.write(`k-${t}`, 'tls'))).body?.vote === 'VOTE_YES');
    expectCode(await s.leader.decide(t, true), grpc.status.OK, 'COMMIT from the node');
    await s.expectValue(`k-${t}`, 'tls', 'committed');
  });
  await run(C.served, async () => {
    expectThat(s.leader.servedSubject?.CN === o.id, `the participant's certificate names ${JSON.stringify(s.leader.servedSubject)}`);
    expectThat(cluster.registrationsOf(o.id).length > 0, 'no registration over TLS');
  });
  const refusedBy = async (l: Leader, what: string, tlsRefusal: boolean): Promise<void> => {
    const t = s.txn('tls-no');
    const p = await l.prepare(t, s.write(`k-${t}`, 'v'), {}, 5_000);
    const allowed = [grpc.status.PERMISSION_DENIED, grpc.status.UNAUTHENTICATED, ...(tlsRefusal ? [grpc.status.UNAVAILABLE] : [])];
    expectThat(allowed.includes(p.code), `PREPARE from ${what}: expected ${allowed.map(statusName).join(' or ')}, got ${show(p)}`);
    const d = await l.decide(t, false);
    expectThat(allowed.includes(d.code), `DECISION from ${what}: got ${show(d)}`);
    const st = await l.status(t);
    expectThat(allowed.includes(st.code), `Status from ${what}: got ${show(st)}`);
    const x = await l.exchange([[{ id: 1, prepare: l.prepareRequest(t, s.write(`k-${t}`, 'v')) }]], 5_000);
    expectThat(x.answers.length === 0 && x.code !== grpc.status.OK, `an Exchange stream from ${what}: ${x.answers.length} answers, ${statusName(x.code)}`);
    // Nothing was prepared: a node's COMMIT of it is refused.
    expectCode(await s.leader.decide(t, true), grpc.status.FAILED_PRECONDITION, `a node's COMMIT of the transaction ${what} tried to prepare`);
  };
  await run(C.noCert, () => refusedBy(as({ ca: ca.cert }), 'a caller without a certificate', true));
  await run(C.notNode, () => refusedBy(as({ ca: ca.cert, ...notNode }), 'a certificate without the node mark', false));
  await run(C.otherCluster, () => refusedBy(as({ ca: ca.cert, ...otherCluster }), 'a node of another cluster', false));
}
