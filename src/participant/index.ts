// `verdict/participant`: the participant SDK. startParticipant runs a
// participant in your process (the journal, the Participant gRPC service,
// registration, in-doubt recovery); without `postgres` it keeps its data in
// the journaled memory resource. This entry never loads `pg`: the PostgreSQL
// resource is `verdict/participant/postgres`, loaded only when asked for.
export {
  startParticipant,
  ParticipantStartupError,
  type ParticipantOptions,
  type ParticipantRuntime,
} from './runtime.ts';
// TLS with the local cluster of `npm start`: `tls: localClusterTls('shop')` (docs/tls.md).
export { localClusterTls } from '../transport/local-cluster.ts';
export {
  MemoryResource,
  memoryPayload,
  parsePayload,
  PAYLOAD_BYTES_MAX,
  KEYS_PER_TXN_MAX,
  KEY_CHARS_MAX,
  type Writes,
} from './memory.ts';
export { ParticipantEngine, type EngineOptions, type InDoubtTxn, type EngineCounts } from './engine.ts';
export {
  ParticipantError,
  type ClusterOutcome,
  type Outcome,
  type Resource,
  type ResourceVote,
  type TxnId,
} from './types.ts';
// TCC: startParticipant({ ..., tcc: { memory: handlers } }) or ({ tcc: { postgres: { url, handlers } } }); see
// docs/tcc.md.
export {
  TccRefusal,
  TTL_MS_MAX,
  type TccBranch,
  type TccTryResult,
  type TccCounts,
  type BranchState,
} from './tcc/barrier.ts';
export { MemoryTccResource, type TccMemoryHandlers } from './tcc/memory.ts';
export type { TccParticipantOptions, TccResource } from './tcc/setup.ts';
