// The gRPC plumbing the floors' minimal processes share (bench/floors/floor-child.ts,
// bench/floors/pg-minimal.ts): methods that carry raw bytes, no schema, so what a
// floor measures is the transport and nothing of protobufjs; a server bound
// to a free port on loopback; and a server child's life (print the port, run
// until the orchestrator closes our stdin); and fdatasync as a promise, off
// the event loop, as a node's store syncs.
import * as grpc from '@grpc/grpc-js';
import { fdatasync } from 'node:fs';

export const fdatasyncAsync = (fd: number): Promise<void> =>
  new Promise((res, rej) => fdatasync(fd, (err) => (err ? rej(err) : res())));

export const ident = (b: Buffer): Buffer => b;

export const method = (
  name: string,
  requestStream: boolean,
  responseStream: boolean,
): grpc.MethodDefinition<Buffer, Buffer> => ({
  path: `/verdict.bench.Echo/${name}`,
  requestStream,
  responseStream,
  requestSerialize: ident,
  requestDeserialize: ident,
  responseSerialize: ident,
  responseDeserialize: ident,
});

export function bind(server: grpc.Server): Promise<number> {
  return new Promise((res, rej) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? rej(err) : res(port),
    ),
  );
}

/**
 * Binds `server`, prints "listening <port>" for the orchestrator, and returns once it closes our stdin (the server is
 * then shut down).
 */
export async function serveUntilStdinEnds(server: grpc.Server): Promise<void> {
  const port = await bind(server);
  process.stdout.write(`listening ${port}\n`);
  await new Promise<void>((r) => process.stdin.on('end', r).resume());
  server.forceShutdown();
}
