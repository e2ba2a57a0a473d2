import type { Entry, HardState, Snapshot } from '../raft/types.ts';

/**
 * What one Ready asks the disk to make durable, written as one synced batch.
 * Order inside the batch:
 *  1. `snapshot` (a leader's snapshot, installed on a lagging follower):
 *     replaces the whole log — every entry is dropped, whatever its index,
 *     because entries after it may belong to a history the snapshot overrode;
 *  2. `entries`: drop every entry at or above `entries[0].index`, append these;
 *  3. `hardState`, when set;
 *  4. `localSnapshot` (this node's own snapshot of its applied state): stored
 *     as the current snapshot, the log is kept;
 *  5. drop entries at or below `compactTo` (0: none).
 */
export interface PersistBatch {
  hardState: HardState | null;
  entries: Entry[];
  snapshot: Snapshot | null;
  localSnapshot: Snapshot | null;
  compactTo: number;
  /**
   * Whether the write must reach stable storage before the callback: true
   * whenever term, vote, entries or a snapshot change. A write that only
   * moves the commit index may skip the fsync (commit is not needed for
   * safety); a later synced write makes it durable too.
   */
  sync: boolean;
}

/** Everything that was synced, as found on start. */
export interface RecoveredState {
  hardState: HardState;
  snapshot: Snapshot;
  /** Contiguous entries after snapshot.metadata.index. */
  entries: Entry[];
  /**
   * 0 when the log holds everything this node acknowledged. Otherwise the
   * disk lost synced entries: this is the high-water mark (the last index
   * acknowledged), and the node starts recovering (src/raft/raft.ts,
   * recoverIndex): no vote, no campaign until a leader caught it up past it.
   */
  recoverIndex: number;
}

/** Who owns a data directory: checked on every start before anything is written. */
export interface StorageIdentity {
  clusterId: string;
  nodeId: string;
}

/**
 * The durable side of a Raft node. The real version is a segment log for the entries and LevelDB for the rest, with
 * synced writes (store.ts); the simulator's version loses whatever was not synced when it crashes. `persist` calls back
 * once the batch is on stable storage (or failed: the node must then stop, it cannot know what reached the disk).
 */
export interface LogStore {
  persist(batch: PersistBatch, onSynced: (err: Error | null) => void): void;
}
