// Coordinator.AcquireLease / RenewLease / ReleaseLease: every request is a
// lease command proposed through the log with the leader's clock, and the
// answer is what the lease table said when it applied (src/lease/state.ts),
// never this leader's memory. A follower redirects like every other write.
// Each request is idempotent (R7): the holder asking again for a lease it
// holds gets the same epoch, extended.
//
// Under mutual TLS the holder is bound to the caller: the command carries
// the CN of the caller's verified certificate as the lease's owner, taken
// from the connection, never from the request, so only that identity (with
// the same holder name) renews or releases the lease, and its leases count
// against its quota (src/lease/state.ts). Without TLS the command carries no
// owner: the holder name stands for itself.

import type * as grpc from '@grpc/grpc-js';
import {
  encodeLeaseCommand,
  LEASE_HOLDER,
  LEASE_NAME,
  isLeaseOwner,
  LEASE_TTL_MAX_MS,
  LEASE_TTL_MIN_MS,
  type LeaseCommand,
  type LeaseTable,
} from '../lease/state.ts';
import type { CoordinatorHandlers, LeaseMethod, LeaseRequest, LeaseResponse } from '../transport/coordinator-rpc.ts';
import { peerCertificate, subjectField, type AuthenticatedCall } from '../transport/tls.ts';
import { invalidArgument } from '../transport/validate.ts';
import type { Membership } from './membership.ts';
import type { BoundedLog } from './core.ts';
import { toServiceError } from './raft-node-service.ts';

export interface LeaseServiceDeps {
  /** The cluster's members as this node knows them (src/node/membership.ts), for redirects. */
  members: Membership;
  /** Proposes each lease command, bounded in time (src/node/core.ts). */
  core: BoundedLog;
  leases: LeaseTable;
  nowMs: () => number;
}

/**
 * The lease owner a call speaks for: `CN=<name>` of its verified client
 * certificate, or undefined without one (plaintext). A CN the lease table
 * could not store (over 253 characters, control characters) is a refusal.
 */
export function leaseOwnerOf(call: AuthenticatedCall): { owner: string | undefined; problem: string | null } {
  const cn = subjectField(peerCertificate(call)?.subject, 'CN');
  if (cn === undefined) return { owner: undefined, problem: null };
  const owner = `CN=${cn}`;
  return isLeaseOwner(owner)
    ? { owner, problem: null }
    : {
        owner: undefined,
        problem:
          "the client certificate's CN cannot hold a lease: it must be 1–253 characters without control characters",
      };
}

/** Why a lease request is malformed, or null. */
export function leaseRequestProblem(r: LeaseRequest, kind: LeaseCommand['t']): string | null {
  if (!LEASE_NAME.test(r.name))
    return `lease name ${JSON.stringify(r.name.slice(0, 64))} must be 1–128 letters, digits, "_", ".", ":", "/" or "-"`;
  if (!LEASE_HOLDER.test(r.holder))
    return `lease holder ${JSON.stringify(r.holder.slice(0, 64))} must be 1–128 letters, digits, "_", ".", ":", "@" or "-"`;
  if (kind !== 'lease.acquire' && !(Number.isSafeInteger(r.epoch) && r.epoch >= 1))
    return 'renewing or releasing a lease needs the epoch it was granted (1 or more)';
  if (kind !== 'lease.release' && !(r.ttlMs >= LEASE_TTL_MIN_MS && r.ttlMs <= LEASE_TTL_MAX_MS))
    return `ttl_ms must be ${LEASE_TTL_MIN_MS}–${LEASE_TTL_MAX_MS}`;
  return null;
}

export function leaseApi(deps: LeaseServiceDeps): Pick<CoordinatorHandlers, LeaseMethod> {
  const { members, core, leases } = deps;
  const handle =
    (kind: LeaseCommand['t']): grpc.handleUnaryCall<LeaseRequest, LeaseResponse> =>
    (call, cb) => {
      const r = call.request;
      const problem = leaseRequestProblem(r, kind);
      if (problem !== null) return cb(invalidArgument(problem));
      const { owner, problem: ownerProblem } = leaseOwnerOf(call);
      if (ownerProblem !== null) return cb(invalidArgument(ownerProblem));
      const atMs = deps.nowMs();
      const who = owner === undefined ? { name: r.name, holder: r.holder } : { name: r.name, holder: r.holder, owner };
      const cmd: LeaseCommand =
        kind === 'lease.acquire'
          ? { t: kind, ...who, ttlMs: r.ttlMs, atMs }
          : kind === 'lease.renew'
            ? { t: kind, ...who, epoch: r.epoch, ttlMs: r.ttlMs, atMs }
            : { t: kind, ...who, epoch: r.epoch, atMs };
      core.proposeEntry(kind, encodeLeaseCommand(cmd), (err, index) => {
        if (err) return cb(toServiceError(members, err));
        // The proposer's callback fires right after its entry applied, so `last` is that entry's result.
        const res = leases.last;
        if (res === null || res.index !== index)
          return cb(toServiceError(members, new Error(`${kind}: the result of index ${index} is gone; retry`)));
        cb(null, { granted: res.granted, reason: res.reason, lease: res.lease, clockAtMs: res.clockAtMs });
      });
    };
  return {
    AcquireLease: handle('lease.acquire'),
    RenewLease: handle('lease.renew'),
    ReleaseLease: handle('lease.release'),
  };
}
