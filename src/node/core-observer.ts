// What the node process watches in its core (src/node/core.ts): the web
// console's transaction timeline and leader history (src/console/timeline.ts)
// and the log lines an operator follows a transaction by. Watching only: none
// of it changes what the core does. The simulator watches the same core with
// its own checker instead (test/sim/system-world.ts).

import type { Logger } from 'pino';
import type { LeaderHistory, TxnTimeline } from '../console/timeline.ts';
import type { NodeCoreObserver, ParticipantLinks } from './core.ts';
import { noVoteError, type ParticipantLink } from './participant-link.ts';
import type { TxnTraces } from './txn-traces.ts';
import { MethodUnimplementedError } from '../domain/protocol.ts';
import { neededFor, type ProtocolGaps } from './protocol-gaps.ts';

export interface WatchOptions {
  log: Logger;
  timeline: Pick<TxnTimeline, 'record' | 'has'>;
  leaders: LeaderHistory;
  /** The node's current Raft term. */
  term: () => number;
  nowMs: () => number;
  /** Each transaction's trace context and spans (./txn-traces.ts); its trace id goes on every log line about it. */
  traces: TxnTraces;
  /** Participants that answer UNIMPLEMENTED to a method the cluster needs (./protocol-gaps.ts). */
  gaps?: ProtocolGaps;
  /** Each PREPARE's round trip in seconds and its vote (none: no answer), for the per-participant metrics. */
  observePrepare?: (participantId: string, seconds: number, vote: 'yes' | 'no' | 'none') => void;
}

/** Role changes, proposals and applied decisions, into the timeline and the log. */
export function watchCore(
  o: WatchOptions,
): Pick<NodeCoreObserver, 'onPersisted' | 'onResult' | 'onProposing' | 'onProposalFailed'> {
  const { log, timeline, traces } = o;
  const debugOn = log.isLevelEnabled('debug');
  return {
    onPersisted: (rd) => {
      if (!rd.softState) return;
      if (rd.softState.role !== 'leader') traces.clear();
      o.leaders.note(o.nowMs(), o.term(), rd.softState.leader);
      log.info({ term: o.term(), role: rd.softState.role, leader: rd.softState.leader || null }, 'raft role changed');
    },
    onProposing: (cmd) => {
      if (cmd.t !== 'decide') return;
      timeline.record(cmd.txnId, { atMs: o.nowMs(), kind: 'proposed', detail: cmd.outcome.toUpperCase() });
      traces.proposing(cmd.txnId, cmd.outcome);
    },
    onProposalFailed: (cmd, err) => {
      if (cmd.t === 'decide') traces.proposalFailed(cmd.txnId, err);
    },
    onResult: (entry, result) => {
      if (result.t === 'decide') {
        const dec = result.decision;
        if (result.trace !== undefined) traces.learned(dec.txnId, result.trace);
        const detail = `${dec.outcome.toUpperCase()}${result.first ? '' : ' again (a no-op: the first decision stands, R1)'}${dec.reason ? `: ${dec.reason}` : ''}`;
        timeline.record(dec.txnId, { atMs: o.nowMs(), kind: 'decided', index: entry.index, detail });
        traces.applied(dec.txnId, entry.index);
        // The level check first: the log line's fields would be built for every decision even with debug off.
        if (result.first && debugOn)
          log.debug(
            {
              txnId: dec.txnId,
              traceId: traces.traceIdOf(dec.txnId),
              outcome: dec.outcome,
              index: entry.index,
              participants: dec.participants,
              reason: dec.reason || undefined,
            },
            'decision applied',
          );
      } else if (result.t === 'stage') {
        if (result.trace !== undefined) traces.learned(result.txnId, result.trace);
      } else if (result.t === 'unregister' && result.forced !== null) {
        const f = result.forced;
        log.warn(
          {
            participantId: f.id,
            operator: f.operator,
            reason: f.reason,
            index: entry.index,
            owed: f.owed.length,
            owedTxnIds: f.owed.slice(0, 20),
          },
          'participant removed with --force: the decisions it did not acknowledge stay in the log for it, no longer delivered',
        );
      } else if (result.t === 'forget') {
        for (const id of result.txnIds)
          if (timeline.has(id)) timeline.record(id, { atMs: o.nowMs(), kind: 'forget', index: entry.index });
        traces.forget(result.txnIds);
      }
    },
  };
}

/**
 * The gRPC participant links, with each PREPARE, vote, DECISION, ACK and
 * status question (parallel commit's recovery)
 * written to the timeline and the log. `ageMs`: how long ago the engine
 * began a transaction (for the timeline's first event).
 */
export function watchedLinks(
  link: ParticipantLink,
  o: WatchOptions,
  ageMs: (txnId: string) => number,
): ParticipantLinks {
  const { log, timeline, traces } = o;
  const gap = (err: Error | null, txnId: string): void => {
    if (err instanceof MethodUnimplementedError)
      o.gaps?.report(log, o.nowMs(), err.participantId, err.method, txnId, neededFor(err.method));
  };
  return {
    sendPrepare: (to, req, timeoutMs, cb) => {
      const now = o.nowMs();
      if (!timeline.has(req.txnId)) timeline.record(req.txnId, { atMs: now - ageMs(req.txnId), kind: 'begin' });
      timeline.record(req.txnId, { atMs: now, kind: 'prepare', participantId: to.id });
      // With tracing off not even the attributes are built.
      const span = traces.tracing.on
        ? traces.child('verdict.prepare', req.txnId, { 'verdict.participant_id': to.id })
        : null;
      const traceId = traces.traceIdOf(req.txnId);
      const sentAtNs = o.observePrepare ? process.hrtime.bigint() : 0n;
      link.prepare(to, req, timeoutMs, span?.context ?? traces.contextOf(req.txnId), (err, vote) => {
        o.observePrepare?.(to.id, Number(process.hrtime.bigint() - sentAtNs) / 1e9, err || !vote ? 'none' : vote.vote);
        if (span !== null) {
          if (vote !== undefined) span.set('verdict.vote', vote.vote);
          span.end(err ? err.message : undefined);
        }
        gap(err, req.txnId);
        timeline.record(req.txnId, {
          atMs: o.nowMs(),
          kind: 'vote',
          participantId: to.id,
          detail: err
            ? `no vote: ${err.message}`
            : vote
              ? `${vote.vote.toUpperCase()}${vote.reason ? `: ${vote.reason}` : ''}${vote.reserveTtlMs !== undefined ? ` (reserve TTL ${vote.reserveTtlMs} ms)` : ''}`
              : 'no answer',
        });
        if (err)
          log.info(
            { txnId: req.txnId, traceId, participantId: to.id, endpoint: to.endpoint, err: err.message },
            'PREPARE got no vote; the transaction aborts',
          );
        else if (vote?.vote === 'no')
          log.info({ txnId: req.txnId, traceId, participantId: to.id, reason: vote.reason }, 'participant voted NO');
        // The engine (and the abort reason it logs) hears no connection detail: see noVoteError.
        cb(err ? noVoteError(to, err) : null, vote);
      });
    },
    sendDecision: (to, req, timeoutMs, cb) => {
      timeline.record(req.txnId, {
        atMs: o.nowMs(),
        kind: 'decision-sent',
        participantId: to.id,
        detail: req.outcome.toUpperCase(),
      });
      const span = traces.tracing.on
        ? traces.child('verdict.decision', req.txnId, {
            'verdict.participant_id': to.id,
            'verdict.outcome': req.outcome,
          })
        : null;
      link.decide(to, req, timeoutMs, span?.context ?? traces.contextOf(req.txnId), (err) => {
        span?.end(err ? err.message : undefined);
        gap(err, req.txnId);
        timeline.record(req.txnId, {
          atMs: o.nowMs(),
          kind: err ? 'no-ack' : 'ack',
          participantId: to.id,
          detail: err ? err.message : '',
        });
        // Redelivered with backoff until ACKed (R5); verdict_decision_delivery_retries_total counts these.
        if (err)
          log.debug(
            {
              txnId: req.txnId,
              traceId: traces.traceIdOf(req.txnId),
              participantId: to.id,
              outcome: req.outcome,
              err: err.message,
            },
            'DECISION not acknowledged; retrying later',
          );
        cb(err);
      });
    },
    sendStatus: (to, txnId, timeoutMs, cb) => {
      link.status(to, txnId, timeoutMs, (err, status) => {
        gap(err, txnId);
        timeline.record(txnId, {
          atMs: o.nowMs(),
          kind: 'status',
          participantId: to.id,
          detail: err ? `no answer: ${err.message}` : (status ?? ''),
        });
        if (err)
          log.info(
            { txnId, traceId: traces.traceIdOf(txnId), participantId: to.id, err: err.message },
            'recovery: the status question got no answer; asking again later',
          );
        cb(err, status);
      });
    },
  };
}
