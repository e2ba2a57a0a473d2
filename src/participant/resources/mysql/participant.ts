// The MySQL participant's wiring for the runtime: the resource (which checks
// the server and refuses an unsafe one), its journal `journal-mysql.log`,
// and the recovery shared with every database resource
// (src/participant/prepared-recovery.ts): XA RECOVER on start and every
// scanIntervalMs, in doubt until the cluster answers, stuck alerts.
import { openPreparedParticipant, type PreparedParticipantOptions, type PreparedSetup } from '../../prepared-recovery.ts';
import type { EngineLog } from '../../types.ts';
import { MySqlConfigError, MySqlResource, type MySqlResourceOptions } from './resource.ts';

export const MYSQL_JOURNAL_FILE = 'journal-mysql.log';

export interface MySqlParticipantOptions extends Omit<MySqlResourceOptions, 'clusterId' | 'participantId' | 'log'>, PreparedParticipantOptions {}

export type MySqlSetup = PreparedSetup<MySqlResource>;

export function openMySqlParticipant(
  o: MySqlParticipantOptions & { clusterId: string; participantId: string; dataDir: string; log: EngineLog; compactAfterRecords?: number },
): Promise<MySqlSetup> {
  const { dataDir, compactAfterRecords, scanIntervalMs, orphanAfterMs, markerCleanupIntervalMs, ...resourceOptions } = o;
  return openPreparedParticipant({
    openResource: () => MySqlResource.open(resourceOptions),
    journalFile: MYSQL_JOURNAL_FILE,
    dataDir,
    log: o.log,
    compactAfterRecords,
    monitor: { scanIntervalMs, orphanAfterMs, markerCleanupIntervalMs },
    refuse: (message) => new MySqlConfigError(message),
  });
}
