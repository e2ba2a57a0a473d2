// Starting is not refusing: a node's services exist from the moment it binds,
// answering UNAVAILABLE (retry) until the node has recovered its log, never
// UNIMPLEMENTED (give up); and a participant whose registration meets
// UNIMPLEMENTED (a node of an older version still starting) retries instead
// of stopping for good, up to a bound.
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  coordinatorParticipantService,
  type CoordinatorParticipantHandlers,
} from '../../src/participant/cluster-link.ts';
import { retryAnyway, UNIMPLEMENTED_BEFORE_GIVING_UP } from '../../src/participant/registration.ts';
import { startParticipant } from '../../src/participant/runtime.ts';
import { raftNodeService } from '../../src/transport/proto.ts';
import { gatedService, STARTING_DETAILS } from '../../src/transport/starting-gate.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function bind(server: grpc.Server): Promise<string> {
  return new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(`127.0.0.1:${port}`),
    ),
  );
}

type Unary = (req: object, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;

describe('a node that is starting', () => {
  it('answers UNAVAILABLE until its gate opens, then serves; a method the service lacks is UNIMPLEMENTED', async () => {
    const server = new grpc.Server();
    try {
      const gate = gatedService(
        server,
        raftNodeService as grpc.ServiceDefinition<grpc.UntypedServiceImplementation>,
        1024 * 1024,
      );
      const address = await bind(server);
      const Client = grpc.makeGenericClientConstructor(raftNodeService as grpc.ServiceDefinition, 'RaftNode');
      const client = new Client(address, grpc.credentials.createInsecure()) as unknown as Record<string, Unary> &
        grpc.Client;
      const call = (method: string): Promise<{ err: grpc.ServiceError | null; res?: unknown }> =>
        new Promise((resolve) => client[method]!.call(client, {}, (err, res) => resolve({ err, res })));
      try {
        const before = await call('Status');
        expect(before.err?.code).toBe(grpc.status.UNAVAILABLE);
        expect(before.err?.details).toBe(STARTING_DETAILS);
        expect(gate.isOpen).toBe(false);

        gate.open({ Status: (_call: unknown, cb: (err: null, res: object) => void) => cb(null, { nodeId: 'n1' }) });
        const after = await call('Status');
        expect(after.err).toBeNull();
        expect((after.res as { nodeId: string }).nodeId).toBe('n1');
        const missing = await call('Put');
        expect(missing.err?.code).toBe(grpc.status.UNIMPLEMENTED);
      } finally {
        client.close();
      }
    } finally {
      server.forceShutdown();
    }
  });
});

describe("a participant's registration", () => {
  it('retries UNIMPLEMENTED up to a bound, TLS refusals up to theirs, and nothing else that is permanent', () => {
    expect(retryAnyway('unimplemented', 1)).toBe(true);
    expect(retryAnyway('unimplemented', UNIMPLEMENTED_BEFORE_GIVING_UP - 1)).toBe(true);
    expect(retryAnyway('unimplemented', UNIMPLEMENTED_BEFORE_GIVING_UP)).toBe(false);
    expect(retryAnyway('tls-refused', 2)).toBe(true);
    expect(retryAnyway('tls-refused', 3)).toBe(false);
    expect(retryAnyway('wrong-cluster-id', 1)).toBe(false);
  });

  it('registers with a node that answered UNIMPLEMENTED while it was starting', async () => {
    const server = new grpc.Server();
    let attempts = 0;
    const impl: CoordinatorParticipantHandlers = {
      RegisterParticipant: (call, cb) => {
        attempts += 1;
        if (attempts <= 3)
          return cb({ code: grpc.status.UNIMPLEMENTED, details: 'unknown service verdict.coordinator.Coordinator' });
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
        });
      },
      GetOutcome: (call, cb) =>
        cb(null, { txnId: call.request.txnId, outcome: 'OUTCOME_IN_PROGRESS', reason: '', decisionIndex: 0 }),
    };
    server.addService(coordinatorParticipantService, impl);
    const address = await bind(server);
    const dir = mkdtempSync(join(tmpdir(), 'verdict-starting-'));
    dirs.push(dir);
    const p = await startParticipant({
      clusterId: 'c1',
      participantId: 'shop',
      listen: '127.0.0.1:0',
      endpointsOfCluster: [address],
      dataDir: dir,
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 20,
      registerRetryMaxMs: 50,
    });
    try {
      await p.registered;
      expect(attempts).toBe(4);
    } finally {
      await p.stop();
      server.forceShutdown();
    }
  });
});
