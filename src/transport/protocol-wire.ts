// The participant protocol between its domain spelling (src/domain/protocol.ts)
// and the wire's enums of proto/participant.proto. The only place where
// 'VOTE_YES' or 'DECISION_COMMIT' is read or written.

import type { Decide, Prepare, VoteAnswer } from '../domain/protocol.ts';
import type { TxnStatus } from '../domain/protocol.ts';
import type { DecideRequest as WireDecideRequest, PrepareRequest as WirePrepareRequest, StatusAnswer as WireStatusAnswer, Vote as WireVote } from './participant-rpc.ts';

export function prepareToWire(p: Prepare): WirePrepareRequest {
  return { clusterId: p.clusterId, txnId: p.txnId, participantId: p.participantId, participants: p.participants, payload: p.payload, timeoutMs: p.timeoutMs };
}

export function voteToWire(v: VoteAnswer): WireVote {
  return { txnId: v.txnId, participantId: v.participantId, vote: v.vote === 'yes' ? 'VOTE_YES' : 'VOTE_NO', reason: v.reason };
}

/** The vote a participant answered, or null when it named neither YES nor NO. */
export function voteFromWire(w: WireVote): VoteAnswer | null {
  if (w.vote !== 'VOTE_YES' && w.vote !== 'VOTE_NO') return null;
  return { txnId: w.txnId, participantId: w.participantId, vote: w.vote === 'VOTE_YES' ? 'yes' : 'no', reason: w.reason };
}

export function decisionToWire(d: Decide): WireDecideRequest {
  return { clusterId: d.clusterId, txnId: d.txnId, participantId: d.participantId, decision: d.outcome === 'commit' ? 'DECISION_COMMIT' : 'DECISION_ABORT', reason: d.reason };
}

/** The DECISION a node sent, or null when it named neither COMMIT nor ABORT. */
export function decisionFromWire(w: WireDecideRequest): Decide | null {
  if (w.decision !== 'DECISION_COMMIT' && w.decision !== 'DECISION_ABORT') return null;
  return { clusterId: w.clusterId, txnId: w.txnId, participantId: w.participantId, outcome: w.decision === 'DECISION_COMMIT' ? 'commit' : 'abort', reason: w.reason };
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
