"""The participant runtime: serves verdict.participant.Participant (Prepare,
Decide, Status), registers with the cluster, keeps a durable journal and
resolves transactions left in doubt by asking the cluster.

Per transaction the state goes none -> prepared -> committed | aborted, or
none -> refused (a NO vote, or a Status question before any PREPARE) and
none -> aborted (an ABORT before its PREPARE). The rules are proto/
participant.proto's, point by point:

* PREPARE: a transaction aborted or refused here gets NO; prepared or
  committed gets YES again (R7). Otherwise the resource prepares, the journal
  records "prepared" with fsync, and only then the YES leaves (R4).
* DECISION: prepared -> apply, journal, ACK; the same outcome again -> ACK;
  nothing known and ABORT -> remember the abort durably, ACK; nothing known
  and COMMIT, or the other outcome already applied -> FAILED_PRECONDITION.
* Status: a transaction neither prepared nor decided is first recorded as
  refused, durably, then answered REFUSED.
* In doubt (prepared, no DECISION after ``in_doubt_after_s``, or after a
  restart): ask Coordinator.GetOutcome with this participant's id, with
  backoff, until COMMITTED or ABORTED, however long that takes.
"""

from __future__ import annotations

import json
import queue
import random
import signal
import sys
import threading
import time
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import grpc

from ._proto import coordinator_pb2 as cpb
from ._proto import participant_pb2 as ppb
from ._proto import participant_pb2_grpc
from .callers import NodeCallers, cluster_members, node_caller_problem
from .client import Client, to_outcome_result
from .connection import TlsFiles
from .errors import VerdictError
from .ids import TXN_ID_PATTERN, check_participant_id
from .journal import Journal
from .resource import Resource
from .tcc import ReserveWatcher

#: The optional Participant methods this runtime serves (RegisterParticipantRequest.serves).
SERVES = ("Exchange", "Status")
#: Requests of one Exchange stream being worked on at once; the stream is read no further until one is answered (back-pressure).
EXCHANGE_IN_FLIGHT_MAX = 256
#: In-doubt transactions asked about in one GetOutcomes at most (the protocol's bound).
OUTCOMES_BATCH_MAX = 1024
#: Answers sent in one AnswerBatch at most.
ANSWER_BATCH_MAX = 256
IN_DOUBT_AFTER_S = 2.0
#: How often acts done by hand (heuristic.py) not yet acknowledged by the cluster are reported.
HEURISTIC_REPORT_EVERY_S = 5.0
#: How often the reserves of a TCC resource are looked at for an expired TTL.
RESERVE_SWEEP_EVERY_S = 0.5
ASK_PAUSE_MIN_S = 0.2
ASK_PAUSE_MAX_S = 10.0
Log = Callable[..., None]


def json_log(event: str, **fields: Any) -> None:
    """One structured line on stderr, with the transaction and participant ids when there are any."""
    sys.stderr.write(json.dumps({"at_ms": int(time.time() * 1000), "event": event, **fields}, default=str) + "\n")
    sys.stderr.flush()


class Refusal(Exception):
    """An answer with a gRPC status: FAILED_PRECONDITION and the reason."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


@dataclass
class _Doubt:
    next_ask_at: float
    tries: int = 0


class Engine:
    """The participant's state machine over a journal and a resource; thread-safe, one lock per transaction."""

    def __init__(self, cluster_id: str, participant_id: str, journal: Journal, resource: Resource, log: Log = json_log, in_doubt_after_s: float = IN_DOUBT_AFTER_S) -> None:
        check_participant_id(participant_id)
        self.cluster_id = cluster_id
        self.participant_id = participant_id
        self.journal = journal
        self.resource = resource
        self.log = log
        self.in_doubt_after_s = in_doubt_after_s
        self._locks_guard = threading.Lock()
        #: Per transaction being worked on: its lock and how many requests use it.
        self._locks: Dict[str, List[Any]] = {}
        self._doubts_guard = threading.Lock()
        self._doubts: Dict[str, _Doubt] = {}
        now = time.monotonic()
        for e in journal.entries():
            resource.restore(e.txn_id, e.state, e.payload)
            if e.state == "prepared":
                # After a restart a prepared transaction is in doubt at once.
                self._doubts[e.txn_id] = _Doubt(now)
        # Prepared in the resource but never journalled: no YES left for it, so the cluster aborts it (R3); ask all the same.
        for txn_id in resource.prepared_here():
            if journal.get(txn_id) is None:
                self._doubts.setdefault(txn_id, _Doubt(now))

    @contextmanager
    def _txn(self, txn_id: str) -> Iterator[None]:
        """One transaction's requests run one at a time; others never wait on it (a PREPARE blocked in its
        resource must not hold up the DECISION of the transaction it waits for). A lock lives while it is used."""
        with self._locks_guard:
            entry = self._locks.get(txn_id)
            if entry is None:
                entry = self._locks[txn_id] = [threading.Lock(), 0]
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._locks_guard:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._locks[txn_id]

    def _check(self, cluster_id: str, txn_id: str, participant_id: str) -> None:
        if cluster_id != self.cluster_id:
            raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, f'cluster "{cluster_id[:64]}" is not this participant\'s cluster "{self.cluster_id}"')
        if participant_id != self.participant_id:
            raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, f'participant "{participant_id[:64]}" is not this participant ("{self.participant_id}")')
        if not TXN_ID_PATTERN.match(txn_id):
            raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "txn_id must be 1-128 of [A-Za-z0-9_.:-], starting with a letter or digit")

    def prepare(self, cluster_id: str, txn_id: str, participant_id: str, payload: bytes, timeout_ms: int = 0) -> "tuple[bool, str]":
        """PREPARE -> (YES?, reason). YES only once "prepared" is durable in the journal (R4)."""
        self._check(cluster_id, txn_id, participant_id)
        with self._txn(txn_id):
            e = self.journal.get(txn_id)
            if e is not None:
                if e.state in ("prepared", "committed"):
                    return True, ""
                return False, f"{txn_id} is {e.state} here"
            try:
                reason = self.resource.prepare(txn_id, payload, timeout_ms)
            except Exception as err:  # noqa: BLE001 - a resource failure is a NO vote with its reason
                self.resource.rollback(txn_id)
                reason = f"the resource failed to prepare: {err}"
            if reason is not None:
                # Remembered durably, so a Status question or a later PREPARE of it is answered the same.
                self.journal.record(txn_id, "refused")
                self.log("vote", txn_id=txn_id, participant_id=self.participant_id, vote="NO", reason=reason)
                return False, reason
            try:
                self.journal.record(txn_id, "prepared", payload)
            except BaseException:
                # No YES without the journal's record (R4): release what the resource holds, and answer with the error.
                self.resource.rollback(txn_id)
                raise
            with self._doubts_guard:
                self._doubts[txn_id] = _Doubt(time.monotonic() + self.in_doubt_after_s)
            self.log("vote", txn_id=txn_id, participant_id=self.participant_id, vote="YES")
            return True, ""

    def vote(self, txn_id: str, yes: bool, reason: str) -> ppb.Vote:
        """The VOTE message; a YES carries what is left of a TCC reserve's TTL (0: none given, shown unknown)."""
        ttl_ms = 0
        if yes:
            try:
                read = getattr(self.resource, "reserve_ttl_ms", None)
                ttl_ms = (read(txn_id) if read is not None else None) or 0
            except Exception as err:  # noqa: BLE001 - the TTL is for operators' eyes; the YES stands without it
                self.log("reserve-ttl-unread", txn_id=txn_id, participant_id=self.participant_id, error=str(err)[:512])
        return ppb.Vote(
            txn_id=txn_id,
            participant_id=self.participant_id,
            vote=ppb.VOTE_YES if yes else ppb.VOTE_NO,
            reason=reason,
            reserve_ttl_ms=ttl_ms,
        )

    def decide(self, cluster_id: str, txn_id: str, participant_id: str, commit: bool, source: str = "decision") -> None:
        """DECISION: returns once the outcome is applied and durable (then ACK), or raises Refusal."""
        self._check(cluster_id, txn_id, participant_id)
        to = "committed" if commit else "aborted"
        with self._txn(txn_id):
            e = self.journal.get(txn_id)
            state = e.state if e is not None else None
            if state == to:
                return
            if state in ("committed", "aborted"):
                raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, f"{txn_id} is already {state} here; a decided outcome never changes")
            if state != "prepared":
                if commit:
                    raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, f"COMMIT of {txn_id}, never prepared here")
                # Presumed abort: remember it so a later PREPARE gets NO, and release any work held for it.
                self.resource.rollback(txn_id)
                self.journal.record(txn_id, "aborted")
                self.log("decided", txn_id=txn_id, participant_id=self.participant_id, outcome="ABORTED", source=source, prepared=False)
                return
            if commit:
                self.resource.commit(txn_id)
            else:
                self.resource.rollback(txn_id)
            self.journal.record(txn_id, to, e.payload if (commit and e is not None) else b"")
            with self._doubts_guard:
                self._doubts.pop(txn_id, None)
            self.log("decided", txn_id=txn_id, participant_id=self.participant_id, outcome=to.upper(), source=source, prepared=True)

    def status(self, cluster_id: str, txn_id: str, participant_id: str) -> int:
        self._check(cluster_id, txn_id, participant_id)
        with self._txn(txn_id):
            e = self.journal.get(txn_id)
            if e is None:
                # Not prepared, and never will be: the refusal is durable before the answer.
                e = self.journal.record(txn_id, "refused")
            return {
                "prepared": ppb.TXN_STATUS_PREPARED,
                "committed": ppb.TXN_STATUS_COMMITTED,
                "aborted": ppb.TXN_STATUS_ABORTED,
                "refused": ppb.TXN_STATUS_REFUSED,
            }[e.state]

    def in_doubt(self) -> List[str]:
        return [e.txn_id for e in self.journal.entries() if e.state == "prepared"]

    def due(self, now: float) -> List[str]:
        with self._doubts_guard:
            return [t for t, d in self._doubts.items() if d.next_ask_at <= now]

    def asked(self, txn_id: str, now: float) -> None:
        """No outcome yet for txn_id: ask again after a capped, jittered backoff."""
        with self._doubts_guard:
            d = self._doubts.get(txn_id)
            if d is None:
                return
            d.tries += 1
            cap = min(ASK_PAUSE_MAX_S, ASK_PAUSE_MIN_S * 2 ** min(d.tries, 16))
            d.next_ask_at = now + cap / 2 + random.random() * cap / 2

    def forget_doubt(self, txn_id: str) -> None:
        with self._doubts_guard:
            self._doubts.pop(txn_id, None)


class _ExchangeStream:
    """One Exchange stream's answers: a bounded number of requests in flight, answered as each is done.

    It ends when the leader stops sending and every request taken is
    answered, or, when closed, once those in flight are answered: then with
    a last ``AnswerBatch(closing=True)``.
    """

    def __init__(self) -> None:
        self.slots = threading.BoundedSemaphore(EXCHANGE_IN_FLIGHT_MAX)
        self.farewell_sent = threading.Event()
        self._answers: "queue.Queue[Any]" = queue.Queue()
        self._lock = threading.Lock()
        self._pending = 0
        self._reading_done = False
        self._closing = False
        self._ended = False

    def take(self) -> bool:
        """A request is taken to be answered; False when the stream is closing."""
        with self._lock:
            if self._closing:
                return False
            self._pending += 1
            return True

    def finished(self, answer: Optional[ppb.ExchangeAnswer]) -> None:
        if answer is not None:
            self._answers.put(answer)
        self.slots.release()
        with self._lock:
            self._pending -= 1
            self._maybe_end()

    def reading_done(self) -> None:
        with self._lock:
            self._reading_done = True
            self._maybe_end()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            self._maybe_end()

    def _maybe_end(self) -> None:
        """Called under the lock: the end marker goes after the last answer."""
        if self._ended or self._pending > 0 or not (self._reading_done or self._closing):
            return
        self._ended = True
        self._answers.put(_FAREWELL if self._closing else None)

    def batches(self) -> Iterator[ppb.AnswerBatch]:
        out: List[ppb.ExchangeAnswer] = []
        while True:
            item = self._answers.get() if not out else self._next_now()
            if isinstance(item, ppb.ExchangeAnswer):
                out.append(item)
                if len(out) < ANSWER_BATCH_MAX:
                    continue
                item = _NOTHING_NOW
            if out:
                yield ppb.AnswerBatch(answers=out)
                out = []
            if item is None:
                return
            if item is _FAREWELL:
                yield ppb.AnswerBatch(closing=True)
                self.farewell_sent.set()
                return

    def _next_now(self) -> Any:
        try:
            return self._answers.get_nowait()
        except queue.Empty:
            return _NOTHING_NOW


#: Markers in an Exchange stream's queue: the participant is closing; nothing more is there now.
_FAREWELL = object()
_NOTHING_NOW = object()


class _Servicer(participant_pb2_grpc.ParticipantServicer):
    def __init__(self, engine: Engine, node_only: bool, workers: Optional[futures.ThreadPoolExecutor] = None, callers: Optional[NodeCallers] = None) -> None:
        self.engine = engine
        self.node_only = node_only
        #: With TLS, who may call (the node mark and membership); without it only the node mark is checked.
        self.callers = callers
        #: Runs the requests of Exchange streams, so a slow PREPARE does not hold up a DECISION behind it.
        self.workers = workers if workers is not None else futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="verdict-exchange")
        self._streams_guard = threading.Lock()
        self._streams: "set[_ExchangeStream]" = set()
        #: Set by end_exchanges: a stream opened afterwards is closed at once.
        self._closing = False

    def _guard(self, context: grpc.ServicerContext) -> None:
        """Under TLS, PREPARE/DECISION/Status are taken only from a certificate with the node mark of this cluster (R8)."""
        if not self.node_only:
            return
        subject: Optional[str] = None
        for v in context.auth_context().get("x509_subject", []):
            subject = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        problem = self.callers.problem(subject) if self.callers is not None else node_caller_problem(subject, self.engine.cluster_id)
        if problem is not None:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, problem)

    def _internal(self, context: grpc.ServicerContext, what: str, txn_id: str, err: Exception) -> None:
        """A failure of the journal or the resource: logged, and answered INTERNAL with the reason (never a stack trace)."""
        self.engine.log("failed", txn_id=txn_id, participant_id=self.engine.participant_id, what=what, error=str(err)[:512])
        context.abort(grpc.StatusCode.INTERNAL, f"{what} of {txn_id} failed here: {str(err)[:512]}")

    def Prepare(self, request: ppb.PrepareRequest, context: grpc.ServicerContext) -> ppb.Vote:
        self._guard(context)
        try:
            yes, reason = self.engine.prepare(request.cluster_id, request.txn_id, request.participant_id, request.payload, request.timeout_ms)
        except Refusal as r:
            context.abort(r.code, r.details)
        except Exception as err:  # noqa: BLE001
            self._internal(context, "PREPARE", request.txn_id, err)
        return self.engine.vote(request.txn_id, yes, reason)

    def Decide(self, request: ppb.DecideRequest, context: grpc.ServicerContext) -> ppb.Ack:
        self._guard(context)
        if request.decision not in (ppb.DECISION_COMMIT, ppb.DECISION_ABORT):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "decision must be DECISION_COMMIT or DECISION_ABORT")
        try:
            self.engine.decide(request.cluster_id, request.txn_id, request.participant_id, request.decision == ppb.DECISION_COMMIT)
        except Refusal as r:
            self.engine.log("refused-decision", txn_id=request.txn_id, participant_id=self.engine.participant_id, reason=r.details)
            context.abort(r.code, r.details)
        except Exception as err:  # noqa: BLE001
            self._internal(context, "DECISION", request.txn_id, err)
        return ppb.Ack(txn_id=request.txn_id, participant_id=self.engine.participant_id)

    def _answer(self, r: ppb.ExchangeRequest) -> ppb.ExchangeAnswer:
        """One request of an Exchange stream: what the unary call would have answered, or its status as an ExchangeError."""
        try:
            which = r.WhichOneof("body")
            if which == "prepare":
                q = r.prepare
                yes, reason = self.engine.prepare(q.cluster_id, q.txn_id, q.participant_id, q.payload, q.timeout_ms)
                vote = self.engine.vote(q.txn_id, yes, reason)
                return ppb.ExchangeAnswer(id=r.id, vote=vote)
            if which == "decision":
                d = r.decision
                if d.decision not in (ppb.DECISION_COMMIT, ppb.DECISION_ABORT):
                    raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "decision must be DECISION_COMMIT or DECISION_ABORT")
                try:
                    self.engine.decide(d.cluster_id, d.txn_id, d.participant_id, d.decision == ppb.DECISION_COMMIT)
                except Refusal as ref:
                    self.engine.log("refused-decision", txn_id=d.txn_id, participant_id=self.engine.participant_id, reason=ref.details)
                    raise
                return ppb.ExchangeAnswer(id=r.id, ack=ppb.Ack(txn_id=d.txn_id, participant_id=self.engine.participant_id))
            raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "an exchange request carries a prepare or a decision")
        except Refusal as ref:
            return ppb.ExchangeAnswer(id=r.id, error=ppb.ExchangeError(code=ref.code.value[0], details=ref.details))
        except Exception as err:  # noqa: BLE001 - a resource failure is this request's error, not the stream's
            return ppb.ExchangeAnswer(id=r.id, error=ppb.ExchangeError(code=grpc.StatusCode.INTERNAL.value[0], details=str(err)[:512]))

    def Exchange(self, request_iterator: Iterator[ppb.ExchangeBatch], context: grpc.ServicerContext) -> Iterator[ppb.AnswerBatch]:
        """The leader's stream of PREPAREs and DECISIONs: each answered by id as soon as it is done, in any order.

        When the participant closes (``end_exchanges``) the stream takes no
        more requests, sends the answers of those in flight, and ends with
        ``AnswerBatch(closing=True)``: the leader then lists the participant
        as closed rather than disconnected.
        """
        self._guard(context)
        self.engine.log("exchange-opened", participant_id=self.engine.participant_id, peer=context.peer())
        stream = _ExchangeStream()
        with self._streams_guard:
            if self._closing:
                stream.close()
            self._streams.add(stream)
        try:
            threading.Thread(target=self._read_exchange, args=(request_iterator, stream), name="verdict-exchange-read", daemon=True).start()
            yield from stream.batches()
        finally:
            with self._streams_guard:
                self._streams.discard(stream)

    def _read_exchange(self, request_iterator: Iterator[ppb.ExchangeBatch], stream: "_ExchangeStream") -> None:
        try:
            for batch in request_iterator:
                for r in batch.requests:
                    stream.slots.acquire()
                    if not stream.take():
                        # Closing: not taken, not answered; the leader sends it again to whoever serves next.
                        stream.slots.release()
                        continue
                    self.workers.submit(lambda r=r: stream.finished(self._answer(r)))
        except grpc.RpcError:
            pass
        except RuntimeError:
            # The workers were shut down under a request being taken: the participant is stopping.
            stream.finished(None)
        finally:
            stream.reading_done()

    def end_exchanges(self, timeout_s: float) -> int:
        """Closes every open Exchange stream, saying so to the leader; waits at most ``timeout_s`` for each to send its last batch."""
        with self._streams_guard:
            self._closing = True
            streams = list(self._streams)
        for s in streams:
            s.close()
        deadline = time.monotonic() + timeout_s
        said = 0
        for s in streams:
            if s.farewell_sent.wait(max(0.0, deadline - time.monotonic())):
                said += 1
        return said

    def Status(self, request: ppb.StatusRequest, context: grpc.ServicerContext) -> ppb.StatusAnswer:
        self._guard(context)
        try:
            status = self.engine.status(request.cluster_id, request.txn_id, request.participant_id)
        except Refusal as r:
            context.abort(r.code, r.details)
        except Exception as err:  # noqa: BLE001
            self._internal(context, "Status", request.txn_id, err)
        return ppb.StatusAnswer(txn_id=request.txn_id, participant_id=self.engine.participant_id, status=status)


class Participant:
    """A running participant: the gRPC server, registration and the in-doubt resolver.

    ``endpoint``: the address the nodes dial (host:port); ``listen``: what the
    server binds (default: the endpoint). TLS: ``tls`` holds the cluster CA and
    this participant's certificate (OU=<cluster id>, CN=<participant id>); the
    server then requires a client certificate with the node mark. Plaintext
    only with ``insecure=True``.
    """

    def __init__(
        self,
        *,
        participant_id: str,
        nodes: Sequence[str],
        data_dir: str,
        resource: Resource,
        endpoint: str,
        listen: Optional[str] = None,
        cluster_id: Optional[str] = None,
        tls: Optional[TlsFiles] = None,
        insecure: bool = False,
        log: Log = json_log,
        in_doubt_after_s: float = IN_DOUBT_AFTER_S,
        max_workers: int = 16,
    ) -> None:
        check_participant_id(participant_id)
        self.client = Client(nodes, tls=tls, insecure=insecure, cluster_id=cluster_id)
        self.participant_id = participant_id
        self.endpoint = endpoint
        self.listen = listen or endpoint
        self.resource = resource
        self.log = log
        self.tls = tls
        self.journal = Journal(data_dir)
        self.engine = Engine(cluster_id or "", participant_id, self.journal, resource, log, in_doubt_after_s)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
        self._workers = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="verdict-exchange")
        self._nodes = list(dict.fromkeys(nodes))
        self.callers: Optional[NodeCallers] = None
        if tls is not None:
            self.callers = NodeCallers(lambda: self.engine.cluster_id, self._members, log)
        self._servicer = _Servicer(self.engine, tls is not None, self._workers, self.callers)
        participant_pb2_grpc.add_ParticipantServicer_to_server(self._servicer, self._server)
        self._stopped = threading.Event()
        self._resolver = threading.Thread(target=self._resolve_loop, name="verdict-in-doubt", daemon=True)
        #: Whether the cluster answers GetOutcomes (a cluster that answers UNIMPLEMENTED is asked one by one).
        self._batched = True
        #: GetOutcomes' per-id UNAVAILABLE made the participant ask the cluster's groups (once).
        self._asked_groups = False
        self.port = 0
        #: A TCC resource whose reserves may carry a TTL: expired ones are settled through the cluster (tcc.ReserveWatcher).
        self.reserve_watcher: Optional[ReserveWatcher] = None
        if callable(getattr(resource, "expired", None)):
            self.reserve_watcher = ReserveWatcher(
                participant_id=participant_id,
                resource=resource,
                ask_abort=self._ask_abort,
                prepared=self._prepared_here,
                decide=lambda txn_id, commit: self.engine.decide(self.engine.cluster_id, txn_id, participant_id, commit, source="tcc-expiry"),
                log=log,
            )

    def start(self, register_timeout_s: float = 60.0) -> "Participant":
        """Learns the cluster id if not given, serves, registers (retried until a leader takes it) and starts resolving what is in doubt."""
        if self.engine.cluster_id == "":
            self.engine.cluster_id = self.client.cluster_id()
        if self.tls is not None:
            ca, cert, key = self.tls.read()
            creds = grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=True)
            self.port = self._server.add_secure_port(self.listen, creds)
        else:
            self.port = self._server.add_insecure_port(self.listen)
        if self.port == 0:
            raise VerdictError("UNAVAILABLE", f"cannot listen on {self.listen}")
        if self.endpoint.endswith(":0"):
            # Listening on a port the system chose: the nodes dial that one.
            self.endpoint = f"{self.endpoint[:-2]}:{self.port}"
        self._server.start()
        self._register(register_timeout_s)
        if self.callers is not None:
            # Learned now, so the leader's first PREPARE does not wait for it.
            self.callers.refresh()
        self._resolver.start()
        self.log("started", participant_id=self.participant_id, endpoint=self.endpoint, in_doubt=self.engine.in_doubt())
        return self

    def _register(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.client.register_participant(self.participant_id, self.endpoint, self.resource.kind, SERVES, call_timeout_ms=max(1.0, (deadline - time.monotonic()) * 1000))
                return
            except VerdictError as err:
                if err.code in ("INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNAUTHENTICATED") or time.monotonic() >= deadline:
                    raise

    def _resolve_loop(self) -> None:
        next_report_at = 0.0
        next_sweep_at = 0.0
        while not self._stopped.wait(0.1):
            if time.monotonic() >= next_report_at and hasattr(self.resource, "unreported_heuristics"):
                next_report_at = time.monotonic() + HEURISTIC_REPORT_EVERY_S
                self._report_heuristics()
            if self.reserve_watcher is not None and time.monotonic() >= next_sweep_at:
                next_sweep_at = time.monotonic() + RESERVE_SWEEP_EVERY_S
                try:
                    self.reserve_watcher.sweep()
                except Exception as err:  # noqa: BLE001 - the database is away: next round
                    self.log("tcc-expiry-scan-failed", participant_id=self.participant_id, error=str(err)[:512])
            due = self.engine.due(time.monotonic())
            while due and not self._stopped.is_set():
                batch, due = due[:OUTCOMES_BATCH_MAX], due[OUTCOMES_BATCH_MAX:]
                if len(batch) > 1 and self._batched:
                    self._ask_many(batch)
                else:
                    for txn_id in batch:
                        self._ask(txn_id)

    def _report_heuristics(self) -> None:
        """Reports acts done by hand here (R4) until the cluster acknowledges each; one it does not take waits for the next round."""
        try:
            acts = self.resource.unreported_heuristics()  # type: ignore[attr-defined]
        except Exception as err:  # noqa: BLE001 - the database is away: next round
            self.log("heuristic-read-failed", participant_id=self.participant_id, error=str(err)[:512])
            return
        for act in acts:
            req = cpb.ReportHeuristicRequest(
                cluster_id=self.engine.cluster_id,
                participant_id=self.participant_id,
                txn_id=act.txn_id,
                outcome=cpb.OUTCOME_COMMITTED if act.outcome == "committed" else cpb.OUTCOME_ABORTED,
                gid=act.gid,
                operator=act.operator,
                reason=act.reason,
                at_ms=act.at_ms,
            )
            try:
                r = self.client.connection.call("ReportHeuristic", req, call_timeout_ms=5_000, attempt_timeout_ms=2_000)
                self.resource.mark_heuristic_reported(act.gid)  # type: ignore[attr-defined]
            except Exception as err:  # noqa: BLE001 - the cluster or the database is away: next round
                self.log("heuristic-not-reported", txn_id=act.txn_id, participant_id=self.participant_id, error=str(err)[:512])
                continue
            self.log("heuristic-reported", txn_id=act.txn_id, participant_id=self.participant_id, outcome=act.outcome, operator=act.operator, kind=r.heuristic.kind)

    def _members(self) -> List[str]:
        return cluster_members(self.client, self.engine.cluster_id, self._nodes)

    def _prepared_here(self, txn_id: str) -> bool:
        e = self.journal.get(txn_id)
        return e is not None and e.state == "prepared"

    def _ask_abort(self, txn_id: str, reason: str) -> str:
        """Coordinator.Abort: the leader logs ABORT unless a decision is logged, and answers the outcome the log holds."""
        r = self.client.connection.call("Abort", cpb.AbortRequest(txn_id=txn_id, reason=reason), call_timeout_ms=5_000, attempt_timeout_ms=2_000)
        return to_outcome_result(txn_id, r).outcome

    def _ask(self, txn_id: str) -> None:
        """One GetOutcome for a transaction in doubt; applies COMMITTED or ABORTED, else asks again later (R4)."""
        try:
            r = self.client.connection.call("GetOutcome", cpb.OutcomeRequest(txn_id=txn_id, participant_id=self.participant_id), call_timeout_ms=5_000, attempt_timeout_ms=2_000)
        except VerdictError as err:
            self.log("in-doubt-ask-failed", txn_id=txn_id, participant_id=self.participant_id, error=str(err))
            self.engine.asked(txn_id, time.monotonic())
            return
        self._apply(txn_id, r.outcome)

    def _ask_many(self, txn_ids: List[str]) -> None:
        """Many in-doubt transactions in one GetOutcomes (after a leader change, say); a cluster without it is asked one by one.

        In a cluster of several decision groups each group's leader answers for its own ids: one question per group."""
        conn = self.client.connection
        if conn.groups == 1:
            return self._ask_group(txn_ids)
        by_group: Dict[int, List[str]] = {}
        for txn_id in txn_ids:
            by_group.setdefault(conn.group_of(txn_id), []).append(txn_id)
        for ids in by_group.values():
            if self._batched:
                self._ask_group(ids)
            else:
                for txn_id in ids:
                    self._ask(txn_id)

    def _ask_group(self, txn_ids: List[str]) -> None:
        """GetOutcomes for ids of one group (every id at G = 1), at that group's leader."""
        try:
            r = self.client.connection.call("GetOutcomes", cpb.OutcomesRequest(txn_ids=txn_ids, participant_id=self.participant_id), call_timeout_ms=5_000, attempt_timeout_ms=2_000)
        except VerdictError as err:
            if err.code == "UNIMPLEMENTED":
                self._batched = False
                for txn_id in txn_ids:
                    self._ask(txn_id)
                return
            self.log("in-doubt-ask-failed", participant_id=self.participant_id, txn_ids=len(txn_ids), error=str(err))
            for txn_id in txn_ids:
                self.engine.asked(txn_id, time.monotonic())
            return
        if len(r.answers) != len(txn_ids):
            self.log("in-doubt-ask-failed", participant_id=self.participant_id, error=f"asked about {len(txn_ids)} transactions, the cluster answered {len(r.answers)}")
            for txn_id in txn_ids:
                self.engine.asked(txn_id, time.monotonic())
            return
        conn = self.client.connection
        if not conn.groups_known and not self._asked_groups and conn.leader_address is not None and any(a.code == grpc.StatusCode.UNAVAILABLE.value[0] for a in r.answers):
            # A node of a cluster of several groups answers UNAVAILABLE for ids of groups it does not lead: learn the groups once.
            self._asked_groups = True
            conn.refresh_groups(conn.leader_address)
        for txn_id, a in zip(txn_ids, r.answers):
            if a.code != 0 or a.outcome.txn_id not in ("", txn_id):
                self.engine.asked(txn_id, time.monotonic())
            else:
                self._apply(txn_id, a.outcome.outcome)

    def _apply(self, txn_id: str, outcome: int) -> None:
        """The cluster's answer about a transaction in doubt: a decision is applied; anything else is asked again later."""
        if outcome not in (cpb.OUTCOME_COMMITTED, cpb.OUTCOME_ABORTED):
            self.engine.asked(txn_id, time.monotonic())
            return
        try:
            self.engine.decide(self.engine.cluster_id, txn_id, self.participant_id, outcome == cpb.OUTCOME_COMMITTED, source="in-doubt")
            self.engine.forget_doubt(txn_id)
        except Refusal as ref:
            self.log("in-doubt-conflict", txn_id=txn_id, participant_id=self.participant_id, reason=ref.details)
            self.engine.forget_doubt(txn_id)
        except Exception as err:  # noqa: BLE001 - the resource failed to apply it (a lost connection): try again later
            self.log("in-doubt-apply-failed", txn_id=txn_id, participant_id=self.participant_id, error=str(err)[:512])
            self.engine.asked(txn_id, time.monotonic())

    def stop(self, grace_s: float = 1.0) -> None:
        """Closes cleanly: each open Exchange stream answers what it took and ends saying the participant is
        closing (the leader shows it closed, not disconnected), then the server, the journal and the resource close."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        said = self._servicer.end_exchanges(grace_s)
        self.log("closing", participant_id=self.participant_id, streams_told=said)
        self._server.stop(grace_s).wait()
        self._workers.shutdown(wait=False)
        self.client.close()
        self.journal.close()
        self.resource.close()

    close = stop

    def run_until_signal(self, signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT)) -> int:
        """Serves until one of ``signals`` arrives (call from the main thread), then closes cleanly; returns the signal."""
        got: List[int] = []
        done = threading.Event()

        def on_signal(signum: int, _frame: Any) -> None:
            got.append(signum)
            done.set()

        previous = {s: signal.signal(s, on_signal) for s in signals}
        try:
            while not done.wait(0.5):
                pass
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        self.stop()
        return got[0]
