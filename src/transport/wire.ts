// The generated wire types (src/transport/gen/, `npm run gen:proto`) as the
// code reads and writes them. Every proto is loaded with `defaults`, so a
// decoded message has every field: the generator's `__Output` types say so.
// Bytes decode as a Buffer, which is a Uint8Array, and the code builds
// messages with plain Uint8Arrays, which protobufjs encodes alike; Wire<T>
// writes bytes as Uint8Array so one type serves both directions. A numeric
// enum (raft.proto's) is a plain number: a peer may send any value, and the
// edge (src/transport/raft-edge.ts) checks it.

import type * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';

/** A generated `__Output` message type, with bytes as Uint8Array and numeric enums as numbers. */
export type Wire<T> = T extends Buffer
  ? Uint8Array
  : T extends number
    ? number
    : T extends (infer E)[]
      ? Wire<E>[]
      : T extends object
        ? { [K in keyof T]: Wire<T[K]> }
        : T;

/**
 * What a server implements, from a generated service's `…Handlers` (which
 * call is unary or streaming) and `…Definition` (its messages): handlers
 * that receive and answer Wire<…> messages; the methods in Except left out.
 */
export type WireHandlers<H, D, Except extends string = never> = grpc.UntypedServiceImplementation & {
  [K in keyof D as string extends K ? never : K extends Except ? never : K]: D[K] extends MethodDefinition<
    infer _Req,
    infer _Res,
    infer Req,
    infer Res
  >
    ? Handler<H, K> extends grpc.handleUnaryCall<infer _Q, infer _R>
      ? grpc.handleUnaryCall<Wire<Req>, Wire<Res>>
      : Handler<H, K> extends grpc.handleBidiStreamingCall<infer _Q, infer _R>
        ? grpc.handleBidiStreamingCall<Wire<Req>, Wire<Res>>
        : Handler<H, K> extends grpc.handleClientStreamingCall<infer _Q, infer _R>
          ? grpc.handleClientStreamingCall<Wire<Req>, Wire<Res>>
          : grpc.handleServerStreamingCall<Wire<Req>, Wire<Res>>
    : never;
};

type Handler<H, K> = K extends keyof H ? H[K] : never;
