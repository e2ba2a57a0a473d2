// The `verdict` command: run a node, run a local cluster, ask a cluster how
// it is doing, and put/get on the foundation's key/value state machine.
//
// User errors print one line and exit non-zero; stack traces are for bugs.

import * as grpc from '@grpc/grpc-js';
import { ConfigError, loadConfig } from '../node/config.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';
import { createLogger } from '../node/logger.ts';
import { startNode, StartupError } from '../node/node.ts';
import { CorruptRecordError } from '../storage/codec.ts';
import { StorageIdentityError } from '../storage/level.ts';
import { RaftInvariantError } from '../raft/types.ts';
import { CLUSTER_STOP_MESSAGE, clusterUp, LAUNCHER_ENV, parseClusterUpArgs } from './cluster.ts';
import { bool, CommandError, flag, flagAll, UsageError } from './args.ts';
import { parseTimeout, useTimeout } from './reach.ts';
import { tlsArgs, TLS_FLAGS_HELP, useClientTls } from './client-tls.ts';
import { getCommand, leaderCommand, LEADER_HELP, putCommand, statusCommand } from './status.ts';
import { participantsCommand, PARTICIPANTS_HELP, TXN_HELP, txnCommand } from './txn.ts';
import { checkFlags } from './flags.ts';
import { certsCommand, CERTS_HELP } from './certs.ts';
import { participantCommand, PARTICIPANT_HELP } from './participant.ts';
import { PARTICIPANT_RESOLVE_HELP } from './participant-resolve.ts';
import { memberCommand, MEMBER_HELP } from './member.ts';

const ENDPOINTS_NOTE = '--endpoints defaults to $VERDICT_ENDPOINTS, or the local cluster (127.0.0.1:7001,7002,7003).\n';

const NODE_HELP = `  verdict node --config FILE [--set KEY=VALUE ...]
                                      run one node (see cluster/n1.json for the format); SIGTERM or Ctrl-C
                                      stops it gracefully (a leader hands leadership over first). Every key can be
                                      overridden: VERDICT_<KEY> in the environment (VERDICT_TICK_MS, VERDICT_TLS_CERT),
                                      then --set key=value (tickMs=50, tls.cert=certs/n1.crt, peers.n4=HOST:PORT)
`;
const CLUSTER_HELP = `  verdict cluster up [--nodes N] [--base-port PORT] [--data DIR] [--tls CERTS-DIR]
                                      run a local cluster of N nodes (1, 3 or 5; default 3) in the foreground on
                                      127.0.0.1:PORT, PORT+1, ... (default 7001); metrics on PORT+2100 (9101, ...);
                                      SIGINT, SIGTERM or SIGHUP stops every node; a node stops if the launcher dies;
                                      --tls: mutual TLS with the certificates of verdict certs --dir CERTS-DIR
`;
const STATUS_HELP = `  verdict status [--json] [--endpoints HOST:PORT,...]
                                      show the leader and every node's role, term, commit and last index
`;
const PUT_GET_HELP = `  verdict put KEY VALUE [--endpoints ...]   write a key through the replicated log
  verdict get KEY [--endpoints ...]         read a key linearizably (ReadIndex)
`;

const HELP = `verdict — a Raft-replicated commit coordinator

usage:
${NODE_HELP}${CLUSTER_HELP}${STATUS_HELP}${LEADER_HELP}${MEMBER_HELP}${PUT_GET_HELP}${PARTICIPANT_HELP}${PARTICIPANT_RESOLVE_HELP}${PARTICIPANTS_HELP}${TXN_HELP}${CERTS_HELP}
verdict COMMAND --help shows one command's usage.
${ENDPOINTS_NOTE}${TLS_FLAGS_HELP}`;

/** `verdict COMMAND --help`: that command's usage. */
const COMMAND_HELP: Record<string, string> = {
  node: NODE_HELP,
  cluster: CLUSTER_HELP,
  status: STATUS_HELP + ENDPOINTS_NOTE,
  leader: LEADER_HELP + ENDPOINTS_NOTE,
  member: MEMBER_HELP + ENDPOINTS_NOTE,
  put: PUT_GET_HELP + ENDPOINTS_NOTE,
  get: PUT_GET_HELP + ENDPOINTS_NOTE,
  participant: PARTICIPANT_HELP + PARTICIPANT_RESOLVE_HELP + PARTICIPANTS_HELP + ENDPOINTS_NOTE,
  participants: PARTICIPANTS_HELP + ENDPOINTS_NOTE,
  txn: TXN_HELP + ENDPOINTS_NOTE,
  certs: CERTS_HELP,
};

async function runNode(args: string[]): Promise<void> {
  const file = flag(args, '--config');
  const sets = flagAll(args, '--set');
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; usage: verdict node --config FILE [--set KEY=VALUE ...]`);
  // Without a file, the environment and --set must give every required key.
  const fromEnv = Object.keys(OVERRIDABLE).some((k) => process.env[envName(k)] !== undefined);
  if (file === undefined && sets.length === 0 && !fromEnv) throw new UsageError('verdict node needs --config FILE (or every key from VERDICT_* variables and --set KEY=VALUE)');
  const cfg = loadConfig(file, { env: process.env, sets });
  const log = createLogger(cfg.logLevel, { node: cfg.nodeId });
  let node: Awaited<ReturnType<typeof startNode>>;
  try {
    node = await startNode(cfg, log);
  } catch (err) {
    // Refusals (data dir of another node, corrupt log, locked dir, address in use) are one line.
    if (err instanceof StorageIdentityError || err instanceof CorruptRecordError || err instanceof StartupError) throw err;
    if (err instanceof Error && !(err instanceof RaftInvariantError)) throw new StartupError(err.message);
    throw err;
  }
  let signals = 0;
  const onSignal = (sig: string): void => {
    // Under `cluster up`, Ctrl-C reaches a node twice (from the terminal and
    // from the launcher); only a third signal forces an exit.
    if (++signals > 2) process.exit(130);
    if (signals > 1) return;
    log.info({ signal: sig, leader: node.driver.isLeader() }, 'stopping: refusing new work, handing leadership over if leader, then flushing');
    void node.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGHUP', () => onSignal('SIGHUP'));
  // Started by `verdict cluster up` (which sets VERDICT_LAUNCHED_BY_CLUSTER_UP;
  // another process manager's IPC channel means nothing here): the IPC
  // channel to the launcher is a lifeline. It closes when the launcher dies, however it dies (SIGKILL
  // included), and then this node stops too rather than live on under pid 1
  // holding its port. Unref'd: the channel alone does not keep us running.
  if (process.send !== undefined && process.env[LAUNCHER_ENV] === '1') {
    process.channel?.unref();
    process.on('message', (m: unknown) => {
      if (m === CLUSTER_STOP_MESSAGE) node.expectClusterStop();
    });
    process.on('disconnect', () => {
      log.info({ ppid: process.ppid }, 'the launcher (verdict cluster up) is gone; stopping');
      onSignal('launcher gone');
    });
  }
}

async function main(argv: string[]): Promise<void> {
  // grpc-js prints its own errors to stderr (`No address added out of total 1
  // resolved` before our "address in use" line); every one of them also
  // reaches us as an error value, which we report in our words. GRPC_VERBOSITY
  // still turns its logging back on for debugging.
  if (process.env.GRPC_VERBOSITY === undefined) grpc.setLogVerbosity(grpc.logVerbosity.NONE);
  const args = argv.slice();
  const cmd = args.shift();
  if (cmd === undefined || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(HELP);
    return;
  }
  checkFlags([cmd, ...args]);
  if (bool(args, '--help') || bool(args, '-h')) {
    const help = COMMAND_HELP[cmd];
    if (help === undefined) throw new UsageError(`unknown command "${cmd}"; run verdict --help`);
    process.stdout.write(`usage:\n${help}`);
    return;
  }
  // Client commands connect with TLS when given a CA; node and participant read their own TLS settings.
  const runsItself = ['node', 'cluster', 'certs'].includes(cmd) || (cmd === 'participant' && args[0] !== 'remove');
  if (!runsItself) {
    useClientTls(tlsArgs(args));
    useTimeout(parseTimeout(flag(args, '--timeout')));
  }
  switch (cmd) {
    case 'node':
      return runNode(args);
    case 'cluster': {
      const sub = args.shift();
      if (sub !== 'up') throw new UsageError('usage: verdict cluster up [--nodes N] [--base-port PORT] [--data DIR]');
      return clusterUp(parseClusterUpArgs(args, flag));
    }
    case 'status':
      return statusCommand(args);
    case 'put':
      return putCommand(args);
    case 'get':
      return getCommand(args);
    case 'participant':
      return participantCommand(args);
    case 'participants':
      return participantsCommand(args);
    case 'txn':
      return txnCommand(args);
    case 'leader':
      return leaderCommand(args);
    case 'member':
      return memberCommand(args);
    case 'certs':
      return certsCommand(args);
    default:
      throw new UsageError(`unknown command "${cmd}"; run verdict --help`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const known = err instanceof UsageError || err instanceof CommandError || err instanceof ConfigError || err instanceof StartupError || err instanceof StorageIdentityError || err instanceof CorruptRecordError;
  if (known) {
    process.stderr.write(`verdict: ${(err as Error).message}\n`);
    process.exit(err instanceof UsageError ? 64 : 1);
  }
  process.stderr.write(`verdict: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
