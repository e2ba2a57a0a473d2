// The cluster side of the participant conformance suite, over real gRPC and
// built from proto/ alone (proto-loader, no Verdict code on the wire path):
//
// - FakeCluster: nodes serving the Coordinator calls a participant makes
//   (RegisterParticipant, GetOutcome, GetOutcomes) and RaftNode.Status (the
//   member list a TLS participant checks its callers against). One node is
//   the leader; a follower answers every call UNAVAILABLE with the leader's
//   address in `verdict-leader-address`, as a real follower does. Outcomes
//   are the suite's to set: a transaction it has not decided is answered
//   IN_PROGRESS, so a participant stays prepared until the suite says.
// - Leader: the calls a leader makes to a participant (Prepare, Decide,
//   Status, the Exchange stream), each answered as a value, never a throw.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PeerCertificate } from 'node:tls';
import { ROOT } from '../process/harness.ts';

const LOAD = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };
type Ctor = grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition };

function service(file: string, pkg: string, name: string): Ctor {
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(join(ROOT, 'proto', file), LOAD)) as Record<
    string,
    Record<string, Record<string, unknown>>
  >;
  return loaded.verdict[pkg][name] as Ctor;
}

const Participant = service('participant.proto', 'participant', 'Participant');
const Coordinator = service('coordinator.proto', 'coordinator', 'Coordinator');
const RaftNode = service('raft.proto', 'raft', 'RaftNode');

export type Outcome = 'OUTCOME_COMMITTED' | 'OUTCOME_ABORTED' | 'OUTCOME_IN_PROGRESS';

export interface Registration {
  cluster_id: string;
  participant_id: string;
  endpoint: string;
  resource_kind: string;
  serves: string[];
  /** The node that took it. */
  node: string;
  atMs: number;
}

export interface Question {
  txn_id: string;
  participant_id: string;
  atMs: number;
}

/** Files of a TLS identity: the CA that signed it, its certificate and key. */
export interface TlsIdentity {
  ca: string;
  cert?: string;
  key?: string;
}

type Call = grpc.ServerUnaryCall<Record<string, unknown>, unknown>;
type Reply = grpc.sendUnaryData<unknown>;

export interface FakeClusterOptions {
  clusterId: string;
  /** Node ids; the last one leads, the others redirect to it. */
  nodeIds: string[];
  /** Serve TLS with these node identities (by node id); plaintext when absent. */
  tls?: { ca: string; nodes: Record<string, { cert: string; key: string }> };
}

export class FakeCluster {
  readonly registrations: Registration[] = [];
  readonly questions: Question[] = [];
  /** What GetOutcome answers, per transaction; IN_PROGRESS when absent. */
  readonly outcomes = new Map<string, Outcome>();
  /** Coordinator.ReportHeuristic requests the leader took (acts done by hand at a participant). */
  readonly heuristicReports: Record<string, unknown>[] = [];
  /** Calls the followers redirected. */
  redirected = 0;
  /** The leader answers the next this many RegisterParticipant calls UNAVAILABLE, as a node that is starting. */
  refuseRegistrations = 0;
  readonly nodes: { id: string; address: string; server: grpc.Server }[] = [];

  private constructor(readonly o: FakeClusterOptions) {}

  static async start(o: FakeClusterOptions): Promise<FakeCluster> {
    const c = new FakeCluster(o);
    try {
      for (const id of o.nodeIds) c.nodes.push(await c.startNode(id));
    } catch (err) {
      c.close();
      throw err;
    }
    return c;
  }

  get leader(): { id: string; address: string } {
    return this.nodes[this.nodes.length - 1];
  }

  /** Registrations of `participantId` so far. */
  registrationsOf(participantId: string): Registration[] {
    return this.registrations.filter((r) => r.participant_id === participantId);
  }

  questionsAbout(txnId: string): Question[] {
    return this.questions.filter((q) => q.txn_id === txnId);
  }

  close(): void {
    for (const n of this.nodes) n.server.forceShutdown();
  }

  private async startNode(id: string): Promise<{ id: string; address: string; server: grpc.Server }> {
    const server = new grpc.Server();
    const isLeader = (): boolean => this.leader.id === id;
    const redirect = (cb: Reply): void => {
      this.redirected++;
      const md = new grpc.Metadata();
      md.set('verdict-reason', 'NOT_LEADER');
      md.set('verdict-leader-id', this.leader.id);
      md.set('verdict-leader-address', this.leader.address);
      cb({
        code: grpc.status.UNAVAILABLE,
        details: `not the leader; the leader is ${this.leader.id} at ${this.leader.address}`,
        metadata: md,
      });
    };
    const answer = (txnId: string, participantId: string): Record<string, unknown> => {
      this.questions.push({ txn_id: txnId, participant_id: participantId, atMs: Date.now() });
      const outcome = this.outcomes.get(txnId) ?? 'OUTCOME_IN_PROGRESS';
      return { txn_id: txnId, outcome, reason: '', decision_index: outcome === 'OUTCOME_IN_PROGRESS' ? 0 : 7 };
    };
    server.addService(Coordinator.service, {
      RegisterParticipant: (call: Call, cb: Reply) => {
        if (!isLeader()) return redirect(cb);
        if (this.refuseRegistrations > 0) {
          this.refuseRegistrations--;
          return cb({
            code: grpc.status.UNAVAILABLE,
            details: 'the node is starting (recovering its log); retry shortly',
          });
        }
        const r = call.request as unknown as Registration;
        if (r.cluster_id !== this.o.clusterId)
          return cb({
            code: grpc.status.FAILED_PRECONDITION,
            details: `cluster "${r.cluster_id}" is not "${this.o.clusterId}"`,
          });
        this.registrations.push({
          cluster_id: r.cluster_id,
          participant_id: r.participant_id,
          endpoint: r.endpoint,
          resource_kind: r.resource_kind,
          serves: [...r.serves],
          node: id,
          atMs: Date.now(),
        });
        cb(null, {
          participant: {
            participant_id: r.participant_id,
            endpoint: r.endpoint,
            registered_at_ms: Date.now(),
            resource_kind: r.resource_kind,
            serves: r.serves,
          },
        });
      },
      GetOutcome: (call: Call, cb: Reply) => {
        if (!isLeader()) return redirect(cb);
        cb(null, answer(String(call.request.txn_id), String(call.request.participant_id)));
      },
      GetOutcomes: (call: Call, cb: Reply) => {
        if (!isLeader()) return redirect(cb);
        const ids = call.request.txn_ids as string[];
        cb(null, {
          answers: ids.map((t) => ({ outcome: answer(t, String(call.request.participant_id)), code: 0, details: '' })),
        });
      },
      ReportHeuristic: (call: Call, cb: Reply) => {
        if (!isLeader()) return redirect(cb);
        const r = call.request;
        this.heuristicReports.push(r);
        const decided = this.outcomes.get(String(r.txn_id));
        const kind =
          decided === undefined || decided === 'OUTCOME_IN_PROGRESS'
            ? 'HEURHAZ'
            : decided !== r.outcome
              ? 'HEURMIX'
              : r.outcome === 'OUTCOME_COMMITTED'
                ? 'HEURCOM'
                : 'HEURRB';
        cb(null, {
          heuristic: {
            participant_id: r.participant_id,
            outcome: r.outcome,
            kind,
            operator: r.operator,
            reason: r.reason,
            at_ms: r.at_ms,
          },
        });
      },
      ClusterStatus: (_call: Call, cb: Reply) =>
        cb(null, { cluster_id: this.o.clusterId, leader_id: this.leader.id, leader_address: this.leader.address }),
    });
    server.addService(RaftNode.service, {
      Status: (_call: Call, cb: Reply) =>
        cb(null, {
          cluster_id: this.o.clusterId,
          node_id: id,
          role: isLeader() ? 'leader' : 'follower',
          leader_id: this.leader.id,
          peers: this.o.nodeIds.filter((p) => p !== id).map((p) => ({ node_id: p })),
        }),
    });
    let creds = grpc.ServerCredentials.createInsecure();
    const tls = this.o.tls;
    if (tls !== undefined) {
      const mine = tls.nodes[id];
      creds = grpc.ServerCredentials.createSsl(
        readFileSync(tls.ca),
        [{ cert_chain: readFileSync(mine.cert), private_key: readFileSync(mine.key) }],
        false,
      );
    }
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))),
    );
    return { id, address: `127.0.0.1:${port}`, server };
  }
}

/** A gRPC answer as a value: OK with the body, or the status. */
export interface Answer<T> {
  code: grpc.status;
  details: string;
  body: T | null;
}

export interface Vote {
  txn_id: string;
  participant_id: string;
  vote: 'VOTE_YES' | 'VOTE_NO' | 'VOTE_UNSPECIFIED';
  reason: string;
}

export type StatusValue =
  | 'TXN_STATUS_PREPARED'
  | 'TXN_STATUS_COMMITTED'
  | 'TXN_STATUS_ABORTED'
  | 'TXN_STATUS_REFUSED'
  | 'TXN_STATUS_UNSPECIFIED';

export interface ExchangeAnswer {
  id: number;
  vote?: Vote;
  ack?: { txn_id: string; participant_id: string };
  error?: { code: number; details: string };
  body: 'vote' | 'ack' | 'error';
}

export type ExchangeRequest =
  | { id: number; prepare: Record<string, unknown> }
  | { id: number; decision: Record<string, unknown> }
  | { id: number };

export const CALL_DEADLINE_MS = 10_000;

/**
 * What a leader sends a participant. `identity`: the TLS identity it calls with (a node's, or anything a test wants to
 * try).
 */
export class Leader {
  private readonly client: grpc.Client & Record<string, unknown>;
  /**
   * The subject of the certificate the participant served, under TLS (R8: a node dials a participant only if it names
   * that participant).
   */
  servedSubject: PeerCertificate['subject'] | null = null;

  constructor(
    readonly address: string,
    readonly clusterId: string,
    readonly participantId: string,
    identity?: TlsIdentity,
  ) {
    let creds = grpc.credentials.createInsecure();
    if (identity !== undefined) {
      const key = identity.key !== undefined ? readFileSync(identity.key) : null;
      const cert = identity.cert !== undefined ? readFileSync(identity.cert) : null;
      creds = grpc.credentials.createSsl(readFileSync(identity.ca), key, cert, {
        checkServerIdentity: (_host, served) => {
          this.servedSubject = served.subject;
          return undefined;
        },
      });
    }
    this.client = new Participant(address, creds, {
      'grpc.max_send_message_length': 16 * 1024 * 1024,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 500,
    }) as unknown as grpc.Client & Record<string, unknown>;
  }

  close(): void {
    this.client.close();
  }

  private unary<T>(method: string, req: Record<string, unknown>, timeoutMs = CALL_DEADLINE_MS): Promise<Answer<T>> {
    return new Promise((resolve) => {
      const fn = this.client[method] as (
        req: unknown,
        md: grpc.Metadata,
        opts: grpc.CallOptions,
        cb: (err: grpc.ServiceError | null, res?: T) => void,
      ) => void;
      fn.call(this.client, req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err) resolve({ code: err.code, details: err.details, body: null });
        else resolve({ code: grpc.status.OK, details: '', body: res ?? null });
      });
    });
  }

  prepareRequest(txnId: string, payload: Uint8Array, over: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      cluster_id: this.clusterId,
      txn_id: txnId,
      participant_id: this.participantId,
      participants: [this.participantId],
      payload: Buffer.from(payload),
      timeout_ms: 20_000,
      ...over,
    };
  }

  decideRequest(
    txnId: string,
    commit: boolean | 'DECISION_UNSPECIFIED',
    over: Record<string, unknown> = {},
  ): Record<string, unknown> {
    const decision = commit === 'DECISION_UNSPECIFIED' ? commit : commit ? 'DECISION_COMMIT' : 'DECISION_ABORT';
    return {
      cluster_id: this.clusterId,
      txn_id: txnId,
      participant_id: this.participantId,
      decision,
      reason: '',
      ...over,
    };
  }

  prepare(
    txnId: string,
    payload: Uint8Array,
    over: Record<string, unknown> = {},
    timeoutMs?: number,
  ): Promise<Answer<Vote>> {
    return this.unary('Prepare', this.prepareRequest(txnId, payload, over), timeoutMs);
  }

  decide(
    txnId: string,
    commit: boolean | 'DECISION_UNSPECIFIED',
    over: Record<string, unknown> = {},
  ): Promise<Answer<{ txn_id: string; participant_id: string }>> {
    return this.unary('Decide', this.decideRequest(txnId, commit, over));
  }

  status(
    txnId: string,
    over: Record<string, unknown> = {},
  ): Promise<Answer<{ txn_id: string; participant_id: string; status: StatusValue }>> {
    return this.unary('Status', {
      cluster_id: this.clusterId,
      txn_id: txnId,
      participant_id: this.participantId,
      ...over,
    });
  }

  /**
   * One Exchange stream: writes each batch (the next once every request of
   * the previous one is answered), half-closes, and collects the answers
   * and the stream's status. Never rejects.
   */
  exchange(
    batches: ExchangeRequest[][],
    timeoutMs = CALL_DEADLINE_MS,
  ): Promise<{ answers: ExchangeAnswer[]; batchesReceived: number; code: grpc.status; details: string }> {
    return new Promise((resolve) => {
      const fn = this.client.Exchange as (
        md: grpc.Metadata,
        opts: grpc.CallOptions,
      ) => grpc.ClientDuplexStream<unknown, { answers: ExchangeAnswer[] }>;
      const call = fn.call(this.client, new grpc.Metadata(), { deadline: Date.now() + timeoutMs });
      const answers: ExchangeAnswer[] = [];
      let batchesReceived = 0;
      let next = 0;
      let waitingFor = new Set<number>();
      const sendNext = (): void => {
        if (next >= batches.length) {
          call.end();
          return;
        }
        const batch = batches[next++];
        waitingFor = new Set(batch.map((r) => r.id));
        call.write({ requests: batch });
        if (waitingFor.size === 0) sendNext();
      };
      call.on('data', (b: { answers: ExchangeAnswer[] }) => {
        batchesReceived++;
        for (const a of b.answers) {
          answers.push(a);
          waitingFor.delete(Number(a.id));
        }
        if (waitingFor.size === 0) sendNext();
      });
      call.on('error', () => {});
      call.on('status', (st: grpc.StatusObject) =>
        resolve({ answers, batchesReceived, code: st.code, details: st.details }),
      );
      sendNext();
    });
  }

  /** Raw bytes to a method of the Participant service (what no SDK would send). */
  raw(method: string, body: Buffer, timeoutMs = CALL_DEADLINE_MS): Promise<Answer<Buffer>> {
    const identity = (b: Buffer): Buffer => b;
    return new Promise((resolve) => {
      this.client.makeUnaryRequest<Buffer, Buffer>(
        `/verdict.participant.Participant/${method}`,
        identity,
        identity,
        body,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, res) => {
          if (err) resolve({ code: err.code, details: err.details, body: null });
          else resolve({ code: grpc.status.OK, details: '', body: res ?? null });
        },
      );
    });
  }
}

export const statusName = (code: grpc.status): string => grpc.status[code] ?? String(code);
