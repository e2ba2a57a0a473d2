// `verdict status`, `verdict put`, `verdict get`: small clients of the
// node API (service RaftNode). Status asks every endpoint it knows, and
// every peer the leader reports, so one address is enough to see the cluster.

import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import type { NodeStatus } from '../transport/proto.ts';
import { bool, flag, UsageError } from './args.ts';

const DEFAULT_ENDPOINTS = ['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003'];

export function endpoints(args: string[]): string[] {
  const raw = flag(args, '--endpoints') ?? process.env.VERDICT_ENDPOINTS;
  if (!raw) return DEFAULT_ENDPOINTS;
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
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
    role?: string;
    term?: number;
    leader?: string | null;
    commitIndex?: number;
    appliedIndex?: number;
    lastIndex?: number;
  }[];
}

export async function clusterStatus(addrs: string[], deadlineMs = 2_000): Promise<ClusterStatus> {
  const results = new Map<string, NodeStatus | Error>();
  /** Node ids by address, as the members report each other: names a node that does not answer. */
  const ids = new Map<string, string>();
  const ask = async (addr: string): Promise<void> => {
    if (results.has(addr)) return;
    const c = new RaftNodeClient(addr);
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
  const nodes: ClusterStatus['nodes'] = [];
  let leader: string | null = null;
  let leaderTerm = -1;
  for (const [address, r] of results) {
    if (r instanceof Error) {
      nodes.push({ id: ids.get(address) ?? null, address, reachable: false, error: unreachableReason(r as ServiceError, deadlineMs) });
      continue;
    }
    if (r.role === 'leader' && r.term > leaderTerm) {
      leader = r.nodeId;
      leaderTerm = r.term;
    }
    nodes.push({ id: r.nodeId, address, reachable: true, role: r.role, term: r.term, leader: r.leaderId || null, commitIndex: r.commitIndex, appliedIndex: r.appliedIndex, lastIndex: r.lastIndex });
  }
  nodes.sort((a, b) => (a.id ?? a.address).localeCompare(b.id ?? b.address));
  return { leader, nodes };
}

function unreachableReason(err: ServiceError, deadlineMs: number): string {
  if (err.code === grpcStatus.DEADLINE_EXCEEDED) return `no answer within ${deadlineMs} ms`;
  const text = err.details ?? err.message;
  if (/ECONNREFUSED/.test(text)) return 'connection refused';
  return text;
}

export async function statusCommand(args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const st = await clusterStatus(endpoints(args));
  if (json) {
    process.stdout.write(JSON.stringify(st, null, 2) + '\n');
  } else {
    const rows = [['NODE', 'ADDRESS', 'ROLE', 'TERM', 'COMMIT', 'APPLIED', 'LAST']];
    for (const n of st.nodes) {
      if (!n.reachable) rows.push([n.id ?? '?', n.address, `unreachable (${n.error})`, '', '', '', '']);
      else rows.push([n.id ?? '?', n.address, n.role ?? '', String(n.term), String(n.commitIndex), String(n.appliedIndex), String(n.lastIndex)]);
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    process.stdout.write(`leader: ${st.leader ?? 'none'}\n`);
    for (const r of rows) process.stdout.write(r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd() + '\n');
  }
  if (!st.nodes.some((n) => n.reachable)) process.exitCode = 1;
}

/** Finds the leader among the endpoints (following redirects) and runs `f` on it. */
async function onLeader<T>(addrs: string[], f: (c: RaftNodeClient) => Promise<T>): Promise<T> {
  let last: Error | null = null;
  const tried = new Set<string>();
  const queue = [...addrs];
  for (let round = 0; round < 3; round++) {
    while (queue.length > 0) {
      const addr = queue.shift() as string;
      if (tried.has(addr)) continue;
      tried.add(addr);
      const c = new RaftNodeClient(addr);
      try {
        return await f(c);
      } catch (err) {
        last = err as Error;
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
  throw new UsageError(`no node accepted the request: ${(last as ServiceError | null)?.details ?? last?.message ?? 'no endpoints'}`);
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
