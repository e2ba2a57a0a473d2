// The protocol vocabulary between its domain spelling (src/domain/protocol.ts)
// and the wire's enums of proto/participant.proto and proto/coordinator.proto.
// The only place where 'VOTE_YES', 'DECISION_COMMIT', 'TXN_STATUS_COMMITTED'
// or 'OUTCOME_COMMITTED' is read or written (test/unit/vocabulary.test.ts
// holds it).

import type {
  ClusterOutcome,
  Decide,
  DecisionOutcome,
  Outcome,
  Prepare,
  TxnStatus,
  VoteAnswer,
} from '../domain/protocol.ts';
import type { OutcomeName } from './coordinator-rpc.ts';
import type {
  DecideRequest as WireDecideRequest,
  PrepareRequest as WirePrepareRequest,
  StatusAnswer as WireStatusAnswer,
  VoteMessage as WireVote,
} from './participant-rpc.ts';

export function prepareToWire(p: Prepare): WirePrepareRequest {
  return {
    clusterId: p.clusterId,
    txnId: p.txnId,
    participantId: p.participantId,
    participants: p.participants,
    payload: p.payload,
    timeoutMs: p.timeoutMs,
  };
}

export function voteToWire(v: VoteAnswer): WireVote {
  return {
    txnId: v.txnId,
    participantId: v.participantId,
    vote: v.vote === 'yes' ? 'VOTE_YES' : 'VOTE_NO',
    reason: v.reason,
    // 0 on the wire: not given (proto3's default, what an older participant sends).
    reserveTtlMs: v.vote === 'yes' ? (v.reserveTtlMs ?? 0) : 0,
  };
}

/**
 * The vote a participant answered, or null when it named neither YES nor NO. A YES keeps the reserve TTL it carries
 * (0 on the wire: none), unchecked: the caller refuses a bad one (reserveTtlProblem); a NO holds nothing, so its TTL
 * is dropped.
 */
export function voteFromWire(w: WireVote): VoteAnswer | null {
  if (w.vote !== 'VOTE_YES' && w.vote !== 'VOTE_NO') return null;
  const v: VoteAnswer = {
    txnId: w.txnId,
    participantId: w.participantId,
    vote: w.vote === 'VOTE_YES' ? 'yes' : 'no',
    reason: w.reason,
  };
  // longs: Number; a uint64 past 2^53 arrives rounded, still far above the bound.
  const ttl = Number(w.reserveTtlMs ?? 0);
  if (v.vote === 'yes' && ttl !== 0) v.reserveTtlMs = ttl;
  return v;
}

export function decisionToWire(d: Decide): WireDecideRequest {
  return {
    clusterId: d.clusterId,
    txnId: d.txnId,
    participantId: d.participantId,
    decision: d.outcome === 'commit' ? 'DECISION_COMMIT' : 'DECISION_ABORT',
    reason: d.reason,
  };
}

/** The DECISION a node sent, or null when it named neither COMMIT nor ABORT. */
export function decisionFromWire(w: WireDecideRequest): Decide | null {
  if (w.decision !== 'DECISION_COMMIT' && w.decision !== 'DECISION_ABORT') return null;
  return {
    clusterId: w.clusterId,
    txnId: w.txnId,
    participantId: w.participantId,
    outcome: w.decision === 'DECISION_COMMIT' ? 'commit' : 'abort',
    reason: w.reason,
  };
}

const STATUS_TO_WIRE = {
  prepared: 'TXN_STATUS_PREPARED',
  committed: 'TXN_STATUS_COMMITTED',
  aborted: 'TXN_STATUS_ABORTED',
  refused: 'TXN_STATUS_REFUSED',
} as const satisfies Record<TxnStatus, WireStatusAnswer['status']>;

export function statusToWire(txnId: string, participantId: string, status: TxnStatus): WireStatusAnswer {
  return { txnId, participantId, status: STATUS_TO_WIRE[status] };
}

/** The status a participant answered, or null when it named none of the four. */
export function statusFromWire(w: WireStatusAnswer): TxnStatus | null {
  for (const [k, v] of Object.entries(STATUS_TO_WIRE)) if (w.status === v) return k as TxnStatus;
  return null;
}

const OUTCOME_TO_WIRE = {
  COMMITTED: 'OUTCOME_COMMITTED',
  ABORTED: 'OUTCOME_ABORTED',
  IN_PROGRESS: 'OUTCOME_IN_PROGRESS',
  UNKNOWN: 'OUTCOME_UNKNOWN',
} as const satisfies Record<ClusterOutcome, OutcomeName>;

export function outcomeToWire(o: ClusterOutcome): OutcomeName {
  return OUTCOME_TO_WIRE[o];
}

/** The outcome a node answered, or null for OUTCOME_UNSPECIFIED or an enum this version does not know. */
export function outcomeFromWire(w: OutcomeName): ClusterOutcome | null {
  for (const [k, v] of Object.entries(OUTCOME_TO_WIRE)) if (w === v) return k as ClusterOutcome;
  return null;
}

/** A decision (a heuristic act's, an operator's resolution) in the wire's Outcome enum. */
export function decisionToOutcomeWire(d: DecisionOutcome): OutcomeName {
  return d === 'commit' ? 'OUTCOME_COMMITTED' : 'OUTCOME_ABORTED';
}

/** The decision an Outcome enum names, or null when it names neither COMMITTED nor ABORTED. */
export function decisionFromOutcomeWire(w: OutcomeName): DecisionOutcome | null {
  return w === 'OUTCOME_COMMITTED' ? 'commit' : w === 'OUTCOME_ABORTED' ? 'abort' : null;
}

/**
 * The `verdict-outcome` metadata value of an ALREADY_DECIDED refusal
 * (src/transport/coordinator-rpc.ts, RECORDED_OUTCOME_KEY): the recorded
 * outcome's name, as the Python and Go SDKs read it too.
 */
export function recordedOutcomeToWire(o: Outcome): string {
  return o;
}

/** The recorded outcome a `verdict-outcome` value names, or null. */
export function recordedOutcomeFromWire(v: string): Outcome | null {
  return v === 'COMMITTED' || v === 'ABORTED' ? v : null;
}
