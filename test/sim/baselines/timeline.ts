// The readable story of a baseline run: the events that matter to a
// counterexample — who began what, who voted, who crashed, which links a
// partition cut, who decided what, when and by which rule — each stamped with
// virtual time and tagged with its transaction (or none, for crashes and
// network changes). Printed filtered to the transaction a violation names.

export interface TimelineEntry {
  atMs: number;
  /** The transaction the event belongs to; null for crashes, restarts and network changes. */
  txnId: string | null;
  text: string;
}

/** A bound, like every list in Verdict: a run longer than this keeps its first events. */
export const TIMELINE_ENTRIES_MAX = 5_000;

export class Timeline {
  readonly entries: TimelineEntry[] = [];
  private readonly seen = new Set<string>();

  constructor(private readonly now: () => number) {}

  add(txnId: string | null, text: string): void {
    if (this.entries.length < TIMELINE_ENTRIES_MAX) this.entries.push({ atMs: this.now(), txnId, text });
  }

  /** Adds an event the first time it happens only (a participant asking the same question every second). */
  once(txnId: string | null, text: string): void {
    const key = `${txnId ?? ''}|${text}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.add(txnId, text);
  }

  /**
   * Numbered lines: the events of `txnId` and the global ones (crashes,
   * network changes) from just before its first event on, at most `linesMax`.
   */
  format(txnId: string | null, linesMax = 40): string[] {
    const mine = (e: TimelineEntry): boolean => txnId === null || e.txnId === txnId;
    const first = this.entries.find((e) => e.txnId !== null && mine(e));
    // Global events long before the transaction began explain nothing about it.
    const fromMs = first ? first.atMs - 1_000 : 0;
    const picked = this.entries.filter((e) => (e.txnId === null ? e.atMs >= fromMs : mine(e)));
    const lines = picked.slice(0, linesMax).map((e, i) => `${String(i + 1).padStart(3)}. t=${e.atMs}ms  ${e.text}`);
    if (picked.length > linesMax) lines.push(`     … ${picked.length - linesMax} more events`);
    return lines;
  }
}

/** The transaction a violation line names (t1, t2, …), if any. */
export function txnOf(violation: string): string | null {
  return /\b(t\d+)\b/.exec(violation.replace(/^t=\d+ms: /, ''))?.[1] ?? null;
}
