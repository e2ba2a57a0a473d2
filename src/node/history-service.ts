// RaftNode.History: this node's transaction history (src/history/), read by
// `verdict txn show`, `verdict txn list --since ...` and `verdict saga show`
// (a saga the table forgot) on any node. Every node answers from its own
// history; the request's fields were checked at the edge (./limits.ts).
//
// A saga's record holds its inputs and outputs, which are its starter's and
// the admins' to read (as SagaStatus, ./saga-service.ts): under TLS one saga
// asked by id is refused to anyone else, and a search leaves out the sagas
// the caller did not start.
//
// With decision groups the node reads every group's history through
// ./history-groups.ts: one id from its group's, a search merged over all of
// them, each record naming its group.

import * as grpc from '@grpc/grpc-js';
import { sagaKey } from '../history/record.ts';
import type { GroupHistories } from './history-groups.ts';
import type { HistoryPageWire, HistoryQueryWire } from '../transport/proto.ts';
import type { Access } from '../transport/auth.ts';
import type { AuthenticatedCall } from '../transport/tls.ts';
import { clientOf } from './limits.ts';

export function historyApi(
  nodeId: string,
  history: GroupHistories | null,
  access: Access,
): {
  History: (
    call: grpc.ServerUnaryCall<HistoryQueryWire, HistoryPageWire>,
    cb: grpc.sendUnaryData<HistoryPageWire>,
  ) => void;
} {
  return {
    History: (call, cb) => {
      const empty = {
        nodeId,
        records: [],
        truncated: false,
        lacks: [],
        appliedIndex: 0,
        oldestAtMs: 0,
        bytes: 0,
        enabled: false,
        groups: history?.groups ?? 1,
      };
      if (history === null || !history.enabled) return cb(null, empty);
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
          (a) => {
            const caller = call as unknown as AuthenticatedCall & { getPeer(): string };
            const one = a.records[0]?.saga;
            if (r.sagaId && one !== undefined) {
              const refused = access.starterOrAdmin(caller, one.owner, `the history of saga ${one.sagaId}`);
              if (refused !== null) return cb(refused);
            }
            const me = access.seesAll(caller) ? null : clientOf(caller);
            const records = a.records.filter((rec) => me === null || rec.saga === undefined || rec.saga.owner === me);
            // A transaction's record has no saga: the wire says so with an unset message.
            cb(null, {
              ...a,
              records: records.map((rec) => ({ ...rec, saga: rec.saga ?? null })),
              lacks: a.lacks,
              groups: a.groups,
              nodeId,
              enabled: true,
            });
          },
          (err: Error) =>
            cb({ code: grpc.status.UNAVAILABLE, details: `the history could not be read: ${err.message}` }),
        );
    },
  };
}
