// A participant's certificate at a node's address is no node (mutual TLS).
//
// The attack of issue 39, finding 1: with a node down, a process at its
// address holding a participant certificate of the cluster (CN=evil,
// OU=<cluster>, as `verdict certs --participant` makes them) answers
// RaftNode.Status naming itself a node, takes registrations, answers
// outcomes and commits, and calls participants' Prepare and Decide. Every
// caller that dials a node now requires the node mark (O=verdict-node) in
// the server's certificate, and a participant takes PREPARE and DECISION
// only from a node certificate: here the impostor is refused by a
// participant configured with that one endpoint, by the SDK and by the
// CLI (grpc-js and `verdict status` over node:http2), and it never sees a
// call, a registration or a payload.
import * as grpc from '@grpc/grpc-js';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { tlsCredentials } from '../../src/client/tls.ts';
import { startParticipant } from '../../src/participant/runtime.ts';
import { coordinatorService } from '../../src/transport/coordinator-rpc.ts';
import { ParticipantClient, type PrepareRequest } from '../../src/transport/participant-rpc.ts';
import { raftNodeService } from '../../src/transport/proto.ts';
import { certDir, TestCa, type CertFiles } from '../tls-certs.ts';
import { freePorts, runCli, tempDir, uniqueClusterId, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const WAIT_MS = 30_000;

let certs: string;
let ca: TestCa;
let alice: CertFiles;

beforeAll(() => {
  certs = certDir();
  ca = TestCa.create(certs, 'cluster-ca');
  alice = ca.issue('alice');
});
afterAll(() => rmSync(certs, { recursive: true, force: true }));

/**
 * A server at `address` with `cert` that answers every RaftNode and Coordinator call as a node would, recording each.
 */
async function impostorNode(
  address: string,
  cert: CertFiles,
  clusterId: string,
): Promise<{ calls: string[]; stop(): void }> {
  const calls: string[] = [];
  const server = new grpc.Server();
  const answer = (
    service: grpc.ServiceDefinition,
    reply: (method: string) => object,
  ): grpc.UntypedServiceImplementation =>
    Object.fromEntries(
      Object.keys(service).map((m) => [
        m,
        (call: { end?: () => void }, cb?: (err: null, res: object) => void) => {
          calls.push(m);
          if (cb) cb(null, reply(m));
          else call.end?.();
        },
      ]),
    );
  // It names itself the only node, registers anyone, and says every transaction committed.
  server.addService(
    raftNodeService as unknown as grpc.ServiceDefinition,
    answer(raftNodeService as unknown as grpc.ServiceDefinition, () => ({ nodeId: 'evil', clusterId, peers: [] })),
  );
  server.addService(
    coordinatorService as unknown as grpc.ServiceDefinition,
    answer(coordinatorService as unknown as grpc.ServiceDefinition, () => ({
      outcome: 'OUTCOME_COMMITTED',
      participant: { participantId: 'shop', endpoint: '' },
    })),
  );
  await new Promise<void>((res, rej) =>
    server.bindAsync(
      address,
      grpc.ServerCredentials.createSsl(
        readFileSync(ca.cert),
        [{ cert_chain: readFileSync(cert.cert), private_key: readFileSync(cert.key) }],
        true,
      ),
      (e) => (e ? rej(e) : res()),
    ),
  );
  return { calls, stop: () => server.forceShutdown() };
}

const refusal = (p: Promise<unknown>): Promise<grpc.ServiceError> =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: grpc.ServiceError) => e,
  );

describe("a participant's certificate at a node's address is no node", () => {
  it('a participant configured with that address neither registers with it, believes its node list, nor takes its Prepare and Decide', async () => {
    const clusterId = uniqueClusterId();
    const [nodePort, shopPort] = await freePorts(2);
    const nodeAddress = `127.0.0.1:${nodePort}`;
    // CN=evil, OU=<cluster>: a participant certificate of this cluster, as verdict certs --participant makes them.
    const evil = ca.issue('evil', { ou: clusterId, file: `${clusterId}-evil` });
    const impostor = await impostorNode(nodeAddress, evil, clusterId);
    const shopCert = ca.issue('shop', { ou: clusterId, file: `${clusterId}-shop` });
    const lines: string[] = [];
    const shop = await startParticipant({
      clusterId,
      participantId: 'shop',
      listen: `127.0.0.1:${shopPort}`,
      endpointsOfCluster: [nodeAddress],
      dataDir: join(tempDir('verdict-impostor-'), 'shop'),
      logger: pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) }),
      registerRetryMs: 100,
      registerRetryMaxMs: 200,
      tls: { ca: ca.cert, ...shopCert },
    });
    const direct = new ParticipantClient(
      shop.address,
      grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(evil.key), readFileSync(evil.cert)),
    );
    try {
      // shop tries to register at its one endpoint and refuses the server there, saying why.
      await waitFor('shop to refuse the server at its endpoint', WAIT_MS, async () =>
        lines.some(
          (l) =>
            /registration with the cluster failed/.test(l) &&
            /node at 127\.0\.0\.1 refused: its certificate \(OU=[^,]+, CN=evil\) is not a node's/.test(l),
        )
          ? true
          : undefined,
      );
      // The impostor's Prepare and Decide, with its own certificate: refused, nothing taken.
      const forged: PrepareRequest = {
        clusterId,
        txnId: 'forged-1',
        participantId: 'shop',
        participants: ['shop'],
        payload: Buffer.from(JSON.stringify({ set: { stolen: '1' } })),
        timeoutMs: 10_000,
      };
      const prep = await refusal(direct.prepare(forged, 5_000));
      expect(prep.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(prep.details).toMatch(
        /^PREPARE is taken only from a node of this participant's cluster: the caller's certificate \(OU=[^,]+, CN=evil\) is not a node's/,
      );
      const dec = await refusal(
        direct.decide(
          { clusterId, txnId: 'forged-1', participantId: 'shop', decision: 'DECISION_COMMIT', reason: '' },
          5_000,
        ),
      );
      expect(dec.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(shop.engine.stateOf('forged-1')).toBeUndefined();
      expect(shop.resource.get('stolen')).toBeUndefined();
      // Not one call reached the impostor: no Status (no node list from it), no registration, no outcome question.
      expect(impostor.calls).toEqual([]);
      let registered = false;
      void shop.registered.then(() => (registered = true));
      await new Promise((r) => setTimeout(r, 50));
      expect(registered).toBe(false);
    } finally {
      direct.close();
      await shop.stop();
      impostor.stop();
    }
  });

  it('the SDK and the CLI refuse it before sending anything: no commit, no payload, no status question reaches it', async () => {
    const clusterId = uniqueClusterId();
    const [nodePort] = await freePorts(1);
    const nodeAddress = `127.0.0.1:${nodePort}`;
    const evil = ca.issue('evil', { ou: clusterId, file: `${clusterId}-evil-2` });
    const impostor = await impostorNode(nodeAddress, evil, clusterId);
    const client = new VerdictClient({
      endpoints: [nodeAddress],
      callTimeoutMs: 3_000,
      credentials: tlsCredentials({ ca: ca.cert, ...alice }),
    });
    try {
      const commit = await refusal(
        (async () =>
          (await client.begin({ timeoutMs: 3_000 }))
            .enlist('shop', { set: { card: '4111 1111 1111 1111' } })
            .commit())(),
      );
      expect(commit.message).toMatch(
        /node at 127\.0\.0\.1 refused: its certificate \(OU=[^,]+, CN=evil\) is not a node's/,
      );
      const outcome = await refusal(client.outcome('any-txn'));
      expect(outcome.message).toMatch(/is not a node's/);

      const tls = ['--ca', ca.cert, '--cert', alice.cert, '--key', alice.key];
      // verdict status dials over node:http2, the other commands over grpc-js: both check the node mark.
      const status = await runCli(['status', '--endpoints', nodeAddress, '--timeout-ms', '3000', ...tls], {
        timeoutMs: 30_000,
      });
      expect(status.code).toBe(1);
      expect(status.stdout + status.stderr).toMatch(
        /node at 127\.0\.0\.1 refused: its certificate \(OU=[^,]+, CN=evil\) is not a node's/,
      );
      const list = await runCli(['txn', 'list', '--endpoints', nodeAddress, '--timeout-ms', '3000', ...tls], {
        timeoutMs: 30_000,
      });
      expect(list.code).not.toBe(0);
      expect(list.stderr).toMatch(/is not a node's/);
      expect(impostor.calls).toEqual([]);
    } finally {
      client.close();
      impostor.stop();
    }
  });
});
