// What the participant runtime uses of the MySQL/MariaDB resource; imported
// only on demand in runtime.ts, since it imports `mysql2`.
import { HeuristicReporter as Reporter } from '../../heuristic.ts';
import { describeMySqlError } from './errors.ts';

export { openMySqlParticipant } from './participant.ts';
export { MySqlConfigError } from './resource.ts';

/** The heuristic reporter, describing a failed read as MySQL's error. */
export class HeuristicReporter extends Reporter {
  constructor(o: ConstructorParameters<typeof Reporter>[0]) {
    super({ describeError: describeMySqlError, ...o });
  }
}
