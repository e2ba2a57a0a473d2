// The conformance suite's shared parts: the names of the checks, the
// assertions every check uses (each failure a CheckFailure with what was
// expected and what came), bounded waits, and Subject, one participant
// process under test with its fake cluster and the leader that calls it.
import * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
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

export const START_MS = 90_000;
export const SETTLE_MS = 20_000;
/** How long a prepared participant may take to ask the cluster: its in-doubt wait (about 2 s) and a backoff step. */
export const ASK_WITHIN_MS = 15_000;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class CheckFailure extends Error {}

export function expectThat(ok: boolean, what: string): void {
  if (!ok) throw new CheckFailure(what);
}

export const show = (a: Answer<unknown>): string =>
  a.code === grpc.status.OK ? `OK ${JSON.stringify(a.body)}` : `${statusName(a.code)}: ${a.details}`;

export function expectCode(a: Answer<unknown>, code: grpc.status, what: string): void {
  expectThat(a.code === code, `${what}: expected ${statusName(code)}, got ${show(a)}`);
}

export function expectVote(
  a: Answer<{ vote: string; reason: string }>,
  vote: 'VOTE_YES' | 'VOTE_NO',
  what: string,
): void {
  expectThat(a.code === grpc.status.OK && a.body?.vote === vote, `${what}: expected ${vote}, got ${show(a)}`);
  if (vote === 'VOTE_NO') expectThat((a.body?.reason ?? '') !== '', `${what}: a NO vote carries its reason`);
}

export function expectStatus(a: Answer<{ status: StatusValue }>, allowed: StatusValue[], what: string): void {
  expectThat(
    a.code === grpc.status.OK && allowed.includes(a.body?.status as StatusValue),
    `${what}: expected ${allowed.join(' or ')}, got ${show(a)}`,
  );
}

/** Polls `probe` until it is true; fails with `what` and the last note at the bound. */
export async function eventually(
  what: string,
  ms: number,
  probe: () => Promise<boolean>,
  note: () => string | Promise<string> = () => '',
): Promise<void> {
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
export class Subject {
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

export type Run = (name: string, fn: () => Promise<void>) => Promise<void>;
