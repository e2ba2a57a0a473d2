// The node's own API (service RaftNode): status, leadership transfer, and
// the log probe (Put, PutStream): an opaque entry written through the
// replicated log and applied as a no-op, which the raw-log benchmark and the
// process tests time and count. The probe is an admin operation: nothing a
// client or participant does needs it, and a write to the log is the
// cluster's.

import * as grpc from '@grpc/grpc-js';
import type { NodeStatus, PutRequest, PutResponse, RaftNodeHandlers } from '../transport/proto.ts';
import type { NodeConfig } from './config.ts';
import { NotLeaderError, OverloadedError, type Driver } from './driver.ts';
import { encodeProbe } from './machine.ts';
import type { Membership } from './membership.ts';
import type { Access } from '../transport/auth.ts';
import type { BoundedLog } from './core.ts';
import type { HandOverResult } from './group-host.ts';
import {
  LEADER_ADDRESS_KEY,
  LEADER_ID_KEY,
  STATUS_REASON_KEY,
  type StatusReason,
} from '../transport/coordinator-rpc.ts';
import { packageVersion } from '../util/version.ts';

/** How long a client request (or the engine's proposal) may wait for its entry to apply; NodeCore keeps the time. */
export const REQUEST_TIMEOUT_MS = 10_000;

/**
 * "Not done here": NOT_LEADER with the leader's id and address when another
 * node leads, NO_LEADER when none is known (or this node was elected and
 * cannot serve yet). Both UNAVAILABLE, the code every hint-follower retries
 * on; `verdict-reason` tells them apart. The request certainly did nothing,
 * so a client may resend it as it was (a Commit with begin included).
 * `group`: the decision group meant, named in the words when given.
 */
export function notLeader(members: Membership, leader: string, group?: number): grpc.ServiceError {
  const other = leader !== '' && leader !== members.selfId;
  const where = other
    ? `the leader is ${leader} at ${members.get(leader) ?? '?'}`
    : 'no leader is known yet; retry shortly';
  const of = group === undefined ? '' : ` of group ${group}`;
  return redirect(`not the leader${of}: ${where}`, other ? leader : '', members);
}

/**
 * A node that is shutting down refuses new work the way a follower does,
 * UNAVAILABLE with the leader's address, so clients move on at once.
 * `leader` is the node that leads (or is taking over); '' when not known yet.
 */
export function shuttingDown(members: Membership, leader: string): grpc.ServiceError {
  const other = leader !== '' && leader !== members.selfId;
  const where = other
    ? `the leader is ${leader} at ${members.get(leader) ?? '?'}`
    : 'leadership is moving to another node; retry shortly';
  return redirect(`node ${members.selfId} is shutting down: ${where}`, other ? leader : '', members);
}

/**
 * A leader handing its group over refuses new transactions the way a follower does, before another node leads:
 * NO_LEADER, with the engine's words for where leadership goes.
 */
export function handingOver(members: Membership, details: string): grpc.ServiceError {
  return redirect(details, '', members);
}

function redirect(details: string, leader: string, members: Membership): grpc.ServiceError {
  const md = new grpc.Metadata();
  const reason: StatusReason = leader !== '' ? 'NOT_LEADER' : 'NO_LEADER';
  md.set(STATUS_REASON_KEY, reason);
  if (leader !== '') {
    md.set(LEADER_ID_KEY, leader);
    md.set(LEADER_ADDRESS_KEY, members.get(leader) ?? '');
  }
  return Object.assign(new Error(details), { code: grpc.status.UNAVAILABLE, details, metadata: md });
}

/**
 * Why an operator's transfer did not start after its hand-over (GroupHost.handOver) ended: retryable; null when it
 * started. An operator retries, or forces it. `group`: the decision group, named in the words when given.
 */
export function handOverRefusal(
  cfg: Pick<NodeConfig, 'nodeId' | 'tickMs'>,
  h: HandOverResult,
  group?: number,
): string | null {
  if (h.outcome === 'transferred') return null;
  const of = group === undefined ? '' : ` of group ${group}`;
  const flag = group === undefined ? '' : ` --group ${group}`;
  if (h.outcome === 'in-flight')
    return `leadership${of} stays on ${cfg.nodeId}: ${h.inFlight} transaction(s) were still in flight after ${h.drainedTicks * cfg.tickMs} ms of refusing new ones, and the next leader would abort them; new transactions are taken again. Retry, or force the transfer (verdict leader transfer${flag} --force; those in flight may abort)`;
  if (h.outcome === 'not-leader') return `${cfg.nodeId} no longer leads${of}; retry`;
  return `leadership${of} stays on ${cfg.nodeId}: another hand-over of the group replaced this one; retry`;
}

/** Two election timeouts: long enough for a caught-up follower to win, short enough for a shutdown. */
export function transferWaitMs(cfg: NodeConfig): number {
  return 2 * cfg.electionTicks * cfg.tickMs;
}

/**
 * Hands leadership to `to` (TimeoutNow once it has caught up) and polls
 * every tick until another node leads or `timeoutMs` passes. Resolves with
 * the node that leads then ('' if none is known), never rejects.
 */
export function transferLeadership(
  cfg: NodeConfig,
  d: Driver<unknown>,
  to: string,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve) => {
    const deadlineAtMs = Date.now() + timeoutMs;
    let sentAtMs = 0;
    const electionMs = cfg.electionTicks * cfg.tickMs;
    const poll = (): void => {
      const leader = d.leader();
      if (!d.isLeader() && leader !== '' && leader !== cfg.nodeId) return finish(leader);
      if (Date.now() >= deadlineAtMs) return finish(d.isLeader() ? cfg.nodeId : leader);
      // The core gives up a transfer after an election timeout; ask again.
      if (d.isLeader() && Date.now() - sentAtMs >= electionMs) {
        sentAtMs = Date.now();
        d.transferLeadership(to);
      }
    };
    const timer = setInterval(poll, Math.max(5, Math.min(cfg.tickMs, 50)));
    const finish = (leader: string): void => {
      clearInterval(timer);
      resolve(leader);
    };
    poll();
  });
}

export function toServiceError(members: Membership, err: Error): grpc.ServiceError {
  if (err instanceof NotLeaderError) return notLeader(members, err.leader);
  const code = err instanceof OverloadedError ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNAVAILABLE;
  return Object.assign(new Error(err.message), { code, details: err.message, metadata: new grpc.Metadata() });
}

/**
 * Where this node's web console answers, as configured: the HTTPS console
 * with TLS, else consoleListen or the metrics listener; '' when none. A
 * wildcard host (0.0.0.0, ::) is kept: the page puts the host it was opened
 * by in its place.
 */
export function consoleUrlOf(cfg: Pick<NodeConfig, 'consoleListen' | 'metricsListen' | 'tls'>): string {
  if (cfg.consoleListen !== null) return `${cfg.tls !== null ? 'https' : 'http'}://${cfg.consoleListen}/`;
  return cfg.tls === null && cfg.metricsListen !== null ? `http://${cfg.metricsListen}/` : '';
}

/** One decision group's replica on this node, as TransferLeader reads it: its members' addresses and its driver. */
export interface GroupLeadership {
  members: Membership;
  driver: Driver<unknown>;
}

/** An operator's hand-over of decision group `group` (GroupHost.handOver): drains it, then starts the transfer. */
export type GroupHandOver = (to: string, force: boolean, group: number) => Promise<HandOverResult>;

/** The group a transfer names, or the refusal of a group outside 0..G-1. */
function groupAsked(groups: readonly GroupLeadership[], group: number): GroupLeadership | grpc.ServiceError {
  const view = Number.isInteger(group) ? groups[group] : undefined;
  if (view !== undefined) return view;
  const g = groups.length;
  const details = `group ${group} does not exist: this cluster has ${g} decision group${g === 1 ? '' : 's'} (0 to ${g - 1})`;
  return Object.assign(new Error(details), {
    code: grpc.status.INVALID_ARGUMENT,
    details,
    metadata: new grpc.Metadata(),
  });
}

/**
 * TransferLeader, served by the named group's leader: drains the group (`handOver`), then hands its leadership to
 * `to` and waits until `to` leads it. `groups`: every decision group's replica here, group 0's first.
 */
function transferLeaderHandler(
  cfg: NodeConfig,
  access: Access,
  groups: readonly GroupLeadership[],
  handOver: GroupHandOver | undefined,
): RaftNodeHandlers['TransferLeader'] {
  return (call, cb) => {
    const refused = access.adminOnly(call, 'leader transfer');
    if (refused) return cb(refused);
    const { to, timeoutMs, force } = call.request;
    const group = call.request.group ?? 0;
    const view = groupAsked(groups, group);
    if (view instanceof Error) return cb(view);
    const { members, driver: d } = view;
    // With one group the answers read as before groups.
    const named = groups.length > 1 ? group : undefined;
    if (!members.has(to))
      return cb({
        code: grpc.status.INVALID_ARGUMENT,
        details: `"${to}" is not a voter of cluster ${cfg.clusterId}; voters: ${members.ids().join(', ')}`,
      });
    if (!d.isLeader()) {
      // Already done (a retried request), or not ours to do: point at the group's leader.
      if (d.leader() === to) return cb(null, { leaderId: to, term: d.node.raft.term, inFlight: 0 });
      return cb(notLeader(members, d.leader(), named));
    }
    if (to === cfg.nodeId) return cb(null, { leaderId: to, term: d.node.raft.term, inFlight: 0 });
    const waitMs = timeoutMs > 0 ? Math.min(timeoutMs, 60_000) : transferWaitMs(cfg);
    void (async () => {
      // New transactions are refused and those in flight decide here first: the next leader would abort them (R2).
      const h = handOver === undefined ? null : await handOver(to, force === true, group);
      if (h !== null && h.outcome === 'not-leader') return cb(notLeader(members, d.leader(), named));
      const refused = h === null ? null : handOverRefusal(cfg, h, named);
      if (refused !== null) return cb({ code: grpc.status.UNAVAILABLE, details: refused });
      const inFlight = h?.inFlight ?? 0;
      const leader = await transferLeadership(cfg, d, to, waitMs);
      if (leader === to) return cb(null, { leaderId: to, term: d.node.raft.term, inFlight });
      const now = leader ? `${leader} leads` : 'no leader is known';
      const which = named === undefined ? '' : ` of group ${group}`;
      cb({
        code: grpc.status.DEADLINE_EXCEEDED,
        details: `leadership${which} did not move to ${to} within ${waitMs} ms (${now}); is ${to} running, reachable and caught up? See verdict status`,
      });
    })();
  };
}

export function raftNodeApi(
  cfg: NodeConfig,
  core: BoundedLog,
  members: Membership,
  d: Driver<unknown>,
  address: string,
  access: Access,
  handOver?: GroupHandOver,
  groups: readonly GroupLeadership[] = [{ members, driver: d }],
): RaftNodeHandlers {
  return {
    Status: (_call: grpc.ServerUnaryCall<unknown, NodeStatus>, cb: grpc.sendUnaryData<NodeStatus>) => {
      const s = d.node.status();
      cb(null, {
        clusterId: cfg.clusterId,
        nodeId: cfg.nodeId,
        address,
        role: s.softState.role,
        term: s.hardState.term,
        leaderId: s.softState.leader,
        commitIndex: s.hardState.commit,
        appliedIndex: s.applied,
        lastIndex: s.lastIndex,
        firstIndex: s.firstIndex,
        pid: process.pid,
        version: packageVersion(),
        consoleUrl: consoleUrlOf(cfg),
        // Only the leader tracks replication progress; any other node lists
        // the members it was configured with, so that `verdict status` finds
        // the whole cluster from any one address.
        peers:
          s.progress.length > 0
            ? s.progress.map((p) => ({
                nodeId: p.id,
                address: members.get(p.id) ?? '',
                matchIndex: p.match,
                nextIndex: p.next,
                state: p.state,
              }))
            : [...members.peers()].map(([id, addr]) => ({
                nodeId: id,
                address: addr,
                matchIndex: 0,
                nextIndex: 0,
                state: 'unknown',
              })),
      });
    },
    // The log probe: one entry through the log, answered with the index it applied at once it applied.
    Put: (call: grpc.ServerUnaryCall<PutRequest, PutResponse>, cb: grpc.sendUnaryData<PutResponse>) => {
      const refused = access.adminOnly(call, 'log probe');
      if (refused) return cb(refused);
      const { key, value } = call.request;
      if (typeof key !== 'string' || key === '')
        return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'key must be a non-empty string' });
      core.proposeEntry(`log probe ${key}`, encodeProbe(key, value ?? new Uint8Array()), (err, index) => {
        if (err) return cb(toServiceError(members, err));
        cb(null, { index: index ?? 0, leaderId: cfg.nodeId, leaderAddress: address });
      });
    },
    TransferLeader: transferLeaderHandler(cfg, access, groups, handOver),
  } as RaftNodeHandlers;
}
