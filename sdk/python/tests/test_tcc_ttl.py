"""TCC reserves with a time to live: recorded with the Try, refused when bad,
and settled through the cluster when they run out (ReserveWatcher), never on
a bare timer: Cancel on ABORTED, Confirm on COMMITTED, ask again otherwise."""

import json
import time
from typing import Dict, List

import pytest

from verdict import Participant
from verdict._proto import coordinator_pb2 as cpb
from verdict.tcc import CANCELLED, CONFIRMED, TRIED, KeyValueHandlers, MemoryTccResource, ReserveWatcher

from fake_cluster import FakeNode, answering

C, P = "c1", "seats"


def quiet(*_a, **_k) -> None:
    pass


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def payload(key: str, ttl_ms=None) -> bytes:
    o: Dict = {"set": {key: "v"}}
    if ttl_ms is not None:
        o["ttl_ms"] = ttl_ms
    return json.dumps(o).encode()


def test_a_try_s_ttl_is_recorded_and_its_expiry_survives_a_restart(tmp_path) -> None:
    clock = Clock()
    r = MemoryTccResource(str(tmp_path), P, KeyValueHandlers(), clock)
    assert r.prepare("t1", payload("a", 5_000)) is None
    assert r.prepare("t2", payload("b")) is None
    assert r.expired(clock.ms + 4_999) == [] and r.expired(clock.ms + 5_000) == ["t1"]
    r.close()
    again = MemoryTccResource(str(tmp_path), P, KeyValueHandlers(), clock)
    assert again.expired(clock.ms + 5_000) == ["t1"] and sorted(again.held()) == ["t1", "t2"]
    # Settled: no longer listed.
    again.rollback("t1")
    assert again.expired(clock.ms + 10_000) == []
    again.close()


@pytest.mark.parametrize("ttl", [0, -1, 1.5, True, 31 * 24 * 3_600_000])
def test_r4_a_bad_ttl_votes_no_and_holds_nothing(tmp_path, ttl) -> None:
    r = MemoryTccResource(str(tmp_path), P, KeyValueHandlers())
    reason = r.prepare("t1", payload("a", ttl))
    assert reason is not None and "ttl_ms" in reason
    assert r.state["held"] == {} and r.branch_state("t1") is None
    # The key is free for the next Try.
    assert r.prepare("t2", payload("a")) is None
    r.close()


class FakeReserves:
    def __init__(self, expired: List[str]) -> None:
        self.expired_now = list(expired)
        self.applied: List[str] = []

    def expired(self, at_ms: int) -> List[str]:
        return [t for t in self.expired_now if t not in self.applied]

    def commit(self, txn_id: str) -> None:
        self.applied.append(f"{txn_id}:confirm")
        self.expired_now.remove(txn_id)

    def rollback(self, txn_id: str) -> None:
        self.applied.append(f"{txn_id}:cancel")
        self.expired_now.remove(txn_id)


def test_ac1_an_expired_reserve_is_settled_with_the_cluster_s_answer_never_by_the_timer_alone() -> None:
    clock = Clock()
    res = FakeReserves(["committed-there", "aborted-there", "undecided", "prepared-here"])
    answers = {"committed-there": ["COMMITTED"], "aborted-there": ["ABORTED"], "undecided": ["IN_PROGRESS", "unreachable", "ABORTED"], "prepared-here": ["COMMITTED"]}
    asked: List[str] = []
    decided: List[str] = []

    def ask_abort(txn_id: str, reason: str) -> str:
        asked.append(txn_id)
        a = answers[txn_id].pop(0)
        if a == "unreachable":
            raise RuntimeError("no leader")
        return a

    def decide(txn_id: str, commit: bool) -> None:
        decided.append(f"{txn_id}:{'commit' if commit else 'abort'}")
        res.expired_now.remove(txn_id)

    w = ReserveWatcher(participant_id=P, resource=res, ask_abort=ask_abort, prepared=lambda t: t == "prepared-here", decide=decide, log=quiet, clock_ms=clock, backoff_min_ms=100)
    w.sweep()
    # COMMITTED is confirmed, never cancelled; a transaction the engine holds prepared is decided through it (journalled).
    assert res.applied == ["committed-there:confirm", "aborted-there:cancel"] and decided == ["prepared-here:commit"]
    assert w.expired_total == 4
    # IN_PROGRESS: still held, asked again only after the backoff.
    w.sweep()
    assert asked.count("undecided") == 1
    clock.ms += 100
    w.sweep()
    assert asked.count("undecided") == 2 and res.expired_now == ["undecided"]
    # The cluster away: the reserve stays held, asked again after a longer pause.
    clock.ms += 150
    w.sweep()
    assert asked.count("undecided") == 2
    clock.ms += 100
    w.sweep()
    assert asked.count("undecided") == 3 and res.applied[-1] == "undecided:cancel" and res.expired_now == []
    assert w.expired_total == 4


def test_a_participant_settles_an_expired_reserve_through_coordinator_abort(tmp_path) -> None:
    outcome = {"t1": cpb.OUTCOME_ABORTED, "t2": cpb.OUTCOME_COMMITTED}
    node = FakeNode(
        answering(
            {
                "RegisterParticipant": lambda req: cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=req.participant_id)),
                "Abort": lambda req: cpb.TxnOutcome(txn_id=req.txn_id, outcome=outcome[req.txn_id], decision_index=3),
                "GetOutcome": lambda req: cpb.TxnOutcome(txn_id=req.txn_id, outcome=cpb.OUTCOME_IN_PROGRESS),
                "GetOutcomes": lambda req: cpb.OutcomesResponse(answers=[cpb.OutcomeAnswer(outcome=cpb.TxnOutcome(txn_id=t, outcome=cpb.OUTCOME_IN_PROGRESS)) for t in req.txn_ids]),
            }
        )
    )
    r = MemoryTccResource(str(tmp_path / "tcc"), P, KeyValueHandlers())
    p = Participant(participant_id=P, cluster_id=C, nodes=[node.address], data_dir=str(tmp_path / "p"), resource=r, endpoint="127.0.0.1:0", insecure=True, log=quiet, in_doubt_after_s=600)
    try:
        p.start()
        assert p.engine.prepare(C, "t1", P, payload("a", 300)) == (True, "")
        assert p.engine.prepare(C, "t2", P, payload("b", 300)) == (True, "")
        deadline = time.monotonic() + 15
        while (r.branch_state("t1") == TRIED or r.branch_state("t2") == TRIED) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (r.branch_state("t1"), r.branch_state("t2")) == (CANCELLED, CONFIRMED)
        assert r.state["values"] == {"b": "v"} and r.state["held"] == {}
        # Journalled as decisions: a redelivered DECISION is acknowledged, and the engine holds nothing in doubt.
        assert (p.journal.get("t1").state, p.journal.get("t2").state) == ("aborted", "committed")
        abort_reqs = [req for m, req in node.calls if m == "Abort"]
        assert sorted(a.txn_id for a in abort_reqs) == ["t1", "t2"] and all("expired" in a.reason for a in abort_reqs)
    finally:
        p.stop()
        node.stop()


def test_a_yes_carries_what_is_left_of_the_reserve_s_ttl_over_prepare_and_exchange(tmp_path) -> None:
    """Vote.reserve_ttl_ms: a duration from the vote's leaving (the leader counts it from the arrival); 0: none."""
    from concurrent import futures

    import grpc

    from verdict import Engine, Journal
    from verdict._proto import participant_pb2 as ppb
    from verdict._proto import participant_pb2_grpc
    from verdict.participant import _Servicer

    clock = Clock()
    r = MemoryTccResource(str(tmp_path / "tcc"), P, KeyValueHandlers(), clock)
    e = Engine(C, P, Journal(str(tmp_path / "j")), r, quiet)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    participant_pb2_grpc.add_ParticipantServicer_to_server(_Servicer(e, node_only=False), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()

    def prep(txn: str, body: bytes) -> ppb.PrepareRequest:
        return ppb.PrepareRequest(cluster_id=C, txn_id=txn, participant_id=P, payload=body)

    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = participant_pb2_grpc.ParticipantStub(ch)
            first = stub.Prepare(prep("t1", payload("a", 30_000)), timeout=5)
            assert (first.vote, first.reserve_ttl_ms) == (ppb.VOTE_YES, 30_000)
            clock.ms += 12_000
            again = stub.Prepare(prep("t1", payload("a", 30_000)), timeout=5)
            assert (again.vote, again.reserve_ttl_ms) == (ppb.VOTE_YES, 18_000)
            none = stub.Prepare(prep("t2", payload("b")), timeout=5)
            assert (none.vote, none.reserve_ttl_ms) == (ppb.VOTE_YES, 0)
            taken = stub.Prepare(prep("t3", payload("a", 5_000)), timeout=5)  # "a" is held by t1: NO, nothing held
            assert (taken.vote, taken.reserve_ttl_ms) == (ppb.VOTE_NO, 0)
            # Past its TTL and still held (the cluster not reached yet): 1 ms, never 0 ("unknown").
            clock.ms += 60_000
            batch = ppb.ExchangeBatch(requests=[ppb.ExchangeRequest(id=1, prepare=prep("t1", payload("a", 30_000)))])
            answers = next(stub.Exchange(iter([batch]), timeout=5)).answers
            assert (answers[0].vote.vote, answers[0].vote.reserve_ttl_ms) == (ppb.VOTE_YES, 1)
    finally:
        server.stop(0).wait()
        r.close()
