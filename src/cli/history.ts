// `verdict txn list --since/--until/--participant/--outcome` and the history
// part of `verdict txn show`: a node's transaction history (RaftNode.History),
// read from the first endpoint that answers. Every node keeps its own, so
// this works on a follower, and after every node restarted.

import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import { outcomeOfDecision } from '../domain/protocol.ts';
import type { HistoryPageWire, HistoryQueryWire } from '../transport/proto.ts';

type HistoryRecord = HistoryPageWire['records'][number];
import { CommandError } from './args.ts';
import { clientCredentials } from './client-credentials.ts';
import { clientTimeoutMs, unreachableMessage, unreachableReason } from './reach.ts';

/** The history page of the first endpoint that answers, in the order given. */
export async function readHistory(addrs: readonly string[], req: Partial<HistoryQueryWire>): Promise<HistoryPageWire> {
  const failures = new Map<string, string>();
  const timeoutMs = clientTimeoutMs();
  for (const address of addrs) {
    const c = new RaftNodeClient(address, clientCredentials());
    try {
      return await c.history(req, Math.max(timeoutMs, 5_000));
    } catch (err) {
      const e = err as ServiceError;
      if (e.code !== grpcStatus.UNAVAILABLE && e.code !== grpcStatus.DEADLINE_EXCEEDED) {
        const why =
          e.code === grpcStatus.UNIMPLEMENTED
            ? 'this node is of a version without a transaction history'
            : (e.details ?? e.message);
        throw new CommandError(`${address}: ${why}`);
      }
      failures.set(address, unreachableReason(e, timeoutMs));
    } finally {
      c.close();
    }
  }
  throw new CommandError(unreachableMessage(failures, timeoutMs));
}

/** What a page says of its own gaps: off, or lacking ranges of the log. */
export function historyNotes(page: HistoryPageWire): string[] {
  const notes: string[] = [];
  if (!page.enabled)
    notes.push(
      `node ${page.nodeId} keeps no transaction history ("history": false in its config, or its history could not be opened: see its log)`,
    );
  for (const r of page.lacks)
    notes.push(
      `node ${page.nodeId}'s history lacks ${page.groups > 1 ? `group ${r.group}'s ` : ''}log entries ${r.firstIndex}-${r.lastIndex}: it installed a snapshot covering them (ask another node)`,
    );
  return notes;
}

const iso = (ms: number): string => (ms > 0 ? new Date(ms).toISOString() : '-');
/** A history record's decision as an outcome (COMMITTED, ABORTED), or UNDECIDED. */
export function historyOutcome(decision: string): string {
  if (decision === 'commit' || decision === 'abort') return outcomeOfDecision(decision);
  return decision === '' ? 'UNDECIDED' : decision;
}

/** The rows of `txn list` in history mode; with more than one decision group, a GROUP column after the id. */
export function historyRows(records: readonly HistoryRecord[], groups = 1): string[][] {
  const rows = withGroups(records, groups, historyRowsOf(records));
  return rows;
}

/** A GROUP column after the first, from each record's group, when the cluster has more than one. */
function withGroups(records: readonly HistoryRecord[], groups: number, rows: string[][]): string[][] {
  if (groups <= 1) return rows;
  return rows.map((row, i) => [row[0], i === 0 ? 'GROUP' : String(records[i - 1].group), ...row.slice(1)]);
}

function historyRowsOf(records: readonly HistoryRecord[]): string[][] {
  const rows = [['TXN', 'OUTCOME', 'DECIDED AT', 'INDEX', 'PARTICIPANTS', 'ACKED', 'ACTS', 'REASON']];
  for (const r of records) {
    if (r.saga) {
      // A saga's record: its state for an outcome, when it started, each step's service and status.
      const g = r.saga;
      const steps = g.steps.map((d) => `${d.service}:${d.status}`).join(',');
      rows.push([r.txnId, g.state.toUpperCase(), iso(g.startedAtMs), '', steps, '-', '', g.type]);
      continue;
    }
    const ps = r.participants.map((p) => `${p.participantId}:${p.vote || '-'}`).join(',');
    const acked =
      r.outcome === 'abort'
        ? 'not needed'
        : r.participants.every((p) => p.acked)
          ? 'all'
          : `${r.participants.filter((p) => p.acked).length}/${r.participants.length}`;
    const acts = r.acts
      .map((a) =>
        a.kind === 'resolve'
          ? `resolved-by:${a.operator}`
          : a.kind === 'removed'
            ? `${a.participantId}:removed-by:${a.operator}`
            : `${a.participantId}:${a.effect}`,
      )
      .join(',');
    rows.push([
      r.txnId,
      historyOutcome(r.outcome),
      iso(r.decidedAtMs),
      String(r.decisionIndex || ''),
      ps,
      acked,
      acts,
      r.reason,
    ]);
  }
  return rows;
}

/**
 * Each participant removed with `participant remove --force` while the
 * decision was owed to it, as its row says it: "by WHO at TIME: WHY; no
 * longer delivered".
 */
export function removalsOf(r: Pick<HistoryRecord, 'acts'>): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of r.acts) if (a.kind === 'removed') out.set(a.participantId, removalText(a));
  return out;
}

/** A forced removal as a participant's row says it (from the history, or from the leader's ListTransactions). */
export function removalText(a: { operator: string; atMs: number; reason: string }): string {
  return `removed with --force by ${a.operator} at ${iso(a.atMs)}: ${a.reason}; no longer delivered`;
}

/** The lines of `txn show`'s history part. */
export function historyLines(r: HistoryRecord, nodeId: string, groups = 1): { lines: string[]; tables: string[][][] } {
  const lines = [
    `history      on node ${nodeId}${groups > 1 ? ` (group ${r.group})` : ''}: ${historyOutcome(r.outcome)} at ${iso(r.decidedAtMs)} (decision index ${r.decisionIndex || '-'})` +
      (r.forgottenIndex
        ? `; every participant acknowledged by about ${iso(r.forgottenAtMs)} (index ${r.forgottenIndex})`
        : ''),
  ];
  const tables: string[][][] = [];
  // A participant removed with --force while the decision was owed to it: its row says who removed it, when and why.
  const removals = removalsOf(r);
  const ps = [['PARTICIPANT', 'VOTE', 'ACKED', 'ACK SEEN AT', ...(removals.size > 0 ? ['REMOVED'] : [])]];
  for (const p of r.participants) {
    const row = [
      p.participantId,
      p.vote || '-',
      p.acked ? 'yes' : r.outcome === 'abort' ? 'not needed' : 'no',
      iso(p.ackedAtMs),
    ];
    if (removals.size > 0) row.push(removals.get(p.participantId) ?? '');
    ps.push(row);
  }
  tables.push(ps);
  if (r.acts.length > 0) {
    const acts = [['ACT', 'EFFECT', 'OUTCOME', 'BY', 'AT', 'PARTICIPANT', 'REASON']];
    for (const a of r.acts)
      acts.push([a.kind, a.effect, a.outcome, a.operator, iso(a.atMs), a.participantId || '-', a.reason]);
    tables.push(acts);
  }
  if (r.rows.length > 0) {
    const rows = [['AT', 'WHAT', 'PARTICIPANT', 'TIMES', 'DETAIL']];
    for (const x of r.rows)
      rows.push([
        iso(x.atMs),
        x.kind,
        x.participantId || '-',
        x.count > 1 ? `${x.count} (last ${iso(x.lastAtMs)})` : '1',
        x.detail,
      ]);
    tables.push(rows);
  }
  return { lines, tables };
}
