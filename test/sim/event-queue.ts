// Virtual time: a binary heap of events ordered by (time, insertion order),
// so two runs of the same seed interleave events identically.

interface Ev {
  at: number;
  seq: number;
  run: () => void;
}

/** A run that passed its budget of events (EventQueue.budget). */
export class SimBudgetError extends Error {}

export class EventQueue {
  private heap: Ev[] = [];
  private seq = 0;
  now = 0;
  steps = 0;
  /**
   * Events one run may take: a run that passes it is stuck in a storm of
   * messages or a loop that never lets virtual time end, which would
   * otherwise take the whole test process down with it; it fails as a
   * violation of its own, with its seed, instead. Runs take a few thousand.
   */
  budget = 2_000_000;

  at(timeMs: number, run: () => void): void {
    this.push({ at: Math.max(timeMs, this.now), seq: this.seq++, run });
  }

  after(delayMs: number, run: () => void): void {
    this.at(this.now + delayMs, run);
  }

  /** Runs events until the queue is empty, time passes `untilMs`, or `stop()` says so. */
  runUntil(untilMs: number, stop: () => boolean = () => false): void {
    while (this.heap.length > 0 && this.heap[0].at <= untilMs) {
      const ev = this.pop();
      this.now = ev.at;
      if (++this.steps > this.budget)
        throw new SimBudgetError(
          `livelock: the run took more than ${this.budget} events (at t=${this.now}ms, ${this.heap.length} pending): a message storm or a loop`,
        );
      ev.run();
      if (stop()) return;
    }
    this.now = Math.max(this.now, untilMs);
  }

  /**
   * Runs events for at most `forMs` more, looking every `pollMs` (the first
   * time at once) whether the world has become quiet; says whether it has.
   */
  runUntilQuiet(forMs: number, pollMs: number, isQuiet: () => boolean): boolean {
    const deadline = this.now + forMs;
    let quiet = false;
    const poll = (): void => {
      quiet = isQuiet();
      if (!quiet) this.after(pollMs, poll);
    };
    this.after(0, poll);
    this.runUntil(deadline, () => quiet);
    return quiet;
  }

  private push(ev: Ev): void {
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }

  private pop(): Ev {
    const h = this.heap;
    const top = h[0];
    const last = h.pop() as Ev;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l], h[m])) m = l;
        if (r < h.length && less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
}

function less(a: Ev, b: Ev): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
