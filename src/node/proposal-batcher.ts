// Group commit of the engine's proposals: the commands proposed during one
// event-loop turn (the COMMITs of every transaction whose last vote arrived
// in one batch, the Forgets that ride them, say) go to Raft in one proposal.
// Consecutive Decides and Forgets share one decision batch entry
// (src/commit/decision-batch.ts); any other command keeps its own JSON entry
// at its place, so the log holds the commands in the order they were proposed.
//
// A command added with a linger (the explicit COMMIT of a transaction that
// parallel commit already answered) does not end the turn by itself: it
// waits up to its linger for another command, and goes with the first one
// that comes. At one transaction at a time that is the next transaction's
// STAGING record, so both share one entry, one append per follower and one
// sync per node instead of two of each. Under load there is company in
// every turn and nothing waits.
//
// No I/O: `schedule` ends the turn (setImmediate in the node, the virtual
// clock in the simulator) and `after` sets the linger's timer (setTimeout,
// the virtual clock), so the simulator runs this very code.

import {
  BATCH_BYTES_MAX,
  BATCH_RECORDS_MAX,
  batchable,
  encodeDecisionBatch,
  recordBytesBound,
  type BatchCommand,
} from '../commit/decision-batch.ts';
import { encodeCommand, type ApplyResult, type Command } from '../commit/state.ts';
import type { ProposeCallback } from './driver.ts';

export type BatchProposeCallback = ProposeCallback<ApplyResult | null>;

export class ProposalBatcher {
  private cmds: Command[] = [];
  private cbs: BatchProposeCallback[] = [];
  private scheduled = false;
  /** Cancels the pending linger timer; null when none is set. */
  private cancelLinger: (() => void) | null = null;

  constructor(
    /** Driver.proposeBatch: the entries of one turn, one callback each. */
    private readonly propose: (datas: Uint8Array[], cbs: BatchProposeCallback[]) => void,
    private readonly schedule: (fn: () => void) => void,
    /** Runs fn after delayMs and returns its cancel: the timer of a command added with a linger. */
    private readonly after: (delayMs: number, fn: () => void) => () => void,
  ) {}

  /**
   * `cb` gets this command's own result, also when it rode a batch entry.
   * With `lingerMs` > 0 the command waits up to that long for company
   * (see the top of this file); without, it goes at the end of this turn.
   */
  add(cmd: Command, cb: BatchProposeCallback, lingerMs = 0): void {
    this.cmds.push(cmd);
    this.cbs.push(cb);
    if (this.scheduled) return;
    if (lingerMs > 0) {
      this.cancelLinger ??= this.after(lingerMs, () => {
        this.cancelLinger = null;
        this.flush();
      });
      return;
    }
    this.scheduled = true;
    this.schedule(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.cancelLinger !== null) {
      this.cancelLinger();
      this.cancelLinger = null;
    }
    if (this.cmds.length === 0) return;
    const cmds = this.cmds;
    const cbs = this.cbs;
    this.cmds = [];
    this.cbs = [];
    const datas: Uint8Array[] = [];
    const entryCbs: BatchProposeCallback[] = [];
    let run: BatchCommand[] = [];
    let runCbs: BatchProposeCallback[] = [];
    let runBytes = 0;
    const closeRun = (): void => {
      if (run.length === 0) return;
      datas.push(encodeDecisionBatch(run));
      entryCbs.push(fanOut(runCbs));
      run = [];
      runCbs = [];
      runBytes = 0;
    };
    for (let i = 0; i < cmds.length; i++) {
      const cmd = cmds[i];
      if (!batchable(cmd)) {
        closeRun();
        datas.push(encodeCommand(cmd));
        entryCbs.push(cbs[i]);
        continue;
      }
      const bytes = recordBytesBound(cmd);
      if (run.length === BATCH_RECORDS_MAX || (run.length > 0 && runBytes + bytes > BATCH_BYTES_MAX)) closeRun();
      run.push(cmd);
      runCbs.push(cbs[i]);
      runBytes += bytes;
    }
    closeRun();
    this.propose(datas, entryCbs);
  }
}

/** One batch entry's callback, handing each record's result to the command that proposed it. */
function fanOut(cbs: BatchProposeCallback[]): BatchProposeCallback {
  return (err, r) => {
    if (err) {
      for (const cb of cbs) cb(err);
      return;
    }
    const results = r?.result?.t === 'batch' ? r.result.results : [];
    for (let i = 0; i < cbs.length; i++) {
      const result = results[i];
      // Only a broken decoder (the simulator's batch-drops-last mutant) applies fewer records than were proposed.
      if (result === undefined || r === undefined)
        cbs[i](new Error(`entry ${r?.index ?? '?'} applied without a result for record ${i}; retry idempotently`));
      else cbs[i](null, { index: r.index, result });
    }
  };
}
