// What the participant runtime uses of the MySQL/MariaDB resource; imported
// only on demand in runtime.ts, since it imports `mysql2`.
export { openMySqlParticipant } from './participant.ts';
export { MySqlConfigError } from './resource.ts';
export { HeuristicReporter } from '../../heuristic.ts';
