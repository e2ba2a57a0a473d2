// Who may run admin operations (leader transfer, operator resolution of a
// transaction, membership change). One check, `adminOnly(call)`, used by
// every admin RPC handler.
//
// The policy comes from the node's config (`tls.adminNames`): without TLS,
// or with TLS and no adminNames, every caller that reached the handler may
// (with TLS that already means a certificate signed by the cluster's CA);
// with adminNames, only a caller whose verified client certificate has one
// of those names as its CN.
import * as grpc from '@grpc/grpc-js';
import { peerCertificate, subjectField, type AuthenticatedCall } from './tls.ts';

export interface AdminPolicy {
  /** Client certificate CNs allowed to run admin operations; null: anyone who can connect. */
  adminNames: readonly string[] | null;
}

export const OPEN_POLICY: AdminPolicy = { adminNames: null };

let installed: AdminPolicy = OPEN_POLICY;

/** The node process installs its policy once, at start-up, before serving. */
export function setAdminPolicy(p: AdminPolicy): void {
  installed = p;
}

/** PERMISSION_DENIED with a reason, or null when the caller may run admin operations. */
export function checkAdmin(call: AuthenticatedCall, policy: AdminPolicy, what = 'this operation'): grpc.ServiceError | null {
  if (policy.adminNames === null) return null;
  const cert = peerCertificate(call);
  const cn = subjectField(cert?.subject, 'CN');
  if (cn !== undefined && policy.adminNames.includes(cn)) return null;
  const who = cn === undefined ? 'a caller without a verified client certificate' : `client certificate CN=${cn}`;
  const details = `${what} needs an admin certificate: ${who} is not in the node's tls.adminNames; use a certificate whose CN is one of them`;
  return Object.assign(new Error(`PERMISSION_DENIED: ${details}`), { code: grpc.status.PERMISSION_DENIED, details, metadata: new grpc.Metadata() });
}

/** The node's admin check with the installed policy; see checkAdmin. */
export function adminOnly(call: AuthenticatedCall, what?: string): grpc.ServiceError | null {
  return checkAdmin(call, installed, what);
}
