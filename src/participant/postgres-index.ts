// `verdict/participant/postgres`: the PostgreSQL resource (PREPARE
// TRANSACTION / COMMIT PREPARED / ROLLBACK PREPARED) and the operator's
// heuristic resolution. The only entry that needs `pg`. Start a PostgreSQL
// participant with startParticipant({ ..., postgres: { url, ... } }) from
// `verdict/participant`; use the resource from this entry (resource.work).
export {
  PostgresResource,
  PostgresConfigError,
  HeuristicHazardError,
  pgPayload,
  parsePgPayload,
  PG_PAYLOAD_STATEMENTS_MAX,
  type PostgresResourceOptions,
  type PgTxnClient,
} from './postgres.ts';
export type { PostgresParticipantOptions } from './postgres-recovery.ts';
export {
  resolvePostgresByHand,
  HeuristicError,
  type HeuristicAct,
  type PgResolveOptions,
  type PgResolveResult,
} from './heuristic.ts';
export { PostgresTccResource, TCC_BARRIER_TABLE, type TccPgHandlers } from './tcc/postgres.ts';
