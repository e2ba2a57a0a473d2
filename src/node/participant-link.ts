// The leader's calls to participants: PREPARE and DECISION over gRPC, one
// channel per participant endpoint, reused. This is where the engine's pure
// EngineIO meets the network.

import type { DecisionRequest, PrepareRequest, VoteValue } from '../commit/engine.ts';
import type { ParticipantRecord } from '../commit/state.ts';
import type * as grpc from '@grpc/grpc-js';
import { ParticipantClient } from '../transport/participant-rpc.ts';

/** Channels kept open; beyond this the least recently used is closed. */
const CHANNELS_MAX = 256;

export class ParticipantLink {
  private readonly clients = new Map<string, ParticipantClient>();

  /** `credentials`: TLS for every participant when the cluster uses TLS (participants then must serve it); plaintext otherwise. */
  constructor(
    private readonly clusterId: string,
    private readonly credentials?: grpc.ChannelCredentials,
  ) {}

  private client(endpoint: string): ParticipantClient {
    let c = this.clients.get(endpoint);
    if (c) {
      // Move to the back: Map order is our LRU order.
      this.clients.delete(endpoint);
      this.clients.set(endpoint, c);
      return c;
    }
    c = new ParticipantClient(endpoint, this.credentials);
    this.clients.set(endpoint, c);
    if (this.clients.size > CHANNELS_MAX) {
      const [oldest, oc] = this.clients.entries().next().value as [string, ParticipantClient];
      this.clients.delete(oldest);
      oc.close();
    }
    return c;
  }

  prepare(to: ParticipantRecord, req: PrepareRequest, deadlineMs: number, cb: (err: Error | null, vote?: { vote: VoteValue; reason: string }) => void): void {
    this.client(to.endpoint)
      .prepare({ clusterId: this.clusterId, txnId: req.txnId, participantId: req.participantId, participants: req.participants, payload: req.payload, timeoutMs: req.timeoutMs }, deadlineMs)
      .then(
        (v) => {
          if (v.vote === 'VOTE_YES') cb(null, { vote: 'yes', reason: v.reason });
          else if (v.vote === 'VOTE_NO') cb(null, { vote: 'no', reason: v.reason });
          else cb(new Error(`participant ${to.id} answered an invalid vote ${JSON.stringify(v.vote)}`));
        },
        (err: Error) => cb(err),
      );
  }

  decide(to: ParticipantRecord, req: DecisionRequest, deadlineMs: number, cb: (err: Error | null) => void): void {
    this.client(to.endpoint)
      .decide({ clusterId: this.clusterId, txnId: req.txnId, participantId: req.participantId, decision: req.outcome === 'commit' ? 'DECISION_COMMIT' : 'DECISION_ABORT', reason: req.reason }, deadlineMs)
      .then(
        () => cb(null),
        (err: Error) => cb(err),
      );
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
