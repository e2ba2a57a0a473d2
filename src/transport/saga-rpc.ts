// proto/saga.proto, loaded once: the wire shapes of a saga step call and of
// the Sagas service every node serves, the service definitions, and the small
// clients the leader (SagaStep) and the SDK and CLI (Sagas) call them with.
// Enums travel as their names; the wire types are generated from the proto
// under SAGA_LOAD_OPTIONS (scripts/gen-proto.mjs).

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { StepRequest__Output as GenStepRequest } from './gen/saga/verdict/saga/StepRequest.ts';
import type { StepResult__Output as GenStepResult } from './gen/saga/verdict/saga/StepResult.ts';
import type { SagaEndRequest__Output as GenSagaEndRequest } from './gen/saga/verdict/saga/SagaEndRequest.ts';
import type { SagaEndsRequest__Output as GenSagaEndsRequest } from './gen/saga/verdict/saga/SagaEndsRequest.ts';
import type { SagaEndsAck__Output as GenSagaEndsAck } from './gen/saga/verdict/saga/SagaEndsAck.ts';
import type { SagaStatesRequest__Output as GenSagaStatesRequest } from './gen/saga/verdict/saga/SagaStatesRequest.ts';
import type { SagaStatesResponse__Output as GenSagaStatesResponse } from './gen/saga/verdict/saga/SagaStatesResponse.ts';
import type { SagaState__Output as GenSagaState } from './gen/saga/verdict/saga/SagaState.ts';
import type { StepDef__Output as GenStepDef } from './gen/saga/verdict/saga/StepDef.ts';
import type { StartSagaRequest__Output as GenStartSagaRequest } from './gen/saga/verdict/saga/StartSagaRequest.ts';
import type { SagaStatusRequest__Output as GenSagaStatusRequest } from './gen/saga/verdict/saga/SagaStatusRequest.ts';
import type { TimelineEntry__Output as GenTimelineEntry } from './gen/saga/verdict/saga/TimelineEntry.ts';
import type { SagaInfo__Output as GenSagaInfo } from './gen/saga/verdict/saga/SagaInfo.ts';
import type { ListSagasRequest__Output as GenListSagasRequest } from './gen/saga/verdict/saga/ListSagasRequest.ts';
import type { ListSagasResponse__Output as GenListSagasResponse } from './gen/saga/verdict/saga/ListSagasResponse.ts';
import type { RetrySagaRequest__Output as GenRetrySagaRequest } from './gen/saga/verdict/saga/RetrySagaRequest.ts';
import type { ResolveSagaRequest__Output as GenResolveSagaRequest } from './gen/saga/verdict/saga/ResolveSagaRequest.ts';
import type { StepStatus__Output } from './gen/saga/verdict/saga/StepStatus.ts';
import type { SagaStepDefinition, SagaStepHandlers as GenSagaStepHandlers } from './gen/saga/verdict/saga/SagaStep.ts';
import type { SagasDefinition, SagasHandlers as GenSagasHandlers } from './gen/saga/verdict/saga/Sagas.ts';
import type { Wire, WireHandlers } from './wire.ts';
import { protoFile, protoService } from './proto-file.ts';
import { unaryCall } from './unary.ts';

export const SAGA_PROTO_PATH = protoFile('saga.proto');

/** Numbers as JS numbers, enums as their names, every field present. */
export const SAGA_LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export const sagaPackageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(
  SAGA_PROTO_PATH,
  SAGA_LOAD_OPTIONS,
);

export type StepStatusName = StepStatus__Output;
export type StepRequest = Wire<GenStepRequest>;
export type StepResult = Wire<GenStepResult>;
export type SagaEndRequest = Wire<GenSagaEndRequest>;
export type SagaEndsRequest = Wire<GenSagaEndsRequest>;
export type SagaEndsAck = Wire<GenSagaEndsAck>;
export type SagaStatesRequest = Wire<GenSagaStatesRequest>;
export type SagaStatesResponse = Wire<GenSagaStatesResponse>;
export type SagaState = Wire<GenSagaState>;
export type StepDefMsg = Wire<GenStepDef>;
export type StartSagaRequest = Wire<GenStartSagaRequest>;
export type SagaStatusRequest = Wire<GenSagaStatusRequest>;
export type TimelineEntryMsg = Wire<GenTimelineEntry>;
export type SagaInfo = Wire<GenSagaInfo>;
export type ListSagasRequest = Wire<GenListSagasRequest>;
export type ListSagasResponse = Wire<GenListSagasResponse>;
export type RetrySagaRequest = Wire<GenRetrySagaRequest>;
export type ResolveSagaRequest = Wire<GenResolveSagaRequest>;

export type SagaStepHandlers = WireHandlers<GenSagaStepHandlers, SagaStepDefinition>;
export type SagasHandlers = WireHandlers<GenSagasHandlers, SagasDefinition>;

export const sagaStepService = protoService<SagaStepHandlers>(
  sagaPackageDefinition,
  SAGA_PROTO_PATH,
  'verdict.saga.SagaStep',
  ['Execute', 'Compensate', 'End', 'EndSagas'],
);
export const sagasService = protoService<SagasHandlers>(sagaPackageDefinition, SAGA_PROTO_PATH, 'verdict.saga.Sagas', [
  'StartSaga',
  'SagaStatus',
  'ListSagas',
  'RetrySaga',
  'ResolveSaga',
  'SagaStates',
]);

export { SAGA_IDS_PER_CALL_MAX } from '../domain/saga-id.ts';

/** The leader's client for one step service endpoint: one channel, reused. */
export class SagaStepClient {
  private readonly client: grpc.Client;

  constructor(
    readonly endpoint: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    this.client = new grpc.Client(endpoint, credentials, {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
  }

  /** `metadata`: the saga's trace context (src/transport/trace-context.ts), when it has one. */
  call(
    kind: 'action' | 'compensate',
    req: StepRequest,
    timeoutMs: number,
    metadata?: grpc.Metadata,
  ): Promise<StepResult> {
    const m = sagaStepService[kind === 'action' ? 'Execute' : 'Compensate'] as grpc.MethodDefinition<
      StepRequest,
      StepResult
    >;
    return unaryCall(this.client, m, req, timeoutMs, metadata);
  }

  end(req: SagaEndRequest, timeoutMs: number): Promise<unknown> {
    return unaryCall(
      this.client,
      sagaStepService.End as grpc.MethodDefinition<SagaEndRequest, unknown>,
      req,
      timeoutMs,
    );
  }

  /** EndSagas: many sagas' ends in one call (a step service before it answers UNIMPLEMENTED). */
  endMany(req: SagaEndsRequest, timeoutMs: number): Promise<SagaEndsAck> {
    return unaryCall(
      this.client,
      sagaStepService.EndSagas as grpc.MethodDefinition<SagaEndsRequest, SagaEndsAck>,
      req,
      timeoutMs,
    );
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

  call<Req, Res>(
    method: keyof SagasHandlers & string,
    req: Req,
    timeoutMs: number,
    metadata?: grpc.Metadata,
  ): Promise<Res> {
    return unaryCall(
      this.client,
      sagasService[method] as unknown as grpc.MethodDefinition<Req, Res>,
      req,
      timeoutMs,
      metadata,
    );
  }

  close(): void {
    this.client.close();
  }
}
