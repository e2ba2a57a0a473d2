// The `verdict` command: run a node, run a local cluster, ask a cluster how
// it is doing, and act on its transactions, sagas, members and participants.
//
// User errors print one line and exit non-zero; stack traces are for bugs.

// Each command's module is imported when that command runs, not before:
// `verdict status` loads neither grpc-js nor the .proto files (it calls
// Status over node:http2), nor anything of the node, LevelDB or PostgreSQL,
// which keeps a client command's start-up short.
import { bool, flag, UsageError } from './args.ts';
import { checkFlags } from './flags.ts';
import { clientSecurity, TLS_FLAGS_HELP, useClientTls } from './client-tls.ts';
import { packageVersion } from '../util/version.ts';
import { absentPackages, missingPackage, missingPackagesMessage } from '../util/optional-package.ts';
import { printable } from './terminal-text.ts';

const ENDPOINTS_NOTE = '--endpoints defaults to $VERDICT_ENDPOINTS, or the local cluster (127.0.0.1:7001,7002,7003).\n';

const NODE_HELP = `  verdict node --config FILE [--set KEY=VALUE ...] [--insecure] [--classic-commit | --parallel-commit]
                                      run one node (see cluster/n1.json for the format); SIGTERM or Ctrl-C
                                      stops it gracefully (a leader hands leadership over first). Every key can be
                                      overridden: VERDICT_<KEY> in the environment (VERDICT_TICK_MS, VERDICT_TLS_CERT),
                                      then --set key=value (tickMs=50, tls.cert=certs/n1.crt, peers.n4=HOST:PORT)
                                      without "tls" a node refuses to start unless --insecure (insecure=true): it
                                      then serves plaintext, trusting everyone who can reach it, and warns
                                      transactions commit in parallel unless their client chooses; --classic-commit
                                      (parallelCommit=false) makes classic two-phase commit this node's default
`;
const CLUSTER_HELP = `  verdict cluster up [--nodes N] [--base-port PORT] [--data DIR] [--tls CERTS-DIR | --insecure]
                                      run a local cluster of N nodes (1, 3 or 5; default 3) in the foreground on
                                      127.0.0.1:PORT, PORT+1, ... (default 7001); metrics on PORT+2100 (9101, ...);
                                      SIGINT, SIGTERM or SIGHUP stops every node; a node stops if the launcher dies;
                                      mutual TLS with the local cluster's CA and certificates, made on the first
                                      start in ~/.config/verdict/local/ ($VERDICT_CONFIG_DIR/local/); HTTPS console on
                                      PORT+2200; --tls: the certificates of verdict certs --dir CERTS-DIR instead;
                                      --insecure: plaintext (the nodes warn at every start)
`;
const STATUS_HELP = `  verdict status [--json] [--endpoints HOST:PORT,...]
                                      show the leader and every node's role, term, commit and last index;
                                      exit 1 when there is no leader or a majority does not answer (--json: why)
`;
/** The usage text, assembled from each command's module (loaded only for --help). */
async function helpTexts(): Promise<{ all: string; byCommand: Record<string, string> }> {
  const [
    { LEADER_HELP },
    { TXN_HELP, PARTICIPANTS_HELP },
    { PARTICIPANT_HELP },
    { PARTICIPANT_RESOLVE_HELP },
    { MEMBER_HELP },
    { NODE_REPAIR_HELP },
    { CERTS_HELP },
    { SAGA_HELP },
    { OUTBOX_HELP },
    { CLUSTER_INIT_HELP },
  ] = await Promise.all([
    import('./leader-calls.ts'),
    import('./txn.ts'),
    import('./participant.ts'),
    import('./participant-resolve.ts'),
    import('./member.ts'),
    import('./node-repair.ts'),
    import('./certs.ts'),
    import('./saga.ts'),
    import('./outbox.ts'),
    import('./cluster-init.ts'),
  ]);
  const all = `verdict — a Raft-replicated commit coordinator

usage:
${NODE_HELP}${NODE_REPAIR_HELP}${CLUSTER_HELP}${CLUSTER_INIT_HELP}${STATUS_HELP}${LEADER_HELP}${MEMBER_HELP}${PARTICIPANT_HELP}${PARTICIPANT_RESOLVE_HELP}${PARTICIPANTS_HELP}${TXN_HELP}${SAGA_HELP}${OUTBOX_HELP}${CERTS_HELP}
verdict COMMAND --help shows one command's usage; verdict --version prints the version.
${ENDPOINTS_NOTE}${TLS_FLAGS_HELP}`;
  /** `verdict COMMAND --help`: that command's usage. */
  const byCommand: Record<string, string> = {
    node: NODE_HELP + NODE_REPAIR_HELP,
    cluster: CLUSTER_HELP + CLUSTER_INIT_HELP,
    status: STATUS_HELP + ENDPOINTS_NOTE,
    leader: LEADER_HELP + ENDPOINTS_NOTE,
    member: MEMBER_HELP + ENDPOINTS_NOTE,
    participant: PARTICIPANT_HELP + PARTICIPANT_RESOLVE_HELP + PARTICIPANTS_HELP + ENDPOINTS_NOTE,
    participants: PARTICIPANTS_HELP + ENDPOINTS_NOTE,
    txn: TXN_HELP + ENDPOINTS_NOTE,
    saga: SAGA_HELP + ENDPOINTS_NOTE,
    certs: CERTS_HELP,
    outbox: OUTBOX_HELP,
  };
  return { all, byCommand };
}

/**
 * A reader that goes away before the output ends (`verdict saga list |
 * head`) ends the command quietly, with status 0, as a pipe's writer
 * should: never an EPIPE stack trace, in every command.
 */
function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      throw err;
    });
  }
}

async function main(argv: string[]): Promise<void> {
  endQuietlyOnClosedPipe();
  // grpc-js prints its own errors to stderr (`No address added out of total 1
  // resolved` before our "address in use" line); every one of them also
  // reaches us as an error value, which we report in our words. grpc-js reads
  // this setting when it is first loaded, which for every command is after
  // this line (no module imported above loads it), and the processes that
  // `verdict cluster up` starts inherit it. GRPC_VERBOSITY (or
  // GRPC_NODE_VERBOSITY) set by the user turns its logging back on for debugging.
  if (process.env.GRPC_VERBOSITY === undefined && process.env.GRPC_NODE_VERBOSITY === undefined)
    process.env.GRPC_VERBOSITY = 'NONE';
  const args = argv.slice();
  const cmd = args.shift();
  if (cmd === undefined || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write((await helpTexts()).all);
    return;
  }
  if (cmd === '--version' || cmd === 'version') {
    process.stdout.write(`verdict ${packageVersion()}\n`);
    return;
  }
  if (cmd === 'put' || cmd === 'get')
    throw new UsageError(
      `verdict ${cmd} was removed: nodes keep no key/value data (RaftNode.Put is now a log probe for benchmarks: docs/operations.md)`,
    );
  checkFlags([cmd, ...args]);
  if (bool(args, '--help') || bool(args, '-h')) {
    const help = (await helpTexts()).byCommand[cmd];
    if (help === undefined) throw new UsageError(`unknown command "${cmd}"; run verdict --help`);
    process.stdout.write(`usage:\n${help}`);
    return;
  }
  // Client commands connect with the TLS given, the local cluster's, or plaintext with --insecure; node and participant
  // read their own TLS settings.
  const runsItself =
    ['node', 'cluster', 'certs', 'outbox'].includes(cmd) ||
    (cmd === 'participant' && args[0] !== 'remove') ||
    (cmd === 'saga' && args[0] === 'service');
  if (!runsItself) {
    useClientTls(clientSecurity(args));
    // Loaded here, not at the top: it loads the wire definitions, whose absence (a broken install) is reported below as
    // one line.
    const { parseTimeoutMs, useTimeout } = await import('./reach.ts');
    useTimeout(parseTimeoutMs(flag(args, '--timeout-ms')));
  }
  // A node's packages are optional peers of verdict (a client application does not install them): one line names every
  // one missing.
  if (cmd === 'node' || cmd === 'cluster') {
    const absent = await absentPackages(NODE_PACKAGES);
    if (absent.length > 0) throw new MissingPackageError(missingPackagesMessage(`\`verdict ${cmd}\``, absent));
  }
  switch (cmd) {
    case 'node':
      if (args[0] === 'repair') return (await import('./node-repair.ts')).nodeRepairCommand(args.slice(1));
      return (await import('./node-command.ts')).runNode(args);
    case 'cluster': {
      const sub = args.shift();
      if (sub === 'init') return (await import('./cluster-init.ts')).clusterInitCommand(args);
      const { clusterUp, parseClusterUpArgs, CLUSTER_UP_USAGE } = await import('./cluster.ts');
      if (sub !== 'up') throw new UsageError(`usage: ${CLUSTER_UP_USAGE}, or verdict cluster init --config FILE`);
      return clusterUp(parseClusterUpArgs(args, flag));
    }
    case 'status':
      return (await import('./status.ts')).statusCommand(args);
    case 'participant':
      return (await import('./participant.ts')).participantCommand(args);
    case 'participants':
      return (await import('./txn.ts')).participantsCommand(args);
    case 'txn':
      return (await import('./txn.ts')).txnCommand(args);
    case 'leader':
      return (await import('./leader-calls.ts')).leaderCommand(args);
    case 'member':
      return (await import('./member.ts')).memberCommand(args);
    case 'certs':
      return (await import('./certs.ts')).certsCommand(args);
    case 'saga':
      if (args[0] === 'service') return (await import('./saga-service.ts')).sagaServiceCommand(args.slice(1));
      return (await import('./saga.ts')).sagaCommand(args);
    case 'outbox':
      return (await import('./outbox.ts')).outboxCommand(args);
    default:
      throw new UsageError(`unknown command "${cmd}"; run verdict --help`);
  }
}

/**
 * What `verdict node` loads beside verdict's own dependencies: LevelDB, the logger and the metrics (README, Install).
 */
const NODE_PACKAGES = ['level', 'pino', 'prom-client'];

class MissingPackageError extends Error {
  override name = 'MissingPackageError';
}

const KNOWN_REFUSALS = new Set([
  'MissingPackageError',
  'CommandError',
  'ConfigError',
  'StartupError',
  'StorageIdentityError',
  'CorruptRecordError',
  'ProtoMissingError',
  'FoundingRefusedError',
  'DataDirError',
]);

main(process.argv.slice(2)).catch((err: unknown) => {
  // A command that needs a driver or server package the project did not install (`pg` for a PostgreSQL participant).
  const missing = missingPackage(err);
  if (missing !== null) {
    process.stderr.write(`verdict: ${missingPackagesMessage(`\`verdict ${process.argv[2] ?? ''}\``, [missing])}\n`);
    process.exit(1);
  }
  // Refusals a person can act on are one line; their classes are told apart
  // by name so this handler need not load the node's modules to know them.
  const known = err instanceof UsageError || (err instanceof Error && KNOWN_REFUSALS.has(err.name));
  if (known) {
    process.stderr.write(`verdict: ${printable((err as Error).message)}\n`);
    process.exit(err instanceof UsageError ? 64 : 1);
  }
  process.stderr.write(`verdict: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
