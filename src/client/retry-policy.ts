// The SDK's retry rule, without I/O: what one failed attempt says, whether
// another node may still be asked, whether the next Commit may still carry
// `begin` (R2), and how long to pause between rounds of attempts. Time and
// randomness come in as arguments. The real SDK (connection.ts,
// transaction.ts) and the whole-system simulator's client
// (test/sim/system-client.ts) both follow this module, so the simulator
// checks the rule that ships.
//
// R2 is why `begin` needs a rule: a leader that began a transaction and sent
// PREPARE may vanish, and a new leader that is asked to begin the same id
// would prepare it a second time, while the first leader's participants ask
// about it and are answered ABORT. So a Commit carries `begin` only while no
// earlier attempt may have reached a leader: a retry after an attempt whose
// fate is unknown is a plain Commit, which a leader that did not begin the
// transaction aborts.
import type { StatusName } from './errors.ts';

/**
 * What one failed attempt says about the request:
 *   refused the cluster's answer (INVALID_ARGUMENT, FAILED_PRECONDITION, ...): not retried, and nothing was done
 *   not-acted-on    certainly did nothing (NOT_LEADER, NO_LEADER, no connection made): retried, `begin` may ride along
 *   maybe-acted-on may have reached a leader and taken effect (UNKNOWN_OUTCOME, a deadline, a stream cut): retried
 *   without `begin`
 *   failed          not retried, and may have taken effect (INTERNAL, CANCELLED, ...): the outcome is unknown
 */
export type AttemptFailure = 'refused' | 'not-acted-on' | 'maybe-acted-on' | 'failed';

/** Codes by which the cluster refused the request itself: nothing was decided because of it. */
const REFUSALS: ReadonlySet<StatusName> = new Set<StatusName>([
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'RESOURCE_EXHAUSTED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
]);

export interface FailedAttempt {
  code: StatusName;
  /** The verdict-reason a node attached (docs/protocol-outcomes.md), if any. */
  reason?: string;
  /** True when no connection to the node was ever made (the transport's own status, no metadata). */
  neverConnected?: boolean;
}

export function classifyFailure(f: FailedAttempt): AttemptFailure {
  if (f.code === 'UNAVAILABLE') {
    if (f.reason === 'NOT_LEADER' || f.reason === 'NO_LEADER') return 'not-acted-on';
    return f.reason === undefined && f.neverConnected === true ? 'not-acted-on' : 'maybe-acted-on';
  }
  if (f.code === 'DEADLINE_EXCEEDED') return 'maybe-acted-on';
  return REFUSALS.has(f.code) ? 'refused' : 'failed';
}

/** Whether another node may still answer after this failure. */
export function retryable(f: AttemptFailure): boolean {
  return f === 'not-acted-on' || f === 'maybe-acted-on';
}

/**
 * R2 for one transaction's Commits: `begin` rides along only while every
 * attempt so far was refused or certainly did nothing. Once an attempt was
 * answered or may have reached a leader, never again.
 */
export class BeginRule {
  private mayBegin: boolean;

  constructor(
    /** True for a transaction begun with Begin; false when its first Commit begins it. */
    begun: boolean,
  ) {
    this.mayBegin = !begun;
  }

  /** Whether the next attempt carries `begin`. */
  get begins(): boolean {
    return this.mayBegin;
  }

  /** Records one attempt: answered, or failed as classifyFailure says. */
  attempted(result: 'answered' | AttemptFailure): void {
    this.mayBegin = this.mayBegin && this.keepsBegin(result);
  }

  /** The rule itself; the simulator's mutants override it (test/sim/protocol-mutants.ts). */
  protected keepsBegin(result: 'answered' | AttemptFailure): boolean {
    return result === 'refused' || result === 'not-acted-on';
  }
}

export interface BackoffOptions {
  /** The pause after the first full round of failures. */
  initialMs: number;
  /** The longest pause between rounds. */
  maxMs: number;
  multiplier: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 50, maxMs: 1_000, multiplier: 2 };

/**
 * The pause after round `round` (0-based) of failed attempts: capped
 * exponential with "equal jitter" (at least half the pause, so a round never
 * spins; the rest random, so clients restarted together do not stampede a
 * new leader). `random` is in [0, 1).
 */
export function pauseMs(round: number, backoff: BackoffOptions, random: number): number {
  const capMs = Math.min(backoff.maxMs, backoff.initialMs * backoff.multiplier ** round);
  return capMs / 2 + random * (capMs / 2);
}
