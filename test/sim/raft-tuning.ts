// The Raft tuning both simulators give every node: small appends and windows,
// so flow control and batching run within a few entries. Each world adds its
// own election timeout and commit-notice setting.
import type { RaftTuning } from '../../src/raft/raft.ts';

export const SIM_RAFT_TUNING: Pick<
  RaftTuning,
  'heartbeatTicks' | 'inflightMsgsMax' | 'inflightBytesMax' | 'appendBytesMax'
> = {
  heartbeatTicks: 1,
  inflightMsgsMax: 8,
  inflightBytesMax: 1 << 20,
  appendBytesMax: 4096,
};
