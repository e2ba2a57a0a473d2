// proto/saga.proto, loaded once: the wire shapes of a saga step call and of
// the Sagas service every node serves, the service definitions, and the small
// clients the leader (SagaStep) and the SDK and CLI (Sagas) call them with.
// Enums travel as their names; the interfaces are written by hand and kept narrow.

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoFile } from './proto-file.ts';
import { unaryCall } from './unary.ts';

export const SAGA_PROTO_PATH = protoFile('saga.proto');

export const sagaPackageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(SAGA_PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });

export type StepStatusName = 'STEP_STATUS_UNSPECIFIED' | 'STEP_DONE' | 'STEP_FAILED';

export interface StepCall {
  clusterId: string;
  sagaId: string;
  step: number;
  key: string;
  name: string;
  input: string;
  outputs: string[];
  attempt: number;
}

export interface StepResult {
  status: StepStatusName;
  output: string;
  reason: string;
}

export interface SagaEnd {
  clusterId: string;
  sagaId: string;
}

export interface StepDefMsg {
  service: string;
  name: string;
  input: string;
}

export interface StartSagaRequest {
  sagaId: string;
  steps: StepDefMsg[];
  pivotPlusOne: number;
}

export interface SagaStatusRequest {
  sagaId: string;
  waitMs: number;
}

export interface TimelineEntryMsg {
  atMs: number;
  index: number;
  what: string;
  step: number;
  kind: string;
  detail: string;
  operator: string;
}

export interface SagaInfo {
  sagaId: string;
  state: string;
  stepStatus: string[];
  outputs: string[];
  pivotPlusOne: number;
  stuck: boolean;
  stuckStep: number;
  stuckKind: string;
  stuckAttempts: number;
  stuckError: string;
  timeline: TimelineEntryMsg[];
  startedAtMs: number;
  steps: StepDefMsg[];
}

export interface ListSagasRequest {
  stuckOnly: boolean;
  limit: number;
}

export interface ListSagasResponse {
  sagas: SagaInfo[];
}

export interface RetrySagaRequest {
  sagaId: string;
  reason: string;
}

export interface ResolveSagaRequest {
  sagaId: string;
  step: number;
  done: boolean;
  reason: string;
}

export interface SagaStepHandlers extends grpc.UntypedServiceImplementation {
  Execute: grpc.handleUnaryCall<StepCall, StepResult>;
  Compensate: grpc.handleUnaryCall<StepCall, StepResult>;
  End: grpc.handleUnaryCall<SagaEnd, Record<string, never>>;
}

export interface SagasHandlers extends grpc.UntypedServiceImplementation {
  StartSaga: grpc.handleUnaryCall<StartSagaRequest, SagaInfo>;
  SagaStatus: grpc.handleUnaryCall<SagaStatusRequest, SagaInfo>;
  ListSagas: grpc.handleUnaryCall<ListSagasRequest, ListSagasResponse>;
  RetrySaga: grpc.handleUnaryCall<RetrySagaRequest, SagaInfo>;
  ResolveSaga: grpc.handleUnaryCall<ResolveSagaRequest, SagaInfo>;
}

function loadService(name: string, methods: readonly string[]): protoLoader.ServiceDefinition {
  const def = sagaPackageDefinition[name];
  if (def === undefined || 'format' in def) throw new Error(`${name} is not a service in ${SAGA_PROTO_PATH}`);
  const svc = def as protoLoader.ServiceDefinition;
  for (const m of methods) if (svc[m] === undefined) throw new Error(`${name}.${m} is not defined in ${SAGA_PROTO_PATH}`);
  return svc;
}

export const sagaStepService = loadService('verdict.saga.SagaStep', ['Execute', 'Compensate', 'End']) as unknown as grpc.ServiceDefinition<SagaStepHandlers>;
export const sagasService = loadService('verdict.saga.Sagas', ['StartSaga', 'SagaStatus', 'ListSagas', 'RetrySaga', 'ResolveSaga']) as unknown as grpc.ServiceDefinition<SagasHandlers>;

/** The leader's client for one step service endpoint: one channel, reused. */
export class SagaStepClient {
  private readonly client: grpc.Client;

  constructor(
    readonly endpoint: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    this.client = new grpc.Client(endpoint, credentials, { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 2_000 });
  }

  call(kind: 'action' | 'compensate', req: StepCall, deadlineMs: number): Promise<StepResult> {
    const m = sagaStepService[kind === 'action' ? 'Execute' : 'Compensate'] as grpc.MethodDefinition<StepCall, StepResult>;
    return unaryCall(this.client, m, req, deadlineMs);
  }

  end(req: SagaEnd, deadlineMs: number): Promise<unknown> {
    return unaryCall(this.client, sagaStepService.End as grpc.MethodDefinition<SagaEnd, unknown>, req, deadlineMs);
  }

  close(): void {
    this.client.close();
  }
}

/** A client of one node's Sagas service (the SDK and CLI follow the leader around it). */
export class SagasClient {
  private readonly client: grpc.Client;

  constructor(
    readonly endpoint: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    this.client = new grpc.Client(endpoint, credentials);
  }

  call<Req, Res>(method: keyof SagasHandlers & string, req: Req, deadlineMs: number, metadata?: grpc.Metadata): Promise<Res> {
    return unaryCall(this.client, sagasService[method] as unknown as grpc.MethodDefinition<Req, Res>, req, deadlineMs, metadata);
  }

  close(): void {
    this.client.close();
  }
}
