// Group commit of the engine's proposals: the commands proposed during one
// event-loop turn (the COMMITs of every transaction whose last vote arrived
// in one batch, the Forgets that ride them, say) go to Raft in one proposal.
// Consecutive Decides and Forgets share one decision batch entry
// (src/commit/decision-batch.ts); any other command keeps its own JSON entry
// at its place, so the log holds the commands in the order they were proposed.
//
// No I/O: `schedule` ends the turn (setImmediate in the node, the virtual
// clock in the simulator), so the simulator runs this very code.

import { BATCH_BYTES_MAX, BATCH_RECORDS_MAX, batchable, encodeDecisionBatch, recordBytesBound, type BatchCommand } from '../commit/decision-batch.ts';
import { encodeCommand, type ApplyResult, type Command } from '../commit/state.ts';
import type { ProposeCallback } from './driver.ts';

export type BatchProposeCallback = ProposeCallback<ApplyResult | null>;

export class ProposalBatcher {
  private cmds: Command[] = [];
  private cbs: BatchProposeCallback[] = [];
  private scheduled = false;

  constructor(
    /** Driver.proposeBatch: the entries of one turn, one callback each. */
    private readonly propose: (datas: Uint8Array[], cbs: BatchProposeCallback[]) => void,
    private readonly schedule: (fn: () => void) => void,
  ) {}

  /** `cb` gets this command's own result, also when it rode a batch entry. */
  add(cmd: Command, cb: BatchProposeCallback): void {
    this.cmds.push(cmd);
    this.cbs.push(cb);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
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
      if (result === undefined || r === undefined) cbs[i](new Error(`entry ${r?.index ?? '?'} applied without a result for record ${i}; retry idempotently`));
      else cbs[i](null, { index: r.index, result });
    }
  };
}
