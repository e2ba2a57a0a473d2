"""TCC on PostgreSQL (verdict/tcc_postgres.py) on a real PostgreSQL: the
barrier row and the handler's SQL in one local transaction, a bad TTL or a
refusal leaving nothing, a failing Confirm rolled back, a Try killed with
SIGKILL leaving nothing, and a reserve whose TTL ran out settled through the
cluster (Coordinator.Abort) by a running participant."""

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, List, Optional

import psycopg2
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from fake_cluster import FakeNode, answering  # noqa: E402

from verdict import Participant  # noqa: E402
from verdict._proto import coordinator_pb2 as cpb  # noqa: E402
from verdict.tcc import CANCELLED, CONFIRMED, EMPTY_CANCELLED, TRIED, BarrierRefusal, TccBranch, TccRefusal, TryResult  # noqa: E402
from verdict.tcc_postgres import PostgresTccResource, TccPgHandlers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
C = "c1"


def quiet(*_a, **_k) -> None:
    pass


def sql(url: str, text: str, args: tuple = ()) -> List[Any]:
    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(text, args)
            return cur.fetchall() if cur.description else []
    finally:
        conn.close()


class Seats(TccPgHandlers):
    """Payload {"n": seats, "ttl_ms": optional}: Try moves n seats from free to held, Confirm held to sold, Cancel held back to free."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.confirm_fails = 0

    def try_(self, cur: Any, b: TccBranch) -> Optional[TryResult]:
        o = json.loads(b.payload)
        cur.execute(f"UPDATE {self.table} SET free = free - %s, held = held + %s WHERE free >= %s", (o["n"], o["n"], o["n"]))
        if cur.rowcount == 0:
            raise TccRefusal("not enough free seats")
        return TryResult(o.get("ttl_ms"))

    def confirm(self, cur: Any, b: TccBranch) -> None:
        n = json.loads(b.payload)["n"]
        cur.execute(f"UPDATE {self.table} SET held = held - %s, sold = sold + %s", (n, n))
        if self.confirm_fails > 0:
            self.confirm_fails -= 1
            raise RuntimeError("the ticket printer is away")

    def cancel(self, cur: Any, b: TccBranch) -> None:
        n = json.loads(b.payload)["n"]
        cur.execute(f"UPDATE {self.table} SET held = held - %s, free = free + %s", (n, n))


@pytest.fixture
def seats(pg_url: str, unique: str) -> str:
    table = f"seats_{unique}"
    sql(pg_url, f"CREATE TABLE {table} (free int NOT NULL, held int NOT NULL, sold int NOT NULL)")
    sql(pg_url, f"INSERT INTO {table} VALUES (10, 0, 0)")
    return table


def counts(url: str, table: str) -> tuple:
    return sql(url, f"SELECT free, held, sold FROM {table}")[0]


def n(k: int, ttl_ms: Any = None) -> bytes:
    return json.dumps({"n": k, **({} if ttl_ms is None else {"ttl_ms": ttl_ms})}).encode()


def test_the_barrier_and_the_effects_commit_together(pg_url: str, unique: str, seats: str) -> None:
    r = PostgresTccResource(pg_url, f"seats-{unique}", Seats(seats))
    try:
        assert r.prepare("t1", n(3)) is None and r.prepare("t1", n(3)) is None
        assert counts(pg_url, seats) == (7, 3, 0) and r.branch_state("t1") == TRIED and r.held() == ["t1"]
        r.commit("t1")
        r.commit("t1")
        assert counts(pg_url, seats) == (7, 0, 3) and r.branch_state("t1") == CONFIRMED
        with pytest.raises(BarrierRefusal):
            r.rollback("t1")
        # A Cancel before its Try: an empty rollback, and the late Try is refused (no hanging reserve).
        r.rollback("t2")
        assert r.branch_state("t2") == EMPTY_CANCELLED
        assert "cancelled here before its Try" in (r.prepare("t2", n(2)) or "")
        assert counts(pg_url, seats) == (7, 0, 3)
        # A refusal votes NO and writes nothing, barrier row included.
        assert r.prepare("t3", n(50)) == "not enough free seats" and r.branch_state("t3") is None
        # A Confirm with no Try is refused, not acknowledged.
        with pytest.raises(BarrierRefusal):
            r.commit("t4")
    finally:
        r.close()


@pytest.mark.parametrize("ttl", [0, -5, 2.5])
def test_r4_a_bad_ttl_votes_no_and_rolls_the_reserve_back(pg_url: str, unique: str, seats: str, ttl: Any) -> None:
    r = PostgresTccResource(pg_url, f"seats-{unique}", Seats(seats))
    try:
        reason = r.prepare("t1", n(2, ttl))
        assert reason is not None and "positive whole number" in reason
        assert counts(pg_url, seats) == (10, 0, 0) and r.branch_state("t1") is None
    finally:
        r.close()


def test_a_failing_confirm_rolls_back_and_the_redelivery_applies_it_once(pg_url: str, unique: str, seats: str) -> None:
    h = Seats(seats)
    r = PostgresTccResource(pg_url, f"seats-{unique}", h)
    try:
        assert r.prepare("t1", n(4)) is None
        h.confirm_fails = 1
        with pytest.raises(RuntimeError):
            r.commit("t1")
        assert counts(pg_url, seats) == (6, 4, 0) and r.branch_state("t1") == TRIED
        r.commit("t1")
        assert counts(pg_url, seats) == (6, 0, 4)
    finally:
        r.close()


def test_a_ttl_is_kept_in_the_barrier_row_and_listed_once_it_ran_out(pg_url: str, unique: str, seats: str) -> None:
    now = [5_000_000]
    r = PostgresTccResource(pg_url, f"seats-{unique}", Seats(seats), clock_ms=lambda: now[0])
    try:
        assert r.prepare("t1", n(1, 2_000)) is None and r.prepare("t2", n(1)) is None
        assert r.expired(now[0] + 1_999) == [] and r.expired(now[0] + 2_000) == ["t1"]
        # What a YES says is left of it (Vote.reserve_ttl_ms), read from the row; none without a TTL.
        assert (r.reserve_ttl_ms("t1"), r.reserve_ttl_ms("t2"), r.reserve_ttl_ms("never")) == (2_000, None, None)
        now[0] += 1_500
        assert r.reserve_ttl_ms("t1") == 500
        # Another process on the same table (a restart) sees the same.
        other = PostgresTccResource(pg_url, f"seats-{unique}", Seats(seats))
        try:
            assert other.expired(now[0] + 2_000) == ["t1"] and sorted(other.prepared_here()) == ["t1", "t2"]
        finally:
            other.close()
    finally:
        r.close()


def test_r4_a_try_killed_before_its_commit_leaves_nothing(pg_url: str, unique: str, seats: str) -> None:
    child = subprocess.Popen([sys.executable, os.path.join(HERE, "tcc_crash.py"), pg_url, seats, f"seats-{unique}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().decode().strip()
        assert line == "inside-try", f"the child said {line!r}: {child.stderr.read().decode() if child.stderr else ''}"
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    deadline = time.monotonic() + 10
    while sql(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (f"verdict-py-tcc-seats-{unique}",)) != [(0,)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert counts(pg_url, seats) == (10, 0, 0)
    assert sql(pg_url, "SELECT count(*) FROM verdict_tcc_barrier WHERE branch = %s", (f"seats-{unique}",)) == [(0,)]


def test_ac1_a_running_participant_settles_expired_reserves_with_the_cluster_s_answer(pg_url: str, unique: str, seats: str, tmp_path) -> None:
    pid = f"seats-{unique}"
    outcome = {"t-aborted": cpb.OUTCOME_ABORTED, "t-committed": cpb.OUTCOME_COMMITTED}
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
    r = PostgresTccResource(pg_url, pid, Seats(seats))
    p = Participant(participant_id=pid, cluster_id=C, nodes=[node.address], data_dir=str(tmp_path), resource=r, endpoint="127.0.0.1:0", insecure=True, log=quiet, in_doubt_after_s=600)
    try:
        p.start()
        assert p.engine.prepare(C, "t-aborted", pid, n(2, 300)) == (True, "")
        assert p.engine.prepare(C, "t-committed", pid, n(3, 300)) == (True, "")
        assert counts(pg_url, seats) == (5, 5, 0)
        deadline = time.monotonic() + 20
        while r.held() and time.monotonic() < deadline:
            time.sleep(0.1)
        # ABORTED: cancelled; COMMITTED (the others may be confirming): confirmed, never cancelled.
        assert (r.branch_state("t-aborted"), r.branch_state("t-committed")) == (CANCELLED, CONFIRMED)
        assert counts(pg_url, seats) == (7, 0, 3)
        assert (p.journal.get("t-aborted").state, p.journal.get("t-committed").state) == ("aborted", "committed")
        assert sorted(req.txn_id for m, req in node.calls if m == "Abort") == ["t-aborted", "t-committed"]
    finally:
        p.stop()
        node.stop()


def test_cleanup_deletes_settled_barrier_rows_past_the_retention_and_keeps_held_reserves(pg_url: str, unique: str, seats: str) -> None:
    pid = f"seats-{unique}"
    r = PostgresTccResource(pg_url, pid, Seats(seats))
    try:
        assert r.prepare("t1", n(1)) is None and r.prepare("t2", n(1)) is None
        r.commit("t1")
        r.rollback("t3")
        # Within the retention nothing goes.
        assert r.cleanup(retention_s=3600) == 0
        time.sleep(0.05)
        assert r.cleanup(retention_s=0.01, batch=1) == 2
        assert sql(pg_url, "SELECT txn_id, state FROM verdict_tcc_barrier WHERE branch = %s", (pid,)) == [("t2", TRIED)]
    finally:
        r.close()
