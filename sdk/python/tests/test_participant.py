"""The participant engine (the rules of proto/participant.proto) and the runtime's in-doubt recovery against a fake cluster."""

import time

import grpc
import pytest

from verdict import Engine, Journal, MemoryResource, Participant
from verdict._proto import coordinator_pb2 as cpb
from verdict._proto import participant_pb2 as ppb
from verdict._proto import participant_pb2_grpc
from verdict.participant import Refusal, node_caller_problem

from fake_cluster import FakeNode, answering

C, P = "c1", "shop"


def quiet(*_a, **_k) -> None:
    pass


def engine(path: str) -> Engine:
    return Engine(C, P, Journal(path), MemoryResource(), quiet)


def test_r4_yes_only_with_prepared_durable_and_it_survives_a_restart(tmp_path) -> None:
    e = engine(str(tmp_path))
    assert e.prepare(C, "t1", P, b'{"set":{"k":"v"}}') == (True, "")
    # What is on disk once the YES is given: a fresh journal over the same directory sees it prepared.
    assert Journal(str(tmp_path)).get("t1").state == "prepared"
    e2 = engine(str(tmp_path))
    assert e2.in_doubt() == ["t1"] and e2.due(time.monotonic()) == ["t1"]
    e2.decide(C, "t1", P, True)
    assert e2.resource.values == {"k": "v"}
    # A memory resource's committed values come back from the journal.
    assert engine(str(tmp_path)).resource.values == {"k": "v"}


def test_r7_prepare_and_decide_are_idempotent_and_outcomes_never_change(tmp_path) -> None:
    e = engine(str(tmp_path))
    assert e.prepare(C, "t1", P, b"")[0]
    assert e.prepare(C, "t1", P, b"")[0]
    e.decide(C, "t1", P, True)
    e.decide(C, "t1", P, True)
    assert e.prepare(C, "t1", P, b"")[0]
    with pytest.raises(Refusal) as r:
        e.decide(C, "t1", P, False)
    assert r.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_an_abort_before_its_prepare_is_remembered_and_a_commit_never_prepared_is_refused(tmp_path) -> None:
    e = engine(str(tmp_path))
    e.decide(C, "t2", P, False)
    assert e.prepare(C, "t2", P, b"") == (False, "t2 is aborted here")
    with pytest.raises(Refusal):
        e.decide(C, "t3", P, True)


def test_a_no_vote_and_a_status_question_refuse_durably(tmp_path) -> None:
    e = engine(str(tmp_path))
    yes, reason = e.prepare(C, "t4", P, b"not json")
    assert not yes and "payload" in reason
    assert e.status(C, "t4", P) == ppb.TXN_STATUS_REFUSED
    assert e.status(C, "t5", P) == ppb.TXN_STATUS_REFUSED
    assert engine(str(tmp_path)).prepare(C, "t5", P, b"") == (False, "t5 is refused here")


def test_r7_another_cluster_or_participant_is_refused(tmp_path) -> None:
    e = engine(str(tmp_path))
    with pytest.raises(Refusal):
        e.prepare("other", "t1", P, b"")
    with pytest.raises(Refusal):
        e.prepare(C, "t1", "other", b"")


def test_r8_only_a_node_certificate_of_this_cluster_may_call() -> None:
    assert node_caller_problem("CN=n1,OU=c1,O=verdict-node", "c1") is None
    assert "node mark" in node_caller_problem("CN=shop,OU=c1", "c1")
    assert "cluster" in node_caller_problem("CN=n1,OU=c2,O=verdict-node", "c1")
    assert node_caller_problem(None, "c1") is not None


def test_r4_a_prepared_participant_restarted_asks_the_cluster_and_applies_its_decision(tmp_path) -> None:
    asked = []

    def outcome(req):
        asked.append((req.txn_id, req.participant_id))
        return cpb.TxnOutcome(txn_id=req.txn_id, outcome=cpb.OUTCOME_COMMITTED if len(asked) > 1 else cpb.OUTCOME_IN_PROGRESS)

    node = FakeNode(
        answering(
            {
                "ClusterStatus": lambda req: cpb.ClusterStatusResponse(cluster_id=C),
                "RegisterParticipant": lambda req: cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=req.participant_id, endpoint=req.endpoint, serves=req.serves)),
                "GetOutcome": outcome,
            }
        )
    )
    e = engine(str(tmp_path))
    e.prepare(C, "t1", P, b'{"set":{"a":1}}')
    e.journal.close()
    p = Participant(participant_id=P, nodes=[node.address], data_dir=str(tmp_path), resource=MemoryResource(), endpoint="127.0.0.1:0", insecure=True, log=quiet)
    try:
        p.start()
        reg = [req for m, req in node.calls if m == "RegisterParticipant"][0]
        assert reg.cluster_id == C and list(reg.serves) == ["Exchange", "Status"] and reg.endpoint == f"127.0.0.1:{p.port}"
        deadline = time.monotonic() + 10
        while p.engine.in_doubt() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.engine.in_doubt() == [] and p.resource.values == {"a": 1}
        assert asked[0] == ("t1", P)
        # And it serves the protocol: a PREPARE over gRPC.
        with grpc.insecure_channel(p.endpoint) as ch:
            vote = participant_pb2_grpc.ParticipantStub(ch).Prepare(ppb.PrepareRequest(cluster_id=C, txn_id="t9", participant_id=P, payload=b""), timeout=5)
        assert vote.vote == ppb.VOTE_YES
    finally:
        p.stop()
        node.stop()


def test_r7_the_exchange_stream_answers_by_id_as_the_unary_calls_do(tmp_path) -> None:
    import queue
    from concurrent import futures

    from verdict.participant import _Servicer

    e = engine(str(tmp_path))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    participant_pb2_grpc.add_ParticipantServicer_to_server(_Servicer(e, node_only=False), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sent: "queue.Queue" = queue.Queue()

    def requests():
        while True:
            b = sent.get()
            if b is None:
                return
            yield b

    def prep(i: int, txn: str, payload: bytes = b"") -> ppb.ExchangeRequest:
        return ppb.ExchangeRequest(id=i, prepare=ppb.PrepareRequest(cluster_id=C, txn_id=txn, participant_id=P, payload=payload))

    def dec(i: int, txn: str, commit: bool) -> ppb.ExchangeRequest:
        return ppb.ExchangeRequest(id=i, decision=ppb.DecideRequest(cluster_id=C, txn_id=txn, participant_id=P, decision=ppb.DECISION_COMMIT if commit else ppb.DECISION_ABORT))

    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stream = participant_pb2_grpc.ParticipantStub(ch).Exchange(requests(), timeout=10)
            got = {}

            def take(n: int) -> None:
                while len(got) < n:
                    for a in next(stream).answers:
                        got[a.id] = a

            sent.put(ppb.ExchangeBatch(requests=[prep(1, "x1", b'{"set":{"x":1}}'), prep(2, "x2", b"bad"), prep(3, "x3")]))
            take(3)
            assert (got[1].vote.vote, got[2].vote.vote, got[3].vote.vote) == (ppb.VOTE_YES, ppb.VOTE_NO, ppb.VOTE_YES)
            sent.put(ppb.ExchangeBatch(requests=[dec(4, "x1", True), dec(5, "x3", False), dec(6, "never", True), prep(7, "x1")]))
            take(7)
            assert got[4].HasField("ack") and got[5].HasField("ack") and got[7].vote.vote == ppb.VOTE_YES
            assert got[6].error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0] and "never prepared" in got[6].error.details
            sent.put(None)
            assert list(stream) == []
        assert e.resource.values == {"x": 1}
    finally:
        sent.put(None)
        server.stop(0).wait()


def test_r4_no_yes_when_the_journal_cannot_record_prepared_and_the_resource_lets_go(tmp_path) -> None:
    class FullDisk(Journal):
        def record(self, txn_id: str, state: str, payload: bytes = b""):
            if state == "prepared":
                raise OSError(28, "No space left on device")
            return super().record(txn_id, state, payload)

    r = MemoryResource()
    e = Engine(C, P, FullDisk(str(tmp_path)), r, quiet)
    with pytest.raises(OSError):
        e.prepare(C, "t1", P, b'{"set":{"k":"v"}}')
    assert r._held == {} and e.journal.get("t1") is None


def test_r4_the_in_doubt_resolver_outlives_a_resource_failure_and_applies_the_decision_later(tmp_path) -> None:
    class FlakyCommit(MemoryResource):
        fails = 2

        def commit(self, txn_id: str) -> None:
            if self.fails > 0:
                self.fails -= 1
                raise RuntimeError("connection lost")
            super().commit(txn_id)

    node = FakeNode(
        answering(
            {
                "RegisterParticipant": lambda req: cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=req.participant_id)),
                "GetOutcome": lambda req: cpb.TxnOutcome(txn_id=req.txn_id, outcome=cpb.OUTCOME_COMMITTED),
            }
        )
    )
    e = engine(str(tmp_path))
    e.prepare(C, "t1", P, b'{"set":{"a":1}}')
    e.journal.close()
    r = FlakyCommit()
    p = Participant(participant_id=P, cluster_id=C, nodes=[node.address], data_dir=str(tmp_path), resource=r, endpoint="127.0.0.1:0", insecure=True, log=quiet)
    try:
        p.start()
        deadline = time.monotonic() + 15
        while p.engine.in_doubt() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.engine.in_doubt() == [] and r.fails == 0 and r.values == {"a": 1}
    finally:
        p.stop()
        node.stop()


@pytest.mark.parametrize("batched", [True, False])
def test_r4_many_in_doubt_are_asked_in_one_getoutcomes_or_one_by_one_on_an_older_cluster(tmp_path, batched: bool) -> None:
    decided = {"t1": cpb.OUTCOME_COMMITTED, "t2": cpb.OUTCOME_ABORTED, "t3": cpb.OUTCOME_IN_PROGRESS}
    later = {"t3": cpb.OUTCOME_COMMITTED}

    def outcomes(req):
        if not batched:
            raise NotImplementedError
        ans = [cpb.OutcomeAnswer(outcome=cpb.TxnOutcome(txn_id=t, outcome=decided[t])) for t in req.txn_ids]
        decided.update(later)
        return cpb.OutcomesResponse(answers=ans)

    def outcome(req):
        o = decided[req.txn_id]
        if req.txn_id == "t3":
            decided.update(later)
        return cpb.TxnOutcome(txn_id=req.txn_id, outcome=o)

    def handler(method, req, ctx):
        if method == "GetOutcomes" and not batched:
            ctx.abort(grpc.StatusCode.UNIMPLEMENTED, "GetOutcomes")
        return {
            "RegisterParticipant": lambda r: cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=r.participant_id)),
            "GetOutcomes": outcomes,
            "GetOutcome": outcome,
        }[method](req)

    node = FakeNode(handler)
    e = engine(str(tmp_path))
    for t in ("t1", "t2", "t3"):
        e.prepare(C, t, P, b'{"set":{"%s":1}}' % t.encode())
    e.journal.close()
    r = MemoryResource()
    p = Participant(participant_id=P, cluster_id=C, nodes=[node.address], data_dir=str(tmp_path), resource=r, endpoint="127.0.0.1:0", insecure=True, log=quiet)
    try:
        p.start()
        deadline = time.monotonic() + 15
        while p.engine.in_doubt() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.engine.in_doubt() == [] and r.values == {"t1": 1, "t3": 1}
        methods = [m for m, _ in node.calls if m.startswith("GetOutcome")]
        assert methods[0] == "GetOutcomes"
        # Batched: t1, t2 and t3 in one question, then t3 (still undecided then) alone; one by one: each of the three.
        assert methods.count("GetOutcome") == (1 if batched else 4)
    finally:
        p.stop()
        node.stop()


def test_a_prepare_blocked_in_its_resource_does_not_hold_up_another_transaction_s_decision(tmp_path) -> None:
    import threading

    class Blocking(MemoryResource):
        release = threading.Event()

        def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0):
            if txn_id == "waiter":
                # A statement waiting on a lock "holder" holds until holder is decided.
                assert self.release.wait(10)
            return super().prepare(txn_id, payload, timeout_ms)

        def commit(self, txn_id: str) -> None:
            super().commit(txn_id)
            if txn_id == "holder":
                self.release.set()

    e = Engine(C, P, Journal(str(tmp_path)), Blocking(), quiet)
    assert e.prepare(C, "holder", P, b"")[0]
    waiter = threading.Thread(target=lambda: e.prepare(C, "waiter", P, b""))
    waiter.start()
    time.sleep(0.1)
    e.decide(C, "holder", P, True)
    waiter.join(10)
    assert not waiter.is_alive() and e.journal.get("waiter").state == "prepared" and e._locks == {}


def test_a_participant_closed_cleanly_answers_what_it_took_and_ends_its_exchange_stream_saying_closing(tmp_path) -> None:
    """Issue 42: close() (and SIGTERM through run_until_signal) ends each Exchange stream with AnswerBatch.closing."""
    import queue
    import threading

    release, entered = threading.Event(), threading.Event()

    class Slow(MemoryResource):
        def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0):
            entered.set()
            release.wait(10)
            return super().prepare(txn_id, payload, timeout_ms)

    node = FakeNode(answering({"RegisterParticipant": lambda req: cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=req.participant_id))}))
    p = Participant(participant_id=P, cluster_id=C, nodes=[node.address], data_dir=str(tmp_path), resource=Slow(), endpoint="127.0.0.1:0", insecure=True, log=quiet)
    sent: "queue.Queue" = queue.Queue()

    def requests():
        while True:
            b = sent.get()
            if b is None:
                return
            yield b

    try:
        p.start()
        with grpc.insecure_channel(f"127.0.0.1:{p.port}") as ch:
            stream = participant_pb2_grpc.ParticipantStub(ch).Exchange(requests(), timeout=20)
            sent.put(ppb.ExchangeBatch(requests=[ppb.ExchangeRequest(id=1, prepare=ppb.PrepareRequest(cluster_id=C, txn_id="t1", participant_id=P, payload=b"{}"))]))
            assert entered.wait(10)
            # Closing while t1's PREPARE is being worked on: its vote still goes out, then the farewell.
            stopping = threading.Thread(target=p.close, kwargs={"grace_s": 5.0})
            stopping.start()
            time.sleep(0.2)
            release.set()
            batches = list(stream)
            stopping.join(10)
        answers = [a for b in batches for a in b.answers]
        assert [(a.id, a.vote.vote) for a in answers] == [(1, ppb.VOTE_YES)]
        assert [b.closing for b in batches] == [False] * (len(batches) - 1) + [True]
        assert len(batches[-1].answers) == 0
    finally:
        release.set()
        sent.put(None)
        p.stop()
        node.stop()
