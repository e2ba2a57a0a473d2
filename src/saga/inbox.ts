// The step service's inbox: exactly-once effects under at-least-once calls.
//
// The orchestrator calls a step with a stable key (saga id, step, action or
// compensate) and may call it again: after a lost answer, a leader change, an
// operator's retry, a duplicated message. The inbox keeps one record per key,
// written in the same durable write as the step's effect (for the memory
// resource: one journal record; for PostgreSQL: a row inserted in the same
// local transaction, src/saga/postgres-inbox.ts), and answers a repeat with
// the stored result instead of running the effect again.
//
// Two more rules make compensation safe when the orchestrator cannot know
// whether an action ran:
//   - a compensation for a step whose action never ran (or answered FAILED)
//     records an EMPTY compensation and runs nothing;
//   - an action that arrives after its compensation was recorded is refused
//     (answered FAILED and recorded so), so no action hangs after the saga
//     gave up on it.
// A key is kept until the orchestrator says the saga ended (end()), which
// happens only once the saga is finished or compensated and logged: no call
// for the saga can come after that, so no retry outlives its key.
//
// Pure: the journal comes in as an interface, and the effect runs inside the
// record's write (the handler returns the effect as data to be applied with it).

import type { StepAnswer, StepRequest } from './engine.ts';
import type { StepKind } from './state.ts';
import { OldestFirst } from '../util/oldest-first.ts';

export type InboxStatus = 'done' | 'failed' | 'empty' | 'refused';

export interface InboxRecord {
  /** 'step' records an answered call; 'end' drops every key of a saga. */
  t: 'step' | 'end';
  sagaId: string;
  step: number;
  kind: StepKind;
  key: string;
  status: InboxStatus;
  output: string;
  reason: string;
  /** The effect applied with this record (a resource write), as its handler described it; empty for none. */
  effect: string;
}

export interface InboxJournal {
  append(r: InboxRecord, cb: (err: Error | null) => void): void;
}

/**
 * What a step handler decides for a call, without applying it: DONE with an
 * output and the effect to apply, or FAILED (a refusal: nothing applied).
 * Throwing is a transient error: nothing is recorded and the orchestrator retries.
 */
export type StepHandler = (
  req: StepRequest,
) => { status: 'done'; output: string; effect: string } | { status: 'failed'; reason: string };

/** Ended sagas remembered to refuse late duplicates of their calls. */
export const ENDED_MAX = 100_000;

export class SagaInbox {
  /** key → its record, once durable or on its way there. */
  private readonly records = new Map<string, InboxRecord>();
  /**
   * Sagas whose end was recorded, oldest first, bounded: a call that the
   * network delayed past the end (a duplicate of an old request) finds no
   * key any more, and must not run its effect again; it is refused instead.
   */
  private readonly ended = new Map<string, true>();
  private readonly oldestEnded = new OldestFirst(this.ended);
  /** key → answers waiting for the record's write. */
  private readonly waiting = new Map<string, ((err: Error | null, a?: StepAnswer) => void)[]>();

  constructor(
    private readonly journal: InboxJournal,
    /** Called for each effect as its record is written (the resource's apply). */
    private readonly applyEffect: (r: InboxRecord) => void = () => {},
  ) {}

  /** Rebuilds the inbox from the records a journal kept, in order. */
  static recover(
    records: readonly InboxRecord[],
    journal: InboxJournal,
    applyEffect?: (r: InboxRecord) => void,
  ): SagaInbox {
    return new SagaInbox(journal, applyEffect).replay(records);
  }

  /** Loads the records a journal kept, in order, applying their effects again; returns this inbox. */
  replay(records: readonly InboxRecord[]): this {
    for (const r of records) {
      if (r.t === 'end') this.drop(r.sagaId);
      else {
        this.records.set(r.key, r);
        if (r.effect !== '') this.applyEffect(r);
      }
    }
    return this;
  }

  /** No hanging action: an action is refused once its step's compensation is recorded. */
  protected actionRefused(compensation: InboxRecord | undefined): boolean {
    return compensation !== undefined;
  }

  /** A compensation whose action never ran here, or answered FAILED, is recorded empty and runs nothing. */
  protected compensationEmpty(action: InboxRecord | undefined): boolean {
    return action === undefined || action.status !== 'done';
  }

  /** The stored record for a key, if any. */
  get(key: string): InboxRecord | undefined {
    return this.records.get(key);
  }

  get size(): number {
    return this.records.size;
  }

  handle(req: StepRequest, handler: StepHandler, cb: (err: Error | null, a?: StepAnswer) => void): void {
    const waiting = this.waiting.get(req.key);
    if (waiting) {
      waiting.push(cb);
      return;
    }
    const seen = this.records.get(req.key);
    if (seen) return cb(null, answerOf(seen));
    if (this.ended.has(req.sagaId))
      return cb(new Error(`saga ${req.sagaId} has ended; its step ${req.step} ${req.kind} is not run again`));
    const base = {
      t: 'step' as const,
      sagaId: req.sagaId,
      step: req.step,
      kind: req.kind,
      key: req.key,
      output: '',
      reason: '',
      effect: '',
    };
    let rec: InboxRecord;
    const other = this.records.get(counterpartKey(req));
    if (req.kind === 'action' && this.actionRefused(other)) {
      rec = {
        ...base,
        status: 'refused',
        reason: `step ${req.step} of saga ${req.sagaId} was compensated before its action arrived; the action is refused`,
      };
    } else if (req.kind === 'compensate' && this.compensationEmpty(other)) {
      rec = {
        ...base,
        status: 'empty',
        reason: other
          ? `the action answered ${other.status.toUpperCase()}: nothing to compensate`
          : 'the action never ran here: an empty compensation is recorded',
      };
    } else {
      let d: ReturnType<StepHandler>;
      try {
        d = handler(req);
      } catch (err) {
        return cb(err as Error);
      }
      rec =
        d.status === 'done'
          ? { ...base, status: 'done', output: d.output, effect: d.effect }
          : { ...base, status: 'failed', reason: d.reason };
    }
    // The record and its effect are one write: both or neither survive a crash.
    this.records.set(req.key, rec);
    if (rec.effect !== '') this.applyEffect(rec);
    this.waiting.set(req.key, [cb]);
    this.journal.append(rec, (err) => {
      const cbs = this.waiting.get(req.key) ?? [];
      this.waiting.delete(req.key);
      for (const w of cbs) err ? w(err) : w(null, answerOf(rec));
    });
  }

  /**
   * The saga ended and the orchestrator logged it: its keys may go. Durable first, then dropped. A repeated end writes
   * nothing.
   */
  end(sagaId: string, cb: (err: Error | null) => void): void {
    if (this.ended.has(sagaId)) return cb(null);
    const rec: InboxRecord = {
      t: 'end',
      sagaId,
      step: 0,
      kind: 'action',
      key: '',
      status: 'done',
      output: '',
      reason: '',
      effect: '',
    };
    this.journal.append(rec, (err) => {
      if (!err) this.drop(sagaId);
      cb(err);
    });
  }

  /** Whether the saga's end is recorded here (a repeated end needs no confirmation and writes nothing). */
  hasEnded(sagaId: string): boolean {
    return this.ended.has(sagaId);
  }

  /**
   * end() for many sagas: their records are appended together, so a journal
   * that group-commits (src/participant/journal.ts) makes them durable with
   * one sync. Answers the ids whose end is durable (or was before), once every
   * append answered; err: the first failure, when some did not.
   */
  endMany(sagaIds: readonly string[], cb: (err: Error | null, ended: string[]) => void): void {
    const done: string[] = [];
    let waiting = 0;
    let firstErr: Error | null = null;
    let settled = false;
    const finish = (): void => {
      if (waiting > 0 || settled) return;
      settled = true;
      cb(firstErr, done);
    };
    const fresh: string[] = [];
    for (const id of new Set(sagaIds)) {
      if (this.ended.has(id)) done.push(id);
      else fresh.push(id);
    }
    waiting = fresh.length;
    for (const id of fresh)
      this.end(id, (err) => {
        waiting--;
        if (err) firstErr ??= err;
        else done.push(id);
        finish();
      });
    finish();
  }

  private drop(sagaId: string): void {
    this.ended.set(sagaId, true);
    this.oldestEnded.trimTo(ENDED_MAX);
    for (const [k, r] of this.records) if (r.sagaId === sagaId) this.records.delete(k);
  }
}

function counterpartKey(req: StepRequest): string {
  return `${req.sagaId}/${req.step}/${req.kind === 'action' ? 'compensate' : 'action'}`;
}

/** What a stored record answers: an empty compensation is DONE (nothing was left to undo), a refused action FAILED. */
export function answerOf(r: Pick<InboxRecord, 'status' | 'output' | 'reason'>): StepAnswer {
  if (r.status === 'done' || r.status === 'empty') return { status: 'done', output: r.output, reason: r.reason };
  return { status: 'failed', output: '', reason: r.reason };
}
