"""The application API of Verdict: begin a transaction, enlist participants,
commit or abort, and ask about outcomes. The Python twin of the TypeScript
SDK's VerdictClient and Transaction (src/client/client.ts, transaction.ts).

A transaction from ``Client.transaction()`` is not begun on the cluster: its
first Commit attempt begins it too, and every later attempt is a plain
Commit, so a leader that did not begin it aborts it rather than preparing it
a second time (R2). When no answer arrives the commit raises
OutcomeUnknownError instead of guessing.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from ._proto import coordinator_pb2 as pb
from .connection import Connection, TlsFiles
from .errors import OutcomeUnknownError, RetriesExhaustedError, VerdictError, invalid_argument
from .ids import check_participant_id, check_txn_id, new_txn_id
from .retry import ANSWERED, REFUSED, BeginRule, classify_failure

#: Room left for the decision's replication after the participants' prepare timeout.
COMMIT_GRACE_MS = 2_000
#: Groups a listing asks at once (G is at most 64).
_LIST_THREADS_MAX = 16

Payload = Union[bytes, str, Dict[str, Any], List[Any], None]

_OUTCOMES = {
    pb.OUTCOME_COMMITTED: "COMMITTED",
    pb.OUTCOME_ABORTED: "ABORTED",
    pb.OUTCOME_IN_PROGRESS: "IN_PROGRESS",
    pb.OUTCOME_UNKNOWN: "UNKNOWN",
}


@dataclass(frozen=True)
class OutcomeResult:
    txn_id: str
    #: COMMITTED, ABORTED, IN_PROGRESS or UNKNOWN.
    outcome: str
    reason: str
    #: The log index of the decision; 0 while undecided.
    decision_index: int


#: What a listing returns when it names no limit (the node's own default), and the most it returns.
LIST_LIMIT_DEFAULT = 1_000
LIST_LIMIT_MAX = 10_000


@dataclass(frozen=True)
class TransactionInfo:
    """A listed transaction: the node's record of it (``info``, a TxnInfo) and the decision group that decides it."""

    group: int
    info: pb.TxnInfo

    @property
    def txn_id(self) -> str:
        return self.info.txn_id

    @property
    def age_ms(self) -> int:
        return self.info.age_ms


def to_outcome_result(txn_id: str, answer: pb.TxnOutcome) -> OutcomeResult:
    if answer.txn_id not in ("", txn_id):
        raise VerdictError("INTERNAL", f"asked about transaction {txn_id}, the cluster answered about {answer.txn_id}")
    outcome = _OUTCOMES.get(answer.outcome)
    if outcome is None:
        # An unset or unknown enum is a protocol error, never read as a guess.
        raise VerdictError("INTERNAL", f"the cluster answered outcome {answer.outcome}")
    return OutcomeResult(txn_id, outcome, answer.reason, answer.decision_index)


def encode_payload(payload: Payload) -> bytes:
    """Bytes as they are, a string as UTF-8, anything else as JSON text (as the TypeScript SDK)."""
    if payload is None:
        return b""
    if isinstance(payload, (bytes, bytearray)):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode("utf-8")
    try:
        return json.dumps(payload, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise invalid_argument(f"the payload cannot be encoded as JSON: {err}") from err


def _check_timeout(timeout_ms: int) -> int:
    if not isinstance(timeout_ms, int) or timeout_ms < 0:
        raise invalid_argument("timeout_ms must be a non-negative integer")
    return timeout_ms


class Transaction:
    """One transaction: enlist participants locally, then one Commit (or Abort) carrying the client-chosen id."""

    def __init__(self, connection: Connection, txn_id: str, timeout_ms: int, begun: bool, parallel_commit: Optional[bool] = None, deadline_at_ms: int = 0, leader_id: str = "") -> None:
        self._connection = connection
        self.txn_id = txn_id
        self.timeout_ms = timeout_ms
        self.deadline_at_ms = deadline_at_ms
        self.leader_id = leader_id
        self.parallel_commit = parallel_commit
        self._enlisted: Dict[str, bytes] = {}
        self._state = "open"
        self._result: Optional[OutcomeResult] = None
        self._begin_rule = BeginRule(begun)

    @property
    def participant_ids(self) -> List[str]:
        return list(self._enlisted)

    def enlist(self, participant_id: str, payload: Payload = None) -> "Transaction":
        """Adds a participant; local only. Its payload is sent to it with PREPARE."""
        check_participant_id(participant_id)
        if self._state != "open":
            raise VerdictError("FAILED_PRECONDITION", f"transaction {self.txn_id} is {self._state}; enlist before commit")
        if participant_id in self._enlisted:
            raise invalid_argument(f'participant "{participant_id}" is already enlisted in {self.txn_id}')
        self._enlisted[participant_id] = encode_payload(payload)
        return self

    def _request(self) -> pb.CommitRequest:
        mode = pb.COMMIT_MODE_DEFAULT if self.parallel_commit is None else (pb.COMMIT_MODE_PARALLEL if self.parallel_commit else pb.COMMIT_MODE_CLASSIC)
        enl = [pb.Enlistment(participant_id=p, payload=v) for p, v in self._enlisted.items()]
        if self._begin_rule.begins:
            return pb.CommitRequest(txn_id=self.txn_id, participants=enl, begin=True, timeout_ms=self.timeout_ms, commit_mode=mode)
        return pb.CommitRequest(txn_id=self.txn_id, participants=enl, begin=False, timeout_ms=0, commit_mode=mode)

    def commit(self, call_timeout_ms: Optional[float] = None) -> OutcomeResult:
        """Asks the cluster to commit; returns the decided outcome (COMMITTED or ABORTED).

        Raises VerdictError when the cluster refuses the request and
        OutcomeUnknownError when no answer came (ask ``outcome(txn_id)`` later).
        Calling it again resends the same request (R7) or returns the known result.
        """
        if self._result is not None:
            return self._result
        if self._state == "aborted":
            raise VerdictError("FAILED_PRECONDITION", f"transaction {self.txn_id} was aborted by this client")
        if not self._enlisted:
            raise invalid_argument(f"transaction {self.txn_id} has no participants; enlist at least one before commit")
        self._state = "committing"
        c = self._connection
        need_ms = self.timeout_ms + COMMIT_GRACE_MS if self.timeout_ms > 0 else 0
        call_ms = max(call_timeout_ms if call_timeout_ms is not None else c.call_timeout_ms, need_ms)
        attempt_ms = max(c.attempt_timeout_ms, need_ms)

        def next_request(failure: str) -> pb.CommitRequest:
            self._begin_rule.attempted(failure)
            return self._request()

        try:
            answer = c.call("Commit", self._request(), call_timeout_ms=call_ms, attempt_timeout_ms=attempt_ms, next_request=next_request)
        except RetriesExhaustedError as err:
            raise OutcomeUnknownError(self.txn_id, str(err)) from None
        except VerdictError as err:
            failure = classify_failure(err.code, err.details.status_reason)
            self._begin_rule.attempted(failure)
            if failure == REFUSED:
                raise
            # INTERNAL, CANCELLED, ...: the request may have been applied.
            raise OutcomeUnknownError(self.txn_id, str(err)) from None
        self._begin_rule.attempted(ANSWERED)
        r = to_outcome_result(self.txn_id, answer)
        if r.outcome not in ("COMMITTED", "ABORTED"):
            raise OutcomeUnknownError(self.txn_id, f"the cluster answered {r.outcome}" + (f": {r.reason}" if r.reason else ""))
        self._result = r
        return r

    def abort(self, reason: str = "") -> OutcomeResult:
        """Asks the cluster to abort; the answer is the outcome, COMMITTED if the abort came too late."""
        unsent = self._begin_rule.begins and self._state == "open"
        self._state = "aborted"
        if unsent:
            # Never sent, so never begun: the cluster knows nothing to abort (presumed abort, R3).
            return OutcomeResult(self.txn_id, "ABORTED", reason or "aborted by the application before commit", 0)
        return to_outcome_result(self.txn_id, self._connection.call("Abort", pb.AbortRequest(txn_id=self.txn_id, reason=reason)))


class Client:
    """A client of one Verdict cluster. ``endpoints``: node addresses (host:port); one reachable node is enough."""

    def __init__(self, endpoints: Sequence[str], *, tls: Optional[TlsFiles] = None, insecure: bool = False, cluster_id: Optional[str] = None, **connection: Any) -> None:
        self.connection = Connection(endpoints, tls=tls, insecure=insecure, cluster_id=cluster_id, **connection)
        self._cluster_id = cluster_id

    def begin(self, txn_id: Optional[str] = None, timeout_ms: int = 0, parallel_commit: Optional[bool] = None) -> Transaction:
        """Begins a transaction on the cluster (one round trip); prefer ``transaction()`` unless the deadline is needed."""
        tid = txn_id if txn_id is not None else new_txn_id()
        check_txn_id(tid)
        _check_timeout(timeout_ms)
        r = self.connection.call("Begin", pb.BeginRequest(txn_id=tid, timeout_ms=timeout_ms))
        if r.txn_id not in ("", tid):
            raise VerdictError("INTERNAL", f"began {tid}, the cluster answered {r.txn_id}")
        return Transaction(self.connection, tid, timeout_ms, True, parallel_commit, r.deadline_at_ms, r.leader_id)

    def transaction(self, txn_id: Optional[str] = None, timeout_ms: int = 0, parallel_commit: Optional[bool] = None) -> Transaction:
        """A new transaction without a round trip: the cluster begins it when its first Commit arrives."""
        tid = txn_id if txn_id is not None else new_txn_id()
        check_txn_id(tid)
        _check_timeout(timeout_ms)
        return Transaction(self.connection, tid, timeout_ms, False, parallel_commit)

    def outcome(self, txn_id: str, participant_id: str = "") -> OutcomeResult:
        """What the cluster's applied state says about ``txn_id`` (R1). With ``participant_id`` (a participant in doubt) an undecided transaction is aborted first (R3)."""
        check_txn_id(txn_id)
        return to_outcome_result(txn_id, self.connection.call("GetOutcome", pb.OutcomeRequest(txn_id=txn_id, participant_id=participant_id)))

    def abort(self, txn_id: str, reason: str = "") -> OutcomeResult:
        """Aborts a transaction by id; answers the outcome, COMMITTED if too late."""
        check_txn_id(txn_id)
        return to_outcome_result(txn_id, self.connection.call("Abort", pb.AbortRequest(txn_id=txn_id, reason=reason)))

    def cluster_id(self) -> str:
        if self._cluster_id is None:
            self._cluster_id = self.status().cluster_id
            # From now on a node's certificate must name this cluster too.
            self.connection.cluster_id = self._cluster_id
        return self._cluster_id

    def connect(self) -> pb.ClusterStatusResponse:
        """Learns the cluster's decision groups and their leaders now (one ClusterStatus), so each group's first
        transaction goes straight to its leader. Optional: without it the client learns them at the first redirect
        that names a group; at G = 1 it changes nothing."""
        return self.connection.connect()

    def status(self) -> pb.ClusterStatusResponse:
        return self.connection.call("ClusterStatus", pb.ClusterStatusRequest())

    def register_participant(self, participant_id: str, endpoint: str, resource_kind: str = "", serves: Sequence[str] = (), call_timeout_ms: Optional[float] = None) -> pb.ParticipantInfo:
        """Registers a participant; ``serves`` lists the optional Participant methods it serves ("Status", "Exchange")."""
        check_participant_id(participant_id)
        req = pb.RegisterParticipantRequest(cluster_id=self.cluster_id(), participant_id=participant_id, endpoint=endpoint, resource_kind=resource_kind, serves=list(serves))
        r = self.connection.call("RegisterParticipant", req, call_timeout_ms=call_timeout_ms)
        if not r.HasField("participant"):
            raise VerdictError("INTERNAL", f"registering {participant_id}: the cluster answered without the participant")
        return r.participant

    def participants(self, with_activity: bool = False) -> List[pb.ParticipantInfo]:
        return list(self.connection.call("ListParticipants", pb.ListParticipantsRequest(with_activity=with_activity)).participants)

    def transactions(
        self,
        *,
        in_flight: bool = False,
        in_doubt: bool = False,
        unacked: bool = False,
        heuristic: bool = False,
        txn_id: str = "",
        limit: int = 0,
        call_timeout_ms: Optional[float] = None,
    ) -> List[TransactionInfo]:
        """Transactions the cluster knows, oldest first, each with its decision group; at most one filter applies.

        ``in_flight`` keeps those still being prepared or delivered, ``in_doubt`` the undecided ones older than the
        cluster's in-doubt threshold, ``unacked`` the decided ones some participant has not acknowledged,
        ``heuristic`` those with a heuristic record or an operator's resolution; ``txn_id`` asks for that one alone.
        """
        if limit < 0:
            raise invalid_argument(f"limit must be 0 (the node's default) or more (got {limit})")
        request = pb.ListTransactionsRequest(in_flight=in_flight, in_doubt=in_doubt, unacked=unacked, heuristic=heuristic, txn_id=txn_id, limit=limit)
        conn = self.connection
        # The groups, once per client; a node that cannot say (an older version) is listed as a cluster of one group.
        if txn_id == "" and not conn.groups_known:
            try:
                conn.connect(call_timeout_ms)
            except VerdictError:
                pass
        if txn_id != "" or conn.groups == 1:
            return [TransactionInfo(conn.group_of(t.txn_id), t) for t in conn.call("ListTransactions", request, call_timeout_ms=call_timeout_ms).transactions]
        # Decision groups: what a group's leader tracks is that leader's to say, so each group is asked of its own
        # leader, and the lists are merged, oldest first, to the limit (the node's own: 1,000 when none is given).
        groups = conn.groups
        with ThreadPoolExecutor(max_workers=min(groups, _LIST_THREADS_MAX)) as pool:
            each = list(pool.map(lambda g: conn.call("ListTransactions", request, call_timeout_ms=call_timeout_ms, group=g).transactions, range(groups)))
        listed = [TransactionInfo(conn.group_of(t.txn_id), t) for ts in each for t in ts]
        listed.sort(key=lambda t: -t.age_ms)
        return listed[: min(limit, LIST_LIMIT_MAX) if limit > 0 else LIST_LIMIT_DEFAULT]

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
