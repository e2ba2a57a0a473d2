// The coordinator engine's fake world, shared by its unit tests: proposals
// are applied to a real DecisionTable when the test says so, participants
// vote and acknowledge DECISIONs when the test says so.

import {
  CoordinatorEngine,
  type DecisionRequest,
  type EngineConfig,
  type EngineIO,
  type PrepareRequest,
} from '../../src/commit/engine.ts';
import type { Vote } from '../../src/domain/protocol.ts';
import { DecisionTable, type ApplyResult, type Command, type DecisionCommand } from '../../src/commit/state.ts';
import type { TxnStatus } from '../../src/participant/types.ts';

export interface PendingProposal {
  cmd: Command;
  cb: (err: Error | null, r?: ApplyResult) => void;
  /** How long the engine let it wait for company (EngineIO.propose); 0: at the end of the turn. */
  lingerMs: number;
}

export interface PendingPrepare {
  to: string;
  req: PrepareRequest;
  /** `reserveTtlMs`: a TCC participant's reserve TTL, as the link passes a checked one on. */
  answer: (vote: Vote | Error, reason?: string, reserveTtlMs?: number) => void;
}

export interface PendingDecision {
  to: string;
  req: DecisionRequest;
  cb: (err: Error | null) => void;
}

export interface PendingStatus {
  to: string;
  txnId: string;
  cb: (err: Error | null, status?: TxnStatus) => void;
}

export class EngineWorld {
  now = 1_000;
  index = 0;
  readonly table = new DecisionTable();
  readonly proposals: PendingProposal[] = [];
  readonly prepares: PendingPrepare[] = [];
  readonly decisions: PendingDecision[] = [];
  readonly statuses: PendingStatus[] = [];
  readonly engine: CoordinatorEngine;
  /** A test's fault point (src/node/fault-point.ts); none by default. */
  faultPoint: EngineIO['faultPoint'] = undefined;
  /** Where leadership is going while it leaves this leader (EngineIO.handingOverTo); null: it stays. */
  handingOverTo: string | null = null;

  /**
   * A leader's engine with `participants` registered in its table, each
   * serving what the participant runtime serves (Exchange, Status) except
   * those in `oldProtocol`: built before `serves` existed, they list nothing.
   */
  constructor(participants: readonly string[], config: Partial<EngineConfig>, oldProtocol: readonly string[] = []) {
    const io: EngineIO = {
      nowMs: () => this.now,
      random: () => 0.5,
      propose: (cmd, cb, lingerMs = 0) => this.proposals.push({ cmd, cb, lingerMs }),
      sendPrepare: (to, req, _deadline, cb) =>
        this.prepares.push({
          to: to.id,
          req,
          answer: (v, reason = '', reserveTtlMs = undefined) =>
            v instanceof Error
              ? cb(v)
              : cb(null, reserveTtlMs === undefined ? { vote: v, reason } : { vote: v, reason, reserveTtlMs }),
        }),
      sendDecision: (to, req, _deadline, cb) => this.decisions.push({ to: to.id, req, cb }),
      sendStatus: (to, txnId, _timeoutMs, cb) => this.statuses.push({ to: to.id, txnId, cb }),
      faultPoint: (point, txnId) => this.faultPoint?.(point, txnId) ?? 'go-on',
      handingOverTo: () => this.handingOverTo,
    };
    this.engine = new CoordinatorEngine(this.table, io, config);
    for (const id of participants) {
      const serves = oldProtocol.includes(id) ? undefined : ['Exchange', 'Status'];
      this.table.apply(
        { t: 'register', id, endpoint: `127.0.0.1:1${id.charCodeAt(0)}`, atMs: 0, kind: 'memory', serves },
        ++this.index,
      );
    }
    this.engine.setLeadership(1);
  }

  /** Commits the oldest pending proposal through the "log": apply, callback, onApplied. */
  applyNext(): ApplyResult {
    const p = this.proposals.shift();
    if (!p) throw new Error('no proposal pending');
    // The commit engine proposes decision table commands only.
    const r = this.table.apply(p.cmd as DecisionCommand, ++this.index);
    p.cb(null, r);
    this.engine.onApplied(r);
    return r;
  }

  /** Commits every pending proposal, including those proposed while applying. */
  applyAll(): void {
    while (this.proposals.length > 0) this.applyNext();
  }

  /** Participant `to` answers its oldest pending PREPARE. */
  vote(to: string, v: Vote | Error, reason?: string, reserveTtlMs?: number): void {
    const i = this.prepares.findIndex((p) => p.to === to);
    if (i < 0) throw new Error(`no PREPARE pending for ${to}`);
    this.prepares.splice(i, 1)[0].answer(v, reason, reserveTtlMs);
  }

  ackAll(): void {
    for (const d of this.decisions.splice(0)) d.cb(null);
  }
}
