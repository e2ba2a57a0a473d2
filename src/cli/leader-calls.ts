// `verdict leader transfer`: a small grpc-js client of the node API (service
// RaftNode) that finds the leader among the endpoints and follows its
// redirects.

import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import { callLeader, LeaderFinder, namedLeader, NoLeaderError } from '../transport/leader-finder.ts';
import { explainConnectError } from '../transport/tls.ts';
import { bool, CommandError, flag, UsageError } from './args.ts';
import { clientCredentials } from './client-credentials.ts';
import { clientUsesTls } from './client-tls.ts';
import { clientTimeoutMs, commandTimeoutMs, unreachableMessage, unreachableReason } from './reach.ts';
import { clusterStatus, endpoints, type ClusterStatus } from './status.ts';

/** `f` on a client of the node at an address, closed after. */
function onNode<T>(f: (c: RaftNodeClient) => Promise<T>): (address: string) => Promise<T> {
  return async (address) => {
    const c = new RaftNodeClient(address, clientCredentials());
    try {
      return await f(c);
    } finally {
      c.close();
    }
  };
}

/**
 * Finds the leader among the endpoints (src/transport/leader-finder.ts) and runs `f` on it; three rounds, half a second
 * apart (an election may be running).
 */
export async function onLeader<T>(addrs: string[], f: (c: RaftNodeClient) => Promise<T>): Promise<T> {
  const finder = new LeaderFinder(addrs, { redirectsMax: addrs.length + 2 });
  try {
    return await callLeader(finder, onNode(f), {
      retryable: (err) => ({ why: unreachableReason(err as ServiceError, clientTimeoutMs()), hint: namedLeader(err) }),
      roundsMax: 3,
      pauseMs: () => 500,
    });
  } catch (err) {
    if (!(err instanceof NoLeaderError)) throw err;
    const failures = err.failures;
    const connectFailures = [...failures.values()].every(
      (w) => w === 'connection refused' || /^no answer within/.test(w),
    );
    if (failures.size > 0 && connectFailures) throw new CommandError(unreachableMessage(failures, clientTimeoutMs()));
    const e = err.last as ServiceError | null;
    const why =
      e?.code === grpcStatus.UNAVAILABLE
        ? explainConnectError(e.details, clientUsesTls())
        : (e?.details ?? e?.message ?? 'no endpoints');
    throw new UsageError(`no node accepted the request: ${why}`);
  }
}

export const LEADER_HELP = `  verdict leader transfer --to NODE [--group G] [--force] [--timeout-ms N] [--json] [--endpoints ...]
                                      hand leadership to NODE (e.g. before maintenance on the leader): the leader refuses
                                      new transactions, waits for those in flight, then transfers; waits until NODE leads.
                                      --group G: move decision group G's leader (0 to G-1; default 0).
                                      --force: transfer even if some are still in flight after the wait (they may abort)
`;

const LEADER_USAGE = 'usage: verdict leader transfer --to NODE [--group G] [--force] [--timeout-ms N] [--json]';

/** `--group G` as written: a whole number; its range is checked against the cluster's groups. */
function parseGroup(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const g = /^\d{1,6}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isInteger(g))
    throw new UsageError(
      `--group must be a decision group's number, 0 to G-1 for a cluster of G groups (verdict status lists them), not "${raw}"`,
    );
  return g;
}

/**
 * Where group `group` is led, as the status names it: its leader's address, or undefined when not known (the request
 * then goes to the endpoints, and a follower's answer names the leader). A group outside the cluster's is a usage
 * error naming the range.
 */
function groupLeaderAddress(st: ClusterStatus, group: number, given: boolean): string | undefined {
  const groups = st.groups ?? [];
  const count = groups.length;
  if (given && count === 0 && group > 0)
    throw new CommandError(`cannot learn the cluster's decision groups to find group ${group}'s leader; retry`);
  if (given && count > 0 && group >= count)
    throw new UsageError(
      `--group ${group} does not exist: this cluster has ${count} decision group${count === 1 ? '' : 's'} (--group 0 to ${count - 1})`,
    );
  const leaderId = group === 0 ? st.leader : groups.find((g) => g.group === group)?.leaderId;
  return st.nodes.find((n) => n.id === leaderId && n.id !== null)?.address;
}

export async function leaderCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  if (sub !== 'transfer') throw new UsageError(LEADER_USAGE);
  const addrs = endpoints(args);
  const to = flag(args, '--to');
  const groupGiven = parseGroup(flag(args, '--group'));
  const group = groupGiven ?? 0;
  const json = bool(args, '--json');
  const force = bool(args, '--force');
  // How long to wait for the new leader: --timeout-ms, or the node's default (0).
  const timeoutMs = commandTimeoutMs() ?? 0;
  if (to === undefined) throw new UsageError('verdict leader transfer needs --to NODE');
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
  const st = await clusterStatus(addrs);
  if (!st.nodes.some((n) => n.id === to)) {
    const known = st.nodes
      .map((n) => n.id)
      .filter(Boolean)
      .join(', ');
    throw new UsageError(`no node "${to}" in the cluster${known ? ` (nodes: ${known})` : ''}`);
  }
  const leader = groupLeaderAddress(st, group, groupGiven !== undefined);
  // The group's leader first. It may change under us: a follower's hint is followed
  // (three times at most); any other refusal is the answer.
  const finder = new LeaderFinder(leader !== undefined ? [leader, ...addrs] : addrs, { redirectsMax: 3 });
  const of = groupGiven === undefined ? '' : ` of group ${group}`;
  try {
    // The server waits up to timeoutMs (or two election timeouts); give it room to answer.
    const r = await callLeader(
      finder,
      onNode((c) => c.transferLeader({ to, timeoutMs, force, group }, (timeoutMs || 10_000) + 5_000)),
      {
        retryable: (err) => {
          const hint = namedLeader(err);
          return (err as ServiceError).code === grpcStatus.UNAVAILABLE && hint !== undefined
            ? { why: `not the leader (names ${hint})`, hint }
            : null;
        },
        roundsMax: 1,
        pauseMs: () => 0,
      },
    );
    const note =
      r.inFlight > 0
        ? ` (forced: ${r.inFlight} transaction(s) were still in flight at the transfer and may have aborted)`
        : '';
    const text = `${groupGiven === undefined ? '' : `group ${group} `}leader: ${r.leaderId} (term ${r.term})${note}\n`;
    process.stdout.write(json ? JSON.stringify({ group, ...r }, null, 2) + '\n' : text);
  } catch (err) {
    const e = (err instanceof NoLeaderError ? err.last : err) as ServiceError;
    const why =
      e.code === grpcStatus.UNAVAILABLE
        ? explainConnectError(e.details || e.message, clientUsesTls())
        : e.details || e.message;
    process.stderr.write(`verdict: leader transfer${of} to ${to} failed: ${grpcStatus[e.code] ?? e.code}: ${why}\n`);
    process.exitCode = 1;
  }
}
