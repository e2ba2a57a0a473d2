// `verdict put`, `verdict get`, `verdict leader transfer`: small grpc-js
// clients of the node API (service RaftNode) that find the leader among the
// endpoints and follow its redirects.

import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import { callLeader, LeaderFinder, namedLeader, NoLeaderError } from '../transport/leader-finder.ts';
import { explainConnectError } from '../transport/tls.ts';
import { bool, CommandError, flag, UsageError } from './args.ts';
import { clientCredentials } from './client-credentials.ts';
import { clientUsesTls } from './client-tls.ts';
import { clientTimeoutMs, unreachableMessage, unreachableReason } from './reach.ts';
import { clusterStatus, endpoints } from './status.ts';

/** Finds the leader among the endpoints (src/transport/leader-finder.ts) and runs `f` on it; three rounds, half a second apart (an election may be running). */
export async function onLeader<T>(addrs: string[], f: (c: RaftNodeClient) => Promise<T>): Promise<T> {
  const finder = new LeaderFinder(addrs, { redirectsMax: addrs.length + 2 });
  try {
    return await callLeader(
      finder,
      async (addr) => {
        const c = new RaftNodeClient(addr, clientCredentials());
        try {
          return await f(c);
        } finally {
          c.close();
        }
      },
      { retryable: (err) => ({ why: unreachableReason(err as ServiceError, clientTimeoutMs()), hint: namedLeader(err) }), roundsMax: 3, pauseMs: () => 500 },
    );
  } catch (err) {
    if (!(err instanceof NoLeaderError)) throw err;
    const failures = err.failures;
    const connectFailures = [...failures.values()].every((w) => w === 'connection refused' || /^no answer within/.test(w));
    if (failures.size > 0 && connectFailures) throw new CommandError(unreachableMessage(failures, clientTimeoutMs()));
    const e = err.last as ServiceError | null;
    const why = e?.code === grpcStatus.UNAVAILABLE ? explainConnectError(e.details, clientUsesTls()) : (e?.details ?? e?.message ?? 'no endpoints');
    throw new UsageError(`no node accepted the request: ${why}`);
  }
}

export async function putCommand(args: string[]): Promise<void> {
  const addrs = endpoints(args);
  const [key, value] = args;
  if (key === undefined || value === undefined) throw new UsageError('usage: verdict put KEY VALUE');
  const r = await onLeader(addrs, (c) => c.put({ key, value: Buffer.from(value) }));
  process.stdout.write(`ok: index ${r.index} (leader ${r.leaderId})\n`);
}

export async function getCommand(args: string[]): Promise<void> {
  const addrs = endpoints(args);
  const [key] = args;
  if (key === undefined) throw new UsageError('usage: verdict get KEY');
  const r = await onLeader(addrs, (c) => c.get({ key, linearizable: true }));
  if (!r.found) {
    process.stdout.write(`(not found)\n`);
    process.exitCode = 1;
  } else process.stdout.write(Buffer.from(r.value).toString() + '\n');
}

export const LEADER_HELP = `  verdict leader transfer --to NODE [--timeout-ms N] [--json] [--endpoints ...]
                                      hand leadership to NODE (e.g. before maintenance on the leader); waits until NODE leads
`;

export async function leaderCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  if (sub !== 'transfer') throw new UsageError('usage: verdict leader transfer --to NODE [--timeout-ms N] [--json]');
  const addrs = endpoints(args);
  const to = flag(args, '--to');
  const json = bool(args, '--json');
  const timeoutRaw = flag(args, '--timeout-ms');
  const timeoutMs = timeoutRaw === undefined ? 0 : Number(timeoutRaw);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0) throw new UsageError('--timeout-ms needs a non-negative integer');
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
  const leader = st.nodes.find((n) => n.id === st.leader);
  let target = leader?.address ?? addrs[0];
  // The leader may change under us; follow its hint a couple of times.
  for (let hop = 0; ; hop++) {
    const c = new RaftNodeClient(target, clientCredentials());
    try {
      // The server waits up to timeoutMs (or two election timeouts); give it room to answer.
      const r = await c.transferLeader({ to, timeoutMs }, (timeoutMs || 10_000) + 5_000);
      process.stdout.write(json ? JSON.stringify(r, null, 2) + '\n' : `leader: ${r.leaderId} (term ${r.term})\n`);
      return;
    } catch (err) {
      const e = err as ServiceError;
      const hint = namedLeader(e);
      if (e.code === grpcStatus.UNAVAILABLE && hint !== undefined && hint !== target && hop < 3) {
        target = hint;
        continue;
      }
      const why = e.code === grpcStatus.UNAVAILABLE ? explainConnectError(e.details || e.message, clientUsesTls()) : e.details || e.message;
      process.stderr.write(`verdict: leader transfer to ${to} failed: ${grpcStatus[e.code] ?? e.code}: ${why}\n`);
      process.exitCode = 1;
      return;
    } finally {
      c.close();
    }
  }
}
