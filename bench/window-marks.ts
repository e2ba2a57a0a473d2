// The load generator's progress lines for an orchestrator that samples
// something over exactly the measured window (bench/cpu-per-txn.ts reads
// every process's CPU time at "window open" and at "window closed").
//
// Both lines used to come from unref'd timers only; when the workers saw the
// window end and the result line was written before the "closed" timer had
// its turn, the process exited without it and the orchestrator failed with
// "never reported its measured window". Now each line is printed once, by
// its timer or at the latest by the caller before the result line.

/** "window open" then "window closed", each at most once and in that order, whichever caller comes first. */
export function windowMarks(write: (line: string) => void = (line) => process.stdout.write(line)): { open(): void; close(): void } {
  let state: 'before' | 'open' | 'closed' = 'before';
  const open = (): void => {
    if (state !== 'before') return;
    state = 'open';
    write('window open\n');
  };
  return {
    open,
    close: () => {
      if (state === 'closed') return;
      open();
      state = 'closed';
      write('window closed\n');
    },
  };
}
