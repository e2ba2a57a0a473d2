// proto/participant.proto, loaded once: the wire shapes of PREPARE / VOTE /
// DECISION / ACK, the `verdict.participant.Participant` service definition a
// participant serves, and the client the coordinator's leader calls it with.
//
// Enums travel as their names ('VOTE_YES', 'DECISION_COMMIT') so that logs
// and code read like the protocol. The wire types are generated from the
// proto under PARTICIPANT_LOAD_OPTIONS (scripts/gen-proto.mjs).
import { protoFile, protoService } from './proto-file.ts';
import * as grpc from '@grpc/grpc-js';
import { unaryCall } from './unary.ts';
import * as protoLoader from '@grpc/proto-loader';
import type { PrepareRequest__Output as GenPrepareRequest } from './gen/participant/verdict/participant/PrepareRequest.ts';
import type { Vote__Output as GenVote } from './gen/participant/verdict/participant/Vote.ts';
import type { DecideRequest__Output as GenDecideRequest } from './gen/participant/verdict/participant/DecideRequest.ts';
import type { Ack__Output as GenAck } from './gen/participant/verdict/participant/Ack.ts';
import type { ExchangeRequest__Output as GenExchangeRequest } from './gen/participant/verdict/participant/ExchangeRequest.ts';
import type { ExchangeError__Output as GenExchangeError } from './gen/participant/verdict/participant/ExchangeError.ts';
import type { ExchangeAnswer__Output as GenExchangeAnswer } from './gen/participant/verdict/participant/ExchangeAnswer.ts';
import type { ExchangeBatch__Output as GenExchangeBatch } from './gen/participant/verdict/participant/ExchangeBatch.ts';
import type { AnswerBatch__Output as GenAnswerBatch } from './gen/participant/verdict/participant/AnswerBatch.ts';
import type { StatusRequest__Output as GenStatusRequest } from './gen/participant/verdict/participant/StatusRequest.ts';
import type { StatusAnswer__Output as GenStatusAnswer } from './gen/participant/verdict/participant/StatusAnswer.ts';
import type { VoteValue__Output } from './gen/participant/verdict/participant/VoteValue.ts';
import type { DecisionValue__Output } from './gen/participant/verdict/participant/DecisionValue.ts';
import type {
  ParticipantDefinition,
  ParticipantHandlers as GenParticipantHandlers,
} from './gen/participant/verdict/participant/Participant.ts';
import type { Wire, WireHandlers } from './wire.ts';

export const PARTICIPANT_PROTO_PATH = protoFile('participant.proto');

/** Numbers as JS numbers, enums as their names, every field present. */
export const PARTICIPANT_LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export const participantPackageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(
  PARTICIPANT_PROTO_PATH,
  PARTICIPANT_LOAD_OPTIONS,
);

export type VoteValue = VoteValue__Output;
export type DecisionValue = DecisionValue__Output;
export type PrepareRequest = Wire<GenPrepareRequest>;
export type VoteMessage = Wire<GenVote>;
export type DecideRequest = Wire<GenDecideRequest>;
export type Ack = Wire<GenAck>;
export type ExchangeRequest = Wire<GenExchangeRequest>;
export type ExchangeError = Wire<GenExchangeError>;
export type ExchangeAnswer = Wire<GenExchangeAnswer>;
export type ExchangeBatch = Wire<GenExchangeBatch>;
export type AnswerBatch = Wire<GenAnswerBatch>;
export type StatusRequest = Wire<GenStatusRequest>;
export type StatusAnswer = Wire<GenStatusAnswer>;

/**
 * What a participant implements to serve `verdict.participant.Participant`.
 * Exchange may be left out (a test double): grpc-js then answers it
 * UNIMPLEMENTED and the leader falls back to the unary calls. Status may be
 * left out by a participant never enlisted in a parallel commit.
 */
export type ParticipantHandlers = WireHandlers<GenParticipantHandlers, ParticipantDefinition, 'Exchange' | 'Status'>;

export const participantService = protoService<ParticipantHandlers>(
  participantPackageDefinition,
  PARTICIPANT_PROTO_PATH,
  'verdict.participant.Participant',
  ['Prepare', 'Decide', 'Exchange', 'Status'],
);

/** Large enough for any payload a participant accepts, small enough to bound memory per call. */
export const PARTICIPANT_MESSAGE_BYTES_MAX = 4 * 1024 * 1024;

/**
 * The leader's client for one participant endpoint. It holds one channel,
 * reused by every call; create it once per endpoint and close() it when the
 * participant leaves. Calls reject with a grpc.ServiceError (code + details).
 */
export class ParticipantClient {
  readonly endpoint: string;
  private readonly client: grpc.Client;

  constructor(endpoint: string, credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure()) {
    this.endpoint = endpoint;
    this.client = new grpc.Client(endpoint, credentials, {
      'grpc.max_receive_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
      'grpc.max_send_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
      // A participant that restarts should be reachable again quickly: the
      // leader's retries of DECISION depend on it.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
  }

  /** The channel, for the Exchange stream (src/transport/participant-exchange.ts) that shares it. */
  get channel(): grpc.Client {
    return this.client;
  }

  prepare(req: PrepareRequest, timeoutMs: number): Promise<VoteMessage> {
    return this.unary<PrepareRequest, VoteMessage>('Prepare', req, timeoutMs);
  }

  decide(req: DecideRequest, timeoutMs: number): Promise<Ack> {
    return this.unary<DecideRequest, Ack>('Decide', req, timeoutMs);
  }

  status(req: StatusRequest, timeoutMs: number): Promise<StatusAnswer> {
    return this.unary<StatusRequest, StatusAnswer>('Status', req, timeoutMs);
  }

  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(name: 'Prepare' | 'Decide' | 'Status', req: Req, timeoutMs: number): Promise<Res> {
    return unaryCall(this.client, participantService[name] as grpc.MethodDefinition<Req, Res>, req, timeoutMs);
  }
}
