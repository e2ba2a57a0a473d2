// The console's charts: the last 15 minutes of this node's commit traffic,
// sampled every 5 s into a bounded ring in memory (180 samples; a restart
// empties it). Pure: the caller passes the time and the counters; the node
// (src/node/operator-pages.ts) runs the timer and feeds commit latencies.
//
// Latencies go into a fixed set of geometric buckets per sample (no list of
// values grows with traffic); p50 and p99 are read from the buckets, each
// within one bucket's width (25 %) of the true value.

/** How often a sample is taken. */
export const CHART_EVERY_MS = 5_000;
/** How far back the charts go. */
export const CHART_WINDOW_MS = 15 * 60_000;
const SAMPLES_MAX = CHART_WINDOW_MS / CHART_EVERY_MS;

/** Bucket upper bounds in ms: 0.05 ms growing by 25 % to past 60 s (64 buckets). */
const BUCKET_BOUNDS_MS: readonly number[] = Array.from({ length: 64 }, (_, i) => 0.05 * 1.25 ** i);

export interface ChartCounters {
  /** COMMIT decisions applied while this node led (monotonic). */
  committed: number;
  /** Aborts while this node led, by reason class (monotonic each). */
  aborted: Readonly<Record<string, number>>;
  /** Transactions in doubt now (prepared, undecided past the threshold). */
  inDoubt: number;
  /** Decided, waiting for ACKs now. */
  unacked: number;
  leader: boolean;
}

export interface ChartSample {
  atMs: number;
  commitsPerS: number;
  /** Aborts in the sample's interval, by reason class (only those that happened). */
  aborts: Record<string, number>;
  /** Commit latency on this node in the interval; null with no commit answered. */
  p50Ms: number | null;
  p99Ms: number | null;
  inDoubt: number;
  unacked: number;
  leader: boolean;
}

export class CommitCharts {
  private readonly samples: ChartSample[] = [];
  private buckets = new Array<number>(BUCKET_BOUNDS_MS.length + 1).fill(0);
  private observed = 0;
  private last: { atMs: number; committed: number; aborted: Record<string, number> } | null = null;

  /**
   * Starts the charts at `nowMs` with every counter at zero (the engine's
   * counters start at zero with the process), so commits before the first
   * sample are counted in it rather than taken as the baseline.
   */
  begin(nowMs: number): void {
    this.last ??= { atMs: nowMs, committed: 0, aborted: {} };
  }

  /** One commit answered by this node, in ms (from receipt to answer). */
  observeLatency(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    let i = 0;
    while (i < BUCKET_BOUNDS_MS.length && ms > BUCKET_BOUNDS_MS[i]!) i++;
    this.buckets[i]!++;
    this.observed++;
  }

  /** Takes a sample now; the first only sets the baseline of the counters. */
  sample(nowMs: number, c: ChartCounters): void {
    const prev = this.last;
    this.last = { atMs: nowMs, committed: c.committed, aborted: { ...c.aborted } };
    if (prev === null || nowMs <= prev.atMs) {
      this.resetLatency();
      return;
    }
    const seconds = (nowMs - prev.atMs) / 1000;
    // A counter that went back (a restart of the count) counts from zero.
    const delta = (now: number, before: number): number => (now >= before ? now - before : now);
    const aborts: Record<string, number> = {};
    for (const [reason, n] of Object.entries(c.aborted)) {
      const d = delta(n, prev.aborted[reason] ?? 0);
      if (d > 0) aborts[reason] = d;
    }
    this.samples.push({
      atMs: nowMs,
      commitsPerS: delta(c.committed, prev.committed) / seconds,
      aborts,
      p50Ms: this.quantile(0.5),
      p99Ms: this.quantile(0.99),
      inDoubt: c.inDoubt,
      unacked: c.unacked,
      leader: c.leader,
    });
    if (this.samples.length > SAMPLES_MAX) this.samples.splice(0, this.samples.length - SAMPLES_MAX);
    this.resetLatency();
  }

  /** The samples of the last 15 minutes, oldest first. */
  list(): ChartSample[] {
    return this.samples.map((s) => ({ ...s, aborts: { ...s.aborts } }));
  }

  private quantile(q: number): number | null {
    if (this.observed === 0) return null;
    const rank = Math.ceil(q * this.observed);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= rank) return BUCKET_BOUNDS_MS[Math.min(i, BUCKET_BOUNDS_MS.length - 1)]!;
    }
    return BUCKET_BOUNDS_MS[BUCKET_BOUNDS_MS.length - 1]!;
  }

  private resetLatency(): void {
    this.buckets = new Array<number>(BUCKET_BOUNDS_MS.length + 1).fill(0);
    this.observed = 0;
  }
}
