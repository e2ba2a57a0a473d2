// The coordinator engine: the leader's side of Paxos Commit on the Raft log,
// as the node, the console and the simulator use it. One façade over three
// parts:
//
//   ./commit-protocol.ts   the protocol: begin, commit, PREPARE, votes, the
//                          decision, DECISION delivery, ACKs, Forget, tick,
//                          leadership (what the simulator's AC checks test)
//   ./operator-actions.ts  operators' and participants' acts: resolve,
//                          heuristic reports, register, unregister
//   ./engine-views.ts      read views: list, view, participant activity,
//                          phase counts (pure functions of the state)
//
// The vocabulary they share (config, I/O, Txn, errors) is ./engine-types.ts.

import type { DecisionOutcome } from '../domain/protocol.ts';
import { CommitProtocol } from './commit-protocol.ts';
import type {
  EngineError,
  HeuristicReport,
  ListFilter,
  ParticipantActivity,
  Phase,
  ResolveAnswer,
  TxnView,
} from './engine-types.ts';
import {
  heldBy,
  type HeldView,
  listTxns,
  participantActivity,
  phaseCounts,
  type ViewState,
  viewTxn,
} from './engine-views.ts';
import { registerParticipant, reportHeuristic, resolve, unregisterParticipant } from './operator-actions.ts';
import type { HeuristicRecord, OperatorAct, ParticipantRecord } from './state.ts';

export * from './engine-types.ts';
export type { ProtocolPort } from './commit-protocol.ts';

export class CoordinatorEngine extends CommitProtocol {
  // ---- read views (./engine-views.ts) --------------------------------------

  /** How many of this leader's transactions are in each phase. */
  phases(): Record<Phase, number> {
    return phaseCounts(this.txns);
  }

  list(filter: ListFilter, limit: number): TxnView[] {
    return listTxns(this.viewState(), filter, limit);
  }

  /** One transaction as this leader knows it, or null if it knows nothing of it. */
  view(txnId: string): TxnView | null {
    return viewTxn(this.viewState(), txnId);
  }

  participantActivity(): ParticipantActivity[] {
    return participantActivity({ txns: this.txns, table: this.table, lastSeenAtMs: this.lastSeenAtMs });
  }

  /**
   * What the participants `ids` hold prepared for this leader's transactions (a TCC participant: its reserves), oldest
   * first.
   */
  heldBy(ids: ReadonlySet<string>, limit: number): HeldView[] {
    return heldBy({ txns: this.txns, nowMs: this.io.nowMs() }, ids, limit);
  }

  private viewState(): ViewState {
    return {
      txns: this.txns,
      table: this.table,
      lastSeenAtMs: this.lastSeenAtMs,
      nowMs: this.io.nowMs(),
      inDoubtAfterMs: this.cfg.inDoubtAfterMs,
      recoveryGaps: (id) => this.pc.unimplemented(id),
    };
  }

  // ---- operator actions (./operator-actions.ts) -----------------------------

  reportHeuristic(r: HeuristicReport, cb: (err: EngineError | null, record?: HeuristicRecord) => void): void {
    reportHeuristic(this.port, r, cb);
  }

  resolve(
    txnId: string,
    outcome: DecisionOutcome,
    act: Omit<OperatorAct, 'atMs'> & { forceUnknown?: boolean },
    cb: (err: EngineError | null, r?: ResolveAnswer) => void,
  ): void {
    resolve(this.port, txnId, outcome, act, cb);
  }

  /** `force`: remove it although decisions still name it (they stay owed to it, undelivered). */
  unregisterParticipant(
    id: string,
    operator: string,
    cb: (err: EngineError | null, removed?: boolean, owed?: string[]) => void,
    force?: { reason: string },
  ): void {
    unregisterParticipant(this.port, id, operator, cb, force);
  }

  /** `serves`: the optional protocol methods it serves (src/domain/protocol.ts); empty, none. */
  registerParticipant(
    id: string,
    endpoint: string,
    kind: string,
    serves: readonly string[],
    cb: (err: EngineError | null, p?: ParticipantRecord) => void,
  ): void {
    registerParticipant(this.port, id, endpoint, kind, serves, cb);
  }
}
