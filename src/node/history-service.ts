// RaftNode.History: this node's transaction history (src/history/), read by
// `verdict txn show`, `verdict txn list --since ...` and `verdict saga show`
// (a saga the table forgot) on any node. Every node answers from its own
// history; the request's fields were checked at the edge (./limits.ts).

import * as grpc from '@grpc/grpc-js';
import { sagaKey } from '../history/record.ts';
import type { HistoryStore } from '../history/store.ts';
import type { HistoryPageWire, HistoryQueryWire } from '../transport/proto.ts';

export function historyApi(
  nodeId: string,
  history: HistoryStore | null,
): { History: (call: grpc.ServerUnaryCall<HistoryQueryWire, HistoryPageWire>, cb: grpc.sendUnaryData<HistoryPageWire>) => void } {
  return {
    History: (call, cb) => {
      const empty = { nodeId, records: [], truncated: false, lacks: [], appliedIndex: 0, oldestAtMs: 0, bytes: 0, enabled: false };
      if (history === null) return cb(null, empty);
      const r = call.request;
      history
        .query({
          // A saga's record is kept under its own key (src/history/record.ts sagaKey).
          txnId: r.sagaId ? sagaKey(r.sagaId) : r.txnId,
          sinceAtMs: r.sinceAtMs,
          untilAtMs: r.untilAtMs,
          participantId: r.participantId,
          ...(r.outcome === 'commit' || r.outcome === 'abort' ? { outcome: r.outcome } : {}),
          ...(r.kind === 'txn' || r.kind === 'saga' ? { kind: r.kind } : {}),
          limit: r.limit || undefined,
        })
        .then(
          // A transaction's record has no saga: the wire says so with an unset message.
          (a) => cb(null, { ...a, records: a.records.map((rec) => ({ ...rec, saga: rec.saga ?? null })), nodeId, enabled: true }),
          (err: Error) => cb({ code: grpc.status.UNAVAILABLE, details: `the history could not be read: ${err.message}` }),
        );
    },
  };
}
