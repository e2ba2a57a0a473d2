// RaftNode.PutStream on a node: the raw log's Puts on one long-lived stream.
// Every StreamedPut is handed to the unary Put handler itself (admin check,
// field checks, leader check, the wait for its entry to commit), so the two
// paths cannot drift apart; the answers completed together (one applied
// Ready) go back in one StreamedPutAnswers message. What the stream removes is the per-call cost of
// a unary gRPC call, which was a third of the raw log's latency: the log
// itself is measured, not the RPC.
//
// Bounds: at most PUT_STREAM_PENDING_MAX Puts wait on one stream (beyond,
// each is refused with RESOURCE_EXHAUSTED); a client that does not read its
// answers is cut off (serveAnswerStream's unreadMax); and a caller that is
// not an admin is refused once, for the whole stream, before anything it
// sent is looked at.
import * as grpc from '@grpc/grpc-js';
import { Access } from '../transport/auth.ts';
import type {
  PutRequest,
  PutResponse,
  StreamedPutAnswer,
  StreamedPutAnswers,
  StreamedPuts,
} from '../transport/proto.ts';
import { serveAnswerStream } from '../transport/request-stream.ts';
import { failedCall, type CommitStreamOptions } from './commit-stream.ts';

/** Puts waiting for their entry to commit on one stream at most; beyond this one is refused with RESOURCE_EXHAUSTED. */
export const PUT_STREAM_PENDING_MAX = 4_096;

export interface PutStreams {
  handler: grpc.handleBidiStreamingCall<StreamedPuts, StreamedPutAnswers>;
  /** Ends every open stream (the node is stopping). */
  endAll(): void;
}

/** The commit stream's options (unread bound, cut-off hook), plus a bound on waiting Puts. */
export interface PutStreamOptions extends CommitStreamOptions {
  /** Puts waiting on one stream at most; default PUT_STREAM_PENDING_MAX. */
  pendingMax?: number;
  /** Who may put (src/transport/auth.ts); default: everyone (no TLS). */
  access?: Access;
}

export function putStreamHandler(
  put: grpc.handleUnaryCall<PutRequest, PutResponse>,
  o: PutStreamOptions = {},
): PutStreams {
  const open = new Set<() => void>();
  const pendingMax = o.pendingMax ?? PUT_STREAM_PENDING_MAX;
  const access = o.access ?? new Access();
  const handler: grpc.handleBidiStreamingCall<StreamedPuts, StreamedPutAnswers> = (call) => {
    const refused = access.adminOnly(call, 'log probe');
    if (refused !== null) {
      call.emit('error', { code: refused.code, details: refused.details });
      return;
    }
    serveAnswerStream(call, open, {
      ...(o.onCutOff ? { onCutOff: o.onCutOff } : {}),
      ...(o.unreadMax !== undefined ? { unreadMax: o.unreadMax } : {}),
      requests: (batch) => batch.puts,
      batch: (answers: StreamedPutAnswer[]) => ({ answers }),
      handle: ({ id, put: request }, waiting, answer) => {
        if (request === null)
          return answer(
            failure(id, { code: grpc.status.INVALID_ARGUMENT, details: `streamed put ${id} carries no PutRequest` }),
          );
        if (waiting > pendingMax)
          return answer(
            failure(id, {
              code: grpc.status.RESOURCE_EXHAUSTED,
              details: `${waiting - 1} puts on this stream wait for their entry to commit (limit ${pendingMax}); retry later`,
            }),
          );
        // What the unary handler sees: this request, and the stream's metadata, peer and credentials.
        const unaryCall = Object.assign(Object.create(call) as grpc.ServerUnaryCall<PutRequest, PutResponse>, {
          request,
        });
        put(unaryCall, (err, response) => {
          if (err) answer(failure(id, err));
          else if (response)
            answer({ id, response, code: 0, details: '', leaderAddress: '', leaderId: '', statusReason: '' });
          else answer(failure(id, { code: grpc.status.INTERNAL, details: 'Put produced no response' }));
        });
      },
    });
  };
  return { handler, endAll: () => [...open].forEach((end) => end()) };
}

function failure(id: number, err: Partial<grpc.StatusObject> | grpc.ServiceError): StreamedPutAnswer {
  return { id, response: null, ...failedCall(err) };
}
