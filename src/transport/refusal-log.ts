// Counts and logs refused Raft input. A peer that sends garbage may send a
// lot of it, so the log is rate-limited per (sender, reason): the first
// refusal is logged at once, later ones at most once per interval, with the
// number left out in between. A sender id costs nothing to vary, so there is
// also a bound on lines per interval over all senders; what it leaves out is
// reported in one line when the next interval starts. The counts feed
// verdict_raft_messages_refused_total{reason} (src/node/metrics.ts) and are
// never rate-limited.

import type { Logger } from 'pino';
import { clip, REFUSAL_REASONS, type Refusal, type RefusalReason } from './raft-edge.ts';

/** Distinct (sender, reason) keys remembered for rate limiting; a hostile sender may vary its id at will. */
const KEYS_MAX = 1_024;
/** Log lines about refused input per interval, over all senders. */
export const REFUSAL_LINES_MAX = 50;

export class RefusalLog {
  private readonly counts = new Map<RefusalReason, number>(REFUSAL_REASONS.map((r) => [r, 0]));
  private readonly lastLoggedAtMs = new Map<string, { atMs: number; suppressed: number }>();
  private windowStartAtMs = Number.NEGATIVE_INFINITY;
  private windowLines = 0;
  private windowSuppressed = 0;

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = 10_000,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** Refusals so far, by reason (every reason present, 0 when none). */
  totals(): ReadonlyMap<RefusalReason, number> {
    return this.counts;
  }

  /** One refused batch or message from `from` (as it claimed to be; clipped in the log). */
  refuse(from: string, r: Refusal, extra: Record<string, unknown> = {}): void {
    this.counts.set(r.reason, (this.counts.get(r.reason) ?? 0) + 1);
    const sender = clip(from);
    const key = `${r.reason}\u0000${sender}`;
    const nowMs = this.nowMs();
    const seen = this.lastLoggedAtMs.get(key);
    if (seen !== undefined && nowMs - seen.atMs < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    if (nowMs - this.windowStartAtMs >= this.intervalMs) {
      if (this.windowSuppressed > 0)
        this.log.warn(
          { suppressed: this.windowSuppressed },
          `${this.windowSuppressed} more refusals of Raft input were not logged (at most ${REFUSAL_LINES_MAX} lines per ${this.intervalMs} ms); see verdict_raft_messages_refused_total`,
        );
      this.windowStartAtMs = nowMs;
      this.windowLines = 0;
      this.windowSuppressed = 0;
    }
    if (this.windowLines >= REFUSAL_LINES_MAX) {
      this.windowSuppressed++;
      return;
    }
    this.windowLines++;
    if (this.lastLoggedAtMs.size >= KEYS_MAX) this.lastLoggedAtMs.clear();
    this.lastLoggedAtMs.set(key, { atMs: nowMs, suppressed: 0 });
    this.log.warn(
      {
        from: sender,
        reason: r.reason,
        field: r.field,
        detail: r.detail,
        ...(seen && seen.suppressed > 0 ? { suppressed: seen.suppressed } : {}),
        ...extra,
      },
      `refused Raft input from "${sender}": ${r.field ? `${r.field}: ` : ''}${r.detail}`,
    );
  }
}
