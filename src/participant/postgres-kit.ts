// What the participant runtime uses of the PostgreSQL resource; imported only
// through loadPostgresKit() in runtime.ts, since it imports `pg`.
import { HeuristicReporter as Reporter } from './heuristic.ts';
import { describePgError } from './postgres-sql.ts';

export { openPostgresParticipant } from './postgres-recovery.ts';
export { PostgresConfigError } from './postgres.ts';

/** The heuristic reporter, describing a failed read as PostgreSQL's error. */
export class HeuristicReporter extends Reporter {
  constructor(o: ConstructorParameters<typeof Reporter>[0]) {
    super({ describeError: describePgError, ...o });
  }
}
