// Registration with the cluster: which failures retrying can fix and which it
// cannot. A wrong --cluster-id, a refused certificate or an invalid id is the
// same answer on every attempt, so the participant stops with one line
// instead of retrying for ever; a node that is down or has no leader yet is
// retried with capped exponential backoff and a visible log line.
//
// Classified by the gRPC status code and the machine-readable reason a node
// attaches (`verdict-reason` metadata), never by parsing the English text of
// a node's answer; only connection failures (which carry no reason, since no
// node answered) are told apart by what the TLS layer said.
import * as grpc from '@grpc/grpc-js';
import { explainConnectError } from '../transport/tls.ts';
import { REASON_KEY } from '../transport/coordinator-rpc.ts';

export { REASON_KEY };

export interface RegistrationFailure {
  /** True when retrying cannot help: the participant should stop and say why. */
  permanent: boolean;
  /** Machine-readable: the node's `verdict-reason`, or one derived from the code / TLS layer. */
  reason: string;
  /** For a person: what went wrong and, when known, the fix. */
  message: string;
}

/** Codes that are the cluster's final answer to this request. */
const PERMANENT_CODES = new Set<number>([
  grpc.status.FAILED_PRECONDITION,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.UNIMPLEMENTED,
]);

/** What to do about a reason, for the line the participant prints. */
const FIXES: Record<string, string> = {
  'wrong-cluster-id': 'give the cluster\'s id with --cluster-id (the nodes\' "clusterId")',
  'invalid-participant-id': 'pick an --id of 1-64 letters, digits, ".", "_" or "-"',
  'invalid-endpoint': 'give --advertise HOST:PORT, the address the cluster can reach this participant at',
  'tls-refused':
    "make the participant certificate with `verdict certs` (signed by the cluster's CA, serverAuth+clientAuth, subjectAltName for its address)",
  'tls-mismatch': 'give --ca/--cert/--key to a participant of a TLS cluster, and none to one of a plaintext cluster',
  'tls-untrusted-server': "give --ca the CA file that signed the nodes' certificates",
  'permission-denied': 'use a certificate the cluster accepts',
};

/** Classifies one failed registration attempt. `tls`: this participant dials with TLS. */
export function classifyRegistrationError(err: Partial<grpc.ServiceError> & Error, tls: boolean): RegistrationFailure {
  const code = err.code ?? grpc.status.UNKNOWN;
  const named = err.metadata?.get(REASON_KEY)[0];
  const details = err.details || err.message;
  if (PERMANENT_CODES.has(code)) {
    const reason =
      typeof named === 'string' && named !== ''
        ? named
        : code === grpc.status.PERMISSION_DENIED || code === grpc.status.UNAUTHENTICATED
          ? 'permission-denied'
          : (grpc.status[code] ?? String(code)).toLowerCase().replace(/_/g, '-');
    return { permanent: true, reason, message: withFix(`${grpc.status[code] ?? code}: ${details}`, reason) };
  }
  if (code === grpc.status.UNAVAILABLE) {
    const text = explainConnectError(details, tls);
    const reason = tlsReason(text);
    if (reason !== null) return { permanent: true, reason, message: withFix(text, reason) };
    return {
      permanent: false,
      reason: /ECONNREFUSED|connection refused/.test(details) ? 'node-down' : 'unavailable',
      message: /ECONNREFUSED/.test(details) ? 'connection refused' : text,
    };
  }
  return {
    permanent: false,
    reason: (grpc.status[code] ?? 'unknown').toLowerCase().replace(/_/g, '-'),
    message: details,
  };
}

/** TLS set-up failures: the same on every attempt until someone changes a file. */
function tlsReason(explained: string): string | null {
  if (/refused our certificate|requires a client certificate/.test(explained)) return 'tls-refused';
  if (/does not speak TLS|may require TLS/.test(explained)) return 'tls-mismatch';
  if (
    /certificate is not signed by our CA|does not name the address we dialled|server's certificate has expired/.test(
      explained,
    )
  )
    return 'tls-untrusted-server';
  return null;
}

function withFix(message: string, reason: string): string {
  const fix = FIXES[reason];
  return fix === undefined ? message : `${message}; ${fix}`;
}

/**
 * A TLS failure may be a node restarting in the middle of a handshake once;
 * the same TLS refusal this many times in a row is not.
 */
export const TLS_REFUSALS_BEFORE_GIVING_UP = 3;

/**
 * UNIMPLEMENTED is what a node of an older version answered while it was
 * still starting (it served no service until its log was recovered, which
 * can take seconds); today's nodes answer UNAVAILABLE then. A node that
 * keeps answering it this many times in a row, with the backoff between
 * attempts (about a minute in all by default), is not a Verdict node this
 * participant can register with.
 */
export const UNIMPLEMENTED_BEFORE_GIVING_UP = 10;

/**
 * Whether a permanent-looking failure is retried anyway: a TLS refusal or an UNIMPLEMENTED, up to their bounds in a
 * row.
 */
export function retryAnyway(reason: string, inARow: number): boolean {
  if (reason.startsWith('tls-')) return inARow < TLS_REFUSALS_BEFORE_GIVING_UP;
  if (reason === 'unimplemented') return inARow < UNIMPLEMENTED_BEFORE_GIVING_UP;
  return false;
}

/** Capped exponential backoff between registration attempts: attempt 1 waits initialMs, then doubles up to maxMs. */
export function registrationBackoffMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 20));
}
