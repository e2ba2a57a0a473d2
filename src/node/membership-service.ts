// Membership through the node API (RaftNode.AddMember / RemoveMember /
// ListMembers), one server at a time (src/raft/confchange.ts):
//
// - add: the new node (started with "join": true and an empty data dir) joins
//   as a learner, gets the log or a snapshot, and is promoted to voter once it
//   holds everything that was committed when it was added. A node that does
//   not catch up in time stays a learner and the call fails, saying so.
// - remove: refuses the last voter; a leader that is asked to remove itself
//   first hands leadership to its most up-to-date follower and answers
//   UNAVAILABLE with the new leader's address, where the caller retries.
//
// Both are idempotent (R7): adding an existing voter at the same address or
// removing a non-member succeeds without a change. Every call passes the one
// admin check, Access.adminOnly (src/transport/auth.ts).

import * as grpc from '@grpc/grpc-js';
import { ConfChangeRefusedError, ConfChangeType } from '../raft/confchange.ts';
import { ProposalDroppedError } from '../raft/raft.ts';
import type { ConfState } from '../raft/types.ts';
import type { Access } from '../transport/auth.ts';
import { sleep } from '../util/sleep.ts';
import type { AddMemberRequest, ListMembersRequest, Members, RemoveMemberRequest } from '../transport/proto.ts';
import { parseAddress, type NodeConfig } from './config.ts';
import type { Membership } from './membership.ts';
import { NotLeaderError, type Driver } from './driver.ts';
import { encodeMemberContext } from './machine.ts';
import { notLeader, toServiceError, transferLeadership, transferWaitMs } from './raft-node-service.ts';
import type { HandOverResult } from './group-host.ts';
import { ID } from '../domain/id.ts';

/** How long an add waits for the learner to catch up, unless the request says. */
export const CATCH_UP_DEFAULT_MS = 60_000;
const CATCH_UP_MAX_MS = 10 * 60_000;

type Handler<Req> = (call: grpc.ServerUnaryCall<Req, Members>, cb: grpc.sendUnaryData<Members>) => void;

/** Errors this file built as gRPC statuses, passed through as they are. */
const failures = new WeakSet<object>();

function fail(code: grpc.status, details: string): grpc.ServiceError {
  const e = Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
  failures.add(e);
  return e;
}

export function membersOf(members: Membership, d: Driver<unknown>): Members {
  const cs = d.node.confState();
  const progress = new Map(d.node.status().progress.map((p) => [p.id, p]));
  const row = (id: string, voter: boolean): Members['members'][number] => {
    const p = progress.get(id);
    return { nodeId: id, address: members.get(id) ?? '', voter, matchIndex: p?.match ?? 0, state: p?.state ?? '' };
  };
  return {
    members: [...cs.voters.map((id) => row(id, true)), ...cs.learners.map((id) => row(id, false))],
    leaderId: d.leader(),
    term: d.node.raft.term,
    confIndex: d.node.raft.confIndex,
  };
}

/** One decision group's replica on this node, as ListMembers reads it: its members' addresses and its driver. */
export interface GroupMembersView {
  members: Membership;
  driver: Driver<unknown>;
}

/**
 * `isParticipant`: whether an id is a registered participant's (node and participant ids are one namespace,
 * docs/security.md). `groups`: every decision group's replica, group 0's first (`members` and `d`); absent with one
 * group. AddMember and RemoveMember change group 0, which every other group follows (./group-host.ts); ListMembers
 * lists the group the request names.
 */
export function membershipApi(
  cfg: NodeConfig,
  members: Membership,
  d: Driver<unknown>,
  access: Access,
  isParticipant: (id: string) => boolean = () => false,
  groups: readonly GroupMembersView[] = [{ members, driver: d }],
  handOver?: (to: string) => Promise<HandOverResult>,
): {
  AddMember: Handler<AddMemberRequest>;
  RemoveMember: Handler<RemoveMemberRequest>;
  ListMembers: Handler<ListMembersRequest>;
} {
  /** Every member's address after `id` joins at `address` (or leaves, when address is null). */
  const contextFor = (cs: ConfState, id: string, address: string | null): Uint8Array => {
    const addrs = new Map<string, string>();
    for (const m of [...cs.voters, ...cs.learners]) {
      const a = members.get(m);
      if (a !== undefined && m !== id) addrs.set(m, a);
    }
    if (address !== null) addrs.set(id, address);
    return encodeMemberContext(addrs);
  };

  /** Proposes one change and waits until it is applied; retries while another change is pending. */
  const change = async (
    type: ConfChangeType,
    id: string,
    address: string | null,
    deadlineAtMs: number,
  ): Promise<ConfState> => {
    for (;;) {
      try {
        return await new Promise<ConfState>((resolve, reject) =>
          d.proposeConfChange({ type, nodeId: id, context: contextFor(d.node.confState(), id, address) }, (err, r) =>
            err ? reject(err) : resolve(r!.confState),
          ),
        );
      } catch (err) {
        const pending = err instanceof ProposalDroppedError && /membership change is in progress/.test(err.message);
        if (!pending || Date.now() >= deadlineAtMs) throw err;
        await sleep(Math.max(5, cfg.tickMs));
      }
    }
  };

  const answer = (cb: grpc.sendUnaryData<Members>, err: unknown): void => {
    if (typeof err === 'object' && err !== null && failures.has(err)) return cb(err as grpc.ServiceError);
    if (err instanceof ConfChangeRefusedError) return cb(fail(grpc.status.FAILED_PRECONDITION, err.message));
    if (err instanceof Error) return cb(toServiceError(members, err));
    cb(fail(grpc.status.INTERNAL, String(err)));
  };

  return {
    ListMembers: (call, cb) => {
      const refused = access.adminOnly(call, 'listing members');
      if (refused) return cb(refused);
      const g = call.request.group ?? 0;
      const view = groups[g];
      if (view === undefined)
        return cb(
          fail(
            grpc.status.INVALID_ARGUMENT,
            `group ${g} does not exist: this cluster has ${groups.length} decision group${groups.length === 1 ? '' : 's'} (0 to ${groups.length - 1})`,
          ),
        );
      cb(null, membersOf(view.members, view.driver));
    },

    AddMember: (call, cb) => {
      const refused = access.adminOnly(call, 'adding a member');
      if (refused) return cb(refused);
      const { nodeId: id, address } = call.request;
      if (typeof id !== 'string' || !ID.test(id))
        return cb(
          fail(
            grpc.status.INVALID_ARGUMENT,
            `node id ${JSON.stringify(id)} is invalid: expected letters, digits, ".", "_" or "-" (at most 64)`,
          ),
        );
      if (typeof address !== 'string' || !parseAddress(address))
        return cb(
          fail(
            grpc.status.INVALID_ARGUMENT,
            `address ${JSON.stringify(address)} is invalid: expected host:port of the new node`,
          ),
        );
      if (!d.isLeader()) return cb(notLeader(members, d.leader()));
      if (isParticipant(id))
        return cb(
          fail(
            grpc.status.FAILED_PRECONDITION,
            `"${id}" is a registered participant's id; a node needs an id of its own, or that participant's certificate would pass for this node's`,
          ),
        );
      const cs = d.node.confState();
      const current = members.get(id);
      const member = cs.voters.includes(id) || cs.learners.includes(id);
      if (member && current !== undefined && current !== address) {
        return cb(
          fail(
            grpc.status.FAILED_PRECONDITION,
            `${id} is already a member at ${current}, not ${address}; remove it first (verdict member remove ${id}) to move it`,
          ),
        );
      }
      for (const [other, a] of members.peers()) {
        if (a === address && other !== id && (cs.voters.includes(other) || cs.learners.includes(other))) {
          return cb(
            fail(
              grpc.status.FAILED_PRECONDITION,
              `address ${address} belongs to member ${other}; give ${id} an address of its own`,
            ),
          );
        }
      }
      if (cs.voters.includes(id)) return cb(null, membersOf(members, d));
      const waitMs =
        call.request.timeoutMs > 0 ? Math.min(call.request.timeoutMs, CATCH_UP_MAX_MS) : CATCH_UP_DEFAULT_MS;
      const deadlineAtMs = Date.now() + waitMs;
      void (async () => {
        if (!cs.learners.includes(id)) await change(ConfChangeType.AddLearner, id, address, deadlineAtMs);
        // Caught up: the learner holds what was committed when it was added, and (a new node starts on an
        // empty data directory, so it starts rejoining) the leader has proven it whole: a voter that counts in no
        // quorum would only make every quorum harder to reach.
        const target = d.node.raft.log.committed;
        for (;;) {
          if (!d.isLeader()) throw new NotLeaderError(d.leader());
          const pr = d.node.raft.progress.get(id);
          if (pr && pr.match >= target && d.node.raft.counts(id)) break;
          if (Date.now() >= deadlineAtMs) {
            throw fail(
              grpc.status.DEADLINE_EXCEEDED,
              `${id} at ${address} did not catch up within ${waitMs} ms (it holds ${pr?.match ?? 0} of ${target}); it stays a learner. Is it running with "join": true and reachable from the leader? ` +
                `Run the same command again to keep waiting, or verdict member remove ${id}`,
            );
          }
          await sleep(Math.max(5, cfg.tickMs));
        }
        await change(ConfChangeType.AddVoter, id, address, deadlineAtMs);
      })().then(
        () => cb(null, membersOf(members, d)),
        (err: unknown) => answer(cb, err),
      );
    },

    RemoveMember: (call, cb) => {
      const refused = access.adminOnly(call, 'removing a member');
      if (refused) return cb(refused);
      const { nodeId: id } = call.request;
      if (typeof id !== 'string' || !ID.test(id))
        return cb(fail(grpc.status.INVALID_ARGUMENT, `node id ${JSON.stringify(id)} is invalid`));
      if (!d.isLeader()) return cb(notLeader(members, d.leader()));
      const cs = d.node.confState();
      if (!cs.voters.includes(id) && !cs.learners.includes(id)) return cb(null, membersOf(members, d));
      if (cs.voters.length === 1 && cs.voters[0] === id) {
        return cb(
          fail(
            grpc.status.FAILED_PRECONDITION,
            `${id} is the last voter; a cluster cannot remove its last voter (add another member first)`,
          ),
        );
      }
      if (id === cfg.nodeId) {
        // The leader removes itself: hand leadership over first, then the new leader does it.
        const others = d.node.status().progress.filter((p) => p.id !== id && !p.learner && !p.rejoining);
        others.sort((a, b) => Number(b.state === 'replicate') - Number(a.state === 'replicate') || b.match - a.match);
        const to = others[0]?.id;
        if (to === undefined)
          return cb(fail(grpc.status.FAILED_PRECONDITION, `${id} leads and no other voter can take over`));
        const waitMs = transferWaitMs(cfg);
        // New transactions refused and those in flight decided first (forced past the bound: it must go), as every
        // hand-over of the group host.
        void (handOver === undefined ? Promise.resolve(null) : handOver(to)).then(async (h) => {
          if (h !== null && h.outcome === 'not-leader') return cb(notLeader(members, d.leader()));
          const leader = await transferLeadership(cfg, d, to, waitMs);
          if (leader && leader !== cfg.nodeId) return cb(notLeader(members, leader));
          cb(
            fail(
              grpc.status.UNAVAILABLE,
              `${id} leads and could not hand leadership to ${to} within ${waitMs} ms; retry`,
            ),
          );
        });
        return;
      }
      change(ConfChangeType.Remove, id, null, Date.now() + transferWaitMs(cfg) * 5).then(
        () => cb(null, membersOf(members, d)),
        (err: unknown) => answer(cb, err),
      );
    },
  };
}
