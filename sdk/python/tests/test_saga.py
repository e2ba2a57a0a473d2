"""The saga step service: the inbox's rules and durability, and the SagaStep service over gRPC against a fake cluster."""

from concurrent import futures
from typing import Any, Dict, List

import grpc
import pytest

from verdict._proto import coordinator_pb2 as cpb
from verdict._proto import coordinator_pb2_grpc
from verdict._proto import saga_pb2 as spb
from verdict._proto import saga_pb2_grpc
from verdict.saga import INBOX_FILE, Inbox, InboxRecord, StepDone, StepFailed, StepRequest, StepService

C = "c1"


def req(saga: str, step: int, kind: str, name: str = "reserve", input: str = "") -> StepRequest:
    return StepRequest(saga, step, kind, f"{saga}/{step}/{kind}", name, input)


class Ledger:
    """The service's state: effects "+n" / "-n" applied to a balance, each once."""

    def __init__(self) -> None:
        self.balance = 0
        self.applied: List[str] = []

    def apply(self, r: InboxRecord) -> None:
        self.balance += int(r.effect)
        self.applied.append(r.key)


def charge(r: StepRequest) -> Any:
    n = int(r.input or "0")
    return StepFailed("amount must be positive") if n <= 0 else StepDone(output=f"charged {n}", effect=f"-{n}")


def refund(r: StepRequest) -> Any:
    return StepDone(output="refunded", effect=f"+{int(r.input)}")


def test_a_repeated_call_is_answered_from_its_record_and_the_effect_applies_once(tmp_path) -> None:
    led = Ledger()
    inbox = Inbox(str(tmp_path), led.apply)
    calls = []
    handler = lambda r: calls.append(r.key) or charge(r)  # noqa: E731
    a1 = inbox.handle(req("s1", 0, "action", input="30"), handler)
    a2 = inbox.handle(req("s1", 0, "action", input="30"), handler)
    assert a1 == a2 and a1.done and a1.output == "charged 30"
    assert calls == ["s1/0/action"] and led.balance == -30


def test_compensation_without_its_action_is_empty_and_the_late_action_is_refused(tmp_path) -> None:
    led = Ledger()
    inbox = Inbox(str(tmp_path), led.apply)
    c = inbox.handle(req("s2", 1, "compensate", input="5"), refund)
    assert c.done and "never ran here" in c.reason and led.balance == 0
    late = inbox.handle(req("s2", 1, "action", input="5"), charge)
    assert not late.done and "compensated before its action arrived" in late.reason and led.balance == 0
    # A FAILED action leaves nothing to compensate.
    assert not inbox.handle(req("s3", 0, "action", input="0"), charge).done
    assert inbox.handle(req("s3", 0, "compensate", input="0"), refund).reason.startswith("the action answered FAILED")
    # A DONE action is compensated by the handler.
    assert inbox.handle(req("s4", 0, "action", input="7"), charge).done
    assert inbox.handle(req("s4", 0, "compensate", input="7"), refund).output == "refunded"
    assert led.balance == 0


def test_a_handler_that_raises_records_nothing_and_is_run_again(tmp_path) -> None:
    inbox = Inbox(str(tmp_path))

    def down(r: StepRequest) -> Any:
        raise RuntimeError("payment gateway unreachable")

    with pytest.raises(RuntimeError):
        inbox.handle(req("s5", 0, "action", input="1"), down)
    assert inbox.get("s5/0/action") is None
    assert inbox.handle(req("s5", 0, "action", input="1"), charge).done


def test_records_and_effects_survive_a_restart_ends_drop_keys_and_a_torn_line_is_dropped(tmp_path) -> None:
    led = Ledger()
    inbox = Inbox(str(tmp_path), led.apply)
    inbox.handle(req("s6", 0, "action", input="10"), charge)
    inbox.handle(req("s7", 0, "action", input="4"), charge)
    inbox.end("s7")
    inbox.end("s7")  # repeated: nothing written
    inbox.close()
    with open(tmp_path / INBOX_FILE, "ab") as f:
        f.write(b'0000abcd {"t":"step","saga_')  # a crash in the middle of a line
    led2 = Ledger()
    inbox2 = Inbox(str(tmp_path), led2.apply)
    assert led2.balance == -14 and led2.applied == ["s6/0/action", "s7/0/action"]
    assert inbox2.get("s6/0/action") is not None and inbox2.get("s7/0/action") is None
    # A call of an ended saga is not run again, even after the restart.
    with pytest.raises(RuntimeError, match="has ended"):
        inbox2.handle(req("s7", 0, "action", input="4"), charge)
    assert (tmp_path / INBOX_FILE).read_bytes().endswith(b"}\n")


class Cluster(coordinator_pb2_grpc.CoordinatorServicer, saga_pb2_grpc.SagasServicer):
    """A one-node fake cluster: takes registrations and answers SagaStatus from `states`."""

    def __init__(self) -> None:
        self.registered: List[Any] = []
        self.states: Dict[str, str] = {}
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        coordinator_pb2_grpc.add_CoordinatorServicer_to_server(self, self.server)
        saga_pb2_grpc.add_SagasServicer_to_server(self, self.server)
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def RegisterParticipant(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.registered.append(request)
        return cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=request.participant_id, endpoint=request.endpoint))

    def SagaStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        state = self.states.get(request.saga_id)
        if state is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "no such saga")
        return spb.SagaInfo(saga_id=request.saga_id, state=state)

    #: A node from before SagaStates answers it UNIMPLEMENTED; states_calls counts the SagaStates calls answered.
    no_states = False
    states_calls = 0

    def SagaStates(self, request: Any, context: grpc.ServicerContext) -> Any:
        if self.no_states:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown method SagaStates")
        self.states_calls += 1
        return spb.SagaStatesResponse(sagas=[spb.SagaState(saga_id=i, state=self.states.get(i, "")) for i in request.saga_ids])


def test_the_step_service_over_grpc_registers_checks_its_input_and_ends_only_sagas_the_cluster_ended(tmp_path) -> None:
    cluster = Cluster()
    led = Ledger()
    svc = StepService(
        service_id="payments", nodes=[cluster.address], data_dir=str(tmp_path), handlers={"charge": (charge, refund)}, endpoint="127.0.0.1:0", cluster_id=C, apply=led.apply, insecure=True, log=lambda *a, **k: None
    ).start()
    try:
        (r,) = cluster.registered
        assert (r.participant_id, r.resource_kind, r.endpoint) == ("payments", "saga-memory", svc.endpoint)
        ch = grpc.insecure_channel(svc.endpoint)
        stub = saga_pb2_grpc.SagaStepStub(ch)
        call = lambda saga, kind, **kw: spb.StepRequest(**{"cluster_id": C, "saga_id": saga, "step": 0, "key": f"{saga}/0/{kind}", "name": "charge", "input": "25", **kw})  # noqa: E731
        done = stub.Execute(call("o1", "action"))
        assert (done.status, done.output) == (spb.STEP_DONE, "charged 25")
        assert stub.Execute(call("o1", "action")) == done and led.balance == -25
        assert stub.Execute(call("o2", "action", input="0")).status == spb.STEP_FAILED
        for bad, code in [
            (call("o3", "action", cluster_id="other"), grpc.StatusCode.FAILED_PRECONDITION),
            (call("o3", "action", key="o3/0/compensate"), grpc.StatusCode.INVALID_ARGUMENT),
            (call("o3", "action", step=64, key="o3/64/action"), grpc.StatusCode.INVALID_ARGUMENT),
            (call("o3", "action", name="nope"), grpc.StatusCode.UNIMPLEMENTED),
        ]:
            with pytest.raises(grpc.RpcError) as e:
                stub.Execute(bad)
            assert e.value.code() == code
        # End: refused while the cluster does not have the saga ended; taken once it does.
        with pytest.raises(grpc.RpcError) as e:
            stub.End(spb.SagaEndRequest(cluster_id=C, saga_id="o1"))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "unknown to the cluster" in e.value.details()
        cluster.states["o1"] = "running"
        with pytest.raises(grpc.RpcError) as e:
            stub.End(spb.SagaEndRequest(cluster_id=C, saga_id="o1"))
        assert "running on the cluster" in e.value.details()
        cluster.states["o1"] = "finished"
        stub.End(spb.SagaEndRequest(cluster_id=C, saga_id="o1"))
        assert svc.inbox.get("o1/0/action") is None
        with pytest.raises(grpc.RpcError) as e:
            stub.Execute(call("o1", "action"))
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE and "has ended" in e.value.details() and led.balance == -25
        ch.close()
    finally:
        svc.stop(0)
        cluster.server.stop(0)


def test_end_sagas_takes_only_the_sagas_the_cluster_ended_confirmed_in_one_call_and_written_once(tmp_path) -> None:
    cluster = Cluster()
    led = Ledger()
    svc = StepService(
        service_id="payments", nodes=[cluster.address], data_dir=str(tmp_path), handlers={"charge": (charge, refund)}, endpoint="127.0.0.1:0", cluster_id=C, apply=led.apply, insecure=True, log=lambda *a, **k: None
    ).start()
    try:
        ch = grpc.insecure_channel(svc.endpoint)
        stub = saga_pb2_grpc.SagaStepStub(ch)
        for saga in ("o1", "o2", "o3"):
            stub.Execute(spb.StepRequest(cluster_id=C, saga_id=saga, step=0, key=f"{saga}/0/action", name="charge", input="5"))
        cluster.states.update({"o1": "finished", "o2": "running"})
        ack = stub.EndSagas(spb.SagaEndsRequest(cluster_id=C, saga_ids=["o1", "o2", "o3"]))
        assert list(ack.ended) == ["o1"] and "2 not ended, their keys stay (saga o2 is running on the cluster)" in ack.problem
        assert cluster.states_calls == 1
        assert svc.inbox.get("o1/0/action") is None and svc.inbox.get("o2/0/action") is not None
        # A cluster from before SagaStates: each end is confirmed with SagaStatus.
        cluster.no_states = True
        cluster.states["o2"] = "compensated"
        ack = stub.EndSagas(spb.SagaEndsRequest(cluster_id=C, saga_ids=["o1", "o2"]))
        assert list(ack.ended) == ["o1", "o2"] and ack.problem == ""
        for bad, code in [
            (spb.SagaEndsRequest(cluster_id="other", saga_ids=["o1"]), grpc.StatusCode.FAILED_PRECONDITION),
            (spb.SagaEndsRequest(cluster_id=C, saga_ids=[f"x{i}" for i in range(1_025)]), grpc.StatusCode.INVALID_ARGUMENT),
            (spb.SagaEndsRequest(cluster_id=C, saga_ids=[""]), grpc.StatusCode.INVALID_ARGUMENT),
            # The cluster's saga id rule: no '/', no space, nothing outside printable ASCII.
            (spb.SagaEndsRequest(cluster_id=C, saga_ids=["o1/0"]), grpc.StatusCode.INVALID_ARGUMENT),
            (spb.SagaEndsRequest(cluster_id=C, saga_ids=["o 1"]), grpc.StatusCode.INVALID_ARGUMENT),
            (spb.SagaEndsRequest(cluster_id=C, saga_ids=["o\u00e91"]), grpc.StatusCode.INVALID_ARGUMENT),
        ]:
            with pytest.raises(grpc.RpcError) as e:
                stub.EndSagas(bad)
            assert e.value.code() == code
        # Both ends are durable: a restart still refuses the sagas' calls.
        svc.stop(0)
        svc = StepService(
            service_id="payments", nodes=[cluster.address], data_dir=str(tmp_path), handlers={"charge": (charge, refund)}, endpoint="127.0.0.1:0", cluster_id=C, apply=Ledger().apply, insecure=True, log=lambda *a, **k: None
        ).start()
        assert svc.inbox.has_ended("o1") and svc.inbox.has_ended("o2") and not svc.inbox.has_ended("o3")
        ch.close()
    finally:
        svc.stop(0)
        cluster.server.stop(0)
