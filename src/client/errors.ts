// The errors the SDK hands to applications. Each is a value the caller can
// act on: a gRPC code name with the server's reason, or, for a commit whose
// answer never arrived, the transaction id to ask about later.
import type { Outcome } from '../domain/protocol.ts';
import { status as grpcStatus } from '@grpc/grpc-js';

/** gRPC status code names ('OK', 'UNAVAILABLE', 'INVALID_ARGUMENT', ...). */
export type StatusName = keyof typeof grpcStatus;

export function statusName(code: number): StatusName {
  const name = grpcStatus[code];
  return typeof name === 'string' ? (name as StatusName) : 'UNKNOWN';
}

/** What the cluster's `verdict-*` metadata said about a refusal (docs/protocol-outcomes.md). */
export interface RefusalDetails {
  /** `verdict-reason`: NOT_LEADER, NO_LEADER, UNKNOWN_OUTCOME or ALREADY_DECIDED; absent when the node gave none. */
  statusReason?: string;
  /** `verdict-leader-id` / `verdict-leader-address`, with NOT_LEADER. */
  leaderId?: string;
  leaderAddress?: string;
  /** `verdict-outcome`, with ALREADY_DECIDED: what the cluster decided for the id. */
  recordedOutcome?: Outcome;
}

/** A refusal or failure reported by the cluster (or by the SDK, before any RPC). */
export class VerdictError extends Error {
  override readonly name: string = 'VerdictError';

  constructor(
    /** The gRPC code name, e.g. 'FAILED_PRECONDITION'. */
    readonly code: StatusName,
    /** The server's reason (the status details), or the SDK's own. */
    readonly reason: string,
    /** The node that answered, when one did. */
    readonly address?: string,
    /** The machine-readable part of the refusal, from its metadata. */
    readonly details: RefusalDetails = {},
  ) {
    super(`${code}: ${reason}`);
  }
}

/**
 * Every node was tried until the call's deadline and none gave an answer.
 * The request may or may not have reached a leader; only idempotent requests
 * (R7) make it safe to send again.
 */
export class RetriesExhaustedError extends VerdictError {
  override readonly name: string = 'RetriesExhaustedError';
}

/**
 * A commit was sent but no outcome came back before the deadline. The
 * transaction may have committed, aborted or still be deciding; the cluster
 * remembers it (R1), so ask with `client.outcome(txnId)` later. The SDK never
 * reports a guess in its place.
 */
export class OutcomeUnknownError extends Error {
  override readonly name: string = 'OutcomeUnknownError';

  constructor(
    readonly txnId: string,
    readonly lastError: string,
  ) {
    super(`the outcome of transaction ${txnId} is unknown (${lastError}); ask later with outcome("${txnId}")`);
  }
}

/**
 * The transaction is decided (the outcome is in `result`, and it stands),
 * but not every participant acknowledged applying it within the wait that
 * `commit({ awaitAcks })` asked for. The cluster keeps delivering the
 * decision until each does (R5); `pending` names those that have not yet.
 */
export class AcksPendingError extends Error {
  override readonly name: string = 'AcksPendingError';

  constructor(
    readonly result: { txnId: string; outcome: Outcome; reason: string; decisionIndex: number },
    readonly pending: readonly string[],
    readonly waitedMs: number,
    /** Why the last question about the acknowledgements failed; '' when it was answered. */
    readonly lastError = '',
  ) {
    super(
      `transaction ${result.txnId} is ${result.outcome}, but after ${waitedMs} ms ${pending.length === 1 ? 'participant' : 'participants'} ${pending.join(', ')} ` +
        `had not acknowledged applying it; the decision stands and the cluster keeps delivering it${lastError === '' ? '' : ` (the last question about it failed: ${lastError})`}`,
    );
  }
}

/** Input refused by the SDK itself, before any RPC. */
export function invalidArgument(reason: string): VerdictError {
  return new VerdictError('INVALID_ARGUMENT', reason);
}
