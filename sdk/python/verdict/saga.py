"""A saga step service (docs/sagas.md): serves ``verdict.saga.SagaStep``
(proto/saga.proto) for named step handlers, with the inbox that makes each
step's effect happen once under the orchestrator's at-least-once calls, and
registers with the cluster like a participant (resource kind
``saga-memory``). The rules are the TypeScript step service's
(src/saga/inbox.ts, src/saga/step-service.ts):

* A call carries a stable key (``<saga>/<step>/action`` or ``.../compensate``).
  The inbox keeps one record per key, written in the same durable write as
  the step's effect, and answers a repeat from the record.
* A compensation for a step whose action never ran here, or answered
  FAILED, is recorded EMPTY and runs nothing (answered DONE: nothing is left
  to undo).
* An action arriving after its compensation was recorded is refused
  (answered FAILED and recorded so): no action hangs after the saga gave up
  on it.
* End (the saga finished or was compensated) drops the saga's keys, once
  the cluster confirms the saga ended (Sagas.SagaStatus); later calls of
  that saga are refused. EndSagas does the same for many sagas: one
  Sagas.SagaStates call per decision group confirms them (SagaStatus per
  saga for a cluster from before it), and one write (one fsync) records
  them; a saga the cluster does not have ended is left out of the answer.

A handler decides the step from the request and returns ``StepDone(output,
effect)`` or ``StepFailed(reason)``; raising is a transient error (nothing
recorded, the orchestrator retries). The effect is a string the service's
``apply`` turns into its state change: run when the record is written, and
again over every record, in order, at start.

Durable: ``inbox.log`` in the data directory, one checksummed line per
record, fsync'd before the answer. A torn last line is dropped; a damaged
line before it stops the start. Steps are handled one at a time.

With ``postgres`` the inbox is a PostgreSQL table instead, written in the
step's own transaction (saga_postgres.py).

Not here (the TypeScript step service has it): compaction of the log (it
grows by a line per step until the saga's end, and the ends stay).
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import OrderedDict
from concurrent import futures
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

import grpc

from ._proto import saga_pb2 as spb
from ._proto import saga_pb2_grpc
from .client import Client
from .connection import TlsFiles
from .errors import VerdictError
from .ids import check_participant_id
from .linelog import LineLog
from .callers import NodeCallers, cluster_members, node_caller_problem
from .participant import Log, json_log

if TYPE_CHECKING:
    from .saga_postgres import PostgresInbox

#: src/saga/commands.ts
STEPS_MAX = 64
SAGA_ID_BYTES_MAX = 128


def saga_id_problem(saga_id: str) -> Optional[str]:
    """Why `saga_id` is not a saga id (the cluster's rule: 1-128 printable ASCII characters, no space, no '/'), or None."""
    if 0 < len(saga_id) <= SAGA_ID_BYTES_MAX and all(0x21 <= ord(c) <= 0x7E and c != "/" for c in saga_id):
        return None
    return f"saga id {saga_id[:40]!r} must be 1 to {SAGA_ID_BYTES_MAX} printable ASCII characters without '/'"
#: Saga ids in one EndSagas or SagaStates call at most (src/transport/saga-rpc.ts).
SAGA_IDS_PER_CALL_MAX = 1_024
#: How long a cluster that answered SagaStates UNIMPLEMENTED is asked SagaStatus per saga instead (seconds).
SAGA_STATES_REPROBE_S = 600.0
#: Ended sagas remembered to refuse late duplicates of their calls (src/saga/inbox.ts).
ENDED_MAX = 100_000
INBOX_FILE = "inbox.log"


@dataclass(frozen=True)
class StepRequest:
    saga_id: str
    step: int
    #: "action" or "compensate"
    kind: str
    key: str
    name: str
    input: str
    outputs: Sequence[str] = ()
    attempt: int = 0


@dataclass(frozen=True)
class StepDone:
    output: str = ""
    #: What ``apply`` turns into the service's state change, recorded with the answer; "" for none.
    effect: str = ""


@dataclass(frozen=True)
class StepFailed:
    reason: str


StepHandler = Callable[[StepRequest], Union[StepDone, StepFailed]]


@dataclass(frozen=True)
class InboxRecord:
    #: "step" records an answered call; "end" drops every key of a saga.
    t: str
    saga_id: str
    step: int = 0
    kind: str = "action"
    key: str = ""
    #: done, failed, empty, refused
    status: str = "done"
    output: str = ""
    reason: str = ""
    effect: str = ""


@dataclass(frozen=True)
class StepAnswer:
    done: bool
    output: str = ""
    reason: str = ""


def answer_of(r: InboxRecord) -> StepAnswer:
    """An empty compensation is DONE (nothing was left to undo), a refused action FAILED."""
    if r.status in ("done", "empty"):
        return StepAnswer(True, r.output, r.reason)
    return StepAnswer(False, "", r.reason)


def _line(r: InboxRecord) -> bytes:
    body = json.dumps(asdict(r), separators=(",", ":"))
    return f"{zlib.crc32(body.encode()):08x} {body}\n".encode()


def _parse(raw: bytes) -> Optional[InboxRecord]:
    text = raw.decode("utf-8", "replace")
    if len(text) < 10 or text[8] != " " or f"{zlib.crc32(text[9:].encode()):08x}" != text[:8]:
        return None
    o = json.loads(text[9:])
    if o.get("t") not in ("step", "end") or not isinstance(o.get("saga_id"), str):
        return None
    return InboxRecord(**o)


class Inbox:
    """Exactly-once effects under at-least-once calls, durable in ``data_dir/inbox.log``."""

    def __init__(self, data_dir: str, apply: Callable[[InboxRecord], None] = lambda r: None) -> None:
        self.apply = apply
        self._lock = threading.Lock()
        self._records: Dict[str, InboxRecord] = {}
        self._ended: "OrderedDict[str, bool]" = OrderedDict()
        self._log = LineLog(data_dir, INBOX_FILE, "inbox")
        for r in self._log.replay(_parse):
            self._note(r)
            if r.t == "step" and r.effect != "":
                self.apply(r)
        self._log.open()

    def _note(self, r: InboxRecord) -> None:
        if r.t == "end":
            self._ended[r.saga_id] = True
            while len(self._ended) > ENDED_MAX:
                self._ended.popitem(last=False)
            prefix = f"{r.saga_id}/"
            for k in [k for k in self._records if k.startswith(prefix)]:
                del self._records[k]
        else:
            self._records[r.key] = r

    def _write(self, r: InboxRecord) -> None:
        self._log.append(_line(r))

    def get(self, key: str) -> Optional[InboxRecord]:
        with self._lock:
            return self._records.get(key)

    def handle(self, req: StepRequest, handler: StepHandler) -> StepAnswer:
        """Answers a call: from its record, or by the rules above, or by running the handler; raises on a transient failure."""
        with self._lock:
            seen = self._records.get(req.key)
            if seen is not None:
                return answer_of(seen)
            if req.saga_id in self._ended:
                raise RuntimeError(f"saga {req.saga_id} has ended; its step {req.step} {req.kind} is not run again")
            other = self._records.get(f"{req.saga_id}/{req.step}/{'compensate' if req.kind == 'action' else 'action'}")
            base = {"t": "step", "saga_id": req.saga_id, "step": req.step, "kind": req.kind, "key": req.key}
            if req.kind == "action" and other is not None:
                rec = InboxRecord(**base, status="refused", reason=f"step {req.step} of saga {req.saga_id} was compensated before its action arrived; the action is refused")
            elif req.kind == "compensate" and (other is None or other.status != "done"):
                why = f"the action answered {other.status.upper()}: nothing to compensate" if other is not None else "the action never ran here: an empty compensation is recorded"
                rec = InboxRecord(**base, status="empty", reason=why)
            else:
                d = handler(req)
                if isinstance(d, StepDone):
                    rec = InboxRecord(**base, status="done", output=d.output, effect=d.effect)
                else:
                    rec = InboxRecord(**base, status="failed", reason=d.reason)
            # The record and its effect are one write: both or neither survive a crash.
            self._write(rec)
            self._note(rec)
            if rec.effect != "":
                self.apply(rec)
            return answer_of(rec)

    def end(self, saga_id: str) -> None:
        """The saga ended and the cluster logged it: its keys go, durably first. A repeated end writes nothing."""
        with self._lock:
            if saga_id in self._ended:
                return
            rec = InboxRecord(t="end", saga_id=saga_id)
            self._write(rec)
            self._note(rec)

    def end_many(self, saga_ids: Sequence[str]) -> None:
        """end() for many sagas, in one write and one fsync."""
        with self._lock:
            recs = [InboxRecord(t="end", saga_id=i) for i in dict.fromkeys(saga_ids) if i not in self._ended]
            if not recs:
                return
            self._log.append(b"".join(_line(r) for r in recs))
            for r in recs:
                self._note(r)

    def has_ended(self, saga_id: str) -> bool:
        """Whether the saga's end is recorded here: a repeated end needs no confirmation."""
        with self._lock:
            return saga_id in self._ended

    def close(self) -> None:
        with self._lock:
            self._log.close()


@dataclass
class _Handlers:
    action: StepHandler
    compensate: StepHandler


class _StepServicer(saga_pb2_grpc.SagaStepServicer):
    def __init__(self, svc: "StepService") -> None:
        self.svc = svc

    def _guard(self, context: grpc.ServicerContext) -> None:
        """Under TLS, calls are taken only from a current node of this cluster: the node mark and membership (R8)."""
        if self.svc.tls is None:
            return
        subject: Optional[str] = None
        for v in context.auth_context().get("x509_subject", []):
            subject = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        problem = self.svc.callers.problem(subject) if self.svc.callers is not None else node_caller_problem(subject, self.svc.cluster_id)
        if problem is not None:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"step service {self.svc.service_id} takes calls only from a node of its cluster: {problem}")

    def _serve(self, kind: str, r: spb.StepRequest, context: grpc.ServicerContext) -> spb.StepResult:
        self._guard(context)
        svc = self.svc
        if r.cluster_id != svc.cluster_id:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f'the call is for cluster "{r.cluster_id[:64]}", this step service is in cluster "{svc.cluster_id}"')
        bad = saga_id_problem(r.saga_id)
        if bad is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad)
        if r.step >= STEPS_MAX:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"saga {r.saga_id}: step {r.step} is beyond the limit of {STEPS_MAX} steps")
        key = f"{r.saga_id}/{r.step}/{kind}"
        if r.key != key:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"saga {r.saga_id} step {r.step}: key {r.key[:80]!r} is not {key}")
        h = svc.handlers.get(r.name)
        if h is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"saga {r.saga_id} step {r.step}: step service {svc.service_id} has no handler named {r.name[:80]!r}")
        req = StepRequest(r.saga_id, r.step, kind, r.key, r.name, r.input, tuple(r.outputs), r.attempt)
        try:
            a = svc.inbox.handle(req, h.action if kind == "action" else h.compensate)
        except Exception as err:  # noqa: BLE001 - transient: nothing recorded, the orchestrator retries
            svc.log("step-failed", saga_id=r.saga_id, step=r.step, kind=kind, error=str(err)[:512])
            context.abort(grpc.StatusCode.UNAVAILABLE, f"saga {r.saga_id} step {r.step} {kind}: {str(err)[:512]}")
        return spb.StepResult(status=spb.STEP_DONE if a.done else spb.STEP_FAILED, output=a.output, reason=a.reason)

    def Execute(self, request: spb.StepRequest, context: grpc.ServicerContext) -> spb.StepResult:
        return self._serve("action", request, context)

    def Compensate(self, request: spb.StepRequest, context: grpc.ServicerContext) -> spb.StepResult:
        return self._serve("compensate", request, context)

    def End(self, request: spb.SagaEndRequest, context: grpc.ServicerContext) -> spb.SagaEndAck:
        """Drops the saga's keys once the cluster confirms it ended: an End for a running saga would wedge it."""
        self._guard(context)
        svc = self.svc
        if request.cluster_id != svc.cluster_id:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f'the call is for cluster "{request.cluster_id[:64]}"')
        saga_id = request.saga_id
        bad = saga_id_problem(saga_id)
        if bad is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad)
        try:
            state = svc.saga_state(saga_id)
        except VerdictError as err:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"saga {saga_id}: its end could not be confirmed with the cluster ({err}); retry")
        if state not in ("finished", "compensated"):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"saga {saga_id} is {'unknown to the cluster' if state is None else state + ' on the cluster'}: not ended, its keys stay")
        try:
            svc.inbox.end(saga_id)
        except Exception as err:  # noqa: BLE001 - the disk or the database failed: the orchestrator retries
            context.abort(grpc.StatusCode.UNAVAILABLE, f"saga {saga_id}: {err}")
        return spb.SagaEndAck()

    def EndSagas(self, request: spb.SagaEndsRequest, context: grpc.ServicerContext) -> spb.SagaEndsAck:
        """End for many sagas: confirmed with the cluster together, recorded in one write; the others are left out."""
        self._guard(context)
        svc = self.svc
        if request.cluster_id != svc.cluster_id:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f'the call is for cluster "{request.cluster_id[:64]}"')
        if len(request.saga_ids) > SAGA_IDS_PER_CALL_MAX:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"EndSagas takes at most {SAGA_IDS_PER_CALL_MAX} saga ids; {len(request.saga_ids)} were sent")
        ids = list(dict.fromkeys(request.saga_ids))
        for saga_id in ids:
            bad = saga_id_problem(saga_id)
            if bad is not None:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, bad)
        ended = [i for i in ids if svc.inbox.has_ended(i)]
        ask = [i for i in ids if i not in set(ended)]
        if not ask:
            return spb.SagaEndsAck(ended=ended)
        try:
            states = svc.saga_states(ask)
        except VerdictError as err:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"the ends of {len(ask)} sagas could not be confirmed with the cluster ({err}); retry")
        confirmed = [i for i in ask if states.get(i) in ("finished", "compensated")]
        refused = [i for i in ask if i not in set(confirmed)]
        problems: List[str] = []
        if refused:
            state = states.get(refused[0])
            problems.append(f"{len(refused)} not ended, their keys stay (saga {refused[0]} is {'unknown to the cluster' if state is None else state + ' on the cluster'})")
        try:
            svc.inbox.end_many(confirmed)
            ended += confirmed
        except Exception as err:  # noqa: BLE001 - the disk or the database failed: the orchestrator sends them again
            problems.append(f"the ends could not be recorded ({err})")
        return spb.SagaEndsAck(ended=ended, problem="; ".join(problems))


class StepService:
    """A running step service: the gRPC server, the inbox, registration with the cluster.

    ``handlers``: step name -> (action, compensate). ``apply``: turns a
    recorded effect into the service's state change (on each new record and,
    in order, over all of them at start). TLS and ``insecure`` as for a
    Participant: with ``tls`` it serves mutual TLS and takes calls only from
    the nodes of its cluster.

    With ``postgres`` (a libpq connection string or URL) the inbox is a
    table in that database (``saga_postgres.PostgresInbox``) and each handler
    is ``handler(cursor, request)``: it runs its SQL on the cursor, inside
    the transaction that also inserts the call's inbox row, so the effect
    and the record commit together; ``apply`` and ``data_dir`` are not used.
    It registers as resource kind ``saga-postgres``.
    """

    def __init__(
        self,
        *,
        service_id: str,
        nodes: Sequence[str],
        data_dir: str = "",
        handlers: Dict[str, Tuple[Callable[..., Union[StepDone, StepFailed]], Callable[..., Union[StepDone, StepFailed]]]],
        endpoint: str,
        cluster_id: str,
        listen: Optional[str] = None,
        apply: Callable[[InboxRecord], None] = lambda r: None,
        tls: Optional[TlsFiles] = None,
        insecure: bool = False,
        log: Log = json_log,
        postgres: Optional[str] = None,
    ) -> None:
        check_participant_id(service_id)
        if postgres is None and data_dir == "":
            raise ValueError("a step service keeps its inbox in data_dir, or in PostgreSQL with postgres=")
        self.service_id = service_id
        self.cluster_id = cluster_id
        self.endpoint = endpoint
        self.listen = listen or endpoint
        self.tls = tls
        self.log = log
        self.handlers = {name: _Handlers(a, c) for name, (a, c) in handlers.items()}
        self.client = Client(nodes, tls=tls, insecure=insecure, cluster_id=cluster_id)
        #: Under TLS: calls only from a node of the cluster (the node mark and membership, as a participant's).
        self.callers: Optional[NodeCallers] = None
        if tls is not None:
            endpoints = list(dict.fromkeys(nodes))
            self.callers = NodeCallers(lambda: cluster_id, lambda: cluster_members(self.client, cluster_id, endpoints), log)
        self.inbox: Union[Inbox, "PostgresInbox"]
        if postgres is not None:
            from .saga_postgres import PostgresInbox

            self.inbox = PostgresInbox(postgres, application_name=f"verdict-py-saga-{service_id}")
            self.resource_kind = "saga-postgres"
        else:
            self.inbox = Inbox(data_dir, apply)
            self.resource_kind = "saga-memory"
        #: Until then saga_states asks SagaStatus per saga: the cluster answered SagaStates UNIMPLEMENTED.
        self._states_unsupported_until = 0.0
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        saga_pb2_grpc.add_SagaStepServicer_to_server(_StepServicer(self), self._server)
        self.port = 0

    def saga_state(self, saga_id: str) -> Optional[str]:
        """The saga's state as the cluster's applied log has it, or None when the cluster knows no such saga."""
        try:
            info = self.client.connection.call("SagaStatus", spb.SagaStatusRequest(saga_id=saga_id, wait_ms=0), service="Sagas", call_timeout_ms=5_000, attempt_timeout_ms=2_000)
            return info.state if info.saga_id == saga_id else None
        except VerdictError as err:
            if err.code == "NOT_FOUND":
                return None
            raise

    def saga_states(self, saga_ids: Sequence[str]) -> Dict[str, Optional[str]]:
        """The states of many sagas: one SagaStates call per decision group (SagaStatus per saga for a cluster before it)."""
        out: Dict[str, Optional[str]] = {}
        by_group: Dict[int, List[str]] = {}
        for i in saga_ids:
            by_group.setdefault(self.client.connection.group_of(i), []).append(i)
        for part in by_group.values():
            if time.monotonic() >= self._states_unsupported_until:
                try:
                    r = self.client.connection.call("SagaStates", spb.SagaStatesRequest(saga_ids=part), service="Sagas", call_timeout_ms=5_000, attempt_timeout_ms=2_000)
                    for a in r.sagas:
                        if a.saga_id in part:
                            out[a.saga_id] = a.state or None
                    continue
                except VerdictError as err:
                    if err.code != "UNIMPLEMENTED":
                        raise
                    self._states_unsupported_until = time.monotonic() + SAGA_STATES_REPROBE_S
            for i in part:
                out[i] = self.saga_state(i)
        return out

    def start(self, register_timeout_s: float = 60.0) -> "StepService":
        if self.tls is not None:
            ca, cert, key = self.tls.read()
            self.port = self._server.add_secure_port(self.listen, grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=True))
        else:
            self.port = self._server.add_insecure_port(self.listen)
        if self.port == 0:
            raise VerdictError("UNAVAILABLE", f"cannot listen on {self.listen}")
        if self.endpoint.endswith(":0"):
            self.endpoint = f"{self.endpoint[:-2]}:{self.port}"
        self._server.start()
        deadline = time.monotonic() + register_timeout_s
        while True:
            try:
                self.client.register_participant(self.service_id, self.endpoint, self.resource_kind, (), call_timeout_ms=max(1.0, (deadline - time.monotonic()) * 1000))
                break
            except VerdictError as err:
                if err.code in ("INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNAUTHENTICATED") or time.monotonic() >= deadline:
                    self.stop()
                    raise
        if self.callers is not None:
            self.callers.refresh()
        self.log("step-service-started", participant_id=self.service_id, endpoint=self.endpoint)
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        self._server.stop(grace_s).wait()
        self.client.close()
        self.inbox.close()


__all__: List[str] = ["Inbox", "InboxRecord", "StepAnswer", "StepDone", "StepFailed", "StepRequest", "StepService", "answer_of"]
