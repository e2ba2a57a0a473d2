// Coordinator.CommitStream on a node: every StreamedCommit is handed to the
// unary Commit handler itself, so the two paths cannot drift apart (leader
// check, refusal while shutting down, validation, R2, R7, metrics); the
// answers completed together (one applied Ready) go back in one
// StreamedOutcomes message, as that callback ends (src/transport/request-stream.ts).
import * as grpc from '@grpc/grpc-js';
import {
  LEADER_ADDRESS_KEY,
  LEADER_ID_KEY,
  RECORDED_OUTCOME_KEY,
  STATUS_REASON_KEY,
  type CommitRequest,
  type StreamedCommits,
  type StreamedOutcome,
  type StreamedOutcomes,
  type TxnOutcome,
} from '../transport/coordinator-rpc.ts';
import { serveAnswerStream } from '../transport/request-stream.ts';
import { parseGroup } from '../transport/group-routes.ts';
import { GROUP_KEY } from '../transport/coordinator-rpc.ts';

/** Commits answered on one stream at a time at most; beyond this one is refused with RESOURCE_EXHAUSTED. */
export const COMMIT_STREAM_PENDING_MAX = 16_384;

export interface CommitStreams {
  handler: grpc.handleBidiStreamingCall<StreamedCommits, StreamedOutcomes>;
  /**
   * Ends every open stream (the node is stopping): clients fail what is unanswered and go elsewhere, and the server
   * need not wait for them.
   */
  endAll(): void;
}

export interface CommitStreamOptions {
  /** Answers a stream may hold unread by its client before it is cut off (config key streamUnreadMax). */
  unreadMax?: number;
  /** Told when a stream is cut off because its client does not read its answers. */
  onCutOff?: (peer: string, details: string) => void;
}

export function commitStreamHandler(
  commit: grpc.handleUnaryCall<CommitRequest, TxnOutcome>,
  o: CommitStreamOptions = {},
): CommitStreams {
  const open = new Set<() => void>();
  const handler: grpc.handleBidiStreamingCall<StreamedCommits, StreamedOutcomes> = (call) =>
    serve(commit, call, open, o);
  return { handler, endAll: () => [...open].forEach((end) => end()) };
}

function serve(
  commit: grpc.handleUnaryCall<CommitRequest, TxnOutcome>,
  call: grpc.ServerDuplexStream<StreamedCommits, StreamedOutcomes>,
  streams: Set<() => void>,
  o: CommitStreamOptions,
): void {
  serveAnswerStream(call, streams, {
    ...(o.onCutOff ? { onCutOff: o.onCutOff } : {}),
    ...(o.unreadMax !== undefined ? { unreadMax: o.unreadMax } : {}),
    requests: (batch) => batch.commits,
    batch: (outcomes: StreamedOutcome[]) => ({ outcomes }),
    handle: ({ id, commit: request }, waiting, answer) => {
      if (request === null)
        return answer(
          failure(id, {
            code: grpc.status.INVALID_ARGUMENT,
            details: `streamed commit ${id} carries no CommitRequest`,
          }),
        );
      if (waiting > COMMIT_STREAM_PENDING_MAX)
        return answer(
          failure(id, {
            code: grpc.status.RESOURCE_EXHAUSTED,
            details: `${waiting - 1} commits on this stream wait for their outcome; retry later`,
          }),
        );
      // What the unary handler sees: this request, and the stream's metadata, peer and credentials.
      const unaryCall = Object.assign(Object.create(call) as grpc.ServerUnaryCall<CommitRequest, TxnOutcome>, {
        request,
      });
      commit(unaryCall, (err, outcome) => {
        if (err) answer(failure(id, err));
        else if (outcome)
          answer({
            id,
            outcome,
            code: 0,
            details: '',
            leaderAddress: '',
            leaderId: '',
            statusReason: '',
            recordedOutcome: '',
            group: 0,
          });
        else answer(failure(id, { code: grpc.status.INTERNAL, details: 'Commit produced no outcome' }));
      });
    },
  });
}

function failure(id: number, err: Partial<grpc.StatusObject> | grpc.ServiceError): StreamedOutcome {
  return {
    id,
    outcome: null,
    ...failedCall(err),
    recordedOutcome: metadataHint(err.metadata, RECORDED_OUTCOME_KEY),
    group: groupHint(err.metadata),
  };
}

/**
 * A streamed call's failure as its answer carries it (CommitStream, PutStream): the code, the details and the leader
 * hints a unary call would carry in metadata.
 */
export function failedCall(err: Partial<grpc.StatusObject> | grpc.ServiceError): {
  code: number;
  details: string;
  leaderAddress: string;
  leaderId: string;
  statusReason: string;
} {
  const md = err.metadata;
  return {
    code: err.code ?? grpc.status.UNKNOWN,
    details: err.details ?? '',
    leaderAddress: metadataHint(md, LEADER_ADDRESS_KEY),
    leaderId: metadataHint(md, LEADER_ID_KEY),
    statusReason: metadataHint(md, STATUS_REASON_KEY),
  };
}

/** The decision group a NOT_LEADER refusal names (verdict-group metadata), 0 when none: the stream's `group` field. */
function groupHint(md: grpc.Metadata | undefined): number {
  const g = parseGroup(metadataHint(md, GROUP_KEY));
  return g ?? 0;
}

function metadataHint(md: grpc.Metadata | undefined, key: string): string {
  const v = md?.get(key)[0];
  return typeof v === 'string' ? v : '';
}
