// What the participant runtime uses of the PostgreSQL resource; imported only
// through loadPostgresKit() in runtime.ts, since it imports `pg`.
export { openPostgresParticipant } from './postgres-recovery.ts';
export { PostgresConfigError } from './postgres.ts';
export { HeuristicReporter } from './heuristic.ts';
