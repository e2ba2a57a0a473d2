// The caller's side of RaftNode.PutStream: Puts to one node ride one
// long-lived bidi stream, the Puts of one event-loop turn in one message,
// each standing in for one unary Put. Each settles with the PutResponse or
// with a grpc.ServiceError shaped as the unary call's would be (leader hint
// and verdict-reason in the metadata). A stream that breaks fails the Puts
// whose answers it owed with UNAVAILABLE (their fate is unknown, as for a
// unary call cut off mid-way), unless the node refused the whole stream
// (PERMISSION_DENIED, UNAUTHENTICATED: nothing on it was acted on, nor on
// a node without the method, UNIMPLEMENTED). The machine is RequestStream.
import * as grpc from '@grpc/grpc-js';
import { LEADER_ADDRESS_KEY, LEADER_ID_KEY, STATUS_REASON_KEY } from './coordinator-rpc.ts';
import {
  putStreamMethod,
  type PutRequest,
  type PutResponse,
  type StreamedPutAnswer,
  type StreamedPutAnswers,
  type StreamedPuts,
} from './proto.ts';
import { RequestStream, serviceError } from './request-stream.ts';

/**
 * Puts waiting for an answer on one stream; beyond this one fails at once with RESOURCE_EXHAUSTED. Matches the node's
 * bound.
 */
export const PUT_STREAM_CLIENT_PENDING_MAX = 4_096;
const SWEEP_MS = 25;
/** Codes with which the node refuses a whole stream at its start, before acting on anything sent on it. */
const STREAM_REFUSALS: ReadonlySet<grpc.status> = new Set([
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.UNIMPLEMENTED,
]);

export class PutStreamClient {
  private readonly stream: RequestStream<PutRequest, PutResponse, StreamedPuts, StreamedPutAnswers, StreamedPutAnswer>;

  constructor(client: grpc.Client, address: string) {
    this.stream = new RequestStream<PutRequest, PutResponse, StreamedPuts, StreamedPutAnswers, StreamedPutAnswer>(
      client,
      {
        method: putStreamMethod,
        batch: (requests) => ({ puts: requests.map(({ id, req }) => ({ id, put: req })) }),
        answers: (msg) => msg.answers,
        answerId: (a) => a.id,
        settle: (a) => {
          if (a.code === 0 && a.response) return { value: a.response };
          const md = new grpc.Metadata();
          if (a.leaderAddress !== '') md.set(LEADER_ADDRESS_KEY, a.leaderAddress);
          if (a.leaderId !== '') md.set(LEADER_ID_KEY, a.leaderId);
          if (a.statusReason !== '') md.set(STATUS_REASON_KEY, a.statusReason);
          return {
            error: serviceError(
              a.code === 0 ? grpc.status.INTERNAL : a.code,
              a.code === 0 ? 'the node answered a streamed Put without a response' : a.details,
              md,
            ),
          };
        },
        // A stream refused as a whole (the caller is not an admin) did nothing: say so with the node's own status and
        // reason.
        ended: (st) =>
          STREAM_REFUSALS.has(st.code)
            ? serviceError(st.code, st.details, st.metadata)
            : serviceError(
                grpc.status.UNAVAILABLE,
                `the put stream to ${address} ended: ${st.code === grpc.status.OK ? 'closed by the node' : st.details}`,
              ),
        pendingMax: PUT_STREAM_CLIENT_PENDING_MAX,
        sweepMs: SWEEP_MS,
        texts: {
          closed: 'the client is closed',
          closing: 'the client is closed',
          busy: (waiting) => `${waiting} puts to ${address} wait for an answer`,
          late: (req) => `no answer from ${address} in time for put ${req.key.slice(0, 64)}`,
        },
      },
    );
  }

  put(request: PutRequest, timeoutMs: number): Promise<PutResponse> {
    return new Promise((resolve, reject) => {
      this.stream.send(request, timeoutMs, (err, res) => (err !== null ? reject(err) : resolve(res as PutResponse)));
    });
  }

  close(): void {
    this.stream.close();
  }
}
