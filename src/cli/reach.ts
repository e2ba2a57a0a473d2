// How long a client command waits for the cluster (`--timeout-ms`, the one
// timeout every client command takes: a first answer within it, default
// 2 s, and the whole request, default the SDK's 10 s), and the check that an unreachable cluster is
// reported within it, naming every endpoint tried and why each failed; and
// the one way the CLI asks a node for its status: RaftNode.Status over
// node:http2 (src/transport/h2-unary.ts), without loading grpc-js.
import { Code, unaryH2, type CallError } from '../transport/h2-unary.ts';
import type { NodeStatus } from '../transport/proto.ts';
import {
  decodeClusterGroups,
  decodeNodeStatus,
  StatusWireError,
  type GroupStatusRow,
} from '../transport/status-wire.ts';
import { explainConnectError } from '../transport/tls.ts';
import { CommandError, UsageError } from './args.ts';
import { clientTls, clientUsesTls } from './client-tls.ts';

export const DEFAULT_TIMEOUT_MS = 2_000;
const TIMEOUT_MS_MAX = 600_000;

/** `--timeout-ms N`: whole milliseconds, 1 to 600000; undefined when not given. */
export function parseTimeoutMs(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!(ms >= 1 && ms <= TIMEOUT_MS_MAX))
    throw new UsageError(
      `--timeout-ms must be a whole number of milliseconds from 1 to ${TIMEOUT_MS_MAX}, not "${raw}"`,
    );
  return ms;
}

let givenTimeoutMs: number | undefined;

/** Called once by main.ts for client commands (tests call it too); undefined: the defaults. */
export function useTimeout(ms: number | undefined): void {
  givenTimeoutMs = ms;
}

/** How long a client command waits for a first answer from the cluster: --timeout-ms, or 2 s. */
export function clientTimeoutMs(): number {
  return givenTimeoutMs ?? DEFAULT_TIMEOUT_MS;
}

/**
 * --timeout-ms as given, for the whole request (the SDK's call timeout, a wait for leadership or a new member);
 * undefined: the command's default.
 */
export function commandTimeoutMs(): number | undefined {
  return givenTimeoutMs;
}

const STATUS_PATH = '/verdict.raft.RaftNode/Status';
/** StatusRequest has no fields: its encoding is empty. */
const STATUS_REQUEST = new Uint8Array(0);

/** RaftNode.Status of the node at `address`, with the client TLS; rejects with a CallError. */
export async function nodeStatus(address: string, timeoutMs = clientTimeoutMs()): Promise<NodeStatus> {
  const bytes = await unaryH2(address, STATUS_PATH, STATUS_REQUEST, clientTls(), timeoutMs);
  try {
    return decodeNodeStatus(bytes);
  } catch (err) {
    if (err instanceof StatusWireError)
      throw Object.assign(err, { code: Code.INTERNAL, details: `the answer is not a node status: ${err.message}` });
    throw err;
  }
}

const CLUSTER_STATUS_PATH = '/verdict.coordinator.Coordinator/ClusterStatus';

/**
 * The decision groups the node at `address` names in Coordinator.ClusterStatus (each group's leader, term and indexes);
 * rejects with a CallError.
 */
export async function clusterGroupsAt(
  address: string,
  timeoutMs = clientTimeoutMs(),
): Promise<{ groupCount: number; groups: GroupStatusRow[] }> {
  const bytes = await unaryH2(address, CLUSTER_STATUS_PATH, STATUS_REQUEST, clientTls(), timeoutMs);
  try {
    return decodeClusterGroups(bytes);
  } catch (err) {
    if (err instanceof StatusWireError)
      throw Object.assign(err, { code: Code.INTERNAL, details: `the answer is not a cluster status: ${err.message}` });
    throw err;
  }
}

/** Why one endpoint did not answer, in a person's words; `err` is a CallError or a grpc-js ServiceError. */
export function unreachableReason(err: Pick<CallError, 'code' | 'details' | 'message'>, timeoutMs: number): string {
  if (err.code === Code.DEADLINE_EXCEEDED) return `no answer within ${timeoutMs} ms`;
  const text = err.details ?? err.message;
  if (/ECONNREFUSED/.test(text)) return 'connection refused';
  return err.code === Code.UNAVAILABLE ? explainConnectError(text, clientUsesTls()) : text;
}

/** The one-line refusal when no endpoint answered: every endpoint, with its reason. */
export function unreachableMessage(failures: ReadonlyMap<string, string>, timeoutMs: number): string {
  const list = [...failures].map(([addr, why]) => `${addr} (${why})`).join(', ');
  return `cannot reach the cluster: tried ${list}, waiting up to ${timeoutMs} ms (--timeout-ms). Is the cluster running (npm start)? Give its addresses with --endpoints or $VERDICT_ENDPOINTS`;
}

/**
 * Resolves as soon as one endpoint answers a Status call; rejects within
 * the timeout (plus a little) when none does, naming every endpoint. A
 * refused connection fails at once, so a cluster that is down is reported
 * in milliseconds, not after the SDK's retry deadline.
 */
export async function requireReachable(addrs: readonly string[], timeoutMs = clientTimeoutMs()): Promise<void> {
  const failures = new Map<string, string>();
  await new Promise<void>((resolve, reject) => {
    let pending = addrs.length;
    for (const addr of addrs) {
      nodeStatus(addr, timeoutMs).then(
        () => resolve(),
        (err: CallError) => {
          // Any answer but "could not connect" or silence proves a server is there.
          if (err.code !== Code.UNAVAILABLE && err.code !== Code.DEADLINE_EXCEEDED) return resolve();
          failures.set(addr, unreachableReason(err, timeoutMs));
          // In the order given, not the order they failed in.
          if (--pending === 0)
            reject(
              new CommandError(
                unreachableMessage(new Map(addrs.map((a) => [a, failures.get(a) ?? 'no answer'])), timeoutMs),
              ),
            );
        },
      );
    }
  });
}
