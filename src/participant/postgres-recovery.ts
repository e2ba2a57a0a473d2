// Recovery and watch of the PostgreSQL participant: how the engine's journal
// and PostgreSQL's own prepared transactions fit together. The code is shared
// with every database resource (prepared-recovery.ts); this file wires it to
// PostgreSQL.
//
// Two records of "prepared" exist. PostgreSQL's pg_prepared_xacts is the
// durable prepared state itself (PREPARE TRANSACTION is flushed before the
// resource says yes, R4). The engine's journal is kept as it is for every
// resource: it lists the transactions this participant voted YES on (the
// prepared record is synced before the vote) and those it decided, which is
// what the engine needs for duplicate PREPAREs and redelivered decisions (R7).
// Its file is `journal-postgres.log` in the data directory; it holds no data.
//
// On start, reconcile() merges them before engine.recover():
//
//   in the journal and in pg_prepared_xacts    in doubt, as usual
//   in the journal only                        in doubt too: the decision was
//                                              applied in PostgreSQL but its
//                                              record did not reach the journal;
//                                              re-applying it is answered by the
//                                              commit marker (idempotent)
//   in pg_prepared_xacts only                  in doubt too (adopted): a crash
//                                              between PREPARE TRANSACTION and the
//                                              journal's sync; the engine asks the
//                                              cluster like for any other
//   a hashed gid known to neither              left alone and reported: its txn id
//                                              cannot be asked about, and a
//                                              participant never decides alone (R4)
//
// While running, PreparedMonitor scans pg_prepared_xacts every scanIntervalMs:
// a prepared gid the engine does not hold as prepared (after a failed
// rollback, say) and older than orphanAfterMs is resolved by asking the
// cluster and applying its answer; one older than stuckAfterMs (5 minutes by
// default) is logged as a warning with its txn id, gid, age and the
// cluster's answer, and counted in the resource's preparedStats(). Old
// commit markers are deleted every markerCleanupIntervalMs.
import type { ParticipantEngine } from './engine.ts';
import { PostgresResource, PostgresConfigError, type PostgresResourceOptions } from './postgres.ts';
import {
  openDbParticipant,
  PreparedMonitor,
  type DbParticipantContext,
  type PreparedMonitorOptions,
  type PreparedParticipantOptions,
  type PreparedSetup,
} from './prepared-recovery.ts';

export {
  isTxnRecord,
  reconcile,
  TxnJournalState as PgJournalState,
  type Reconciled,
  type ScanReport,
  type StuckAlert,
} from './prepared-recovery.ts';

export const PG_JOURNAL_FILE = 'journal-postgres.log';

/** The shared monitor, typed for a PostgresResource. */
export class PostgresMonitor extends PreparedMonitor {
  constructor(
    o: Omit<PreparedMonitorOptions, 'resource' | 'engine'> & {
      resource: PostgresResource;
      engine: Pick<ParticipantEngine, 'stateOf' | 'resolveInDoubt'>;
    },
  ) {
    super(o);
  }
}

export interface PostgresParticipantOptions
  extends Omit<PostgresResourceOptions, 'clusterId' | 'participantId' | 'log'>,
    PreparedParticipantOptions {}

export type PostgresSetup = PreparedSetup<PostgresResource>;

/**
 * Opens the resource (refusing with the reason when PostgreSQL cannot do
 * two-phase commit), the journal, and reconciles them (see the table above).
 */
export function openPostgresParticipant(o: PostgresParticipantOptions & DbParticipantContext): Promise<PostgresSetup> {
  return openDbParticipant(o, {
    journalFile: PG_JOURNAL_FILE,
    open: (r) => PostgresResource.open(r),
    refuse: (message) => new PostgresConfigError(message),
  });
}
