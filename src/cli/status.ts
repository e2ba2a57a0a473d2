// `verdict status`: asks every endpoint it knows, and every peer the
// members report, so one address is enough to see the cluster. It calls
// RaftNode.Status over node:http2 (reach.ts) and loads nothing of grpc-js,
// which keeps a cold `verdict status` short; the commands that need grpc-js
// (put, get, leader transfer) are in leader-calls.ts.

import { printable } from './terminal-text.ts';
import type { CallError } from '../transport/h2-unary.ts';
import type { NodeStatus } from '../transport/proto.ts';
import { bool, flag, UsageError } from './args.ts';
import { clientTimeoutMs, clusterGroupsAt, nodeStatus, unreachableMessage, unreachableReason } from './reach.ts';
import type { GroupStatusRow } from '../transport/status-wire.ts';

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
  /** Group 0's leader (the only group of a cluster of one group). */
  leader: string | null;
  /**
   * Every decision group (docs/architecture.md, "Decision groups"), as the first node to answer names them; absent when
   * none answered.
   */
  groups?: GroupStatusRow[];
  /** Addresses named by the nodes but not asked, past STATUS_ADDRESSES_MAX; absent when none. */
  skippedAddresses?: number;
  nodes: {
    id: string | null;
    address: string;
    reachable: boolean;
    error?: string;
    /** The node's process id (what `kill` takes); absent from a node that does not report it. */
    pid?: number;
    /** The Verdict version the node runs; absent from a node built before nodes reported it. */
    version?: string;
    role?: string;
    term?: number;
    leader?: string | null;
    commitIndex?: number;
    appliedIndex?: number;
    lastIndex?: number;
  }[];
}

/** The row of a node that answered `s` when asked at `address`. */
export function nodeRow(address: string, s: NodeStatus): ClusterStatus['nodes'][number] {
  return {
    id: s.nodeId,
    address,
    reachable: true,
    ...(s.pid > 0 ? { pid: s.pid } : {}),
    ...(s.version !== '' ? { version: s.version } : {}),
    role: s.role,
    term: s.term,
    leader: s.leaderId || null,
    commitIndex: s.commitIndex,
    appliedIndex: s.appliedIndex,
    lastIndex: s.lastIndex,
  };
}

/**
 * How many addresses one status asks at most: the ones given and the peers
 * the nodes name. A cluster has a handful of members; a "node" that names
 * thousands of peers does not make the CLI dial thousands of addresses.
 */
export const STATUS_ADDRESSES_MAX = 32;

/**
 * Peers followed from one answer, at most: a Raft cluster has a handful of
 * voters and learners. Only the nodes at the addresses given name peers to
 * follow (one hop): a node found that way is asked about itself only, so a
 * "member" cannot send the CLI on to addresses of its choosing.
 */
export const PEERS_FOLLOWED_MAX = 16;

/**
 * A followed address that answers as another node, or for another cluster, than its namer said: not the member it was
 * named as.
 */
function notTheMember(s: NodeStatus, named: { nodeId: string; clusterId: string }): Error | null {
  if (s.clusterId === named.clusterId && (named.nodeId === '' || s.nodeId === named.nodeId)) return null;
  return Object.assign(
    new Error(
      `answers as node "${s.nodeId}" of cluster "${s.clusterId}", not as "${named.nodeId}" of "${named.clusterId}" as its peer named it`,
    ),
    {
      code: 9,
      details: `not the member named here: it answers as node "${s.nodeId}" of cluster "${s.clusterId}", not "${named.nodeId}" of "${named.clusterId}"`,
    },
  );
}

export async function clusterStatus(addrs: string[], timeoutMs = clientTimeoutMs()): Promise<ClusterStatus> {
  const results = new Map<string, NodeStatus | Error>();
  let skipped = 0;
  /** Node ids by address, as the members report each other: names a node that does not answer. */
  const ids = new Map<string, string>();
  /** `named`: for a peer, the member its namer says is there; null for an address given. */
  const ask = async (addr: string, named: { nodeId: string; clusterId: string } | null): Promise<void> => {
    if (results.has(addr)) return;
    if (results.size >= STATUS_ADDRESSES_MAX) {
      skipped += 1;
      return;
    }
    results.set(addr, new Error('pending'));
    try {
      const s = await nodeStatus(addr, timeoutMs);
      const stranger = named === null ? null : notTheMember(s, named);
      results.set(addr, stranger ?? s);
      if (named !== null) return;
      // Learn the other members from a node at an address given, and follow a bounded few of them.
      const peers = s.peers.filter((p) => p.address !== '');
      for (const p of peers.slice(0, PEERS_FOLLOWED_MAX)) ids.set(p.address, p.nodeId);
      for (const p of peers.slice(PEERS_FOLLOWED_MAX)) if (!results.has(p.address)) skipped += 1;
      await Promise.all(
        peers.slice(0, PEERS_FOLLOWED_MAX).map((p) => ask(p.address, { nodeId: p.nodeId, clusterId: s.clusterId })),
      );
    } catch (err) {
      results.set(addr, err as Error);
    }
  };
  // Each group's leader and indexes, from whichever address given answers first (beside the status calls, within the
  // same timeout).
  const groupsAsked = Promise.any(addrs.slice(0, PEERS_FOLLOWED_MAX).map((a) => clusterGroupsAt(a, timeoutMs))).catch(
    () => null,
  );
  await Promise.all(addrs.map((a) => ask(a, null)));
  const named = await groupsAsked;
  // One row per node: an address given by hand (localhost:7001) and the one
  // the members report (127.0.0.1:7001) can reach the same node; keep the
  // answer from the node's own address.
  const answered = new Map<string, [string, NodeStatus]>();
  for (const [address, r] of results) {
    if (r instanceof Error) continue;
    const seen = answered.get(r.nodeId);
    if (seen === undefined || (seen[0] !== seen[1].address && address === r.address))
      answered.set(r.nodeId, [address, r]);
  }
  const nodes: ClusterStatus['nodes'] = [];
  let leader: string | null = null;
  let leaderTerm = -1;
  for (const [address, r] of results) {
    if (r instanceof Error) {
      const id = ids.get(address) ?? null;
      if (id !== null && answered.has(id)) continue;
      nodes.push({ id, address, reachable: false, error: unreachableReason(r as CallError, timeoutMs) });
      continue;
    }
    if (answered.get(r.nodeId)?.[0] !== address) continue;
    if (r.role === 'leader' && r.term > leaderTerm) {
      leader = r.nodeId;
      leaderTerm = r.term;
    }
    nodes.push(nodeRow(address, r));
  }
  nodes.sort((a, b) => (a.id ?? a.address).localeCompare(b.id ?? b.address));
  const groups = named !== null && named.groups.length > 0 ? { groups: named.groups } : {};
  return skipped > 0 ? { leader, ...groups, nodes, skippedAddresses: skipped } : { leader, ...groups, nodes };
}

export async function statusCommand(args: string[]): Promise<void> {
  const json = bool(args, '--json');
  const addrs = endpoints(args);
  if (args.length > 0)
    throw new UsageError(
      `unexpected argument "${args[0]}"; usage: verdict status [--json] [--endpoints HOST:PORT,...] [--timeout-ms 2000]`,
    );
  const timeoutMs = clientTimeoutMs();
  const st = await clusterStatus(addrs, timeoutMs);
  const problem = healthProblem(st);
  if (json) {
    process.stdout.write(JSON.stringify({ ...st, healthy: problem === null, problem }, null, 2) + '\n');
  } else {
    const rows = [['NODE', 'ADDRESS', 'PID', 'ROLE', 'TERM', 'COMMIT', 'APPLIED', 'LAST', 'VERSION']];
    for (const n of st.nodes) {
      // Ids, addresses and errors come from the nodes: shown escaped (./terminal-text.ts).
      if (!n.reachable)
        rows.push([
          printable(n.id ?? '?'),
          printable(n.address),
          '',
          `unreachable (${printable(n.error ?? '')})`,
          '',
          '',
          '',
          '',
          '',
        ]);
      else
        rows.push([
          printable(n.id ?? '?'),
          printable(n.address),
          n.pid === undefined ? '?' : String(n.pid),
          printable(n.role ?? ''),
          String(n.term),
          String(n.commitIndex),
          String(n.appliedIndex),
          String(n.lastIndex),
          printable(n.version ?? '?'),
        ]);
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    process.stdout.write(`leader: ${printable(st.leader ?? 'none')}\n`);
    for (const r of rows)
      process.stdout.write(
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd() + '\n',
      );
    // A cluster of more than one decision group: each group's leader and indexes.
    if ((st.groups?.length ?? 0) > 1) process.stdout.write(groupTable(st.groups ?? []));
  }
  if (st.skippedAddresses !== undefined)
    process.stderr.write(
      `verdict: the nodes named more addresses than a cluster has; asked ${STATUS_ADDRESSES_MAX}, ${st.skippedAddresses} not asked\n`,
    );
  if (!st.nodes.some((n) => n.reachable)) {
    process.stderr.write(
      `verdict: ${unreachableMessage(new Map(st.nodes.map((n) => [n.address, n.error ?? 'no answer'])), timeoutMs)}\n`,
    );
    process.exitCode = 1;
  } else if (problem !== null) {
    // A health check can trust the exit code: 0 only with a leader and a majority answering.
    process.stderr.write(`verdict: ${problem}\n`);
    process.exitCode = 1;
  }
}

/** The decision groups as a table: GROUP LEADER TERM COMMIT APPLIED IN-FLIGHT. */
export function groupTable(groups: readonly GroupStatusRow[]): string {
  const rows = [['GROUP', 'LEADER', 'TERM', 'COMMIT', 'APPLIED', 'IN-FLIGHT']];
  for (const g of groups)
    rows.push([
      String(g.group),
      printable(g.leaderId || 'none'),
      String(g.term),
      String(g.commitIndex),
      String(g.appliedIndex),
      String(g.inFlight),
    ]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return `\n${rows
    .map(
      (r) =>
        `${r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('')}`;
}

/**
 * Why the cluster cannot take writes as this status sees it, or null when a leader is named and a majority of the nodes
 * answer.
 */
export function healthProblem(st: {
  leader: string | null;
  groups?: readonly GroupStatusRow[];
  nodes: { reachable: boolean }[];
}): string | null {
  const answering = st.nodes.filter((n) => n.reachable).length;
  if (answering * 2 <= st.nodes.length)
    return `a majority of the nodes is unreachable (${answering} of ${st.nodes.length} answer)`;
  if (st.leader === null) return `no leader (${answering} of ${st.nodes.length} nodes answer, none is leader)`;
  const leaderless = (st.groups ?? []).filter((g) => g.leaderId === '').map((g) => g.group);
  if (leaderless.length > 0)
    return `no leader in decision group${leaderless.length === 1 ? '' : 's'} ${leaderless.join(', ')}`;
  return null;
}
