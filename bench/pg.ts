// The PostgreSQL hook. When the PostgreSQL participant adapter lands
// (src/participant/postgres*), this file grows three things, and nothing else
// in bench/ has to change shape:
//
// 1. pgFloors(): PREPARE TRANSACTION + COMMIT PREPARED straight against the
//    database (one connection, one small write, many samples), the floor a
//    commit through Verdict is compared with;
// 2. pgScenarios(): the commit scenarios with PostgreSQL participants
//    (nodes 3, participants 2, the concurrency sweep), returned as plan
//    entries for bench/main.ts to run like the memory ones;
// 3. pgThroughVerdictOverDirect(): commit p50 through Verdict ÷ direct
//    PREPARE + COMMIT PREPARED p50, reported as
//    ratios.pg_through_verdict_over_direct.
//
// Until then every function answers null with the reason in PG_SKIPPED, and
// the results say so.
import type { LatencySummary } from './hist.ts';

export interface PgFloors {
  prepare_commit_prepared: LatencySummary;
}

export const PG_SKIPPED = 'the PostgreSQL participant adapter has not landed yet (bench/pg.ts is the hook)';

export async function pgFloors(): Promise<PgFloors | null> {
  return null;
}

/** Scenario descriptions to append to the plan; none until the adapter exists. */
export function pgScenarios(): [] {
  return [];
}

export function pgThroughVerdictOverDirect(): number | null {
  return null;
}
