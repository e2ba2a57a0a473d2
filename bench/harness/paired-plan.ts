// The paired measurement's plan and arithmetic, free of I/O: the load
// generator's `paired` mode (bench/harness/loadgen.ts) runs the plan, the
// orchestrator (bench/scenarios/paired.ts) turns its result into figures, and a unit
// test checks the arithmetic.
//
// Why paired: on this shared two-core machine the same build's p50 moves by
// half from one minute to the next, and the scenarios a ratio compares ran
// minutes apart in the sweep (the etcd anchor half an hour after Verdict's
// raw log). Segments of a few seconds, the targets in turn and in a rotating
// order, put every target under the same slow changes; the systems not being
// measured are paused (SIGSTOP), so none shares the cores with another's
// segment.
import type { LatencySummary } from './hist.ts';

export interface PairedLoad {
  mode: 'paired';
  targets: PairedTarget[];
  /** The warm-up segment of each target, before the first round. */
  warmupMs: number;
  segmentMs: number;
  /** Left out at the start of each segment (the target was paused until then). */
  settleMs: number;
  rounds: number;
  txnTimeoutMs: number;
}

export type PairedTarget = { label: string } & (
  | { kind: 'raw'; system: 'verdict' | 'etcd'; leader: string; valueBytes: number }
  | { kind: 'commit'; endpoints: string[]; participants: string[]; parallelCommit: boolean; keyPrefix: string }
);

export interface PairedTargetResult {
  label: string;
  /** Committed transactions (acknowledged Puts) counted, over every round. */
  ok: number;
  aborted: number;
  errors: Record<string, number>;
  /** Every counted operation of every round. */
  latency: LatencySummary;
  /** The p50 of each round's segment, in round order. */
  round_p50_us: number[];
}

export interface PairedResult {
  mode: 'paired';
  rounds: number;
  segmentMs: number;
  settleMs: number;
  targets: PairedTargetResult[];
}

/** How long a paired run takes at most, before its drain: every segment, and a second per segment for the handshake. */
export function pairedSpanMs(cfg: Pick<PairedLoad, 'targets' | 'warmupMs' | 'segmentMs' | 'rounds'>): number {
  const segments = cfg.targets.length * (1 + cfg.rounds);
  return cfg.targets.length * cfg.warmupMs + cfg.targets.length * cfg.rounds * cfg.segmentMs + segments * 1_000;
}

/** A ratio of two targets' p50s: over every counted operation, and round by round. */
export interface PairedRatio {
  /** Pooled p50 of the numerator over the pooled p50 of the denominator. */
  pooled: number | null;
  /** Each round's p50 ratio, in round order. */
  rounds: number[];
  /** The median of the round ratios. */
  median_round: number | null;
  /** Rounds in which the numerator's p50 was the lower. */
  rounds_below_1: number;
}

/** `num` over `den`, by label; null fields when either target is missing or counted nothing. */
export function pairedRatio(r: PairedResult, num: string, den: string): PairedRatio {
  const a = r.targets.find((t) => t.label === num);
  const b = r.targets.find((t) => t.label === den);
  if (a === undefined || b === undefined || a.ok === 0 || b.ok === 0)
    return { pooled: null, rounds: [], median_round: null, rounds_below_1: 0 };
  const rounds: number[] = [];
  for (let i = 0; i < Math.min(a.round_p50_us.length, b.round_p50_us.length); i++) {
    if (a.round_p50_us[i] > 0 && b.round_p50_us[i] > 0) rounds.push(round3(a.round_p50_us[i] / b.round_p50_us[i]));
  }
  return {
    pooled: round3(a.latency.p50_us / b.latency.p50_us),
    rounds,
    median_round: rounds.length > 0 ? round3(median(rounds)) : null,
    rounds_below_1: rounds.filter((x) => x < 1).length,
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The middle value; the mean of the two middle values of an even count. */
export function median(values: readonly number[]): number {
  const s = [...values].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}
