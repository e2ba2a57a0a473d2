// A FAKE cluster for the participant's side of the protocol: a gRPC server
// implementing the two Coordinator calls a participant makes.
// RegisterParticipant always succeeds; GetOutcome answers from `outcomes`
// (per txn id; IN_PROGRESS when absent) and records every question.
import * as grpc from '@grpc/grpc-js';
import {
  coordinatorParticipantService,
  type CoordinatorParticipantHandlers,
  type OutcomeValue,
} from '../../src/participant/cluster-link.ts';
import type { OutcomeRequest } from '../../src/transport/coordinator-rpc.ts';

export interface FakeCluster {
  address: string;
  outcomes: Map<string, OutcomeValue>;
  questions: OutcomeRequest[];
  close(): void;
}

export async function fakeCluster(): Promise<FakeCluster> {
  const server = new grpc.Server();
  const fake: FakeCluster = { address: '', outcomes: new Map(), questions: [], close: () => server.forceShutdown() };
  const impl: CoordinatorParticipantHandlers = {
    RegisterParticipant: (call, cb) =>
      cb(null, {
        participant: {
          participantId: call.request.participantId,
          endpoint: call.request.endpoint,
          registeredAtMs: Date.now(),
          lastSeenAtMs: 0,
          inDoubt: 0,
          connection: '',
          resourceKind: '',
          serves: [],
        },
      }),
    GetOutcome: (call, cb) => {
      fake.questions.push(call.request);
      const outcome = fake.outcomes.get(call.request.txnId) ?? 'OUTCOME_IN_PROGRESS';
      cb(null, {
        txnId: call.request.txnId,
        outcome,
        reason: '',
        decisionIndex: outcome === 'OUTCOME_COMMITTED' ? 7 : 0,
      });
    },
  };
  server.addService(coordinatorParticipantService, impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  fake.address = `127.0.0.1:${port}`;
  return fake;
}
