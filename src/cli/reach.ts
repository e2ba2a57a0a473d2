// How long a client command waits for the cluster to answer at all
// (`--timeout`, default 2 s), and the check that an unreachable cluster is
// reported within it, naming every endpoint tried and why each failed.
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import { explainConnectError } from '../transport/tls.ts';
import { CommandError, UsageError } from './args.ts';
import { clientCredentials, clientUsesTls } from './client-tls.ts';

export const DEFAULT_TIMEOUT_MS = 2_000;
const TIMEOUT_MS_MAX = 600_000;

/** `--timeout` as `2s`, `500ms` or plain milliseconds. */
export function parseTimeout(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_TIMEOUT_MS;
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(raw.trim());
  const ms = m === null ? NaN : Number(m[1]) * (m[2] === 's' ? 1_000 : 1);
  if (!Number.isFinite(ms) || ms < 1 || ms > TIMEOUT_MS_MAX) throw new UsageError(`--timeout must be a duration such as 2s or 500ms (at most 600s), not "${raw}"`);
  return Math.round(ms);
}

let timeoutMs = DEFAULT_TIMEOUT_MS;

/** Called once by main.ts for client commands. */
export function useTimeout(ms: number): void {
  timeoutMs = ms;
}

/** How long a client command waits for a first answer from the cluster. */
export function clientTimeoutMs(): number {
  return timeoutMs;
}

/** Why one endpoint did not answer, in a person's words. */
export function unreachableReason(err: ServiceError, deadlineMs: number): string {
  if (err.code === grpcStatus.DEADLINE_EXCEEDED) return `no answer within ${deadlineMs} ms`;
  const text = err.details ?? err.message;
  if (/ECONNREFUSED/.test(text)) return 'connection refused';
  return err.code === grpcStatus.UNAVAILABLE ? explainConnectError(text, clientUsesTls()) : text;
}

/** The one-line refusal when no endpoint answered: every endpoint, with its reason. */
export function unreachableMessage(failures: ReadonlyMap<string, string>, deadlineMs: number): string {
  const list = [...failures].map(([addr, why]) => `${addr} (${why})`).join(', ');
  return `cannot reach the cluster: tried ${list}, waiting up to ${deadlineMs} ms (--timeout). Is the cluster running (npm start)? Give its addresses with --endpoints or $VERDICT_ENDPOINTS`;
}

/**
 * Resolves as soon as one endpoint answers a Status call; rejects within
 * the timeout (plus a little) when none does, naming every endpoint. A
 * refused connection fails at once, so a cluster that is down is reported
 * in milliseconds, not after the SDK's retry deadline.
 */
export async function requireReachable(addrs: readonly string[], deadlineMs = timeoutMs): Promise<void> {
  const failures = new Map<string, string>();
  await new Promise<void>((resolve, reject) => {
    let pending = addrs.length;
    for (const addr of addrs) {
      const c = new RaftNodeClient(addr, clientCredentials());
      c.status(deadlineMs)
        .then(
          () => resolve(),
          (err: ServiceError) => {
            // Any answer but "could not connect" or silence proves a server is there.
            if (err.code !== grpcStatus.UNAVAILABLE && err.code !== grpcStatus.DEADLINE_EXCEEDED) return resolve();
            failures.set(addr, unreachableReason(err, deadlineMs));
            // In the order given, not the order they failed in.
            if (--pending === 0) reject(new CommandError(unreachableMessage(new Map(addrs.map((a) => [a, failures.get(a) ?? 'no answer'])), deadlineMs)));
          },
        )
        .finally(() => c.close());
    }
  });
}
