// `verdict/saga`: what a step service needs (docs/sagas.md). The saga itself
// is started from `verdict/client` (`client.saga(spec)`); the orchestrator
// runs inside the cluster's nodes.
//
// - startStepService: serve a service's steps to the cluster, each effect
//   once however often it is called (the inbox, in a synced journal or in a
//   PostgreSQL table written in the step's own transaction);
// - the semantic lock against sagas' lack of isolation: the SemanticLock
//   interface and its PostgreSQL implementation.
export {
  startStepService,
  StepServiceStartupError,
  type PgStepHandlers,
  type StepHandlers,
  type StepService,
  type StepServiceOptions,
} from './step-service.ts';
export type { InboxRecord, StepHandler } from './inbox.ts';
export { localClusterTls } from '../transport/local-cluster.ts';
export type { PgStepHandler } from './postgres-inbox.ts';
export type { StepAnswer, StepRequest } from './engine.ts';
export type { StepKind } from './state.ts';
export {
  clearPending,
  markPending,
  pendingFor,
  postgresSemanticLock,
  type PgConnection,
  type SemanticLock,
} from './semantic-lock.ts';
