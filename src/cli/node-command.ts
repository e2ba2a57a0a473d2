// `verdict node`: one node in the foreground, from a config file with
// VERDICT_* and --set overrides, until SIGTERM or Ctrl-C.
import { InvariantError } from '../util/assert.ts';
import { loadConfig } from '../node/config.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';
import { createLogger } from '../node/logger.ts';
import { startNode, StartupError } from '../node/node.ts';
import { CorruptRecordError } from '../storage/codec.ts';
import { StorageIdentityError } from '../storage/dir-identity.ts';

import { bool, flag, flagAll, UsageError } from './args.ts';
import { CLUSTER_STOP_MESSAGE, LAUNCHER_ENV } from './cluster.ts';

export async function runNode(args: string[]): Promise<void> {
  const file = flag(args, '--config');
  const sets = flagAll(args, '--set');
  // --insecure is `insecure: true` (plaintext beyond loopback), given last so it wins.
  if (bool(args, '--insecure')) sets.push('insecure=true');
  // --classic-commit is `parallelCommit: false`: classic two-phase commit for transactions that do not choose;
  // --parallel-commit (the default) says `parallelCommit: true` outright (docs/protocol.md).
  const classic = bool(args, '--classic-commit');
  const parallel = bool(args, '--parallel-commit');
  if (classic && parallel)
    throw new UsageError('--classic-commit and --parallel-commit contradict each other: give one');
  if (classic) sets.push('parallelCommit=false');
  if (parallel) sets.push('parallelCommit=true');
  if (args.length > 0)
    throw new UsageError(
      `unexpected argument "${args[0]}"; usage: verdict node --config FILE [--set KEY=VALUE ...] [--insecure] [--classic-commit | --parallel-commit]`,
    );
  // Without a file, the environment and --set must give every required key.
  const fromEnv = Object.keys(OVERRIDABLE).some((k) => process.env[envName(k)] !== undefined);
  if (file === undefined && sets.length === 0 && !fromEnv)
    throw new UsageError(
      'verdict node needs --config FILE (or every key from VERDICT_* variables and --set KEY=VALUE)',
    );
  const cfg = loadConfig(file, { env: process.env, sets });
  const log = createLogger(cfg.logLevel, { node: cfg.nodeId });
  let node: Awaited<ReturnType<typeof startNode>>;
  try {
    node = await startNode(cfg, log);
  } catch (err) {
    // Refusals (data dir of another node, corrupt log, locked dir, address in use) are one line.
    if (err instanceof StorageIdentityError || err instanceof CorruptRecordError || err instanceof StartupError)
      throw err;
    if (err instanceof Error && !(err instanceof InvariantError)) throw new StartupError(err.message);
    throw err;
  }
  // A fatal storage error stopped the node (logged at fatal): exit with its code.
  void node.failed.then((f) => process.exit(f.exitCode));
  let signals = 0;
  const onSignal = (sig: string): void => {
    // Under `cluster up`, Ctrl-C reaches a node twice (from the terminal and
    // from the launcher); only a third signal forces an exit.
    if (++signals > 2) process.exit(130);
    if (signals > 1) return;
    log.info(
      { signal: sig, leader: node.driver.isLeader() },
      'stopping: refusing new work, handing leadership over if leader, then flushing',
    );
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
