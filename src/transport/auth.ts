// Who may do what on a node: one policy, passed in at start-up as an
// Access, and two checks that every handler with a role calls.
//
// - access.adminOnly(call, what): operator acts (leader transfer, membership
//   changes, operator resolution of a transaction, the log probe Put/PutStream).
// - access.participantOnly(call, participantId, what): acts that speak for one
//   participant (registering it, reporting a heuristic for it, asking about
//   a transaction as it, which may make the leader log ABORT under R3).
// - access.starterOrAdmin(call, starter, what): reads of what one client
//   started (a saga's definition, inputs and outputs): that client or an admin.
//
// Without TLS there are no identities: the node trusts every caller that can reach its port, and every check passes (a
// node serves plaintext only when told `insecure`, see listen-policy.ts). With TLS, identity is the verified client
// certificate (signed by the cluster's CA): an admin is a certificate whose CN is in tls.adminNames (none when the list
// is absent), and participant P of cluster C is the certificate with CN=P and OU=C, without the node mark (tls.ts:
// certificateRole). Binding a participant id to a name rather than to one certificate's key lets the owner renew its
// certificate; the CA decides who holds the name. docs/security.md states the whole model.
import * as grpc from '@grpc/grpc-js';
import { certificateRole, peerCertificate, subjectField, type AuthenticatedCall } from './tls.ts';

export interface AuthPolicy {
  /** Null: plaintext, every caller that can connect is trusted. */
  tls: {
    clusterId: string;
    /** Client certificate CNs allowed to run admin operations; empty: nobody. */
    adminNames: readonly string[];
  } | null;
}

export const OPEN_POLICY: AuthPolicy = { tls: null };

/** The CN and OU of the caller's verified certificate, as a message shows them. */
export function callerName(call: AuthenticatedCall): string {
  const cert = peerCertificate(call);
  if (cert === null) return 'a caller without a verified client certificate';
  return `client certificate CN=${subjectField(cert.subject, 'CN')?.slice(0, 64) ?? '-'}, OU=${subjectField(cert.subject, 'OU')?.slice(0, 64) ?? '-'}`;
}

export function permissionDenied(details: string): grpc.ServiceError {
  return Object.assign(new Error(`PERMISSION_DENIED: ${details}`), {
    code: grpc.status.PERMISSION_DENIED,
    details,
    metadata: new grpc.Metadata(),
  });
}

/** PERMISSION_DENIED with a reason, or null when the caller may run admin operations. */
export function checkAdmin(
  call: AuthenticatedCall,
  policy: AuthPolicy,
  what = 'this operation',
): grpc.ServiceError | null {
  const why = adminRefusal(subjectField(peerCertificate(call)?.subject, 'CN'), policy, what);
  return why === null ? null : permissionDenied(why);
}

/**
 * Why a caller whose verified certificate has CN `cn` (undefined: none) may not run admin operations, or null when it
 * may.
 */
function adminRefusal(cn: string | undefined, policy: AuthPolicy, what: string): string | null {
  if (policy.tls === null) return null;
  const names = policy.tls.adminNames;
  if (cn !== undefined && names.includes(cn)) return null;
  if (names.length === 0)
    return `${what} needs an admin certificate, and this node has none: set tls.adminNames to the CNs of the operators' client certificates`;
  const who = cn === undefined ? 'a caller without a verified client certificate' : `client certificate CN=${cn}`;
  return `${what} needs an admin certificate: ${who} is not in the node's tls.adminNames; use a certificate whose CN is one of them`;
}

/** PERMISSION_DENIED with a reason, or null when the caller is participant `participantId` of the cluster. */
export function checkParticipant(
  call: AuthenticatedCall,
  policy: AuthPolicy,
  participantId: string,
  what: string,
): grpc.ServiceError | null {
  if (policy.tls === null) return null;
  const subject = peerCertificate(call)?.subject;
  const { clusterId } = policy.tls;
  if (subjectField(subject, 'CN') === participantId && certificateRole(subject, clusterId) === 'participant')
    return null;
  // Bounded: the id comes from the request and is echoed back (a valid one is at most 64 characters).
  const id = participantId.slice(0, 64);
  return permissionDenied(
    `${what} is for participant "${id}" only, whose certificate has CN=${id}, OU=${clusterId}; the caller presented ${callerName(call)}`,
  );
}

/**
 * PERMISSION_DENIED with a reason, or null when the caller is `starter` (`CN=<name>` of its certificate) or an admin.
 */
export function checkStarterOrAdmin(
  call: AuthenticatedCall,
  policy: AuthPolicy,
  starter: string,
  what: string,
): grpc.ServiceError | null {
  if (policy.tls === null) return null;
  const cn = subjectField(peerCertificate(call)?.subject, 'CN');
  if (cn !== undefined && `CN=${cn}` === starter) return null;
  if (adminRefusal(cn, policy, what) === null) return null;
  // Bounded: the starter is at most 256 characters, the CN the caller's own.
  const by = starter === '' ? 'an unrecorded client' : starter.slice(0, 64);
  return permissionDenied(
    `${what} is for the client that started it (${by}) and for admins only; the caller presented ${callerName(call)}`,
  );
}

/**
 * One node's access rules: its policy, passed in at start-up (no module
 * state, so two nodes in one process keep their own), and the calls it
 * refused, by the role the caller lacked (verdict_permission_denied_total).
 */
export class Access {
  readonly denials = { admin: 0, participant: 0, starter: 0 };

  constructor(readonly policy: AuthPolicy = OPEN_POLICY) {}

  /** The admin check; see checkAdmin. */
  adminOnly(call: AuthenticatedCall, what?: string): grpc.ServiceError | null {
    const refused = checkAdmin(call, this.policy, what);
    if (refused !== null) this.denials.admin++;
    return refused;
  }

  /**
   * The admin check for a caller known by its certificate's CN (the web console); a PERMISSION_DENIED reason, or null.
   */
  adminNameOnly(cn: string | undefined, what = 'this operation'): string | null {
    const why = this.adminNameRefusal(cn, what);
    if (why !== null) this.denials.admin++;
    return why;
  }

  /** adminNameOnly without counting a denial: what a page shows before anyone acts. */
  adminNameRefusal(cn: string | undefined, what = 'this operation'): string | null {
    const why = adminRefusal(cn, this.policy, what);
    return why === null ? null : `PERMISSION_DENIED: ${why}`;
  }

  /** The starter check; see checkStarterOrAdmin. */
  starterOrAdmin(call: AuthenticatedCall, starter: string, what: string): grpc.ServiceError | null {
    const refused = checkStarterOrAdmin(call, this.policy, starter, what);
    if (refused !== null) this.denials.starter++;
    return refused;
  }

  /**
   * Whether the caller is one of the participants (or step services) `ids`
   * of this cluster by its certificate (CN, OU, no node mark); everyone
   * without TLS. Counts nothing: callers check the other roles after it.
   */
  isOneOf(call: AuthenticatedCall, ids: readonly string[]): boolean {
    if (this.policy.tls === null) return true;
    const subject = peerCertificate(call)?.subject;
    const cn = subjectField(subject, 'CN');
    return (
      cn !== undefined && ids.includes(cn) && certificateRole(subject, this.policy.tls.clusterId) === 'participant'
    );
  }

  /** Whether the caller may read what every client started (an admin; everyone without TLS). Counts nothing. */
  seesAll(call: AuthenticatedCall): boolean {
    return checkAdmin(call, this.policy) === null;
  }

  /** The participant check; see checkParticipant. */
  participantOnly(call: AuthenticatedCall, participantId: string, what: string): grpc.ServiceError | null {
    const refused = checkParticipant(call, this.policy, participantId, what);
    if (refused !== null) this.denials.participant++;
    return refused;
  }
}
