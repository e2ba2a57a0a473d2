// Who may send this participant PREPARE and DECISION, with TLS: a node of
// its own cluster, and nobody else holding a certificate of the same CA.
//
// Two checks, both needed. The caller's certificate must be a node's of this
// cluster (src/transport/tls.ts, certificateRole: the node mark
// O=verdict-node and OU=<cluster id>), so no participant's or client's
// certificate passes whatever its name. And its CN must be a current member:
// the participant learns the member ids from the cluster (RaftNode.Status at
// its configured endpoints, over TLS to servers that must themselves hold
// node certificates of its cluster, believing a list only when a majority of
// the endpoints give it), at start and again when a node certificate of its
// cluster has a name it does not know (a node added since), at most once per
// refreshMinMs, so an unknown caller cannot make it flood the cluster.
// docs/security.md states the model.
import type { Logger } from 'pino';
import { nodeRoleProblem, peerCertificate, subjectField, type AuthenticatedCall } from '../transport/tls.ts';

export interface NodeCallersOptions {
  clusterId: string;
  /** The cluster's node ids, as the cluster lists them now. */
  fetchMembers: () => Promise<string[]>;
  nowMs: () => number;
  log: Logger;
  /** A caller with an unknown name makes the participant ask the cluster again at most this often. */
  refreshMinMs?: number;
}

/** Calls `done` once: null when the caller is a node of the cluster, otherwise why it is refused. */
export type CallerCheck = (call: AuthenticatedCall, done: (refusal: string | null) => void) => void;

const MEMBERS_MAX = 1_024;

export class NodeCallers {
  private members = new Set<string>();
  /** When the last fetch started; fetches are at least refreshMinMs apart. */
  private fetchStartedAtMs = -Infinity;
  private fetching: Promise<void> | null = null;
  /** Calls refused (a participant metric). */
  refused = 0;

  constructor(private readonly o: NodeCallersOptions) {}

  /** The member ids known now (for tests and messages). */
  known(): string[] {
    return [...this.members];
  }

  /** Asks the cluster for its members; one fetch at a time, never rejects. */
  refresh(): Promise<void> {
    this.fetching ??= (async () => {
      this.fetchStartedAtMs = this.o.nowMs();
      try {
        const ids = await this.o.fetchMembers();
        this.members = new Set(ids.slice(0, MEMBERS_MAX));
        this.o.log.debug({ members: [...this.members] }, "learned the cluster's node ids");
      } catch (err) {
        this.o.log.warn(
          { err: (err as Error).message },
          "could not learn the cluster's node ids; callers not already known are refused until it answers",
        );
      } finally {
        this.fetching = null;
      }
    })();
    return this.fetching;
  }

  readonly check: CallerCheck = (call, done) => {
    const refuse = (why: string): void => {
      this.refused++;
      done(why);
    };
    const cert = peerCertificate(call);
    if (cert === null) return refuse('the caller has no verified client certificate');
    const notNode = nodeRoleProblem(cert.subject, this.o.clusterId);
    if (notNode !== null) return refuse(`the caller's ${notNode}`);
    const cn = subjectField(cert.subject, 'CN') ?? '';
    if (this.members.has(cn)) return done(null);
    const notMember = (): string =>
      `the caller's certificate CN=${cn.slice(0, 64)} names no node of cluster "${this.o.clusterId}" (its nodes: ${this.known().join(', ') || 'not known yet'})`;
    if (this.fetching === null && this.o.nowMs() - this.fetchStartedAtMs < (this.o.refreshMinMs ?? 1_000))
      return refuse(notMember());
    void this.refresh().then(() => (this.members.has(cn) ? done(null) : refuse(notMember())));
  };
}
