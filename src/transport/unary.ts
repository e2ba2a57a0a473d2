// One promise-returning unary call, shared by the small typed clients.
import { Metadata } from '@grpc/grpc-js';
import type * as grpc from '@grpc/grpc-js';

/** Rejects with the grpc.ServiceError (code + details) the caller can act on. */
export function unaryCall<Req, Res>(
  client: grpc.Client,
  method: grpc.MethodDefinition<Req, Res>,
  req: Req,
  timeoutMs: number,
  metadata?: grpc.Metadata,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest<Req, Res>(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      req,
      metadata ?? new Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, res) =>
        err !== null ? reject(err) : res === undefined ? reject(new Error('empty response')) : resolve(res),
    );
  });
}
