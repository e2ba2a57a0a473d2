// Protocol gaps: a participant that answers UNIMPLEMENTED to a method the
// cluster needs of it (Status for parallel commit's recovery, Decide, or
// Prepare itself). Such a call is retried like any failed one, but it will
// fail until the participant is fixed, so the node says so where an operator
// looks: one warn line per participant and method at a bounded rate (with
// how many were not logged since), and a counter by participant and method
// (verdict_participant_unimplemented_total). The participant label is
// bounded: only ids in the replicated registry reach a call, and this map
// keeps at most GAPS_MAX pairs (the oldest go).
import type { Logger } from 'pino';
import type { ParticipantMethod } from '../domain/protocol.ts';
import { OldestFirst } from '../util/oldest-first.ts';

/** (participant, method) pairs counted at once. */
export const GAPS_MAX = 4_096;
/** One warn line per participant and method per this long. */
export const GAP_WARN_EVERY_MS = 60_000;

interface Gap {
  participantId: string;
  method: ParticipantMethod;
  count: number;
  lastWarnAtMs: number;
  /** Reports since the last warn line. */
  unlogged: number;
}

export class ProtocolGaps {
  private readonly gaps = new Map<string, Gap>();
  private readonly oldest = new OldestFirst(this.gaps);

  constructor(private readonly warnEveryMs = GAP_WARN_EVERY_MS) {}

  /** A call of `method` to `participantId` was answered UNIMPLEMENTED (for `txnId`, when there is one). */
  report(
    log: Logger,
    nowMs: number,
    participantId: string,
    method: ParticipantMethod,
    txnId: string,
    needed: string,
  ): void {
    const key = `${participantId}\u0000${method}`;
    let g = this.gaps.get(key);
    if (g === undefined) {
      g = { participantId, method, count: 0, lastWarnAtMs: Number.NEGATIVE_INFINITY, unlogged: 0 };
      this.gaps.set(key, g);
      this.oldest.trimTo(GAPS_MAX);
    }
    g.count += 1;
    if (nowMs - g.lastWarnAtMs < this.warnEveryMs) {
      g.unlogged += 1;
      return;
    }
    log.warn(
      { participantId, method, txnId, notLoggedSince: g.unlogged },
      `participant ${participantId} answered UNIMPLEMENTED to ${method}, which ${needed}; fix or upgrade the participant (docs/protocol.md, "Methods a participant serves")`,
    );
    g.lastWarnAtMs = nowMs;
    g.unlogged = 0;
  }

  /** Every pair seen, with its count, for the metric. */
  counts(): { participantId: string; method: ParticipantMethod; count: number }[] {
    return [...this.gaps.values()].map((g) => ({ participantId: g.participantId, method: g.method, count: g.count }));
  }
}

/** What the cluster needs `method` for, in the log line's words. */
export function neededFor(method: ParticipantMethod): string {
  switch (method) {
    case 'Prepare':
      return 'every transaction needs (its transactions abort)';
    case 'Decide':
      return 'every decision is delivered by (the decision is retried until it is acknowledged)';
    case 'Status':
      return "parallel commit's recovery asks (a staged transaction waits until the participant asks GetOutcome itself)";
    case 'Exchange':
      return 'is optional (the leader uses the unary calls)';
  }
}
