// `verdict participant resolve`: the operator's heuristic act (R4) for the
// day the cluster is unreachable. It talks only to PostgreSQL, so it works
// with the cluster down: COMMIT PREPARED or ROLLBACK PREPARED of one stuck
// gid, recorded first in the adapter's verdict_heuristics table with who,
// when and why (src/participant/heuristic.ts). The participant process
// reports the act to the cluster once it is reachable.
import { printable } from './terminal-text.ts';
import { HeuristicError, resolvePostgresByHand, type ResolveResult } from '../participant/heuristic.ts';
import { bool, flag, UsageError } from './args.ts';
import { defaultOperator } from './txn.ts';

export const PARTICIPANT_RESOLVE_HELP = `  verdict participant resolve TXN-OR-GID --commit|--abort --reason TEXT --id ID
                    (--resource postgres --pg-url URL | --resource mysql --mysql-url URL)
                    [--cluster-id ID] [--operator WHO] [--json]
                                      the operator's heuristic act when the cluster is unreachable: COMMIT PREPARED or
                                      ROLLBACK PREPARED of one stuck gid, recorded in verdict_heuristics with who
                                      ($USER@host by default), when and why; the participant reports it to the cluster,
                                      which records HEURCOM/HEURRB, or HEURMIX if it decided otherwise.
                                      MySQL/MariaDB: XA COMMIT / XA ROLLBACK of the branch (TXN or xid gtrid,bqual)
`;

const USAGE =
  'usage: verdict participant resolve TXN-OR-GID --commit|--abort --reason TEXT --id ID (--resource postgres --pg-url URL | --resource mysql --mysql-url URL) [--cluster-id ID] [--operator WHO]';

/** Exit 0 when done (or already done by an earlier run), 1 when refused, with the reason on one line. */
export async function participantResolveCommand(argv: string[]): Promise<void> {
  const args = [...argv];
  const commit = bool(args, '--commit');
  const abortIt = bool(args, '--abort');
  const json = bool(args, '--json');
  const reason = flag(args, '--reason');
  const operator = flag(args, '--operator') ?? defaultOperator();
  const id = flag(args, '--id');
  const clusterId = flag(args, '--cluster-id') ?? 'local';
  const resource = flag(args, '--resource') ?? 'memory';
  const pgUrl = flag(args, '--pg-url');
  const mysqlUrl = flag(args, '--mysql-url');
  const [target, ...extra] = args;
  if (target === undefined || target.startsWith('--') || extra.length > 0) throw new UsageError(USAGE);
  if (commit === abortIt) throw new UsageError(`give exactly one of --commit and --abort; ${USAGE}`);
  if (reason === undefined || reason.trim() === '')
    throw new UsageError(
      `--reason TEXT is required: it is recorded with the act and reported to the cluster; ${USAGE}`,
    );
  if (id === undefined) throw new UsageError(`--id names the participant whose gid this is; ${USAGE}`);
  if (resource !== 'postgres' && resource !== 'mysql') {
    throw new UsageError(
      `heuristic resolution is built for --resource postgres and mysql: a memory participant holds no locks outside its own process, so restart it and let it ask the cluster; ${USAGE}`,
    );
  }
  if (resource === 'postgres' && (pgUrl === undefined || !/^postgres(ql)?:\/\//.test(pgUrl)))
    throw new UsageError(`--pg-url postgres://USER@HOST:PORT/DATABASE is required; ${USAGE}`);
  if (resource === 'mysql' && (mysqlUrl === undefined || !/^mysql:\/\//.test(mysqlUrl)))
    throw new UsageError(`--mysql-url mysql://USER:PASSWORD@HOST:PORT/DATABASE is required; ${USAGE}`);
  let r: ResolveResult;
  try {
    const act = {
      clusterId,
      participantId: id,
      target,
      outcome: commit ? ('COMMITTED' as const) : ('ABORTED' as const),
      operator,
      reason,
    };
    // Each database's driver is loaded for its own resource only (README, Install).
    r =
      resource === 'mysql'
        ? await (await import('../participant/resources/mysql/heuristic.ts')).resolveMySqlByHand({
            ...act,
            url: mysqlUrl as string,
          })
        : await resolvePostgresByHand({ ...act, url: pgUrl as string });
  } catch (err) {
    if (err instanceof HeuristicError) {
      process.stderr.write(`verdict: ${printable(err.message)}\n`);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
  if (json) return void process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
  const what =
    resource === 'mysql'
      ? r.act.outcome === 'COMMITTED'
        ? 'XA COMMIT'
        : 'XA ROLLBACK'
      : r.act.outcome === 'COMMITTED'
        ? 'COMMIT PREPARED'
        : 'ROLLBACK PREPARED';
  process.stdout.write(
    r.performed
      ? `${what} ${r.act.gid}: done by ${r.act.operator} (heuristic ${r.act.outcome === 'COMMITTED' ? 'COMMIT' : 'ABORT'} of transaction ${r.act.txnId}), recorded; the participant reports it to the cluster when it is reachable\n`
      : `transaction ${r.act.txnId} was already resolved by hand (${r.act.outcome}) by ${r.act.operator} at ${new Date(r.act.atMs).toISOString()}; nothing more to do\n`,
  );
}
