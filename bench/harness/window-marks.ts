// The load generator's progress lines for an orchestrator that samples
// something over exactly the measured window (bench/analysis/cpu-per-txn.ts reads
// every process's CPU time at "window open" and at "window closed").
//
// Both lines used to come from unref'd timers only; when the workers saw the
// window end and the result line was written before the "closed" timer had
// its turn, the process exited without it and the orchestrator failed with
// "never reported its measured window". Now each line is printed once, by
// its timer or at the latest by the caller before the result line.
//
// drain() bounds the wait for the workers after the window.

/** "window open" then "window closed", each at most once and in that order, whichever caller comes first. */
export function windowMarks(write: (line: string) => void = (line) => process.stdout.write(line)): {
  open(): void;
  close(): void;
} {
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

/** The measured window, in performance.now() time. */
export interface Window {
  measureFrom: number;
  stopAt: number;
}

/** How long the workers may still run after the window before they are abandoned. */
export const DRAIN_MS = 35_000;

/**
 * Waits for the workers, but not forever: what is still running `drainMs`
 * after the window's end is abandoned. Counted from the window's end, never
 * from the start: counted from the start, a warm-up and window longer than
 * DRAIN_MS had the client closed under running workers.
 */
export async function drain(p: Promise<unknown>, w: Window, drainMs = DRAIN_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waitMs = Math.max(0, w.stopAt - performance.now()) + drainMs;
  await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
  clearTimeout(timer);
}
