// The saga engine over a fake log and fake step services, for the unit
// tests of sagas: proposals wait in a list until applyAll() applies them to a
// real SagaTable (beside a DecisionTable holding the step services'
// registrations), and step calls wait until answer().

import { DecisionTable } from '../../src/commit/state.ts';
import {
  EndSagasUnsupported,
  SagaEngine,
  type SagaEngineConfig,
  type StepAnswer,
  type StepRequest,
} from '../../src/saga/engine.ts';
import { SagaTable, type SagaApplyResult, type SagaCommand, type SagaStepDef } from '../../src/saga/state.ts';

export const steps = (n: number): SagaStepDef[] =>
  Array.from({ length: n }, (_, k) => ({ service: `svc${k % 2}`, name: `step${k}`, input: `in${k}` }));

export interface Call {
  to: string;
  req: StepRequest;
  cb: (err: Error | null, a?: StepAnswer) => void;
}

export class SagaWorld {
  now = 1_000;
  index = 0;
  readonly table = new DecisionTable();
  readonly sagas = new SagaTable();
  readonly proposals: { cmd: SagaCommand; cb: (err: Error | null, r?: SagaApplyResult) => void }[] = [];
  readonly calls: Call[] = [];
  /** Single End calls (to step services in `oldServices`). */
  readonly ends: { to: string; sagaId: string; cb: (err: Error | null) => void }[] = [];
  /** EndSagas calls. */
  readonly endBatches: { to: string; sagaIds: string[]; cb: (err: Error | null, ended?: readonly string[]) => void }[] =
    [];
  /** Step services from before EndSagas: they answer it EndSagasUnsupported at once. */
  readonly oldServices = new Set<string>();
  /** EndSagas calls that an old step service answered EndSagasUnsupported. */
  unsupportedAnswers = 0;
  engine: SagaEngine;

  constructor(cfg: Partial<SagaEngineConfig> = {}) {
    for (const id of ['svc0', 'svc1'])
      this.table.apply(
        { t: 'register', id, endpoint: `127.0.0.1:${id.length}`, atMs: 0, kind: 'memory' },
        ++this.index,
      );
    this.engine = this.newEngine(cfg);
    this.engine.setLeadership(1);
  }

  newEngine(cfg: Partial<SagaEngineConfig> = {}): SagaEngine {
    return new SagaEngine(
      this.sagas,
      this.table.participants,
      {
        nowMs: () => this.now,
        random: () => 0.5,
        propose: (cmd, cb) => this.proposals.push({ cmd, cb }),
        callStep: (to, req, _d, cb) => this.calls.push({ to: to.id, req, cb }),
        endSaga: (to, sagaId, _d, cb) => this.ends.push({ to: to.id, sagaId, cb }),
        endSagas: (to, sagaIds, _d, cb) => {
          if (this.oldServices.has(to.id)) {
            this.unsupportedAnswers++;
            return cb(new EndSagasUnsupported(`${to.id} does not serve EndSagas`));
          }
          this.endBatches.push({ to: to.id, sagaIds: [...sagaIds], cb });
        },
      },
      {
        retryMinMs: 100,
        retryMaxMs: 1_000,
        actionAttemptsMax: 3,
        actionAbandonAfterMs: 0,
        stuckAfterAttempts: 4,
        ...cfg,
      },
    );
  }

  applyAll(): void {
    while (this.proposals.length > 0) {
      const p = this.proposals.shift();
      if (!p) break;
      const r = this.sagas.apply(p.cmd, ++this.index);
      p.cb(null, r);
      this.engine.onApplied(r);
    }
  }

  /** Every end notice out now is taken: each batch whole, each single End. */
  ackEnds(): void {
    for (const b of this.endBatches.splice(0)) b.cb(null, b.sagaIds);
    for (const e of this.ends.splice(0)) e.cb(null);
  }

  answer(a: StepAnswer | Error): Call {
    const c = this.calls.shift();
    if (!c) throw new Error('no call pending');
    if (a instanceof Error) c.cb(a);
    else c.cb(null, a);
    return c;
  }
}

export const DONE: StepAnswer = { status: 'done', output: 'ok', reason: '' };
