// Raw bytes to a gRPC method: a grpc-js client with identity serializers, so
// a test can send what no SDK would (truncated, mistyped, oversized bodies)
// and see the status the server answers.
import * as grpc from '@grpc/grpc-js';

export interface RawAnswer {
  code: grpc.status;
  details: string;
  /** The response body when code is OK. */
  body: Buffer | null;
}

const identity = (b: Buffer): Buffer => b;

/**
 * A client for raw calls to `address`; close() it when done. Receives up to 64 MiB (the server's own bound decides).
 */
export function rawClient(address: string): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
  });
}

/** One unary call with `body` as the request's bytes; never rejects. */
export function rawUnary(client: grpc.Client, path: string, body: Buffer, callTimeoutMs: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    client.makeUnaryRequest<Buffer, Buffer>(
      path,
      identity,
      identity,
      body,
      new grpc.Metadata(),
      { deadline: Date.now() + callTimeoutMs },
      (err, res) => {
        if (err) resolve({ code: err.code, details: err.details, body: null });
        else resolve({ code: grpc.status.OK, details: '', body: res ?? null });
      },
    );
  });
}

/** A bidi call that writes `bodies`, half-closes, and collects every answer until the status; never rejects. */
export function rawBidi(
  client: grpc.Client,
  path: string,
  bodies: Buffer[],
  callTimeoutMs: number,
): Promise<RawAnswer & { messages: number }> {
  return new Promise((resolve) => {
    const call = client.makeBidiStreamRequest<Buffer, Buffer>(path, identity, identity, new grpc.Metadata(), {
      deadline: Date.now() + callTimeoutMs,
    });
    let messages = 0;
    call.on('data', () => messages++);
    call.on('error', () => {});
    call.on('status', (st: grpc.StatusObject) => resolve({ code: st.code, details: st.details, body: null, messages }));
    for (const b of bodies) call.write(b);
    call.end();
  });
}
