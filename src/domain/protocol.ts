// Verdict's protocol vocabulary, one spelling per idea, as the article names
// them: PREPARE / VOTE / DECISION / ACK, a vote YES or NO, a decision COMMIT
// or ABORT, an outcome committed or aborted. The pure layers (commit engine,
// participant engine, simulator) speak only this; the wire's enums
// ('VOTE_YES', 'DECISION_COMMIT', 'OUTCOME_COMMITTED') are translated at the
// transport edge (src/transport/participant-wire.ts) and nowhere else.

/** A participant's answer to PREPARE: YES means prepared and durable (R4). */
export type Vote = 'yes' | 'no';

/**
 * What Decide(T, …) writes into the log: the decision, in the log's own
 * spelling (the records on disk carry it, so it stays).
 */
export type DecisionOutcome = 'commit' | 'abort';

/** A transaction's final outcome (AC1: there is one per transaction). */
export type Outcome = 'committed' | 'aborted';

/** What a question about T may be answered: final, or "ask again later". */
export type ClusterOutcome = Outcome | 'in-progress' | 'unknown';

export const outcomeOfDecision = (d: DecisionOutcome): Outcome => (d === 'commit' ? 'committed' : 'aborted');
export const decisionOfOutcome = (o: Outcome): DecisionOutcome => (o === 'committed' ? 'commit' : 'abort');

/** PREPARE: do everything but commit, make the prepared state durable, vote. */
export interface Prepare {
  clusterId: string;
  txnId: string;
  participantId: string;
  /** Every participant of the transaction, for the participant's records. */
  participants: string[];
  /** The application's work for this participant, opaque to the coordinator. */
  payload: Uint8Array;
  /** The transaction's remaining budget (a duration). */
  timeoutMs: number;
}

/** VOTE: the answer to one PREPARE. */
export interface VoteAnswer {
  txnId: string;
  participantId: string;
  vote: Vote;
  /** Why NO, or empty. */
  reason: string;
}

/** DECISION: the outcome read from the coordinator's applied log (R1). */
export interface Decide {
  clusterId: string;
  txnId: string;
  participantId: string;
  outcome: DecisionOutcome;
  reason: string;
}

/** ACK: the decision is applied and durable at the participant. */
export interface Ack {
  txnId: string;
  participantId: string;
}
