// A participant built from the oldest supported protocol, as someone would
// write it from proto/ alone: it serves Prepare and Decide and nothing else
// (no Exchange, no Status: gRPC answers UNIMPLEMENTED to both), registers
// without `serves`, and, prepared and in doubt, asks Coordinator.GetOutcome
// with its participant id until it hears COMMITTED or ABORTED (R4). No
// Verdict code is used: the two protos are loaded with proto-loader, the
// leader is found by the `verdict-leader-address` metadata of a follower's
// refusal. Its state lives in memory (the tests that use it never kill it).
//
// `slowNo`: a PREPARE is held that long, then answered NO (a lock wait that
// timed out), so the participant is never prepared: what a recovery that
// waits for its Status answer would wait on for ever.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { join } from 'node:path';
import { ROOT } from './harness.ts';

type State = 'prepared' | 'committed' | 'aborted';

type Unary = (
  req: unknown,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res?: Record<string, unknown>) => void,
) => void;

export interface OldParticipant {
  id: string;
  address: string;
  /** Per transaction: what it holds. */
  state: Map<string, State>;
  /** PREPAREs received, by transaction id. */
  prepares: Set<string>;
  /** Hold every later PREPARE this long, then vote NO; 0: vote YES at once. */
  slowNoMs: number;
  /** Transactions it holds prepared. */
  inDoubt(): string[];
  stop(): void;
}

const LOAD = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

function service(
  file: string,
  pkg: string,
  name: string,
): grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition } {
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(join(ROOT, 'proto', file), LOAD)) as Record<
    string,
    Record<string, Record<string, unknown>>
  >;
  return loaded.verdict[pkg][name] as grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition };
}

/**
 * Starts it on a free loopback port and registers it with the cluster at `nodes` (retrying until a leader takes it).
 */
/**
 * `serves`: what it says it serves at registration (absent: the field is not
 * sent, as the oldest participant did); a participant may claim Status and
 * still lack it, as one written from the protos by hand may.
 * `askAfterMs`: how long a prepared transaction waits for its DECISION before
 * the participant asks the cluster (1 s).
 * `acksDecisions: false`: every DECISION is answered UNAVAILABLE (never acknowledged).
 * `prepared`: transactions it holds prepared from the start (as read back from a journal).
 */
export async function startOldParticipant(
  clusterId: string,
  id: string,
  nodes: readonly string[],
  o: { serves?: string[]; askAfterMs?: number; acksDecisions?: boolean; prepared?: string[] } = {},
): Promise<OldParticipant> {
  const Participant = service('participant.proto', 'participant', 'Participant');
  const Coordinator = service('coordinator.proto', 'coordinator', 'Coordinator');
  const server = new grpc.Server();
  const clients = new Map<string, grpc.Client>();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const p: OldParticipant = {
    id,
    address: '',
    state: new Map(),
    prepares: new Set(),
    slowNoMs: 0,
    inDoubt: () => [...p.state].filter(([, s]) => s === 'prepared').map(([t]) => t),
    stop: () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      for (const c of clients.values()) c.close();
      server.forceShutdown();
    },
  };
  for (const t of o.prepared ?? []) p.state.set(t, 'prepared');
  const later = (ms: number, fn: () => void): void => {
    const t = setTimeout(() => {
      timers.delete(t);
      if (!stopped) fn();
    }, ms);
    timers.add(t);
  };
  const refuse = (details: string): Partial<grpc.StatusObject> => ({ code: grpc.status.FAILED_PRECONDITION, details });

  server.addService(Participant.service, {
    Prepare: (call: grpc.ServerUnaryCall<Record<string, string>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const { cluster_id, txn_id, participant_id } = call.request;
      if (cluster_id !== clusterId || participant_id !== id) return cb(refuse('not this participant'));
      p.prepares.add(txn_id);
      const vote = (v: 'VOTE_YES' | 'VOTE_NO', reason = ''): void =>
        cb(null, { txn_id, participant_id: id, vote: v, reason });
      const now = p.state.get(txn_id);
      if (now === 'aborted') return vote('VOTE_NO', 'aborted here');
      if (now !== undefined) return vote('VOTE_YES');
      if (p.slowNoMs > 0) {
        // Never prepared: remember the abort, so a later PREPARE of it gets NO too.
        return later(p.slowNoMs, () => {
          p.state.set(txn_id, 'aborted');
          vote('VOTE_NO', 'lock wait timed out');
        });
      }
      p.state.set(txn_id, 'prepared');
      vote('VOTE_YES');
      // In doubt after a while without a DECISION: ask the cluster (R4).
      later(o.askAfterMs ?? 1_000, () => askUntilDecided(txn_id, 0));
    },
    Decide: (call: grpc.ServerUnaryCall<Record<string, string>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const { cluster_id, txn_id, participant_id, decision } = call.request;
      if (cluster_id !== clusterId || participant_id !== id) return cb(refuse('not this participant'));
      if (o.acksDecisions === false)
        return cb({ code: grpc.status.UNAVAILABLE, details: 'this participant never acknowledges' });
      const now = p.state.get(txn_id);
      const to: State = decision === 'DECISION_COMMIT' ? 'committed' : 'aborted';
      if (to === 'committed' && now !== 'prepared' && now !== 'committed')
        return cb(refuse(`COMMIT of ${txn_id}, never prepared here`));
      if (now !== undefined && now !== 'prepared' && now !== to) return cb(refuse(`${txn_id} is already ${now}`));
      p.state.set(txn_id, to);
      cb(null, { txn_id, participant_id: id });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, n) =>
      err ? reject(err) : resolve(n),
    ),
  );
  p.address = `127.0.0.1:${port}`;

  const client = (address: string): grpc.Client => {
    let c = clients.get(address);
    if (!c) clients.set(address, (c = new Coordinator(address, grpc.credentials.createInsecure())));
    return c;
  };
  let hint = 0;
  let leaderAddress: string | null = null;
  /** One Coordinator call to the node believed to lead; a refusal naming the leader moves there for the next call. */
  const call = (method: string, req: Record<string, unknown>): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const address = leaderAddress ?? nodes[hint % nodes.length];
      (client(address) as unknown as Record<string, Unary>)[method](
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + 3_000 },
        (err, res) => {
          if (!err && res) return resolve(res);
          const named = err?.metadata?.get('verdict-leader-address')[0];
          if (typeof named === 'string' && named !== '' && named !== address) leaderAddress = named;
          else {
            leaderAddress = null;
            hint++;
          }
          reject(err ?? new Error('no answer'));
        },
      );
    });
  const askUntilDecided = (txnId: string, tries: number): void => {
    if (p.state.get(txnId) !== 'prepared') return;
    call('GetOutcome', { txn_id: txnId, participant_id: id }).then(
      (r) => {
        if (r.outcome === 'OUTCOME_COMMITTED' && p.state.get(txnId) === 'prepared') p.state.set(txnId, 'committed');
        else if (r.outcome === 'OUTCOME_ABORTED' && p.state.get(txnId) === 'prepared') p.state.set(txnId, 'aborted');
        else later(Math.min(2_000, 200 * 2 ** tries), () => askUntilDecided(txnId, tries + 1));
      },
      () => later(Math.min(2_000, 200 * 2 ** tries), () => askUntilDecided(txnId, tries + 1)),
    );
  };

  // Registration, without `serves`: the field did not exist when this participant was written.
  for (let attempt = 0; ; attempt++) {
    try {
      await call('RegisterParticipant', {
        cluster_id: clusterId,
        participant_id: id,
        endpoint: p.address,
        resource_kind: 'memory',
        ...(o.serves ? { serves: o.serves } : {}),
      });
      return p;
    } catch (err) {
      if (attempt >= 100) {
        p.stop();
        throw new Error(`old participant ${id} could not register: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
