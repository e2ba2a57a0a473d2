// One transaction as the application sees it: enlist participants locally,
// then one Commit (or Abort) RPC carrying the client-chosen id. A
// transaction from VerdictClient.transaction() was not begun on the cluster:
// its first Commit attempt begins it too (one round trip instead of two),
// and every later attempt is a plain Commit, so a leader that did not begin
// it aborts it rather than preparing it a second time (R2).
//
// R7 is what makes a retry safe: the id is fixed at begin, so a Commit that
// reaches a second leader after the first one vanished is the same
// transaction, and the cluster answers with the same outcome. When no answer
// arrives at all we throw OutcomeUnknownError instead of guessing.
import { callBounds, type CoordinatorConnection, type CallOptions } from './connection.ts';
import type { CommitRequest, Enlistment, OutcomeName, TxnOutcome } from '../transport/coordinator-rpc.ts';
import { outcomeFromWire } from '../transport/protocol-wire.ts';
import { isFinal, type ClusterOutcome, type Outcome } from '../domain/protocol.ts';
import { txnIdProblem } from '../domain/txn-id.ts';
import {
  AcksPendingError,
  invalidArgument,
  OutcomeUnknownError,
  RetriesExhaustedError,
  VerdictError,
} from './errors.ts';
import { BeginRule, classifyFailure } from './retry-policy.ts';
import { NO_TRACING, type Tracing } from '../transport/tracing.ts';
import { checkedTrace, tracedCall, type TraceContext } from './trace.ts';

/**
 * How a transaction is traced: the client's tracing, and the context its calls continue unless a call names its own.
 */
export interface TxnTracing {
  tracing: Promise<Tracing>;
  parent?: TraceContext;
}

const UNTRACED: TxnTracing = { tracing: Promise.resolve(NO_TRACING) };

// The outcome types are the domain's (src/domain/protocol.ts), exported as
// they are by every entry point: `Outcome` is COMMITTED or ABORTED, and
// `ClusterOutcome` adds IN_PROGRESS and UNKNOWN, what a question may be answered.
export type { ClusterOutcome, Outcome };

export interface OutcomeResult {
  txnId: string;
  outcome: ClusterOutcome;
  reason: string;
  /** The log index of the decision; 0 while undecided. */
  decisionIndex: number;
}

export interface CommitResult extends OutcomeResult {
  outcome: Outcome;
}

/** Bytes as they are, a string as UTF-8, anything else as JSON text. */
export type Payload = Uint8Array | string | object;

export interface CommitOptions extends CallOptions {
  /**
   * Resolve only once every participant has acknowledged applying a
   * COMMIT (read-your-writes across participants): `true` waits up to
   * DEFAULT_AWAIT_ACKS_MS, `{ timeoutMs }` that long. Past it, commit()
   * throws AcksPendingError, which carries the outcome (it stands) and the
   * participants still to acknowledge. Without it (the default), commit()
   * resolves as soon as the outcome is decided: participants apply a COMMIT
   * a little later, so a read at one of them right after may not see it yet.
   * An ABORTED outcome resolves at once either way.
   */
  awaitAcks?: boolean | { timeoutMs?: number };
}

/** How long commit({ awaitAcks: true }) waits for the participants' acknowledgements. */
export const DEFAULT_AWAIT_ACKS_MS = 30_000;
/** Between two looks at the acknowledgements. */
const ACK_POLL_MS = 50;
const ACK_POLL_MAX_MS = 500;

/** Room left for the decision's replication after the participants' prepare timeout. */
export const COMMIT_GRACE_MS = 2_000;

export class Transaction {
  /** Enlistments in the order they were made; participant ids are unique. */
  private readonly enlisted = new Map<string, Uint8Array>();
  private state: 'open' | 'committing' | 'aborted' = 'open';
  private result: CommitResult | undefined;
  /** Whether the next Commit must begin the transaction too (R2; src/client/retry-policy.ts). */
  private readonly beginRule: BeginRule;

  constructor(
    private readonly connection: CoordinatorConnection,
    readonly txnId: string,
    /** The transaction's timeout asked at begin; 0 for the cluster's default. */
    readonly timeoutMs: number,
    /**
     * When the cluster aborts the transaction if it is still undecided (its clock, ms since the epoch), as Begin
     * reported it; 0 when it was not begun with Begin.
     */
    readonly deadlineAtMs: number,
    /** The leader that answered Begin; '' when it was not begun with Begin. */
    readonly leaderId: string,
    /** False for a transaction not begun on the cluster yet (VerdictClient.transaction()). */
    begun = true,
    /** BeginOptions.parallelCommit: undefined for the cluster's default. */
    readonly parallelCommit?: boolean,
    private readonly traced: TxnTracing = UNTRACED,
  ) {
    this.beginRule = new BeginRule(begun);
  }

  get participantIds(): string[] {
    return [...this.enlisted.keys()];
  }

  /** Adds a participant; local only. Its payload is sent to it with PREPARE. */
  enlist(participantId: string, payload?: Payload): this {
    checkId(participantId, 'participant id');
    if (this.state !== 'open')
      throw new VerdictError(
        'FAILED_PRECONDITION',
        `transaction ${this.txnId} is ${this.state === 'aborted' ? 'aborted' : 'committing'}; enlist before commit`,
      );
    if (this.enlisted.has(participantId))
      throw invalidArgument(`participant "${participantId}" is already enlisted in ${this.txnId}`);
    this.enlisted.set(participantId, encodePayload(payload));
    return this;
  }

  /**
   * Asks the cluster to commit. Resolves with the decided outcome; throws
   * VerdictError when the cluster refuses the request, and
   * OutcomeUnknownError when no answer came (ask `outcome(txnId)` later).
   * Calling it again resends the same request (R7) or returns the known result.
   */
  async commit(options: CommitOptions = {}): Promise<CommitResult> {
    const result = await this.decide(options);
    if (options.awaitAcks === undefined || options.awaitAcks === false || result.outcome !== 'COMMITTED') return result;
    const timeoutMs =
      typeof options.awaitAcks === 'object'
        ? (options.awaitAcks.timeoutMs ?? DEFAULT_AWAIT_ACKS_MS)
        : DEFAULT_AWAIT_ACKS_MS;
    if (!(Number.isInteger(timeoutMs) && timeoutMs > 0))
      throw invalidArgument(`awaitAcks.timeoutMs must be a positive integer, not ${String(timeoutMs)}`);
    await this.acknowledged(result, timeoutMs, options.metadata);
    return result;
  }

  /**
   * Waits until the cluster no longer tracks the transaction as delivering,
   * or lists every participant as having acknowledged; AcksPendingError
   * past `timeoutMs`. The leader stops tracking a transaction once every
   * participant acknowledged it, so not tracked (with the outcome decided)
   * means acknowledged by all.
   */
  private async acknowledged(
    result: CommitResult,
    timeoutMs: number,
    metadata?: Record<string, string>,
  ): Promise<void> {
    const started = Date.now();
    let pending = this.participantIds;
    let lastError = '';
    let pauseMs = ACK_POLL_MS;
    for (;;) {
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) throw new AcksPendingError(result, pending, timeoutMs, lastError);
      try {
        const listed = await this.connection.call(
          'ListTransactions',
          { inFlight: false, limit: 0, inDoubt: false, unacked: false, heuristic: false, txnId: this.txnId },
          { callTimeoutMs: Math.max(1, left), metadata },
        );
        const t = listed.transactions.find((x) => x.txnId === this.txnId);
        if (t === undefined || t.phase === 'decided') return;
        pending = t.participants.filter((p) => !p.acked).map((p) => p.participantId);
        if (pending.length === 0) return;
      } catch (err) {
        // The commit is decided whatever the question's fate: a failed question leaves the acknowledgements pending,
        // never the commit failed.
        lastError = err instanceof Error ? err.message : String(err);
      }
      await new Promise((r) => setTimeout(r, Math.min(pauseMs, Math.max(0, timeoutMs - (Date.now() - started)))));
      pauseMs = Math.min(pauseMs * 2, ACK_POLL_MAX_MS);
    }
  }

  private async decide(options: CallOptions): Promise<CommitResult> {
    if (this.result !== undefined) return this.result;
    if (this.state === 'aborted')
      throw new VerdictError('FAILED_PRECONDITION', `transaction ${this.txnId} was aborted by this client`);
    if (this.enlisted.size === 0)
      throw invalidArgument(`transaction ${this.txnId} has no participants; enlist at least one before commit`);
    this.state = 'committing';
    const participants: Enlistment[] = [...this.enlisted].map(([participantId, payload]) => ({
      participantId,
      payload,
    }));
    const commitMode =
      this.parallelCommit === undefined
        ? 'COMMIT_MODE_DEFAULT'
        : this.parallelCommit
          ? 'COMMIT_MODE_PARALLEL'
          : 'COMMIT_MODE_CLASSIC';
    const request = (): CommitRequest =>
      this.beginRule.begins
        ? { txnId: this.txnId, participants, begin: true, timeoutMs: this.timeoutMs, commitMode }
        : { txnId: this.txnId, participants, begin: false, timeoutMs: 0, commitMode };
    let answer: TxnOutcome;
    try {
      const parent = checkedTrace(options.trace) ?? this.traced.parent;
      answer = await tracedCall(
        this.traced.tracing,
        'verdict.commit',
        parent,
        { 'verdict.txn_id': this.txnId, 'verdict.participants': this.enlisted.size },
        { ...this.commitBounds(), ...callBounds(options), metadata: options.metadata },
        (call) =>
          this.connection.call('Commit', request(), call, (failure) => {
            this.beginRule.attempted(failure);
            return request();
          }),
        (a) => ({ 'verdict.outcome': a.outcome }),
      );
    } catch (err) {
      // Each retried attempt was recorded above; exhausted retries leave the outcome unknown.
      if (err instanceof RetriesExhaustedError || !(err instanceof VerdictError))
        throw new OutcomeUnknownError(this.txnId, err instanceof Error ? err.message : String(err));
      const failure = classifyFailure({ code: err.code, reason: err.details.statusReason });
      this.beginRule.attempted(failure);
      // Refused: nothing was prepared, so the next attempt may begin it, if no earlier one may have.
      if (failure === 'refused') throw err;
      // INTERNAL, CANCELLED, ...: the request may have been applied.
      throw new OutcomeUnknownError(this.txnId, err.message);
    }
    this.beginRule.attempted('answered');
    const r = toOutcomeResult(this.txnId, answer);
    const outcome = r.outcome;
    if (!isFinal(outcome))
      throw new OutcomeUnknownError(this.txnId, `the cluster answered ${outcome}${r.reason ? `: ${r.reason}` : ''}`);
    this.result = { ...r, outcome };
    return this.result;
  }

  /** Asks the cluster to abort; the answer is the outcome, COMMITTED if the abort came too late. */
  async abort(reason = '', options: CallOptions = {}): Promise<OutcomeResult> {
    const unsent = this.beginRule.begins && this.state === 'open';
    this.state = 'aborted';
    // Never sent, so never begun: the cluster knows nothing to abort (presumed abort, R3).
    if (unsent)
      return {
        txnId: this.txnId,
        outcome: 'ABORTED',
        reason: reason || 'aborted by the application before commit',
        decisionIndex: 0,
      };
    const parent = checkedTrace(options.trace) ?? this.traced.parent;
    const answer = await tracedCall(
      this.traced.tracing,
      'verdict.abort',
      parent,
      { 'verdict.txn_id': this.txnId },
      options,
      (call) => this.connection.call('Abort', { txnId: this.txnId, reason }, call),
    );
    return toOutcomeResult(this.txnId, answer);
  }

  /** A commit may legitimately wait for every participant's vote, up to the transaction's timeout. */
  private commitBounds(): CallOptions {
    if (this.timeoutMs === 0) return {};
    const d = this.connection.defaults;
    const needMs = this.timeoutMs + COMMIT_GRACE_MS;
    return { attemptTimeoutMs: Math.max(d.attemptTimeoutMs, needMs), callTimeoutMs: Math.max(d.callTimeoutMs, needMs) };
  }
}

/** The outcome a wire enum names; an unset or unknown enum is a protocol error, never read as a guess. */
export function shortOutcome(name: OutcomeName): ClusterOutcome {
  const o = outcomeFromWire(name);
  if (o === null) throw new VerdictError('INTERNAL', `the cluster answered outcome ${String(name).slice(0, 40)}`);
  return o;
}

export function toOutcomeResult(txnId: string, answer: TxnOutcome): OutcomeResult {
  if (answer.txnId !== '' && answer.txnId !== txnId) {
    throw new VerdictError('INTERNAL', `asked about transaction ${txnId}, the cluster answered about ${answer.txnId}`);
  }
  return { txnId, outcome: shortOutcome(answer.outcome), reason: answer.reason, decisionIndex: answer.decisionIndex };
}

export function encodePayload(payload: Payload | undefined): Uint8Array {
  if (payload === undefined) return new Uint8Array(0);
  if (payload instanceof Uint8Array) return payload;
  if (typeof payload === 'string') return new TextEncoder().encode(payload);
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (err) {
    throw invalidArgument(`the payload cannot be encoded as JSON: ${(err as Error).message}`);
  }
  if (text === undefined) throw invalidArgument('the payload cannot be encoded as JSON');
  return new TextEncoder().encode(text);
}

/** The cluster's transaction id rule (src/domain/txn-id.ts), checked before any RPC. */
export function checkTxnId(id: string): void {
  const problem = txnIdProblem(id);
  if (problem !== null) throw invalidArgument(problem);
}

export function checkId(id: string, what: string): void {
  if (typeof id !== 'string' || id.trim() === '') throw invalidArgument(`${what} must be a non-empty string`);
}
