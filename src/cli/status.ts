// `verdict status`, `verdict leader transfer`, `verdict put`, `verdict get`:
// small clients of the node API (service RaftNode). Status asks every
// endpoint it knows, and every peer the leader reports, so one address is
// enough to see the cluster.

import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import type { NodeStatus } from '../transport/proto.ts';
import { bool, CommandError, flag, UsageError } from './args.ts';
import { clientTimeoutMs, unreachableMessage, unreachableReason } from './reach.ts';
import { clientCredentials, clientUsesTls } from './client-tls.ts';
import { explainConnectError } from '../transport/tls.ts';

const DEFAULT_ENDPOINTS = ['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003'];

export function endpoints(args: string[]): string[] {
  const raw = flag(args, '--endpoints') ?? process.env.VERDICT_ENDPOINTS;
  if (!raw) return DEFAULT_ENDPOINTS;
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 0) throw new UsageError('--endpoints needs at least one host:port');
  return list;
}

export interface ClusterStatus {
  leader: string | null;
  nodes: {
    id: string | null;
    address: string;
    reachable: boolean;
    error?: string;
    /** The node's process id (what `kill` takes); absent from a node that does not report it. */
    pid?: number;
    role?: string;
    term?: number;
    leader?: string | null;
    commitIndex?: number;
    appliedIndex?: number;
    lastIndex?: number;
  }[];
}

export async function clusterStatus(addrs: string[], deadlineMs = clientTimeoutMs()): Promise<ClusterStatus> {
  const results = new Map<string, NodeStatus | Error>();
  /** Node ids by address, as the members report each other: names a node that does not answer. */
  const ids = new Map<string, string>();
  const ask = async (addr: string): Promise<void> => {
    if (results.has(addr)) return;
    const c = new RaftNodeClient(addr, clientCredentials());
    results.set(addr, new Error('pending'));
    try {
      const s = await c.status(deadlineMs);
      results.set(addr, s);
      // Learn the other members from whoever answers.
      for (const p of s.peers) if (p.address) ids.set(p.address, p.nodeId);
      await Promise.all(s.peers.map((p) => (p.address ? ask(p.address) : undefined)));
    } catch (err) {
      results.set(addr, err as Error);
    } finally {
      c.close();
    }
  };
  await Promise.all(addrs.map(ask));
  // One row per node: an address given by hand (localhost:7001) and the one
  // the members report (127.0.0.1:7001) can reach the same node; keep the
  // answer from the node's own address.
  const answered = new Map<string, [string, NodeStatus]>();
  for (const [address, r] of results) {
    if (r instanceof Error) continue;
    const seen = answered.get(r.nodeId);
    if (seen === undefined || (seen[0] !== seen[1].address && address === r.address)) answered.set(r.nodeId, [address, r]);
  }
  const nodes: ClusterStatus['nodes'] = [];
  let leader: string | null = null;
  let leaderTerm = -1;
  for (const [address, r] of results) {
    if (r instanceof Error) {
      const id = ids.get(address) ?? null;
      if (id !== null && answered.has(id)) continue;
      nodes.push({ id, address, reachable: false, error: unreachableReason(r as ServiceError, deadlineMs) });
      continue;
    }
    if (answered.get(r.nodeId)?.[0] !== address) continue;
    if (r.role === 'leader' && r.term > leaderTerm) {
      leader = r.nodeId;
      leaderTerm = r.term;
    }
    nodes.push({
      id: r.nodeId,
      address,
      reachable: true,
      ...(r.pid > 0 ? { pid: r.pid } : {}),
      role: r.role,
      term: r.term,
      leader: r.leaderId || null,
      commitIndex: r.commitIndex,
      appliedIndex: r.appliedIndex,
      lastIndex: r.lastIndex,
    });
  }
  nodes.sort((a, b) => (a.id ?? a.address).localeCompare(b.id ?? b.address));
  return { leader, nodes };
}

export async function statusCommand(args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const addrs = endpoints(args);
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; usage: verdict status [--json] [--endpoints HOST:PORT,...] [--timeout 2s]`);
  const timeoutMs = clientTimeoutMs();
  const st = await clusterStatus(addrs, timeoutMs);
  if (json) {
    process.stdout.write(JSON.stringify(st, null, 2) + '\n');
  } else {
    const rows = [['NODE', 'ADDRESS', 'PID', 'ROLE', 'TERM', 'COMMIT', 'APPLIED', 'LAST']];
    for (const n of st.nodes) {
      if (!n.reachable) rows.push([n.id ?? '?', n.address, '', `unreachable (${n.error})`, '', '', '', '']);
      else rows.push([n.id ?? '?', n.address, n.pid === undefined ? '?' : String(n.pid), n.role ?? '', String(n.term), String(n.commitIndex), String(n.appliedIndex), String(n.lastIndex)]);
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    process.stdout.write(`leader: ${st.leader ?? 'none'}\n`);
    for (const r of rows)
      process.stdout.write(
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd() + '\n',
      );
  }
  if (!st.nodes.some((n) => n.reachable)) {
    process.stderr.write(`verdict: ${unreachableMessage(new Map(st.nodes.map((n) => [n.address, n.error ?? 'no answer'])), timeoutMs)}\n`);
    process.exitCode = 1;
  }
}

/** Finds the leader among the endpoints (following redirects) and runs `f` on it. */
export async function onLeader<T>(addrs: string[], f: (c: RaftNodeClient) => Promise<T>): Promise<T> {
  let last: Error | null = null;
  /** Why each endpoint failed, as last seen: the refusal names them all when none answers. */
  const failures = new Map<string, string>();
  const tried = new Set<string>();
  const queue = [...addrs];
  for (let round = 0; round < 3; round++) {
    while (queue.length > 0) {
      const addr = queue.shift() as string;
      if (tried.has(addr)) continue;
      tried.add(addr);
      const c = new RaftNodeClient(addr, clientCredentials());
      try {
        return await f(c);
      } catch (err) {
        last = err as Error;
        failures.set(addr, unreachableReason(err as ServiceError, clientTimeoutMs()));
        const hint = (err as ServiceError).metadata?.get('verdict-leader-address')[0];
        if (typeof hint === 'string' && hint) queue.unshift(hint);
      } finally {
        c.close();
      }
    }
    // No leader yet (an election is running): wait a little and try everyone again.
    await new Promise((r) => setTimeout(r, 500));
    tried.clear();
    queue.push(...addrs);
  }
  const e = last as ServiceError | null;
  const connectFailures = [...failures.values()].every((w) => w === 'connection refused' || /^no answer within/.test(w));
  if (failures.size > 0 && connectFailures) throw new CommandError(unreachableMessage(failures, clientTimeoutMs()));
  const why = e?.code === grpcStatus.UNAVAILABLE ? explainConnectError(e.details, clientUsesTls()) : (e?.details ?? last?.message ?? 'no endpoints');
  throw new UsageError(`no node accepted the request: ${why}`);
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
      const hint = e.metadata?.get('verdict-leader-address')[0];
      if (e.code === grpcStatus.UNAVAILABLE && typeof hint === 'string' && hint && hint !== target && hop < 3) {
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
