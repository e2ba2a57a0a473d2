// proto/participant.proto, loaded once: the wire shapes of PREPARE / VOTE /
// DECISION / ACK, the `verdict.participant.Participant` service definition a
// participant serves, and the client the coordinator's leader calls it with.
//
// Enums travel as their names ('VOTE_YES', 'DECISION_COMMIT') so that logs
// and code read like the protocol. The interfaces are written by hand and kept
// narrow; PARTICIPANT_LOAD_OPTIONS is what makes them true.
import { protoFile } from './proto-file.ts';
import * as grpc from '@grpc/grpc-js';
import { unaryCall } from './unary.ts';
import * as protoLoader from '@grpc/proto-loader';

export const PARTICIPANT_PROTO_PATH = protoFile('participant.proto');

/** Numbers as JS numbers, enums as their names, every field present. */
export const PARTICIPANT_LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export const participantPackageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(PARTICIPANT_PROTO_PATH, PARTICIPANT_LOAD_OPTIONS);

export type VoteValue = 'VOTE_UNSPECIFIED' | 'VOTE_YES' | 'VOTE_NO';
export type DecisionValue = 'DECISION_UNSPECIFIED' | 'DECISION_COMMIT' | 'DECISION_ABORT';

/** PREPARE: do everything but commit, make the prepared state durable, vote. */
export interface Prepare {
  clusterId: string;
  txnId: string;
  participantId: string;
  /** Every participant of the transaction, for the participant's records. */
  participants: string[];
  /** The application's work for this participant, opaque to the coordinator. */
  payload: Uint8Array;
  /** The transaction's remaining deadline budget. */
  timeoutMs: number;
}

/** VOTE: YES means prepared and durable; from then on the participant waits for the DECISION. */
export interface Vote {
  txnId: string;
  participantId: string;
  vote: VoteValue;
  /** Why NO, or empty. */
  reason: string;
}

/** DECISION: the outcome read from the coordinator's applied log. */
export interface Decision {
  clusterId: string;
  txnId: string;
  participantId: string;
  decision: DecisionValue;
  reason: string;
}

/** ACK: the decision is applied and durable at the participant. */
export interface Ack {
  txnId: string;
  participantId: string;
}

/** One PREPARE or DECISION on the Exchange stream; exactly one of prepare / decision is set. */
export interface ExchangeRequest {
  id: number;
  prepare?: Prepare | null;
  decision?: Decision | null;
}

/** The gRPC status a unary call would have failed with. */
export interface ExchangeError {
  code: number;
  details: string;
}

/** The answer to one ExchangeRequest, by id; exactly one of vote / ack / error is set. */
export interface ExchangeAnswer {
  id: number;
  vote?: Vote | null;
  ack?: Ack | null;
  error?: ExchangeError | null;
}

export interface ExchangeBatch {
  requests: ExchangeRequest[];
}

export interface AnswerBatch {
  answers: ExchangeAnswer[];
}

/**
 * What a participant implements to serve `verdict.participant.Participant`.
 * Exchange may be left out (a test double): grpc-js then answers it
 * UNIMPLEMENTED and the leader falls back to the unary calls.
 */
export interface ParticipantHandlers extends grpc.UntypedServiceImplementation {
  Prepare: grpc.handleUnaryCall<Prepare, Vote>;
  Decide: grpc.handleUnaryCall<Decision, Ack>;
}

function loadService(name: string, methods: readonly string[]): protoLoader.ServiceDefinition {
  const def = participantPackageDefinition[name];
  // Message and enum definitions carry a `format`; services are plain maps of methods.
  if (def === undefined || 'format' in def) throw new Error(`${name} is not a service in ${PARTICIPANT_PROTO_PATH}`);
  const svc = def as protoLoader.ServiceDefinition;
  for (const m of methods) {
    if (svc[m] === undefined) throw new Error(`${name}.${m} is not defined in ${PARTICIPANT_PROTO_PATH}`);
  }
  return svc;
}

// The cast narrows proto-loader's `object` message types to the shapes above.
export const participantService = loadService('verdict.participant.Participant', ['Prepare', 'Decide', 'Exchange']) as unknown as grpc.ServiceDefinition<ParticipantHandlers>;

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

  prepare(req: Prepare, deadlineMs: number): Promise<Vote> {
    return this.unary<Prepare, Vote>('Prepare', req, deadlineMs);
  }

  decide(req: Decision, deadlineMs: number): Promise<Ack> {
    return this.unary<Decision, Ack>('Decide', req, deadlineMs);
  }

  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(name: 'Prepare' | 'Decide', req: Req, deadlineMs: number): Promise<Res> {
    return unaryCall(this.client, participantService[name] as grpc.MethodDefinition<Req, Res>, req, deadlineMs);
  }
}
