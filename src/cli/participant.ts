// `verdict participant`: run one participant process with the memory resource (or, with --resource postgres or mysql, a
// PostgreSQL or MySQL/MariaDB database), its journal in --data, registered with the cluster at --endpoints. Ctrl-C
// (SIGINT) or SIGTERM stops it cleanly: new PREPAREs are answered NO, requests in flight finish, then it exits 0.
import { printable } from './terminal-text.ts';
import { createLogger } from '../node/logger.ts';
import { JournalCorruptError } from '../participant/journal.ts';
import { redact } from '../participant/db-url.ts';
import {
  ParticipantStartupError,
  RegistrationRefusedError,
  startParticipant,
  type ParticipantRuntime,
} from '../participant/runtime.ts';
import { flag, UsageError } from './args.ts';
import { participantResolveCommand } from './participant-resolve.ts';
import { insecureArg, tlsArgs } from './client-tls.ts';
import { localServerTls } from './certs.ts';
import { participantRemoveCommand } from './txn.ts';
import type { TlsFiles } from '../transport/tls.ts';

export const PARTICIPANT_USAGE =
  'usage: verdict participant --id ID --listen HOST:PORT --data DIR [--cluster-id local] [--endpoints HOST:PORT,...] [--advertise HOST:PORT] [--metrics-listen HOST:PORT] [--resource memory|postgres|mysql] [--lock-wait-ms MS] [--pg-url postgres://...] [--pg-concurrency N] [--mysql-url mysql://...] [--mysql-concurrency N] [--log-level info] [--ca FILE --cert FILE --key FILE | --insecure]';

export const PARTICIPANT_HELP = `  verdict participant --id ID --listen HOST:PORT --data DIR [--cluster-id ID] [--endpoints HOST:PORT,...]
                    [--advertise HOST:PORT] [--metrics-listen HOST:PORT] [--log-level LEVEL]
                    [--resource memory|postgres|mysql] [--lock-wait-ms MS] [--pg-url postgres://USER@HOST:PORT/DB] [--pg-concurrency N]
                    [--mysql-url mysql://USER:PASSWORD@HOST:PORT/DB] [--mysql-concurrency N]
                    [--ca FILE --cert FILE --key FILE | --insecure]
                                      run a participant with the journaled memory resource; it registers itself.
                                      --metrics-listen serves Prometheus metrics at http://HOST:PORT/metrics
                                      --lock-wait-ms: a memory PREPARE that finds a key locked waits this long for
                                      the holder's decision before it votes NO (default 1000; 0: NO at once)
                                      --resource postgres commits in the database at --pg-url with PREPARE TRANSACTION
                                      (--pg-concurrency transactions open at once, default 8)
                                      --resource mysql commits in the MySQL/MariaDB database at --mysql-url with XA
                                      (--mysql-concurrency branches open at once, default 8; see docs/mysql.md)
                                      --ca/--cert/--key (or VERDICT_TLS_CA/CERT/KEY): serve mutual TLS and reach the
                                      cluster over TLS. Without them, a participant of the local cluster (npm start)
                                      uses its certificate from the local cluster's folder, made there on demand by
                                      the local CA; --insecure (VERDICT_INSECURE=true) serves plaintext instead
`;

const DEFAULT_ENDPOINTS = '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
/** The cluster refused the registration for good (EX_CONFIG): a setting must change before a restart can help. */
export const EXIT_REGISTRATION_REFUSED = 78;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export interface ParticipantArgs {
  id: string;
  listen: string;
  data: string;
  clusterId: string;
  endpoints: string[];
  advertise: string | undefined;
  metricsListen: string | undefined;
  logLevel: string;
  resource: 'memory' | 'postgres' | 'mysql';
  /** --lock-wait-ms (memory only); undefined: the runtime's default. */
  lockWaitMs: number | undefined;
  /** Set exactly when resource is postgres. */
  pgUrl: string | undefined;
  pgConcurrency: number;
  /** Set exactly when resource is mysql. */
  mysqlUrl: string | undefined;
  mysqlConcurrency: number;
  /** TLS files, from --ca/--cert/--key or VERDICT_TLS_*; null: plaintext. */
  tls: TlsFiles | null;
  /** --insecure (or VERDICT_INSECURE=true): without TLS, serve and call plaintext. */
  insecure: boolean;
}

/** Parses the flags; every problem is a one-line UsageError. */
export function parseParticipantArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParticipantArgs {
  const args = [...argv];
  const id = flag(args, '--id');
  const listen = flag(args, '--listen');
  const data = flag(args, '--data');
  const clusterId = flag(args, '--cluster-id') ?? 'local';
  const endpointsText = flag(args, '--endpoints') ?? env.VERDICT_ENDPOINTS ?? DEFAULT_ENDPOINTS;
  const advertise = flag(args, '--advertise');
  const metricsListen = flag(args, '--metrics-listen');
  const logLevel = flag(args, '--log-level') ?? 'info';
  const resource = flag(args, '--resource') ?? 'memory';
  const pgUrl = flag(args, '--pg-url');
  const pgConcurrencyText = flag(args, '--pg-concurrency');
  const mysqlUrl = flag(args, '--mysql-url');
  const mysqlConcurrencyText = flag(args, '--mysql-concurrency');
  const lockWaitText = flag(args, '--lock-wait-ms');
  const tls = tlsArgs(args, env);
  const insecure = insecureArg(args, env);
  if (tls !== null && (tls.cert === undefined || tls.key === undefined))
    throw new UsageError(
      '--ca needs --cert and --key too: a participant with TLS serves it with its own certificate (or set VERDICT_TLS_CERT and VERDICT_TLS_KEY)',
    );
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; ${PARTICIPANT_USAGE}`);
  if (id === undefined || listen === undefined || data === undefined) {
    throw new UsageError(`verdict participant needs --id, --listen and --data; ${PARTICIPANT_USAGE}`);
  }
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
    throw new UsageError(`--id "${id}" must be 1-64 letters, digits, '.', '_' or '-'`);
  if (clusterId === '') throw new UsageError('--cluster-id must not be empty');
  for (const [name, v] of [
    ['--listen', listen],
    ['--advertise', advertise],
    ['--metrics-listen', metricsListen],
  ] as const) {
    if (v !== undefined && !isHostPort(v))
      throw new UsageError(`${name} "${v}" is not HOST:PORT (e.g. 127.0.0.1:7101)`);
  }
  const endpoints = endpointsText
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const badEndpoint = endpoints.find((e) => !isHostPort(e));
  if (endpoints.length === 0 || badEndpoint !== undefined) {
    throw new UsageError(`--endpoints must be HOST:PORT,...; "${badEndpoint ?? endpointsText}" is not`);
  }
  if (!LEVELS.includes(logLevel)) throw new UsageError(`--log-level must be one of ${LEVELS.join(', ')}`);
  if (metricsListen !== undefined && metricsListen === listen)
    throw new UsageError(
      `--metrics-listen and --listen are both ${listen}: give the metrics endpoint a port of its own`,
    );
  if (resource !== 'memory' && resource !== 'postgres' && resource !== 'mysql')
    throw new UsageError(`--resource must be memory, postgres or mysql, not "${resource}"`);
  if (resource === 'postgres' && pgUrl === undefined)
    throw new UsageError('--resource postgres needs --pg-url postgres://USER@HOST:PORT/DATABASE');
  if (resource !== 'postgres' && (pgUrl !== undefined || pgConcurrencyText !== undefined))
    throw new UsageError('--pg-url and --pg-concurrency go with --resource postgres');
  if (resource === 'mysql' && mysqlUrl === undefined)
    throw new UsageError('--resource mysql needs --mysql-url mysql://USER:PASSWORD@HOST:PORT/DATABASE');
  if (resource !== 'mysql' && (mysqlUrl !== undefined || mysqlConcurrencyText !== undefined))
    throw new UsageError('--mysql-url and --mysql-concurrency go with --resource mysql');
  if (mysqlUrl !== undefined && !/^mysql:\/\/[^/]+\/[^/?#]+/.test(mysqlUrl))
    throw new UsageError(
      `--mysql-url "${redact(mysqlUrl)}" must be mysql://USER:PASSWORD@HOST:PORT/DATABASE (with the database)`,
    );
  const mysqlConcurrency = Number(mysqlConcurrencyText ?? '8');
  if (!Number.isInteger(mysqlConcurrency) || mysqlConcurrency < 1 || mysqlConcurrency > 1_000)
    throw new UsageError(`--mysql-concurrency must be an integer from 1 to 1000, not "${mysqlConcurrencyText}"`);
  if (pgUrl !== undefined && !/^postgres(ql)?:\/\//.test(pgUrl))
    throw new UsageError(`--pg-url "${redact(pgUrl)}" must start with postgres:// or postgresql://`);
  if (resource !== 'memory' && lockWaitText !== undefined)
    throw new UsageError('--lock-wait-ms goes with --resource memory (a database waits on its own locks)');
  const lockWaitMs = lockWaitText === undefined ? undefined : Number(lockWaitText);
  if (lockWaitMs !== undefined && (!Number.isInteger(lockWaitMs) || lockWaitMs < 0 || lockWaitMs > 60_000))
    throw new UsageError(`--lock-wait-ms must be an integer from 0 to 60000, not "${lockWaitText}"`);
  const pgConcurrency = Number(pgConcurrencyText ?? '8');
  if (!Number.isInteger(pgConcurrency) || pgConcurrency < 1 || pgConcurrency > 1_000)
    throw new UsageError(`--pg-concurrency must be an integer from 1 to 1000, not "${pgConcurrencyText}"`);
  return {
    id,
    listen,
    data,
    clusterId,
    endpoints,
    advertise,
    metricsListen,
    logLevel,
    resource,
    lockWaitMs,
    pgUrl,
    pgConcurrency,
    mysqlUrl,
    mysqlConcurrency,
    tls,
    insecure,
  };
}

function isHostPort(s: string): boolean {
  const m = /^(.+):(\d{1,5})$/.exec(s);
  return m !== null && Number(m[2]) <= 65_535;
}

/** `verdict participant ...`: starts the participant and keeps it running until SIGINT/SIGTERM. */
export async function participantCommand(argv: string[]): Promise<void> {
  if (argv[0] === 'resolve') return participantResolveCommand(argv.slice(1));
  if (argv[0] === 'remove') return participantRemoveCommand(argv.slice(1));
  const a = parseParticipantArgs(argv);
  const logger = createLogger(a.logLevel);
  const tls =
    a.tls ?? (a.insecure ? null : localServerTls(a.id, a.advertise ?? a.listen, a.clusterId, a.endpoints, logger));
  let p: Pick<ParticipantRuntime, 'stop' | 'registered'>;
  try {
    const common = {
      clusterId: a.clusterId,
      participantId: a.id,
      listen: a.listen,
      advertise: a.advertise,
      endpointsOfCluster: a.endpoints,
      dataDir: a.data,
      metricsListen: a.metricsListen,
      ...(tls !== null ? { tls } : {}),
      insecure: a.insecure,
      logger,
    };
    p =
      a.pgUrl !== undefined
        ? await startParticipant({ ...common, postgres: { url: a.pgUrl, concurrency: a.pgConcurrency } })
        : a.mysqlUrl !== undefined
          ? await startParticipant({ ...common, mysql: { url: a.mysqlUrl, concurrency: a.mysqlConcurrency } })
          : await startParticipant({ ...common, ...(a.lockWaitMs !== undefined ? { lockWaitMs: a.lockWaitMs } : {}) });
  } catch (err) {
    // Refusals (another participant's data dir, a corrupt journal, an address in use) are one line, not a stack.
    if (
      err instanceof ParticipantStartupError ||
      err instanceof JournalCorruptError ||
      (err instanceof Error && 'code' in err)
    ) {
      process.stderr.write(`verdict: ${printable(err.message)}\n`);
      process.exit(1);
    }
    throw err;
  }
  let signals = 0;
  const onSignal = (signal: string): void => {
    // A second signal while stopping forces the exit.
    if (++signals > 1) process.exit(130);
    logger.info({ signal }, 'stopping: new PREPAREs get NO, requests in flight finish first');
    void p.stop().then(() => process.exit(0));
  };
  // A registration the cluster will never accept (wrong cluster id, refused
  // certificate) ends the process with one line and a non-zero exit code.
  p.registered.catch((err: unknown) => {
    if (!(err instanceof RegistrationRefusedError)) return;
    signals = 1;
    process.stderr.write(`verdict: ${printable(err.message)}\n`);
    void p.stop().then(() => process.exit(EXIT_REGISTRATION_REFUSED));
  });
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}
