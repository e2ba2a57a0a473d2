// The MySQL participant's wiring for the runtime: the resource (which checks
// the server and refuses an unsafe one), its journal `journal-mysql.log`,
// and the recovery shared with every database resource
// (src/participant/prepared-recovery.ts): XA RECOVER on start and every
// scanIntervalMs, in doubt until the cluster answers, stuck alerts.
import {
  openDbParticipant,
  type DbParticipantContext,
  type PreparedParticipantOptions,
  type PreparedSetup,
} from '../../prepared-recovery.ts';
import { MySqlConfigError, MySqlResource, type MySqlResourceOptions } from './resource.ts';

export const MYSQL_JOURNAL_FILE = 'journal-mysql.log';

export interface MySqlParticipantOptions
  extends Omit<MySqlResourceOptions, 'clusterId' | 'participantId' | 'log'>,
    PreparedParticipantOptions {}

export type MySqlSetup = PreparedSetup<MySqlResource>;

export function openMySqlParticipant(o: MySqlParticipantOptions & DbParticipantContext): Promise<MySqlSetup> {
  return openDbParticipant(o, {
    journalFile: MYSQL_JOURNAL_FILE,
    open: (r) => MySqlResource.open(r),
    refuse: (message) => new MySqlConfigError(message),
  });
}
