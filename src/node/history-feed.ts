// What feeds a node's transaction history (src/history/): the results of
// applied entries, on every node (decisions, operator acts, a forced
// participant removal on each decision it was owed, sagas through
// ./history-sagas.ts), and the leader's own sightings (PREPARE, vote,
// DECISION sent, ACK), where this node saw them. Watching only: the
// history changes nothing the core does, and it writes off the commit path
// (src/history/store.ts).
//
// Times: a decision's is the leader's clock, logged in the entry; a Forget
// carries none, so it takes the latest time logged before it. A test may
// shift every time the history records by VERDICT_TEST_HISTORY_SHIFT_MS
// (read at start, from the node's own environment) to play yesterday's
// transactions; unset in production.

import type { Logger } from 'pino';
import type { ApplyResult, Decision, HeuristicRecord, RemovedParticipant, Resolution } from '../commit/state.ts';
import type { Entry } from '../raft/types.ts';
import type { HistoryAct, HistoryChange } from '../history/record.ts';
import { decidedChange } from '../history/page.ts';
import { FLUSH_MS, HistoryStore } from '../history/store.ts';
import type { NodeConfig } from './config.ts';
import type { NodeCoreObserver } from './core.ts';
import { NodeStateMachine } from './machine.ts';
import { StartupError } from './startup-error.ts';
import { restoredSagas, sagaChange } from './history-sagas.ts';
import type { SagaTable } from '../saga/state.ts';
import { join } from 'node:path';

export const HISTORY_SHIFT_ENV = 'VERDICT_TEST_HISTORY_SHIFT_MS';
/** Rows of the leader's timeline that the log does not say (the decision and the Forget it does). */
const SEEN_KINDS = new Set(['begin', 'prepare', 'vote', 'proposed', 'decision-sent', 'ack', 'no-ack', 'status']);

/** The test-only time shift from the environment; 0 when unset, refused at start when not an integer. */
export function historyShiftMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[HISTORY_SHIFT_ENV];
  if (raw === undefined || raw === '') return 0;
  const n = Number(raw);
  if (!Number.isSafeInteger(n))
    throw new StartupError(
      `${HISTORY_SHIFT_ENV}=${JSON.stringify(raw)} is not a whole number of milliseconds (for tests; unset it in production)`,
    );
  return n;
}

/** Where decision group `group`'s history lives: group 0's where a node of one group keeps it, the others beside it. */
export function historyDir(dataDir: string, group: number): string {
  // One level down: the data directory's start-up check (src/storage/data-dir.ts) looks at the LevelDBs of raft state,
  // one level deep.
  return group === 0 ? join(dataDir, 'history', 'leveldb') : join(dataDir, 'history', `group-${group}`, 'leveldb');
}

/**
 * Opens decision group `group`'s history (one store per group: ./history-groups.ts), or null when the config turns it
 * off. The node's historyBytesMax is shared out evenly over its `groups` stores, so the node's total stays within it.
 */
export async function openHistory(
  cfg: NodeConfig,
  machine: NodeStateMachine,
  log: Logger,
  group = 0,
  groups = 1,
): Promise<HistoryStore | null> {
  if (!cfg.history) return null;
  const dir = historyDir(cfg.dataDir, group);
  try {
    return await HistoryStore.open(dir, {
      retentionMs: cfg.historyRetentionMs,
      bytesMax: Math.max(1, Math.floor(cfg.historyBytesMax / groups)),
      // Each group's store takes 1/G of the transactions: a write turn G times as long gives its pages as many as one
      // store's, and the node as many LevelDB writes a second as at G = 1 (a read flushes first, so it sees them all).
      flushMs: FLUSH_MS * groups,
      nowMs: () => Date.now(),
      decided: (txnId) => machine.table.lookup(txnId) !== null,
      onError: (err, what) =>
        log.error(
          { err: err.message, what, ...(groups > 1 ? { group } : {}) },
          'transaction history: a store operation failed; the node goes on, the history may miss records',
        ),
    });
  } catch (err) {
    // The history is not the node's state: a node whose history cannot be opened still serves, and says so.
    log.error(
      { dir, err: (err as Error).message, ...(groups > 1 ? { group } : {}) },
      'transaction history: cannot open it; the node runs without a history. Stop the node and move the folder aside to start a new one (it then says which log range it lacks)',
    );
    return null;
  }
}

/**
 * A state machine that tells the history when a snapshot replaced its state
 * (those entries never pass through apply), and when it takes one: the
 * history then writes the records it holds, so a restart from that snapshot
 * finds every entry it covers on disk (the node re-applies only the entries
 * after it).
 */
export class HistoriedMachine extends NodeStateMachine {
  history: HistoryStore | null = null;
  shiftMs = 0;
  /** The saga table, whose sagas a snapshot also holds (./history-sagas.ts). */
  sagas: SagaTable | null = null;

  override snapshot(): Uint8Array {
    void this.history?.flush();
    return super.snapshot();
  }

  override restore(data: Uint8Array, index = 0): void {
    super.restore(data);
    if (this.history === null || index === 0) return;
    const changes: HistoryChange[] = [];
    for (const d of this.table.decisions.values()) changes.push(decideChange(d, true, this.shiftMs));
    for (const [txnId, rs] of this.table.resolutions)
      for (const r of rs) changes.push({ t: 'act', txnId, act: resolveAct(r, this.shiftMs) });
    for (const [txnId, hs] of this.table.heuristics)
      for (const h of hs) changes.push({ t: 'act', txnId, act: heuristicAct(h, this.shiftMs) });
    for (const r of this.table.removed.values())
      for (const txnId of r.owed) changes.push({ t: 'act', txnId, act: removedAct(r, this.shiftMs) });
    if (this.sagas !== null) changes.push(...restoredSagas(this.sagas, index, this.shiftMs));
    this.history.restored(index, changes);
  }
}

/**
 * The core's applied entries and results, into the history. Every entry moves the applied index; a decision goes in as
 * the table's own value and a Forget as its ids, with no change value made for them (every node sees every one).
 */
export function historyObserver(
  history: HistoryStore,
  shiftMs: number,
): Pick<NodeCoreObserver, 'onEntryApplied' | 'onResult'> {
  // The latest time any applied command carried: a Forget's time, about.
  let logAtMs = 0;
  const seen = (atMs: number): void => {
    if (atMs > logAtMs) logAtMs = atMs;
  };
  return {
    onEntryApplied: (entry: Entry) => history.advance(entry.index),
    onResult: (entry: Entry, result: ApplyResult) => {
      // Most results carry a decision, a Forget or nothing for the history: no list is made for them.
      switch (result.t) {
        case 'decide': {
          const d = result.decision;
          seen(d.decidedAtMs);
          history.decided(
            entry.index,
            d,
            result.first,
            d.decidedAtMs && shiftMs !== 0 ? d.decidedAtMs + shiftMs : d.decidedAtMs,
          );
          if (result.resolution) {
            seen(result.resolution.atMs);
            history.apply(entry.index, [{ t: 'act', txnId: d.txnId, act: resolveAct(result.resolution, shiftMs) }]);
          }
          break;
        }
        case 'forget':
          history.forgotten(entry.index, result.txnIds, logAtMs > 0 ? logAtMs + shiftMs : 0);
          break;
        case 'heuristic':
          seen(result.record.atMs);
          if (result.first)
            history.apply(entry.index, [
              { t: 'act', txnId: result.record.txnId, act: heuristicAct(result.record, shiftMs) },
            ]);
          break;
        case 'stage':
          if (result.staging) seen(result.staging.atMs);
          break;
        case 'register':
          seen(result.participant.registeredAtMs);
          break;
        case 'unregister': {
          // participant remove --force: each decision it never acknowledged records who removed it, when and why.
          const forced = result.forced;
          if (forced !== null) {
            seen(forced.atMs);
            const acts = forced.owed.map(
              (txnId): HistoryChange => ({ t: 'act', txnId, act: removedAct(forced, shiftMs) }),
            );
            if (acts.length > 0) history.apply(entry.index, acts);
          }
          break;
        }
        default: {
          const saga = sagaChange(result, entry.index, shiftMs);
          if (saga !== null) history.apply(entry.index, [saga]);
          break;
        }
      }
    },
  };
}

/** A row of what this node saw (the console's timeline event), into the history. */
export function historyRow(
  history: HistoryStore,
  shiftMs: number,
): (txnId: string, e: { atMs: number; kind: string; participantId?: string; detail?: string }) => void {
  // The leader sees about ten rows a transaction: no new number is made for a time that is not shifted.
  return shiftMs === 0
    ? (txnId, e) => {
        if (SEEN_KINDS.has(e.kind)) history.sighting(txnId, e.atMs, e.kind, e.participantId ?? '', e.detail ?? '');
      }
    : (txnId, e) => {
        if (SEEN_KINDS.has(e.kind))
          history.sighting(txnId, e.atMs + shiftMs, e.kind, e.participantId ?? '', e.detail ?? '');
      };
}

function decideChange(d: Decision, first: boolean, shiftMs: number): HistoryChange {
  return decidedChange(d, first, d.decidedAtMs ? d.decidedAtMs + shiftMs : 0);
}

function resolveAct(r: Resolution, shiftMs: number): HistoryAct {
  return {
    kind: 'resolve',
    operator: r.operator,
    reason: r.reason,
    atMs: r.atMs + shiftMs,
    outcome: r.outcome,
    effect: r.decided ? 'decided' : 'confirmed',
    participantId: '',
    gid: '',
    index: r.index,
  };
}

function removedAct(r: RemovedParticipant, shiftMs: number): HistoryAct {
  return {
    kind: 'removed',
    operator: r.operator,
    reason: r.reason,
    atMs: r.atMs + shiftMs,
    outcome: '',
    effect: 'undelivered',
    participantId: r.id,
    gid: '',
    index: r.index,
  };
}

function heuristicAct(h: HeuristicRecord, shiftMs: number): HistoryAct {
  return {
    kind: 'heuristic',
    operator: h.operator,
    reason: h.reason,
    atMs: h.atMs + shiftMs,
    outcome: h.outcome,
    effect: h.kind,
    participantId: h.participantId,
    gid: h.gid,
    index: h.index,
  };
}
