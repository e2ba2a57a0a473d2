// The SDK's public surface.
export { VerdictClient, type BeginOptions, type TransactionInfo, type VerdictClientOptions } from './client.ts';
export {
  DEFAULT_AWAIT_ACKS_MS,
  Transaction,
  type CommitOptions,
  type ClusterOutcome,
  type CommitResult,
  type Outcome,
  type OutcomeResult,
  type Payload,
} from './transaction.ts';
export { CoordinatorConnection, type BackoffOptions, type CallOptions, type ConnectionOptions } from './connection.ts';
export {
  AcksPendingError,
  OutcomeUnknownError,
  RetriesExhaustedError,
  VerdictError,
  type StatusName,
} from './errors.ts';
export { tlsCredentials } from './tls.ts';
export { localClusterTls } from '../transport/local-cluster.ts';
export type { TraceContext } from './trace.ts';
export {
  SagaCaller,
  SagaHandle,
  type SagaCallAttempts,
  type SagaEnd,
  type SagaSpec,
  type SagaStatus,
  type SagaStepSpec,
  type SagaStepStatus,
} from './saga.ts';
