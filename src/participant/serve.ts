// The gRPC face of a participant: `verdict.participant.Participant` served
// from the engine. PREPARE and DECISION come either as unary calls or, from
// a current leader, as batches on the long-lived Exchange stream
// (src/transport/participant-exchange.ts); both go through the same two
// functions below, so validation, the draining rule and the answers are the
// same whichever way a request arrives.
//
// `gate` counts requests in flight and, while draining, turns a PREPARE for
// a transaction this participant does not hold into NO; a repeated PREPARE
// still gets its first answer (R7) and DECISIONs are taken.
//
// With TLS, `callers` admits only the nodes of this participant's cluster
// (src/participant/node-callers.ts): anyone else holding a certificate of
// the same CA is refused PERMISSION_DENIED before the engine sees anything,
// on the unary calls and at the opening of an Exchange stream.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type {
  Ack,
  AnswerBatch,
  DecideRequest,
  ExchangeAnswer,
  ExchangeBatch,
  ParticipantHandlers,
  PrepareRequest,
  StatusAnswer,
  StatusRequest,
  VoteMessage,
} from '../transport/participant-rpc.ts';
import { decisionFromWire, statusToWire, voteFromWire, voteToWire } from '../transport/protocol-wire.ts';
import { serveAnswerStream } from '../transport/request-stream.ts';
import type { ParticipantEngine } from './engine.ts';
import { PAYLOAD_BYTES_MAX } from './memory.ts';
import { ParticipantError } from './types.ts';
import type { CallerCheck } from './node-callers.ts';
import { TXN_ID_CHARS_MAX, txnIdProblem } from '../domain/txn-id.ts';
import type { OptionalMethod } from '../domain/protocol.ts';
import { ID_CHARS_MAX, quote } from '../transport/validate.ts';
import { REASON_CHARS_MAX } from '../domain/text-bounds.ts';
import { traceFromMetadata, traceIdOf } from '../transport/trace-context.ts';
import type { TraceSpan, Tracing } from '../transport/tracing.ts';
import type { TraceIds } from '../util/trace-log.ts';

/**
 * Tracing at the participant (docs/operations.md, "Tracing"): a PREPARE or
 * DECISION whose metadata carries a `traceparent` gets a server span when
 * `tracing` is on, and its trace id goes on the log lines about its
 * transaction either way (`ids`). Streamed requests carry no metadata of
 * their own; the leader sends traced ones as unary calls.
 */
export interface ParticipantTracing {
  tracing: Tracing;
  ids: TraceIds;
}

function tracedRequest(
  t: ParticipantTracing | null,
  name: string,
  txnId: string,
  participantId: string,
  md: grpc.Metadata,
): TraceSpan | null {
  if (t === null) return null;
  const incoming = traceFromMetadata(md);
  if (incoming === null) return null;
  t.ids.note(txnId, traceIdOf(incoming));
  return t.tracing.on
    ? t.tracing.start(name, 'server', incoming, { 'verdict.txn_id': txnId, 'verdict.participant_id': participantId })
    : null;
}

/** More participants than a coordinator ever enlists (its participantsMax is 64). */
const PARTICIPANTS_MAX = 1_024;
/**
 * Past this many ids remembered on one Exchange stream, the settled ones are dropped (an engine holds at most
 * preparedMax prepared).
 */
const VOTED_YES_TRACKED_MAX = 10_000;

export interface Gate {
  draining: boolean;
  inFlight: number;
  /**
   * How to end each open Exchange stream; endExchanges() calls them when the participant stops (closing: say so first).
   */
  readonly exchanges: Set<(closing?: boolean) => void>;
}

export function newGate(): Gate {
  return { draining: false, inFlight: 0, exchanges: new Set() };
}

type Done<T> = (err: ParticipantError | null, res?: T) => void;

function servePrepare(
  engine: ParticipantEngine,
  gate: Gate,
  log: Logger,
  req: PrepareRequest,
  cb: Done<VoteMessage>,
): void {
  const bad =
    badTxnId(req.txnId) ??
    badFields([
      ['cluster_id', req.clusterId, ID_CHARS_MAX],
      ['participant_id', req.participantId, ID_CHARS_MAX],
    ]) ??
    (req.participants.length > PARTICIPANTS_MAX
      ? `${req.participants.length} participants exceed the limit of ${PARTICIPANTS_MAX}`
      : null) ??
    badFields(req.participants.map((p) => ['participants[]', p, ID_CHARS_MAX] as const)) ??
    (req.payload.byteLength > PAYLOAD_BYTES_MAX ? `payload is larger than ${PAYLOAD_BYTES_MAX} bytes` : null);
  if (bad !== null) return cb(new ParticipantError('INVALID_ARGUMENT', bad));
  if (gate.draining && engine.stateOf(req.txnId) === undefined) {
    log.info({ txnId: req.txnId }, 'vote NO: shutting down');
    return cb(
      null,
      voteToWire({
        txnId: req.txnId,
        participantId: req.participantId,
        vote: 'no',
        reason: 'participant is shutting down',
      }),
    );
  }
  gate.inFlight++;
  engine.prepare(req, (err, vote) => {
    gate.inFlight--;
    if (err !== null || vote === undefined) return cb(err);
    // Level first: the fields would be built for every PREPARE with debug off.
    if (log.isLevelEnabled('debug'))
      log.debug({ txnId: req.txnId, vote: vote.vote, reason: vote.reason || undefined }, 'PREPARE answered');
    cb(null, voteToWire(vote));
  });
}

function serveDecide(engine: ParticipantEngine, gate: Gate, log: Logger, req: DecideRequest, cb: Done<Ack>): void {
  const bad =
    badTxnId(req.txnId) ??
    badFields([
      ['cluster_id', req.clusterId, ID_CHARS_MAX],
      ['participant_id', req.participantId, ID_CHARS_MAX],
      ['reason', req.reason, REASON_CHARS_MAX],
    ]);
  if (bad !== null) return cb(new ParticipantError('INVALID_ARGUMENT', bad));
  const decision = decisionFromWire(req);
  if (decision === null)
    return cb(new ParticipantError('INVALID_ARGUMENT', `decision for ${req.txnId} is neither COMMIT nor ABORT`));
  gate.inFlight++;
  engine.decide(decision, (err, ack) => {
    gate.inFlight--;
    if (err !== null) return cb(err);
    if (log.isLevelEnabled('debug'))
      log.debug({ txnId: req.txnId, outcome: decision.outcome }, 'DECISION applied and acknowledged');
    cb(null, ack);
  });
}

/**
 * The status question of parallel commit's recovery: validated like a DECISION, answered after any refusal is durable.
 */
function serveStatus(engine: ParticipantEngine, gate: Gate, req: StatusRequest, cb: Done<StatusAnswer>): void {
  const bad =
    badTxnId(req.txnId) ??
    badFields([
      ['cluster_id', req.clusterId, ID_CHARS_MAX],
      ['participant_id', req.participantId, ID_CHARS_MAX],
    ]);
  if (bad !== null) return cb(new ParticipantError('INVALID_ARGUMENT', bad));
  gate.inFlight++;
  engine.status({ clusterId: req.clusterId, txnId: req.txnId, participantId: req.participantId }, (err, status) => {
    gate.inFlight--;
    if (err !== null || status === undefined) cb(err);
    else cb(null, statusToWire(req.txnId, req.participantId, status));
  });
}

/** The optional methods these handlers serve, as the runtime lists them at registration (src/domain/protocol.ts). */
export const SERVED_OPTIONAL: readonly OptionalMethod[] = ['Exchange', 'Status'];

/**
 * gRPC handlers: check the caller (with TLS: `callers`; null without),
 * validate, hand to the engine, map its errors to status codes with reasons.
 */
export function participantHandlers(
  engine: ParticipantEngine,
  gate: Gate,
  log: Logger,
  callers: CallerCheck | null = null,
  traced: ParticipantTracing | null = null,
): ParticipantHandlers & {
  Exchange: grpc.handleBidiStreamingCall<ExchangeBatch, AnswerBatch>;
  Status: grpc.handleUnaryCall<StatusRequest, StatusAnswer>;
} {
  const unary =
    <T>(cb: grpc.sendUnaryData<T>): Done<T> =>
    (err, res) => {
      if (err !== null)
        cb({
          code: grpc.status[err.code],
          details: err.message,
          name: err.name,
          message: err.message,
          metadata: new grpc.Metadata(),
        });
      else cb(null, res);
    };
  /** Runs `go` for a node of the cluster; anyone else gets PERMISSION_DENIED with the reason, and a log line. */
  const fromNode = (
    call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
    what: string,
    txnId: string | undefined,
    refuse: (err: ParticipantError) => void,
    go: () => void,
  ): void => {
    if (callers === null) return go();
    callers(call, (refusal) => {
      if (refusal === null) return go();
      log.warn({ txnId: txnId?.slice(0, TXN_ID_CHARS_MAX), peer: call.getPeer() }, `${what} refused: ${refusal}`);
      refuse(
        new ParticipantError(
          'PERMISSION_DENIED',
          `${what} is taken only from a node of this participant's cluster: ${refusal}`,
        ),
      );
    });
  };
  return {
    Prepare: (call, cb) =>
      fromNode(call, 'PREPARE', call.request.txnId, unary(cb), () => {
        const span = tracedRequest(
          traced,
          'verdict.participant.prepare',
          call.request.txnId,
          call.request.participantId,
          call.metadata,
        );
        const answer = unary(cb);
        servePrepare(engine, gate, log, call.request, (err, vote) => {
          if (span !== null) {
            if (vote !== undefined) span.set('verdict.vote', voteFromWire(vote)?.vote ?? 'unknown');
            span.end(err?.message);
          }
          answer(err, vote);
        });
      }),
    Decide: (call, cb) =>
      fromNode(call, 'DECISION', call.request.txnId, unary(cb), () => {
        const span = tracedRequest(
          traced,
          'verdict.participant.decision',
          call.request.txnId,
          call.request.participantId,
          call.metadata,
        );
        span?.set('verdict.outcome', decisionFromWire(call.request)?.outcome ?? 'unknown');
        const answer = unary(cb);
        serveDecide(engine, gate, log, call.request, (err, ack) => {
          span?.end(err?.message);
          // Acknowledged: nothing more is logged about the transaction here.
          if (err === null) traced?.ids.drop(call.request.txnId);
          answer(err, ack);
        });
      }),
    Status: (call, cb) =>
      fromNode(call, 'status question', call.request.txnId, unary(cb), () =>
        serveStatus(engine, gate, call.request, unary(cb)),
      ),
    Exchange: (call) =>
      fromNode(
        call,
        'Exchange stream',
        undefined,
        (err) =>
          call.emit('error', {
            code: grpc.status.PERMISSION_DENIED,
            details: err.message,
            metadata: new grpc.Metadata(),
          }),
        () => serveExchange(engine, gate, log, call),
      ),
  };
}

/**
 * One leader's stream: every request of a batch is handed to the engine at
 * once, and the answers completed together (one incoming batch, one journal
 * sync) go back in one batch, each under its request's id, in the order they
 * complete.
 *
 * The stream remembers the transactions it voted YES for and has not seen
 * decided on it. When it breaks (a killed leader's sockets are reset at once)
 * those are asked about at once (engine.askNow), and so is any whose YES
 * comes after the break: the leader that would have sent their DECISION is
 * gone, and waiting inDoubtAfterMs for it is what made failover slow.
 */
function serveExchange(
  engine: ParticipantEngine,
  gate: Gate,
  log: Logger,
  call: grpc.ServerDuplexStream<ExchangeBatch, AnswerBatch>,
): void {
  const fail = (id: number, err: ParticipantError): ExchangeAnswer => ({
    id,
    error: { code: grpc.status[err.code], details: err.message },
  });
  const votedYes = new Set<string>();
  let broken = false;
  const noteYes = (txnId: string): void => {
    if (broken) return engine.askNow([txnId]);
    votedYes.add(txnId);
    // Decisions that came another way (a unary call, the in-doubt resolver) leave ids behind: drop the settled ones.
    if (votedYes.size > VOTED_YES_TRACKED_MAX)
      for (const t of votedYes) if (engine.stateOf(t) !== 'prepared') votedYes.delete(t);
  };
  serveAnswerStream(call, gate.exchanges, {
    onCutOff: (peer, details) => log.warn({ peer }, `Exchange stream cut off: ${details}`),
    onBroken: () => {
      broken = true;
      if (votedYes.size > 0)
        log.info(
          { peer: call.getPeer(), inDoubt: votedYes.size },
          "the leader's Exchange stream broke; asking the cluster now about the transactions it prepared here",
        );
      engine.askNow(votedYes);
      votedYes.clear();
    },
    requests: (batch) => batch.requests,
    batch: (answers: ExchangeAnswer[]) => ({ answers, closing: false }),
    // The stream's last message when the participant stops: the leader shows it closed, not disconnected.
    farewell: () => ({ answers: [], closing: true }),
    handle: (r, _waiting, answer) => {
      const id = r.id;
      if (r.prepare) {
        const txnId = r.prepare.txnId;
        servePrepare(engine, gate, log, r.prepare, (err, vote) => {
          if (err === null && vote !== undefined && voteFromWire(vote)?.vote === 'yes') noteYes(txnId);
          answer(err !== null ? fail(id, err) : { id, vote });
        });
      } else if (r.decision) {
        votedYes.delete(r.decision.txnId);
        serveDecide(engine, gate, log, r.decision, (err, ack) => answer(err !== null ? fail(id, err) : { id, ack }));
      } else
        answer(
          fail(id, new ParticipantError('INVALID_ARGUMENT', `request ${id} carries neither a PREPARE nor a DECISION`)),
        );
    },
  });
}

/**
 * Ends every open Exchange stream, saying the participant is closing (it is stopping and answered what was in flight).
 */
export function endExchanges(gate: Gate): void {
  for (const end of [...gate.exchanges]) end(true);
}

/** The first string field longer than its bound (quoted clipped, never whole), or null. */
function badFields(fields: readonly (readonly [string, string, number])[]): string | null {
  for (const [name, v, max] of fields)
    if (v.length > max) return `${name} ${quote(v)} is longer than ${max} characters`;
  return null;
}

/** The cluster's transaction id rule (src/domain/txn-id.ts): a correct node never sends another id. */
function badTxnId(txnId: string): string | null {
  if (txnId === '') return 'txn_id is empty';
  const problem = txnIdProblem(txnId);
  return problem === null ? null : `txn_id: ${problem}`;
}
